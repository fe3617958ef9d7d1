// The official v2 client (@modelcontextprotocol/client) with its OAuth
// support against the host in jwt mode: it finds the protected resource
// metadata from the 401, gets a token from the loopback authorization server
// (client_credentials), calls tools, and steps up on insufficient_scope. Two
// principals then share one host and see nothing of each other: memory
// notes, gate sessions, conversation folders.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { writeFileSync } from 'node:fs';
import { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { HttpHost } from './lib/http_host.mjs';
import { CheckedTransport } from './lib/checked_transport.mjs';
import { binaryPath, MODERN } from './lib/host.mjs';
import { AuthorizationServer, tokenOwnerKey } from './lib/authorization_server.mjs';

const familyPlugin = (name) => path.resolve(path.dirname(binaryPath()), `../lib/gatehouse/plugins/${name}.so`);

const clients = {
  'alice-app': { secret: 'alice secret', subject: 'alice' },
  'bob-app': { secret: 'bob secret', subject: 'bob' },
};

async function connect(host, as, clientId, scope) {
  const authProvider = new ClientCredentialsProvider({
    clientId,
    clientSecret: clients[clientId].secret,
    scope,
    expectedIssuer: as.issuer,
  });
  const transport = new CheckedTransport(new StreamableHTTPClientTransport(new URL(host.url), { authProvider }));
  const client = new Client({ name: `itest-${clientId}`, version: '2.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
  await client.connect(transport);
  return client;
}


const jwtAuth = (as) => ({ mode: 'jwt', issuers: [as.issuer], fetch_timeout_ms: 2000 });

test('the v2 client discovers the metadata from the 401, gets a token, calls a tool, and steps up', async () => {
  const as = await AuthorizationServer.start({ clients });
  const host = await HttpHost.start({ plugins: ['echo.so', 'ledger.so'], sections: { auth: jwtAuth(as) } });
  let client;
  try {
    client = await connect(host, as, 'alice-app', 'notes');
    // The host reads the metadata for its keys; the client reads it for the token endpoint.
    assert.ok(as.count('GET /.well-known/oauth-authorization-server') >= 2, 'the client read the authorization server metadata');
    assert.equal(as.count('POST /token'), 1, 'one token for connect and the first calls');
    assert.equal(as.issued[0].resource, host.url, 'the token was asked for this resource (RFC 8707)');

    const me = await client.callTool({ name: 'whoami', arguments: {} });
    assert.deepEqual(me.structuredContent.principal, {
      subject: 'alice',
      kind: 'token',
      owner: tokenOwnerKey(as.issuer, 'alice'),
      issuer: as.issuer,
      client_id: 'alice-app',
      scopes: ['notes'],
    });

    // ledger_balance needs ledger:read: 403 insufficient_scope, the client re-authorizes and retries.
    const balance = await client.callTool({ name: 'ledger_balance', arguments: {} });
    assert.equal(balance.structuredContent.balance, 100);
    const last = as.issued.at(-1);
    assert.deepEqual(last.scope.split(' ').sort(), ['ledger:read', 'notes']);
    const after = await client.callTool({ name: 'whoami', arguments: {} });
    assert.deepEqual(after.structuredContent.principal.scopes.sort(), ['ledger:read', 'notes']);
  } finally {
    await client?.close();
    await host.stop();
    await as.stop();
  }
});

test('two token subjects over HTTP never see, find, count or delete each other\'s memory notes', async () => {
  const as = await AuthorizationServer.start({ clients });
  const host = await HttpHost.start({ plugins: [familyPlugin('memory')], sections: { auth: jwtAuth(as) } });
  let alice, bob;
  const text = (r) => r.content?.[0]?.text ?? '';
  try {
    alice = await connect(host, as, 'alice-app');
    bob = await connect(host, as, 'bob-app');
    const call = (client, name, args) => client.callTool({ name, arguments: args });
    const secret = await call(alice, 'remember', { text: 'alice salary review', tags: ['hr'], critical: true });
    assert.equal(secret.isError, undefined, JSON.stringify(secret));
    await call(alice, 'remember', { text: 'alice second note', tags: ['hr'] });

    assert.deepEqual((await call(bob, 'recall', {})).structuredContent.notes, []);
    assert.deepEqual((await call(bob, 'recall', { query: 'salary' })).structuredContent.notes, []);
    assert.deepEqual((await call(bob, 'recall', { tags: ['hr'] })).structuredContent.notes, []);
    for (let id = 0; id <= 3; id++) {
      const theft = await call(bob, 'forget', { note_id: id });
      assert.equal(theft.isError, true, `bob cannot forget note ${id} of alice`);
      assert.equal(theft.structuredContent.code, 'NOTE_NOT_FOUND');
      assert.match(text(theft), new RegExp(`^NOTE_NOT_FOUND: No note ${id}:`));
    }
    const bobs = await call(bob, 'remember', { text: 'bob salary too', tags: ['hr'] });
    assert.equal(bobs.structuredContent.id, 1, 'numbers are per owner: nothing to count');
    assert.equal((await call(bob, 'forget_all', { confirm: true })).structuredContent.deleted, 1);

    const still = await call(alice, 'recall', { query: 'salary', tags: ['HR'] });
    assert.deepEqual(still.structuredContent.notes.map((n) => n.id), [secret.structuredContent.id]);
    assert.equal(still.structuredContent.notes[0].critical, true);
    assert.equal((await call(alice, 'recall', {})).structuredContent.notes.length, 2);
    assert.equal((await call(alice, 'forget', { note_id: secret.structuredContent.id })).structuredContent.deleted, true);
    assert.equal((await call(alice, 'forget_all', { confirm: true })).structuredContent.deleted, 1);
    assert.deepEqual((await call(alice, 'recall', {})).structuredContent.notes, []);
  } finally {
    await alice?.close();
    await bob?.close();
    await host.stop();
    await as.stop();
  }
});

test('two principals over HTTP never reach each other\'s gate sessions', async () => {
  const as = await AuthorizationServer.start({ clients });
  const host = await HttpHost.start({
    gate: true,
    plugins: [familyPlugin('session'), 'gated.so'],
    sections: {
      auth: jwtAuth(as),
      session: (dir) => {
        writeFileSync(path.join(dir, 'program.json'), JSON.stringify({ running: true, store: 'shop', user: 'ann', updated: '2026-11-30T10:00:00Z' }));
        writeFileSync(path.join(dir, 'grants.yaml'), 'grants:\n  shop:\n    ann: [orders.read]\n');
        return { backend: 'sqlite', program_state_file: path.join(dir, 'program.json'), grants_file: path.join(dir, 'grants.yaml') };
      },
    },
  });
  let alice, bob;
  try {
    alice = await connect(host, as, 'alice-app');
    bob = await connect(host, as, 'bob-app');
    const session = (await alice.callTool({ name: 'session_connect', arguments: { topic: 'orders' } })).structuredContent.session;
    assert.ok(session);
    const stolen = await bob.callTool({ name: 'count', arguments: { session } });
    assert.equal(stolen.structuredContent?.code, 'NOT_CONNECTED', 'alice\'s handle is no session of bob\'s');
    const own = await alice.callTool({ name: 'count', arguments: { session } });
    assert.notEqual(own.structuredContent?.code, 'NOT_CONNECTED');

    // The same topic is another folder for bob, and his session_clear lists
    // and deletes his own folders only.
    const alices = (await alice.callTool({ name: 'session_connect', arguments: { topic: 'orders' } })).structuredContent;
    const bobs = (await bob.callTool({ name: 'session_connect', arguments: { topic: 'orders' } })).structuredContent;
    await alice.callTool({ name: 'session_connect', arguments: { topic: 'payroll' } });
    assert.notEqual(alices.folder, bobs.folder);
    const listed = (await bob.callTool({ name: 'session_clear', arguments: { session: bobs.session } })).structuredContent;
    assert.deepEqual(listed.folders.map((f) => f.name), ['orders']);
    const cleared = (await bob.callTool({ name: 'session_clear', arguments: { session: bobs.session, delete: ['payroll', 'orders'] } }))
      .structuredContent;
    assert.deepEqual(cleared.deleted, ['orders']);
    assert.deepEqual(cleared.refused, [{ name: 'payroll', reason: 'no such conversation folder' }]);
    const hers = (await alice.callTool({ name: 'session_clear', arguments: { session: alices.session } })).structuredContent;
    assert.deepEqual(hers.folders.map((f) => f.name).sort(), ['orders', 'payroll']);
  } finally {
    await alice?.close();
    await bob?.close();
    await host.stop();
    await as.stop();
  }
});

test('two token subjects over HTTP never reach each other\'s bot sessions', async () => {
  const as = await AuthorizationServer.start({ clients });
  const host = await HttpHost.start({
    gate: true,
    plugins: [familyPlugin('session'), familyPlugin('sessions')],
    sections: {
      auth: jwtAuth(as),
      domains: { sessions: { settings: { bots: [{ slug: 'shop-bot', name: 'Shop Bot', user_seq_id: 42 }] } } },
      session: () => ({ backend: 'memory', pinned: { store: 'shop', user: 'ann' }, grants: { shop: { ann: ['sessions'] } } }),
    },
  });
  let alice, bob;
  const code = (r) => (r.isError ? r.content?.[0]?.text?.split(':')[0] : undefined);
  try {
    alice = await connect(host, as, 'alice-app');
    bob = await connect(host, as, 'bob-app');
    const open = async (client) => (await client.callTool({ name: 'session_connect', arguments: { topic: 'bots' } })).structuredContent.session;
    const aliceSession = await open(alice);
    const bobSession = await open(bob);
    const created = await alice.callTool({ name: 'create_session', arguments: { session: aliceSession, type: 'LOGIN' } });
    assert.equal(created.isError, undefined, JSON.stringify(created));
    const id = created.structuredContent.session_id;
    const mine = await alice.callTool({ name: 'get_session_status', arguments: { session: aliceSession, session_id: id } });
    assert.equal(mine.structuredContent.state, 'pending');
    const theirs = await bob.callTool({ name: 'get_session_status', arguments: { session: bobSession, session_id: id } });
    assert.equal(code(theirs), 'SESSION_UNKNOWN', 'alice\'s bot session is unknown to bob');
  } finally {
    await alice?.close();
    await bob?.close();
    await host.stop();
    await as.stop();
  }
});
