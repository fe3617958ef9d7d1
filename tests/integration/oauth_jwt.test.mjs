// The host as an OAuth 2.1 resource server with JWT access tokens, against a
// real authorization server on loopback (lib/authorization_server.mjs):
// protected resource metadata, every way a token can be wrong, key rotation,
// a slow or stopped authorization server, insufficient scope and step-up,
// and 2025-11-25 sessions bound to their principal.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { HttpHost, LEGACY } from './lib/http_host.mjs';
import { AuthorizationServer, tokenOwnerKey } from './lib/authorization_server.mjs';

let as;
let host;
const bearer = (token) => ({ Authorization: `Bearer ${token}` });
const now = () => Math.floor(Date.now() / 1000);

before(async () => {
  as = await AuthorizationServer.start();
  host = await HttpHost.start({
    plugins: ['echo.so', 'ledger.so'],
    sections: {
      auth: {
        mode: 'jwt',
        issuers: [as.issuer],
        scopes_supported: ['notes', 'ledger:read'],
        clock_skew_s: 5,
        fetch_timeout_ms: 1500,
        jwks_min_refresh_s: 1,
      },
    },
  });
});

after(async () => {
  await host.stop();
  await as.stop().catch(() => {});
});

const token = (claims = {}, opts = {}) => as.mint({ aud: host.url, scope: 'notes', ...claims }, opts);
const whoami = (headers) => host.modern('tools/call', { name: 'whoami', arguments: {} }, { headers });

function challenge(reply) {
  const header = reply.headers.get('www-authenticate') ?? '';
  const params = {};
  for (const m of header.matchAll(/(\w+)="([^"]*)"/g)) params[m[1]] = m[2];
  return { header, ...params };
}

test('no token: 401 naming the protected resource metadata, which describes this server', async () => {
  const reply = await whoami({});
  assert.equal(reply.status, 401);
  const c = challenge(reply);
  assert.match(c.header, /^Bearer /);
  assert.equal(c.error, undefined, 'a request without a token gets no error code (RFC 6750 §3.1)');
  assert.equal(c.scope, 'notes ledger:read');
  assert.equal(c.resource_metadata, `${host.origin}/.well-known/oauth-protected-resource/mcp`);

  for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
    const metadata = await fetch(host.origin + path);
    assert.equal(metadata.status, 200, path);
    assert.deepEqual(await metadata.json(), {
      resource: host.url,
      authorization_servers: [as.issuer],
      bearer_methods_supported: ['header'],
      scopes_supported: ['notes', 'ledger:read'],
      resource_signing_alg_values_supported: ['RS256', 'ES256', 'EdDSA'],
    });
  }
  assert.equal((await fetch(host.origin + '/health')).status, 200, '/health needs no token');
  const get = await fetch(host.url, { headers: { 'Mcp-Session-Id': 'x' } });
  assert.equal(get.status, 401, 'GET on the endpoint needs a token too');
});

test('RS256, ES256 and EdDSA tokens are accepted; the plugin sees the principal, never the token', async () => {
  const kids = [...as.keys.entries()].filter(([kid]) => as.published.has(kid));
  assert.deepEqual(kids.map(([, k]) => k.alg).sort(), ['ES256', 'EdDSA', 'RS256']);
  for (const [kid, key] of kids) {
    const t = token({ sub: `user-${key.alg}`, scope: 'notes ledger:read' }, { kid });
    const reply = await whoami(bearer(t));
    assert.equal(reply.status, 200, `${key.alg}: ${reply.text}`);
    const ctx = reply.answer.result.structuredContent;
    assert.deepEqual(ctx.principal, {
      subject: `user-${key.alg}`,
      kind: 'token',
      issuer: as.issuer,
      owner: tokenOwnerKey(as.issuer, `user-${key.alg}`),
      client_id: 'itest-client',
      scopes: ['notes', 'ledger:read'],
    });
    assert.ok(!reply.text.includes(t.split('.')[2]), 'the token is not in the answer');
  }
  assert.ok(!host.stderr.includes(token().split('.')[0] + '.'), 'no token in the log');
});

test('a forged signature, a foreign issuer, another resource, expired, not yet valid: 401 invalid_token', async () => {
  const es = [...as.keys.entries()].find(([, k]) => k.alg === 'ES256')[0];
  const cases = {
    'bad signature': token({}, { signWith: as.addKey('RS256', { publish: false }) }),
    'bad ES256 signature': token({}, { kid: es, signWith: as.addKey('ES256', { publish: false }) }),
    'wrong issuer': token({ iss: 'http://127.0.0.1:1/other-issuer' }),
    'wrong audience': token({ aud: 'http://127.0.0.1:9/mcp' }),
    'no audience': token({ aud: undefined }),
    expired: token({ exp: now() - 60 }),
    'not yet valid': token({ nbf: now() + 60 }),
    'not a JWT': 'abc.def',
    'alg none': `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ iss: as.issuer, aud: host.url, sub: 'x', exp: now() + 60 })).toString('base64url')}.`,
  };
  for (const [name, t] of Object.entries(cases)) {
    const reply = await whoami(bearer(t));
    assert.equal(reply.status, 401, `${name}: ${reply.status} ${reply.text}`);
    const c = challenge(reply);
    assert.equal(c.error, 'invalid_token', name);
    assert.ok(c.resource_metadata, name);
  }
  // Inside the skew the token still holds.
  assert.equal((await whoami(bearer(token({ exp: now() - 2 })))).status, 200);
  assert.equal((await whoami(bearer(token({ nbf: now() + 2 })))).status, 200);
});

test('a token in the query string, or a header that is not Bearer, is refused with invalid_request', async () => {
  const message = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {}, _meta: {} } };
  const inQuery = await host.post(message, { path: `/mcp?access_token=${token()}` });
  assert.equal(inQuery.status, 400);
  assert.equal(challenge(inQuery).error, 'invalid_request');
  const basic = await whoami({ Authorization: 'Basic YTpi' });
  assert.equal(basic.status, 400);
  assert.equal(challenge(basic).error, 'invalid_request');
});

test('an unknown kid re-reads the JWK Set (rate-limited) and accepts the key once published', async () => {
  await new Promise((r) => setTimeout(r, 1100)); // past jwks_min_refresh_s since the last read
  const kid = as.addKey('EdDSA', { publish: false });
  const before = as.count('GET /jwks');
  const first = await whoami(bearer(token({}, { kid })));
  assert.equal(first.status, 401);
  assert.equal(as.count('GET /jwks'), before + 1, 'one re-read for the unknown kid');
  const again = await whoami(bearer(token({}, { kid })));
  assert.equal(again.status, 401);
  assert.equal(as.count('GET /jwks'), before + 1, 'no second re-read within jwks_min_refresh_s');

  as.publish(kid); // rotation: the authorization server starts signing with a new key
  await new Promise((r) => setTimeout(r, 1100));
  const rotated = await whoami(bearer(token({ sub: 'rotated' }, { kid })));
  assert.equal(rotated.status, 200, rotated.text);
  assert.equal(rotated.answer.result.structuredContent.principal.subject, 'rotated');
  assert.equal(as.count('GET /jwks'), before + 2);
});

test('a slow authorization server never stalls tokens with known keys', async () => {
  as.delayMs = 1400;
  await new Promise((r) => setTimeout(r, 1100)); // past the re-read limit
  const unknown = whoami(bearer(token({}, { kid: as.addKey('RS256', { publish: false }) })));
  await new Promise((r) => setTimeout(r, 100)); // the re-read is under way
  const started = Date.now();
  const known = await whoami(bearer(token()));
  const took = Date.now() - started;
  assert.equal(known.status, 200);
  assert.ok(took < 1000, `a known-key token waited ${took} ms behind the slow authorization server`);
  assert.equal((await unknown).status, 401);
  as.delayMs = 0;
});

test('an authorization server slower than fetch_timeout_ms: the unknown kid gets 503 at the timeout', async () => {
  as.delayMs = 4000;
  try {
    await new Promise((r) => setTimeout(r, 1100)); // past the re-read limit
    const started = Date.now();
    const unknown = await whoami(bearer(token({}, { kid: as.addKey('EdDSA', { publish: false }) })));
    const took = Date.now() - started;
    assert.equal(unknown.status, 503, unknown.text);
    assert.ok(took >= 1400 && took < 3500, `answered after ${took} ms; the timeout is 1500 ms`);
  } finally {
    as.delayMs = 0;
  }
});

test('the authorization server down: cached keys keep working, an unknown kid is 503 within the timeout', async () => {
  await as.stop();
  try {
    const known = await whoami(bearer(token({ sub: 'cached' })));
    assert.equal(known.status, 200, known.text);
    assert.equal(known.answer.result.structuredContent.principal.subject, 'cached');
    await new Promise((r) => setTimeout(r, 1100));
    const started = Date.now();
    const unknown = await whoami(bearer(token({}, { kid: as.addKey('ES256', { publish: false }) })));
    assert.equal(unknown.status, 503, unknown.text);
    assert.ok(unknown.headers.get('retry-after'));
    assert.ok(Date.now() - started < 3000);
  } finally {
    await as.restart();
  }
});

test('insufficient scope: 403 with the scopes to ask for; a token with them is served', async () => {
  const narrow = await host.modern('tools/call', { name: 'ledger_balance', arguments: {} }, { headers: bearer(token({ scope: 'notes' })) });
  assert.equal(narrow.status, 403, narrow.text);
  const c = challenge(narrow);
  assert.equal(c.error, 'insufficient_scope');
  assert.equal(c.scope, 'notes ledger:read');
  assert.ok(c.resource_metadata);
  assert.match(narrow.answer.error.message, /needs the scope 'ledger:read'/);

  const stepped = await host.modern('tools/call', { name: 'ledger_balance', arguments: {} }, { headers: bearer(token({ scope: c.scope })) });
  assert.equal(stepped.status, 200, stepped.text);
  assert.equal(stepped.answer.result.structuredContent.balance, 100);
  // Tools with no scope need none.
  assert.equal((await host.modern('tools/call', { name: 'ledger_close', arguments: {} }, { headers: bearer(token({ scope: undefined })) })).status, 200);
});

test('tools/list shows a token only the tools its scopes can call, as its own list (cacheScope private)', async () => {
  const list = async (scope) => {
    const reply = await host.modern('tools/list', {}, { headers: bearer(token({ scope })) });
    assert.equal(reply.status, 200, reply.text);
    return reply.answer.result;
  };
  const narrow = await list('notes');
  const names = narrow.tools.map((t) => t.name);
  assert.ok(!names.includes('ledger_balance'), 'ledger_balance needs ledger:read');
  assert.ok(!names.includes('ledger_refund'), 'ledger_refund needs ledger:write');
  assert.ok(names.includes('ledger_close') && names.includes('echo'), 'tools without a scope stay listed');
  assert.equal(narrow.cacheScope, 'private');
  const wide = await list('notes ledger:read');
  assert.ok(wide.tools.some((t) => t.name === 'ledger_balance'));
  assert.ok(!wide.tools.some((t) => t.name === 'ledger_refund'));
  assert.equal(wide.cacheScope, 'private');
});

test('call_tool meets the same scope check as a direct call: INSUFFICIENT_SCOPE naming the scope, nothing ran', async () => {
  const scoped = await HttpHost.start({
    plugins: ['echo.so', 'ledger.so'],
    sections: {
      auth: { mode: 'jwt', issuers: [as.issuer], scopes_supported: ['notes', 'ledger:read'], fetch_timeout_ms: 1500 },
      domains: { ledger: { exposure: 'on_demand' } },
    },
  });
  try {
    const as_token = (scope) => bearer(as.mint({ aud: scoped.url, scope }));
    const forward = (scope) =>
      scoped.modern('tools/call', { name: 'call_tool', arguments: { name: 'ledger_balance', arguments: {} } }, { headers: as_token(scope) });
    const narrow = await forward('notes');
    assert.equal(narrow.status, 200, narrow.text);
    assert.equal(narrow.answer.result.isError, true, narrow.text);
    assert.equal(narrow.answer.result.structuredContent.code, 'INSUFFICIENT_SCOPE');
    assert.equal(narrow.answer.result.structuredContent.next.scope, 'ledger:read');
    assert.match(narrow.answer.result.structuredContent.message, /needs the scope 'ledger:read'/);
    assert.ok(!narrow.text.includes('"balance"'), 'the tool did not run');
    // The direct call keeps its 403 and challenge.
    const direct = await scoped.modern('tools/call', { name: 'ledger_balance', arguments: {} }, { headers: as_token('notes') });
    assert.equal(direct.status, 403, direct.text);
    assert.equal(challenge(direct).error, 'insufficient_scope');
    const wide = await forward('notes ledger:read');
    assert.equal(wide.answer.result.structuredContent.balance, 100, wide.text);
    // load_domain and list_domains show a token what tools/list would.
    const meta = async (name, args, scope) =>
      (await scoped.modern('tools/call', { name, arguments: args }, { headers: as_token(scope) })).answer.result.structuredContent;
    const loaded = (scope) => meta('load_domain', { domain: 'ledger' }, scope).then((r) => r.tools.map((t) => t.name).sort());
    assert.deepEqual(await loaded('notes'), ['ledger_close']);
    assert.deepEqual(await loaded('notes ledger:read'), ['ledger_balance', 'ledger_close']);
    const ledger = (await meta('list_domains', {}, 'notes')).domains.find((d) => d.domain === 'ledger');
    assert.equal(ledger.tools, 1);
  } finally {
    await scoped.stop();
  }
});

test('a 2025-11-25 session belongs to the principal that opened it', async () => {
  const alice = bearer(token({ sub: 'alice' }));
  const bob = bearer(token({ sub: 'bob' }));
  const init = await host.post(
    { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 't', version: '1' } } },
    { headers: alice },
  );
  assert.equal(init.status, 200, init.text);
  const sid = init.headers.get('mcp-session-id');
  const initialized = await host.post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { headers: { ...alice, 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': LEGACY } });
  assert.equal(initialized.status, 202);
  const inSession = (headers, id) =>
    host.post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'whoami', arguments: {} } }, { headers: { ...headers, 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': LEGACY } });
  const mine = await inSession(alice, 2);
  assert.equal(mine.status, 200);
  assert.equal(mine.messages[0].result.structuredContent.principal.subject, 'alice');
  assert.equal((await inSession(bob, 3)).status, 404, "bob's token with alice's session id");
  const del = await fetch(host.url, { method: 'DELETE', headers: { ...bob, 'Mcp-Session-Id': sid } });
  assert.equal(del.status, 404, 'bob cannot end it either');
  assert.equal((await inSession(alice, 4)).status, 200, 'the session is still alice\'s');
});

test("each request in a 2025-11-25 session is authorised with its own token's scopes, not the opening token's", async () => {
  const broad = bearer(token({ sub: 'alice', scope: 'notes ledger:read' }));
  const narrow = bearer(token({ sub: 'alice', scope: 'notes' }));
  const open = async (headers) => {
    const init = await host.post(
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 't', version: '1' } } },
      { headers },
    );
    assert.equal(init.status, 200, init.text);
    const sid = init.headers.get('mcp-session-id');
    const initialized = await host.post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { headers: { ...headers, 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': LEGACY } });
    assert.equal(initialized.status, 202);
    return sid;
  };
  const inSession = (sid, headers, id, method, params) =>
    host.post({ jsonrpc: '2.0', id, method, params }, { headers: { ...headers, 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': LEGACY } });
  const balance = (sid, headers, id) => inSession(sid, headers, id, 'tools/call', { name: 'ledger_balance', arguments: {} });

  // Opened with the broad token: alice's narrow token is refused what it lacks, as outside a session.
  const wide = await open(broad);
  const refused = await balance(wide, narrow, 2);
  assert.equal(refused.status, 403, refused.text);
  const c = challenge(refused);
  assert.equal(c.error, 'insufficient_scope');
  assert.equal(c.scope, 'notes ledger:read');
  assert.match(refused.messages[0].error.message, /needs the scope 'ledger:read'/);
  assert.ok(!refused.text.includes('"balance"'), 'the tool did not run');
  const who = await inSession(wide, narrow, 3, 'tools/call', { name: 'whoami', arguments: {} });
  assert.deepEqual(who.messages[0].result.structuredContent.principal.scopes, ['notes'], "the call's context names the request's token");
  const listed = await inSession(wide, narrow, 4, 'tools/list', {});
  assert.ok(!listed.messages[0].result.tools.some((t) => t.name === 'ledger_balance'), "tools/list follows the request's token");
  const served = await balance(wide, broad, 5);
  assert.equal(served.status, 200, served.text);
  assert.equal(served.messages[0].result.structuredContent.balance, 100, 'the session itself is unharmed');

  // Opened with the narrow token: the broad one steps up within the session.
  const slim = await open(narrow);
  assert.equal((await balance(slim, narrow, 6)).status, 403);
  const stepped = await balance(slim, broad, 7);
  assert.equal(stepped.status, 200, stepped.text);
  assert.equal(stepped.messages[0].result.structuredContent.balance, 100);
});

test('a JWK Set beyond 1 MiB is not read, whether a Content-Length declares it or it comes in chunks', async () => {
  for (const framing of ['length', 'chunked']) {
    const big = await AuthorizationServer.start();
    big.jwksPadding = 1024 * 1024;
    big.jwksFraming = framing;
    const bigHost = await HttpHost.start({
      plugins: ['echo.so'],
      sections: { auth: { mode: 'jwt', issuers: [big.issuer], fetch_timeout_ms: 1500, jwks_min_refresh_s: 0 } },
    });
    try {
      const call = () => bigHost.modern('tools/call', { name: 'whoami', arguments: {} }, { headers: bearer(big.mint({ aud: bigHost.url })) });
      const refused = await call();
      assert.equal(refused.status, 503, `${framing}: ${refused.text}`);
      await bigHost.stderrMatching(/the JWK Set at \S+ could not be read/);
      // The same keys within the limit are taken: only the size was refused.
      big.jwksPadding = 1024;
      const served = await call();
      assert.equal(served.status, 200, `${framing}: ${served.text}`);
    } finally {
      await bigHost.stop();
      await big.stop();
    }
  }
});

test('a JWT naming a claim twice is refused, whichever value would win', async () => {
  const twice = token({ sub: 'alice' }, { editPayload: (text) => text.replace(/}$/, ',"sub":"admin"}') });
  const reply = await whoami(bearer(twice));
  assert.equal(reply.status, 401, reply.text);
  assert.equal(challenge(reply).error, 'invalid_token');
  assert.match(challenge(reply).error_description, /naming each member once/);
});

test('an issuer whose metadata names another issuer\'s JWK Set gets no keys from it', async () => {
  const first = await AuthorizationServer.start();
  const second = await AuthorizationServer.start();
  second.jwksUri = `${first.issuer}/jwks`;
  const shared = await HttpHost.start({
    plugins: ['echo.so'],
    sections: { auth: { mode: 'jwt', issuers: [first.issuer, second.issuer], fetch_timeout_ms: 1500, jwks_min_refresh_s: 0 } },
  });
  try {
    await shared.stderrMatching(/names the JWK Set \S+, the key source of issuer/);
    const call = (claims) => shared.modern('tools/call', { name: 'whoami', arguments: {} }, { headers: bearer(first.mint({ aud: shared.url, ...claims })) });
    // Whichever issuer read the set first owns it; a token signed with its
    // keys passes under that issuer's name only.
    const asFirst = await call({ iss: first.issuer, sub: 'alice' });
    const asSecond = await call({ iss: second.issuer, sub: 'alice' });
    assert.deepEqual([asFirst.status, asSecond.status].sort(), [200, 503], `${asFirst.text} / ${asSecond.text}`);
  } finally {
    await shared.stop();
    await first.stop();
    await second.stop();
  }
});
