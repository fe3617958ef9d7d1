// A family's pages over HTTP (ABI 1.3), served by the real binary: where
// they run, what bounds them, and what the host checks before the family's
// act() runs. The `serial` test family (not reentrant) has one page, "look".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHttpHost, pageForm } from './lib/http_host.mjs';

const link = (host, token = 'a'.repeat(32)) => `${host.origin}/pages/serial/look/${token}`;
const pause = (ms) => new Promise((r) => setTimeout(r, ms));

function post(url, { cookie, csrf }, action, headers = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: cookie, ...headers },
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
    // Asked again and again while the page waits: were the page on the loop,
    // one of these would wait for the rest of the call.
    let pageDone = false;
    page.then(() => (pageDone = true), () => (pageDone = true));
    for (let i = 0; i < 10 && !pageDone; ++i) {
      await pause(100);
      const began = Date.now();
      const health = await fetch(`${host.origin}/health`);
      const waited = Date.now() - began;
      assert.equal(health.status, 200);
      assert.ok(waited < 1500, `/health waited ${waited} ms behind a page`);
    }
    assert.ok(!pageDone, 'the page waited for the family, behind its call');
    const shown = await page;
    assert.equal(shown.status, 200);
    assert.match(await shown.text(), /<h1>Serial<\/h1>/);
    assert.equal((await long).answer.result.structuredContent.max_concurrent, 1);
  }));

test('pages waiting for their family take none of its calls\' places: a call admitted meanwhile is served, not refused', () =>
  withHttpHost({ plugins: ['serial.so'], limits: { max_in_flight_per_plugin: 2 } }, async (host) => {
    const long = host.modern('tools/call', { name: 'overlap', arguments: { ms: 2000 } });
    await host.stderrMatching(/\[serial\] overlap inside, 2000 ms/);
    const pages = [fetch(link(host)), fetch(link(host)), fetch(link(host))];
    await pause(300);
    // The family's second place is free for this call whatever the pages do.
    const second = await host.modern('tools/call', { name: 'overlap', arguments: { ms: 1 } });
    assert.equal(second.answer.result.structuredContent?.max_concurrent, 1, JSON.stringify(second.answer));
    await long;
    for (const page of await Promise.all(pages)) assert.equal(page.status, 200);
  }));

test('a page waits for its family\'s lock at most 5 s: 503 with Retry-After, and served once the call ends', () =>
  withHttpHost({ plugins: ['serial.so'] }, async (host) => {
    const long = host.modern('tools/call', { name: 'overlap', arguments: { ms: 8000 } });
    await host.stderrMatching(/\[serial\] overlap inside, 8000 ms/);
    const began = Date.now();
    const refused = await fetch(link(host));
    const waited = Date.now() - began;
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get('retry-after'), '1');
    assert.match(await refused.text(), /busy right now; reload the page/);
    assert.ok(waited >= 4900, `refused after ${waited} ms, before its wait was up`);
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

test('behind a proxy that names the host otherwise, a form sent from http.public_url\'s origin is this host\'s own', () =>
  withHttpHost({ plugins: ['serial.so'], http: { public_url: 'https://Gate.Example.com:443/mcp-front' } }, async (host) => {
    // The proxy forwards to 127.0.0.1 with a Host of its own; the browser's Origin is the public one.
    const foreign = await post(link(host), await pageForm(link(host)), 'yes', { Origin: 'https://evil.example' });
    assert.equal(foreign.status, 403);
    const sameHost = await post(link(host), await pageForm(link(host)), 'yes', { Origin: host.origin });
    assert.equal(sameHost.status, 200);
    const ours = await post(link(host), await pageForm(link(host)), 'yes', { Origin: 'https://gate.example.com' });
    assert.equal(ours.status, 200, 'before, every confirm behind such a proxy was refused');
    assert.match(await ours.text(), /chose yes/);
  }));
