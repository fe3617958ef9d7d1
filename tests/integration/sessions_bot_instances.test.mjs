// Two gatehouse instances over HTTP sharing one SQLite state file, as two
// replicas behind a proxy would: a session created on one is confirmed on
// the other's page, and its approval code, exchanged on both at once by
// several callers, gives tokens exactly once; presses on both pages at once
// decide a session once. The instance with
// http.public_url hands out links on that URL instead of its listen address.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { DatabaseSync } from 'node:sqlite';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { HttpHost } from './lib/http_host.mjs';
import { CheckedTransport } from './lib/checked_transport.mjs';
import { binaryPath, MODERN } from './lib/host.mjs';

const pluginPath = (name) => path.resolve(path.dirname(binaryPath()), `../lib/gatehouse/plugins/${name}`);
const code = (result) => (result.isError ? result.content?.[0]?.text?.split(':')[0] : undefined);

const PUBLIC_URL = 'https://gate.example.com/edge';
const CALLS_PER_INSTANCE = 4;
const ROUNDS = 3;
const HOLD_LOCK_MS = 1000;

const shared = mkdtempSync(path.join(tmpdir(), 'gatehouse-itest-shared-'));
after(() => rmSync(shared, { recursive: true, force: true }));

async function startInstance(topic, http = {}) {
  const host = await HttpHost.start({
    gate: true,
    http,
    plugins: [pluginPath('session.so'), pluginPath('sessions.so')],
    sections: {
      domains: { sessions: { settings: { bots: [{ slug: 'shop-bot', name: 'Shop Bot', user_seq_id: 42 }] } } },
      session: {
        backend: 'sqlite',
        state_file: path.join(shared, 'state.sqlite3'),
        pinned: { store: 'shop', user: 'ann' },
        grants: { shop: { ann: ['sessions'] } },
      },
    },
  });
  const transport = new CheckedTransport(new StreamableHTTPClientTransport(new URL(host.url)));
  const client = new Client({ name: 'itest-sessions-instances', version: '2.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
  await client.connect(transport);
  // One principal on both instances; a topic of its own on each, since a
  // connect replaces the principal's session of the same topic.
  const connected = await client.callTool({ name: 'session_connect', arguments: { topic } });
  assert.equal(connected.isError, undefined, JSON.stringify(connected));
  const session = connected.structuredContent.session;
  const call = (name, args = {}) => client.callTool({ name, arguments: { session, ...args } });
  const stop = async () => {
    await client.close().catch(() => {});
    const result = await host.stop();
    assert.equal(result.code, 0);
    assert.deepEqual(transport.problems, [], 'every message the host sent fits the schema');
  };
  return { host, call, stop };
}

// Shows the page as a browser would (GET for the form and its cookie) and
// answers a function that posts the form back with `action`.
async function formAt(url) {
  const shown = await fetch(url);
  assert.equal(shown.status, 200);
  const html = await shown.text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1];
  assert.ok(csrf, 'the page carries its form');
  const cookie = shown.headers.get('set-cookie').split(';')[0];
  return (action) =>
    fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: cookie },
      body: `csrf=${encodeURIComponent(csrf)}&action=${action}`,
      redirect: 'manual',
    });
}

async function approveAt(url) {
  const posted = await (await formAt(url))('approve');
  assert.ok(posted.status < 400, `the approval was accepted (${posted.status})`);
}

// Holds the state file's write lock for HOLD_LOCK_MS while `start()` sends
// its requests: every instance reads what it reads and gets as far as its
// first write before any of them may write, the widest a race between
// instances can be. Writers wait for the lock (busy timeout).
async function withWritesHeld(start) {
  const lock = new DatabaseSync(path.join(shared, 'state.sqlite3'));
  lock.exec('BEGIN IMMEDIATE');
  const pending = start();
  await new Promise((r) => setTimeout(r, HOLD_LOCK_MS));
  lock.exec('COMMIT');
  lock.close();
  return Promise.all(pending);
}

test('one approval code, exchanged on two instances at once, gives tokens exactly once', async () => {
  const behindProxy = await startInstance('bots-behind-proxy', { public_url: PUBLIC_URL });
  const direct = await startInstance('bots-direct');
  try {
    for (let round = 0; round < ROUNDS; ++round) {
      const created = await behindProxy.call('create_session', { type: 'LOGIN', external_user_id: `ext-${round}` });
      assert.equal(created.isError, undefined, JSON.stringify(created));
      const { session_id, confirmation_url } = created.structuredContent;
      assert.ok(
        confirmation_url.startsWith(`${PUBLIC_URL}/pages/sessions/confirm/`),
        `the link is built on http.public_url: ${confirmation_url}`,
      );
      const pageToken = confirmation_url.split('/').pop();
      const directCreated = await direct.call('create_session', { type: 'LOGIN' });
      assert.ok(
        directCreated.structuredContent.confirmation_url.startsWith(`${direct.host.origin}/pages/sessions/confirm/`),
        'without http.public_url the link names the listen address',
      );

      // The proxy would forward the public link to either instance.
      await approveAt(`${direct.host.origin}/pages/sessions/confirm/${pageToken}`);
      const approved = (await behindProxy.call('get_session_status', { session_id })).structuredContent;
      assert.equal(approved.state, 'approved');
      const approval_code = approved.approval_code;
      assert.match(approval_code, /^[0-9a-f]{48}$/);

      const results = await withWritesHeld(() => {
        const exchanges = [];
        for (let i = 0; i < CALLS_PER_INSTANCE; ++i)
          for (const instance of [behindProxy, direct])
            exchanges.push(instance.call('exchange_session_approval_code', { approval_code }));
        return exchanges;
      });
      const winners = results.filter((r) => r.isError === undefined);
      const refusals = results.filter((r) => r.isError).map(code);
      assert.equal(winners.length, 1, `exactly one exchange wins in round ${round}: ${JSON.stringify(results)}`);
      assert.deepEqual(refusals, Array(2 * CALLS_PER_INSTANCE - 1).fill('APPROVAL_CODE_USED'));
      assert.equal(winners[0].structuredContent.session_id, session_id);
      assert.match(winners[0].structuredContent.access_token, /^gha_[0-9a-f]{64}$/);

      // Later exchanges on either instance hear the same refusal.
      for (const instance of [behindProxy, direct])
        assert.equal(code(await instance.call('exchange_session_approval_code', { approval_code })), 'APPROVAL_CODE_USED');
      const after = (await direct.call('get_session_status', { session_id })).structuredContent;
      assert.equal(after.state, 'approved');
      assert.equal(after.approval_code, undefined, 'a spent code is no longer shown');
    }
  } finally {
    await behindProxy.stop();
    await direct.stop();
  }
});

test('Approve pressed on two instances at once decides the session once, with one code', async () => {
  const first = await startInstance('bots-first');
  const second = await startInstance('bots-second');
  try {
    for (const other of ['approve', 'deny']) {
      const created = await first.call('create_session', { type: 'LOGIN' });
      assert.equal(created.isError, undefined, JSON.stringify(created));
      const { session_id, confirmation_url } = created.structuredContent;
      const pagePath = new URL(confirmation_url).pathname;
      const presses = [await formAt(first.host.origin + pagePath), await formAt(second.host.origin + pagePath)];
      const answers = await withWritesHeld(() => [presses[0]('approve'), presses[1](other)]);
      const statuses = answers.map((a) => a.status);
      assert.equal(statuses.filter((s) => s === 200).length, 1, `one press decides: ${statuses}`);
      assert.equal(statuses.filter((s) => s === 409).length, 1, `the other changes nothing: ${statuses}`);
      const loser = await answers[statuses.indexOf(409)].text();
      assert.match(loser, /already (approved|denied)|being decided by another press/);

      const status = (await second.call('get_session_status', { session_id })).structuredContent;
      const winner = await answers[statuses.indexOf(200)].text();
      assert.equal(status.state, /Approved/.test(winner) ? 'approved' : 'denied', winner);
      if (status.state === 'approved') {
        const exchanged = await first.call('exchange_session_approval_code', { approval_code: status.approval_code });
        assert.equal(exchanged.isError, undefined, JSON.stringify(exchanged));
        // No later press mints another code over the exchanged session.
        assert.ok((await presses[0]('approve')).status >= 400);
        const after = (await first.call('get_session_status', { session_id })).structuredContent;
        assert.equal(after.approval_code, undefined);
        assert.equal(code(await first.call('exchange_session_approval_code', { approval_code: status.approval_code })), 'APPROVAL_CODE_USED');
      }
    }
  } finally {
    await first.stop();
    await second.stop();
  }
});
