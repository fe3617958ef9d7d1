// The gate's story over Streamable HTTP with a real MCP client
// (@modelcontextprotocol/client 2.x, 2026-07-28): no session, connect, a tool
// not granted (the plugin provably not called), critical notes, rules with a
// code that fits only its own session, the program switching store, a grant
// change taking effect on reconnect.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { writeFileSync } from 'node:fs';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { HttpHost } from './lib/http_host.mjs';
import { CheckedTransport } from './lib/checked_transport.mjs';
import { binaryPath, MODERN } from './lib/host.mjs';

const sessionPlugin = () => path.resolve(path.dirname(binaryPath()), '../lib/gatehouse/plugins/session.so');

function writeProgram(dir, store) {
  writeFileSync(path.join(dir, 'program.json'), JSON.stringify({ running: true, store, user: 'ann', updated: '2026-11-30T10:00:00Z' }));
}
function writeGrants(dir, scopes) {
  writeFileSync(path.join(dir, 'grants.yaml'), `grants:\n  shop:\n    ann: [${scopes.join(', ')}]\n`);
}

const code = (result) => result.structuredContent?.code ?? (result.isError ? result.content?.[0]?.text : undefined);

test('the gate over HTTP with the official v2 client, check by check', async () => {
  let scene;
  const host = await HttpHost.start({
    gate: true,
    plugins: [sessionPlugin(), 'gated.so'],
    sections: {
      domains: { gated: { settings: { critical: [{ id: 'n1', title: 'Close the till at six' }] } } },
      session: (dir) => {
        scene = dir;
        writeProgram(dir, 'shop');
        writeGrants(dir, ['orders.read']);
        return {
          backend: 'sqlite',
          program_state_file: path.join(dir, 'program.json'),
          grants_file: path.join(dir, 'grants.yaml'),
          rules: 'Work only on what the person asked for.',
        };
      },
    },
  });
  const transport = new CheckedTransport(new StreamableHTTPClientTransport(new URL(host.url)));
  const client = new Client({ name: 'itest-gate-http', version: '2.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
  const call = (name, args = {}) => client.callTool({ name, arguments: args });
  try {
    await client.connect(transport);
    assert.equal(code(await call('count')), 'NOT_CONNECTED');

    const connected = (await call('session_connect', { topic: 'orders' })).structuredContent;
    const session = connected.session;
    assert.equal(connected.store, 'shop');
    assert.deepEqual(connected.scopes, ['orders.read']);
    assert.equal(connected.unread_critical_notes, 1);

    assert.equal(code(await call('guarded', { session })), 'NOT_GRANTED');
    assert.equal((await call('calls')).structuredContent.guarded, 0, 'the plugin was not called');

    const unread = await call('count', { session });
    assert.equal(code(unread), 'CRITICAL_NOTES_UNREAD');
    assert.equal(unread.structuredContent.next.unread[0].id, 'n1');
    assert.equal((await call('read_critical', { session })).structuredContent.unread, 0);
    assert.equal((await call('count', { session })).structuredContent.count, 1);

    const ruled = await call('ruled', { session });
    assert.equal(code(ruled), 'RULES_NOT_ACCEPTED');
    const rulesCode = ruled.structuredContent.next.code;
    assert.equal((await call('calls')).structuredContent.ruled, 0);
    assert.equal((await call('session_rules_accept', { session, code: rulesCode })).structuredContent.accepted, 'ruled');
    assert.equal((await call('ruled', { session })).structuredContent.count, 1);
    const other = (await call('session_connect', { topic: 'returns' })).structuredContent.session;
    assert.equal((await call('session_rules_accept', { session: other, code: rulesCode })).isError, true);

    writeProgram(scene, 'other-shop');
    assert.equal(code(await call('count', { session })), 'STORE_SWITCHED');
    writeProgram(scene, 'shop');
    assert.equal((await call('count', { session })).structuredContent.count, 2);

    writeGrants(scene, ['orders.read', 'vault.open']);
    assert.equal(code(await call('guarded', { session })), 'NOT_GRANTED', 'grants change on reconnect only');
    const again = (await call('session_connect', { topic: 'orders' })).structuredContent.session;
    assert.equal(code(await call('count', { session })), 'NOT_CONNECTED', 'the old handle is gone');
    await call('read_critical', { session: again });
    assert.equal((await call('guarded', { session: again })).structuredContent.count, 1);
  } finally {
    await client.close().catch(() => {});
    const result = await host.stop();
    assert.equal(result.code, 0);
  }
  assert.deepEqual(transport.problems, [], 'every message the host sent fits the schema');
});
