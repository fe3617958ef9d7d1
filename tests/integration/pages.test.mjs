// A family's pages over HTTP (ABI 1.3), served by the real binary: where
// they run, what bounds them, and what the host checks before the family's
// act() runs. The `serial` test family (not reentrant) has one page, "look".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHttpHost, pageForm } from './lib/http_host.mjs';

const link = (host, token = 'a'.repeat(32)) => `${host.origin}/pages/serial/look/${token}`;
const pause = (ms) => new Promise((r) => setTimeout(r, ms));

function post(url, { cookie, csrf }, action) {
  return fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: cookie },
    body: `csrf=${encodeURIComponent(csrf)}&action=${action}`,
  });
}

test('a page waiting for its family, busy with a long call, holds no I/O thread: /health answers meanwhile', () =>
  withHttpHost({ plugins: ['serial.so'], http: { threads: 1 } }, async (host) => {
    // On a host with one I/O thread the call runs on the pool and holds
    // the family's lock for three seconds.
    const long = host.modern('tools/call', { name: 'overlap', arguments: { ms: 3000 } });
    await host.stderrMatching(/\[serial\] overlap inside, 3000 ms/);
    const page = fetch(link(host));
    await pause(200);
    const began = Date.now();
    const health = await fetch(`${host.origin}/health`);
    const waited = Date.now() - began;
    assert.equal(health.status, 200);
    assert.ok(waited < 1500, `/health waited ${waited} ms behind a page`);
    const shown = await page;
    assert.equal(shown.status, 200);
    assert.match(await shown.text(), /<h1>Serial<\/h1>/);
    assert.equal((await long).answer.result.structuredContent.max_concurrent, 1);
  }));

test('a page finds no place among its family\'s calls: 503 with Retry-After, and served once the call ends', () =>
  withHttpHost({ plugins: ['serial.so'], limits: { max_in_flight_per_plugin: 1 } }, async (host) => {
    const long = host.modern('tools/call', { name: 'overlap', arguments: { ms: 2000 } });
    await host.stderrMatching(/\[serial\] overlap inside, 2000 ms/);
    const refused = await fetch(link(host));
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get('retry-after'), '1');
    assert.match(await refused.text(), /busy right now; reload the page/);
    await long;
    assert.equal((await fetch(link(host))).status, 200);
  }));

test('a form naming an action its page did not offer is refused before act() runs', () =>
  withHttpHost({ plugins: ['serial.so'] }, async (host) => {
    const form = await pageForm(link(host));
    const other = await post(link(host), form, 'approve');
    assert.equal(other.status, 400);
    assert.match(await other.text(), /did not offer that choice/);
    const offered = await post(link(host), form, 'yes');
    assert.equal(offered.status, 200);
    assert.match(await offered.text(), /chose yes/);
  }));

test('members of a page\'s answer of the wrong type read as absent, before and after act()', () =>
  withHttpHost({ plugins: ['serial.so'] }, async (host) => {
    const url = link(host, `odd${'a'.repeat(29)}`);
    const shown = await fetch(url);
    assert.equal(shown.status, 200);
    const html = await shown.text();
    assert.match(html, /<dt><\/dt>/, 'a label that is a number reads as none');
    assert.match(html, /id="action-yes">yes<\/button>/, 'a button whose label is a number reads its id');
    const cookie = shown.headers.get('set-cookie').split(';')[0];
    const csrf = /name="csrf" value="([^"]+)"/.exec(html)[1];
    // act() ran: the person is told it is done, not that the choice failed.
    const done = await post(url, { cookie, csrf }, 'yes');
    assert.equal(done.status, 200);
    assert.match(await done.text(), /<p id="message">Done\.<\/p>/);
  }));
