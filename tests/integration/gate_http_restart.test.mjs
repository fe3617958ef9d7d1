// The gate's story across a host restart over Streamable HTTP, with the real
// MCP client (@modelcontextprotocol/client 2.x, 2026-07-28) kept connected to
// the same URL while the host behind it stops and starts on the same data
// directory: on the sqlite backend the session handle goes on working; on
// the memory backend it is gone (NOT_CONNECTED), and connecting again with
// the same topic finds the same conversation folder with its files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { HttpHost } from './lib/http_host.mjs';
import { CheckedTransport } from './lib/checked_transport.mjs';
import { binaryPath, MODERN } from './lib/host.mjs';

const sessionPlugin = () => path.resolve(path.dirname(binaryPath()), '../lib/gatehouse/plugins/session.so');

const code = (result) => result.structuredContent?.code ?? (result.isError ? result.content?.[0]?.text : undefined);

function startHost(backend) {
  return HttpHost.start({
    gate: true,
    plugins: [sessionPlugin(), 'gated.so'],
    sections: {
      domains: { gated: { settings: { critical: [{ id: 'n1', title: 'Close the till at six' }] } } },
      session: (dir) => {
        writeFileSync(path.join(dir, 'grants.yaml'), 'grants:\n  shop:\n    ann: [orders.read]\n');
        return {
          backend,
          pinned: { store: 'shop', user: 'ann' },
          grants_file: path.join(dir, 'grants.yaml'),
          rules: 'Work only on what the person asked for.',
        };
      },
    },
  });
}

// Runs `story(call, restart)` with one client that stays connected across
// restarts; `restart()` restarts the host and resolves once it listens again.
async function withRestartingHost(backend, story) {
  let host = await startHost(backend);
  const transport = new CheckedTransport(new StreamableHTTPClientTransport(new URL(host.url)));
  const client = new Client({ name: 'itest-gate-http-restart', version: '2.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
  const call = (name, args = {}) => client.callTool({ name, arguments: args });
  const restart = async () => {
    host = await host.restart();
    assert.equal(host.previousExit.code, 0, 'the host stopped cleanly');
  };
  try {
    await client.connect(transport);
    await story(call, restart);
  } catch (e) {
    e.message += `\nhost stderr ends:\n${host.stderr.slice(-1500)}`;
    throw e;
  } finally {
    await client.close().catch(() => {});
    const result = await host.stop();
    assert.equal(result.code, 0);
  }
  assert.deepEqual(transport.problems, [], 'every message the host sent fits the schema');
}

test('restart on the sqlite backend: the same session handle works, notes read and rules accepted stay', async () => {
  await withRestartingHost('sqlite', async (call, restart) => {
    const session = (await call('session_connect', { topic: 'orders' })).structuredContent.session;
    assert.equal(code(await call('count', { session })), 'CRITICAL_NOTES_UNREAD');
    assert.equal((await call('read_critical', { session })).structuredContent.unread, 0);
    const rulesCode = (await call('ruled', { session })).structuredContent.next.code;
    assert.equal((await call('session_rules_accept', { session, code: rulesCode })).structuredContent.accepted, 'ruled');
    assert.equal((await call('count', { session })).structuredContent.count, 1);

    await restart();
    assert.equal((await call('calls')).structuredContent.count, 0, 'a new process');
    const counted = await call('count', { session });
    assert.equal(code(counted), undefined, JSON.stringify(counted));
    assert.equal(counted.structuredContent.count, 1);
    const ruled = await call('ruled', { session });
    assert.equal(code(ruled), undefined, 'the rules accepted before the restart still hold');
    assert.equal(ruled.structuredContent.count, 1);
  });
});

test('restart on the memory backend: NOT_CONNECTED, then the same topic finds the same folder and its files', async () => {
  await withRestartingHost('memory', async (call, restart) => {
    const connected = (await call('session_connect', { topic: 'orders' })).structuredContent;
    const { session, folder } = connected;
    assert.ok(folder && existsSync(folder), `the conversation folder exists: ${folder}`);
    await call('read_critical', { session });
    assert.equal((await call('count', { session })).structuredContent.count, 1);
    writeFileSync(path.join(folder, 'notes.md'), 'kept across restarts\n');

    await restart();
    const gone = await call('count', { session });
    assert.equal(code(gone), 'NOT_CONNECTED');
    assert.equal((await call('calls')).structuredContent.count, 0, 'the plugin was not called');

    const again = (await call('session_connect', { topic: 'orders' })).structuredContent;
    assert.notEqual(again.session, session, 'a new handle');
    assert.equal(again.folder, folder);
    assert.equal(readFileSync(path.join(folder, 'notes.md'), 'utf8'), 'kept across restarts\n');
    assert.equal(again.unread_critical_notes, 1, 'what the session read is forgotten with it');
    await call('read_critical', { session: again.session });
    assert.equal((await call('count', { session: again.session })).structuredContent.count, 1);
  });
});
