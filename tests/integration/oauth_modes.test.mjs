// The other ways of saying who calls over HTTP: opaque tokens through RFC 7662
// introspection, static API keys stored hashed — each its own mode, neither
// accepting what the other would — and what a host listening beyond
// loopback does without an auth section.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { HttpHost } from './lib/http_host.mjs';
import { binaryPath, writeConfig } from './lib/host.mjs';
import { AuthorizationServer, sha256Hex, tokenOwnerKey } from './lib/authorization_server.mjs';

const bearer = (token) => ({ Authorization: `Bearer ${token}` });
const whoami = (host, headers) => host.modern('tools/call', { name: 'whoami', arguments: {} }, { headers });
const errorOf = (reply) => /error="([^"]*)"/.exec(reply.headers.get('www-authenticate') ?? '')?.[1];

// An authorization server that answers introspection for the client
// gatehouse-rs (`secret`), and a host in introspection mode asking it, with
// the `extra` auth settings.
async function introspectionScene(secret, extra = {}) {
  const as = await AuthorizationServer.start({ tokens: 'opaque' });
  as.introspectionClients['gatehouse-rs'] = secret;
  const host = await HttpHost.start({
    plugins: ['echo.so'],
    sections: {
      auth: {
        mode: 'introspection',
        issuers: [as.issuer],
        introspection_endpoint: `${as.issuer}/introspect`,
        client_id: 'gatehouse-rs',
        client_secret: secret,
        ...extra,
      },
    },
  });
  return { as, host };
}

test('introspection mode: active opaque tokens are served and cached, anything else is refused', async () => {
  const { as, host } = await introspectionScene('rs secret/with:odd&chars', { introspection_cache_s: 60, fetch_timeout_ms: 1000 });
  try {
    const opaque = as.mintOpaque({ aud: host.url, sub: 'carol', client_id: 'desk', scope: 'notes' });
    const first = await whoami(host, bearer(opaque));
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.answer.result.structuredContent.principal, {
      subject: 'carol',
      kind: 'token',
      owner: tokenOwnerKey(as.issuer, 'carol'),
      issuer: as.issuer,
      client_id: 'desk',
      scopes: ['notes'],
    });
    assert.equal(as.count('POST /introspect'), 1);
    assert.equal((await whoami(host, bearer(opaque))).status, 200);
    assert.equal(as.count('POST /introspect'), 1, 'an active answer is cached');

    assert.equal((await whoami(host, bearer('not-a-known-token'))).status, 401);
    assert.equal(errorOf(await whoami(host, bearer('not-a-known-token'))), 'invalid_token');
    const other = as.mintOpaque({ aud: 'http://127.0.0.1:9/mcp' });
    assert.equal((await whoami(host, bearer(other))).status, 401, 'a token for another resource');
    const foreign = as.mintOpaque({ aud: host.url, iss: 'http://127.0.0.1:1/elsewhere' });
    assert.equal((await whoami(host, bearer(foreign))).status, 401, 'a token of an issuer not configured');
    const jwt = as.mint({ aud: host.url });
    assert.equal((await whoami(host, bearer(jwt))).status, 401, 'a JWT is no opaque token the server knows: no fallback');

    // A name for people is no subject: it may later be someone else's.
    const nameOnly = as.mintOpaque({ aud: host.url, sub: undefined, username: 'dave' });
    const byName = await whoami(host, bearer(nameOnly));
    assert.equal(byName.status, 401, byName.text);

    await as.stop();
    assert.equal((await whoami(host, bearer(opaque))).status, 200, 'cached while the server is down');
    const unseen = await whoami(host, bearer(as.mintOpaque({ aud: host.url })));
    assert.equal(unseen.status, 503, 'a token that cannot be checked is not waved through');
    assert.ok(!host.stderr.includes(opaque), 'no token in the log');
  } finally {
    await host.stop();
    await as.stop().catch(() => {});
  }
});

test('introspection: a username names the caller only where the operator says the server keeps usernames for good', async () => {
  const { as, host } = await introspectionScene('rs-secret', { introspection_username_as_subject: true });
  try {
    const nameOnly = as.mintOpaque({ aud: host.url, sub: undefined, username: 'dave' });
    const answer = await whoami(host, bearer(nameOnly));
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.answer.result.structuredContent.principal.subject, 'dave');
  } finally {
    await host.stop();
    await as.stop().catch(() => {});
  }
});

test('api_keys mode: a listed key is its principal; the YAML holds only hashes', async () => {
  const key = randomBytes(24).toString('base64url');
  const host = await HttpHost.start({
    plugins: ['echo.so', 'ledger.so'],
    sections: { auth: { mode: 'api_keys', api_keys: [{ sha256: sha256Hex(key), subject: 'build-bot', client_id: 'ci', scopes: ['ledger:read'] }] } },
  });
  try {
    const ok = await whoami(host, bearer(key));
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(ok.answer.result.structuredContent.principal, {
      subject: 'build-bot',
      kind: 'token',
      owner: 'token::build-bot', // an API key has no issuer
      issuer: '',
      client_id: 'ci',
      scopes: ['ledger:read'],
    });
    assert.equal((await host.modern('tools/call', { name: 'ledger_balance', arguments: {} }, { headers: bearer(key) })).status, 200);
    assert.equal((await whoami(host, bearer(key + 'x'))).status, 401);
    assert.equal((await whoami(host, {})).status, 401);
    const metadata = await (await fetch(`${host.origin}/.well-known/oauth-protected-resource/mcp`)).json();
    assert.equal(metadata.resource, host.url);
    assert.deepEqual(metadata.authorization_servers, []);
  } finally {
    await host.stop();
  }
});

test('a bad auth section is refused naming file:line', () => {
  const { file } = writeConfig({ sections: { auth: { mode: 'api_keys', api_keys: [{ sha256: 'plain-key', subject: 'x' }] } } });
  const run = spawnSync(binaryPath(), ['check-config', file], { encoding: 'utf8' });
  assert.notEqual(run.status, 0);
  assert.match(run.stderr + run.stdout, /gatehouse\.yaml:\d+:\d+.*auth\.api_keys\[\]\.sha256 must be 64 hex digits/);
  const jwt = writeConfig({ sections: { auth: { mode: 'jwt' } } });
  const noIssuer = spawnSync(binaryPath(), ['check-config', jwt.file], { encoding: 'utf8' });
  assert.notEqual(noIssuer.status, 0);
  assert.match(noIssuer.stderr + noIssuer.stdout, /auth\.mode jwt needs auth\.issuers/);
  const stale = writeConfig({
    sections: { auth: { mode: 'jwt', issuers: ['https://as.example'], jwks_refresh_interval_s: 600, jwks_max_stale_s: 300 } },
  });
  const staleRun = spawnSync(binaryPath(), ['check-config', stale.file], { encoding: 'utf8' });
  assert.notEqual(staleRun.status, 0);
  assert.match(
    staleRun.stderr + staleRun.stdout,
    /gatehouse\.yaml:\d+:\d+.*auth\.jwks_max_stale_s \(300\) must be at least twice auth\.jwks_refresh_interval_s \(600\)/,
  );
});

test('beyond loopback without an auth section the host refuses to start; auth.mode none is an explicit choice', async () => {
  const { file } = writeConfig({ plugins: ['echo.so'], http: { listen: '0.0.0.0:0' } });
  const refused = spawnSync(binaryPath(), ['serve', '--config', file, '--transport', 'http'], { encoding: 'utf8', timeout: 20000 });
  assert.equal(refused.status, 1);
  assert.match(refused.stderr, /reaches beyond this machine, and no auth section says who may call/);

  const open = await HttpHost.start({ plugins: ['echo.so'], http: { listen: '0.0.0.0:0', allowed_hosts: ['0.0.0.0'] }, sections: { auth: { mode: 'none' } } });
  try {
    await open.stderrMatching(/auth\.mode none: every caller is served as the local principal/);
    const reply = await whoami(open, {});
    assert.equal(reply.status, 200);
    assert.equal(reply.answer.result.structuredContent.principal.kind, 'local');
  } finally {
    await open.stop();
  }
});

test('introspection: a refused token is not asked about twice, and one address gets a bounded number of calls', async () => {
  const { as, host } = await introspectionScene('secret', { introspection_calls_per_address_per_minute: 4 });
  try {
    const opaque = as.mintOpaque({ aud: host.url, sub: 'carol' });
    assert.equal((await whoami(host, bearer(opaque))).status, 200);
    const madeUp = () => randomBytes(18).toString('base64url');
    const once = madeUp();
    assert.equal((await whoami(host, bearer(once))).status, 401);
    assert.equal((await whoami(host, bearer(once))).status, 401);
    assert.equal(as.count('POST /introspect'), 2, 'the refusal is remembered');
    const noAud = as.mintOpaque({ aud: undefined });
    assert.equal((await whoami(host, bearer(noAud))).status, 401, 'an answer without aud is refused');
    assert.equal((await whoami(host, bearer(madeUp()))).status, 401);
    assert.equal(as.count('POST /introspect'), 4);

    const throttled = await whoami(host, bearer(madeUp()));
    assert.equal(throttled.status, 429, throttled.text);
    assert.ok(Number(throttled.headers.get('retry-after')) >= 1);
    assert.match(throttled.messages[0].error.message, /too many unknown tokens/);
    assert.equal(as.count('POST /introspect'), 4, 'no call beyond the address\'s share');
    assert.equal((await whoami(host, bearer(opaque))).status, 200, 'a remembered token is still served');
  } finally {
    await host.stop();
    await as.stop();
  }
});
