// 2025-11-25 sessions across instances: three gatehouse instances sharing one
// Redis (session.backend: redis), and the v1 SDK client
// (@modelcontextprotocol/sdk, Mcp-Session-Id) whose every HTTP request goes
// to the next instance in turn, as a round-robin proxy without stickiness
// sends them. Its POSTs land anywhere; its GET stream stays where it opened
// and still receives what is caused elsewhere; the answer to an elicitation
// asked on one instance arrives on another; DELETE on one ends the session
// everywhere. With Redis gone, its requests are refused (503, Retry-After,
// STATE_UNAVAILABLE) and /ready says why, until Redis is back; with Redis
// slow, what waits on it holds no I/O thread: /health answers meanwhile.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ElicitRequestSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { randomBytes } from 'node:crypto';
import { HttpHost } from './lib/http_host.mjs';
import { CheckedTransport } from './lib/checked_transport.mjs';
import { sha256Hex } from './lib/authorization_server.mjs';
import { LEGACY, modernMeta } from './lib/host.mjs';
import { Redis } from './lib/redis.mjs';
import { eachSseMessage } from './lib/cluster.mjs';

const INSTANCES = 3;
let redis;
const hosts = [];

before(async () => {
  redis = await Redis.start();
  for (let i = 0; i < INSTANCES; i++)
    hosts.push(
      await HttpHost.start({
        plugins: ['conformance.so'],
        http: { instance_name: `gh-${i + 1}` },
        sections: {
          session: {
            backend: 'redis',
            // 2 s: a Redis command on a loaded machine may take more than a
            // few hundred ms; a stopped Redis (the Redis-down test) fails at once.
            redis: { url: redis.url, key_prefix: 'itest:', command_timeout_ms: 2000, connect_timeout_ms: 300 },
            pinned: { store: 'shop', user: 'ann' },
          },
        },
      }),
    );
});

after(async () => {
  for (const host of hosts) {
    const result = await host.stop();
    assert.equal(result.code, 0, host.stderr.slice(-3000));
  }
  await redis.close();
});

// A fetch that sends each request to the next instance, and remembers who
// answered (Gatehouse-Instance).
function roundRobin() {
  let next = 0;
  const answered = [];
  const fetchNext = async (url, init) => {
    const target = new URL(url);
    const host = hosts[next++ % hosts.length];
    const real = new URL(host.url);
    target.host = real.host;
    const response = await fetch(target, init);
    answered.push({ method: init?.method ?? 'GET', instance: response.headers.get('gatehouse-instance'), status: response.status });
    return response;
  };
  return { fetch: fetchNext, answered };
}

function waitFor(predicate, what, ms = 5000) {
  const deadline = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const tick = () => {
      if (predicate()) return resolve();
      if (Date.now() > deadline) return reject(new Error(`timed out waiting for ${what}`));
      setTimeout(tick, 20);
    };
    tick();
  });
}

test('a 2025-11-25 session served round-robin by three instances: POSTs anywhere, one GET stream, notifications and elicitation across', async () => {
  const { fetch, answered } = roundRobin();
  const transport = new CheckedTransport(new StreamableHTTPClientTransport(new URL(hosts[0].url), { fetch }));
  const client = new Client({ name: 'itest-v1-shared', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  const updates = [];
  const toolChanges = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updates.push(n.params.uri));
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => toolChanges.push(1));
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { username: 'ann', email: 'ann@example.com' } }));
  try {
    await client.connect(transport);
    const init = transport.received.find((m) => m.id === transport.sent[0].id);
    assert.equal(init.result.protocolVersion, LEGACY);
    await waitFor(() => answered.some((a) => a.method === 'GET' && a.status === 200), 'the GET stream');
    const streamOn = answered.find((a) => a.method === 'GET').instance;

    await client.setLoggingLevel('debug');
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'test_touch_watched_resource'));

    // Subscribed through one instance, touched through another: the update
    // reaches the stream held by a third.
    await client.subscribeResource({ uri: 'test://watched-resource' });
    const touched = await client.callTool({ name: 'test_touch_watched_resource', arguments: {} });
    assert.equal(touched.isError ?? false, false, JSON.stringify(touched));
    await waitFor(() => updates.includes('test://watched-resource'), 'notifications/resources/updated on the GET stream');

    await client.callTool({ name: 'test_trigger_tool_change', arguments: {} });
    await waitFor(() => toolChanges.length > 0, 'notifications/tools/list_changed on the GET stream');

    // The elicitation goes out on the call's own stream; the client's answer
    // is a POST that the round robin sends to another instance.
    const elicited = await client.callTool({ name: 'test_elicitation', arguments: { message: 'Who are you?' } });
    assert.equal(elicited.isError ?? false, false, JSON.stringify(elicited));
    assert.match(elicited.content[0].text, /accept/);

    const instances = new Set(answered.filter((a) => a.method === 'POST').map((a) => a.instance));
    assert.equal(instances.size, INSTANCES, `POSTs landed on every instance: ${JSON.stringify(answered)}`);
    assert.ok(streamOn, 'the GET stream names its instance');

    // After an unsubscribe (anywhere), no more updates for the resource.
    await client.unsubscribeResource({ uri: 'test://watched-resource' });
    const before = updates.length;
    await client.callTool({ name: 'test_touch_watched_resource', arguments: {} });
    await client.listTools(); // a round trip after the touch, through the bus's order
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(updates.length, before, 'no update after unsubscribing');

    // DELETE on one instance ends the session on all of them.
    const sessionId = transport.inner.sessionId;
    await transport.inner.terminateSession();
    for (const host of hosts) {
      const res = await globalThis.fetch(host.url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': LEGACY },
        body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/list' }),
      });
      assert.equal(res.status, 404, `instance ${res.headers.get('gatehouse-instance')} no longer knows the session`);
    }
  } finally {
    await client.close().catch(() => {});
  }
  assert.deepEqual(transport.problems, [], 'every message the hosts sent fits the schema');
});

// A 2025-11-25 request POSTed to `host` in `sessionId`, its SSE answer read
// as it comes: until(predicate, ms) resolves with the first message not yet
// taken that matches, or with 'waiting' when none came within `ms`.
async function streamedLegacyCall(host, sessionId, message) {
  const response = await globalThis.fetch(host.url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': LEGACY },
    body: JSON.stringify(message),
  });
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type'), /^text\/event-stream/);
  const messages = [];
  let wake = () => {};
  eachSseMessage(response, (m) => {
    host.check(m, message);
    messages.push(m);
    wake();
  });
  return {
    until: (predicate, ms = 15000) =>
      new Promise((resolve) => {
        const timer = setTimeout(() => {
          wake = () => {};
          resolve('waiting');
        }, ms);
        const take = () => {
          const at = messages.findIndex(predicate);
          if (at < 0) return;
          clearTimeout(timer);
          wake = () => {};
          resolve(messages.splice(at, 1)[0]);
        };
        wake = take;
        take();
      }),
  };
}

// One more instance on this file's Redis, under a key prefix of its own.
function redisInstance({ prefix, commandTimeoutMs = 2000, sections = {}, ...options }) {
  return HttpHost.start({
    plugins: ['conformance.so'],
    ...options,
    sections: {
      ...sections,
      session: {
        backend: 'redis',
        redis: { url: redis.url, key_prefix: prefix, command_timeout_ms: commandTimeoutMs, connect_timeout_ms: 300 },
        pinned: { store: 'shop', user: 'ann' },
      },
    },
  });
}

const isElicitation = (m) => m.method === 'elicitation/create';
const isAnswer = (m) => !Object.hasOwn(m, 'method') && Object.hasOwn(m, 'id');

test('two elicitations of one session on two instances: each answer completes only the call that asked it', async () => {
  const { sessionId } = await hosts[0].initialize({ elicitation: {} });
  const answer = (host, id, username) =>
    globalThis.fetch(host.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': LEGACY },
      body: JSON.stringify({ jsonrpc: '2.0', id, result: { action: 'accept', content: { username, email: `${username}@example.com` } } }),
    });
  const call = (host, id, question) =>
    streamedLegacyCall(host, sessionId, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'test_elicitation', arguments: { message: question } } });
  try {
    // Two actions of one session at the same time, each on its own instance,
    // each asking the person's consent.
    const callA = await call(hosts[0], 'call-a', 'Consent to action A?');
    const callB = await call(hosts[1], 'call-b', 'Consent to action B?');
    const askedA = await callA.until(isElicitation);
    const askedB = await callB.until(isElicitation);
    assert.equal(askedA.method, 'elicitation/create', JSON.stringify(askedA));
    assert.equal(askedB.method, 'elicitation/create', JSON.stringify(askedB));
    assert.equal(askedA.params.message, 'Consent to action A?');
    assert.equal(askedB.params.message, 'Consent to action B?');
    assert.notDeepEqual(askedA.id, askedB.id, 'the two questions carry different ids');

    // Only B's question is answered, through the instance where A waits.
    assert.equal((await answer(hosts[0], askedB.id, 'bob')).status, 202);
    const doneB = await callB.until(isAnswer);
    assert.equal(doneB.id, 'call-b', JSON.stringify(doneB));
    assert.match(doneB.result.content[0].text, /bob/);
    assert.equal(await callA.until(isAnswer, 700), 'waiting', 'B\'s answer does not complete A');

    // Then A's, through the instance where B ran.
    assert.equal((await answer(hosts[1], askedA.id, 'ann')).status, 202);
    const doneA = await callA.until(isAnswer);
    assert.equal(doneA.id, 'call-a', JSON.stringify(doneA));
    assert.match(doneA.result.content[0].text, /ann/);
    assert.doesNotMatch(doneA.result.content[0].text, /bob/);
  } finally {
    await globalThis.fetch(hosts[2].url, { method: 'DELETE', headers: { 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': LEGACY } });
  }
  for (const host of hosts) assert.deepEqual(host.problems, [], 'every message the hosts sent fits the schema');
});

test('calls that wait for their elicitations fill every worker: the answers still reach them', async () => {
  // Two workers, both taken by calls waiting on the client: its answers are
  // shared-session work (found and relayed through Redis), which must not
  // need one of those workers.
  const host = await redisInstance({ prefix: 'itest-full:', limits: { workers: 2 } });
  try {
    const { sessionId } = await host.initialize({ elicitation: {} });
    const calls = [];
    for (const name of ['a', 'b'])
      calls.push(await streamedLegacyCall(host, sessionId, {
        jsonrpc: '2.0', id: `call-${name}`, method: 'tools/call',
        params: { name: 'test_elicitation', arguments: { message: `Consent to ${name}?` } },
      }));
    const asked = [];
    for (const call of calls) asked.push(await call.until(isElicitation));
    for (const [i, question] of asked.entries()) {
      const answered = await globalThis.fetch(host.url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': LEGACY },
        body: JSON.stringify({ jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { username: `user${i}`, email: `user${i}@example.com` } } }),
        signal: AbortSignal.timeout(5000),
      }).catch((e) => assert.fail(`the answer to elicitation ${i} was not taken (${e.name}): it waits for a worker the calls hold`));
      assert.equal(answered.status, 202);
    }
    for (const [i, call] of calls.entries()) {
      const done = await call.until(isAnswer, 8000);
      assert.notEqual(done, 'waiting', `call ${i} got no answer: its elicitation's answer did not reach it`);
      assert.match(done.result.content[0].text, new RegExp(`user${i}`), JSON.stringify(done));
    }
    assert.deepEqual(host.problems, [], 'every message the host sent fits the schema');
  } finally {
    const result = await host.stop();
    assert.equal(result.code, 0, host.stderr.slice(-3000));
  }
});

test('a session of one principal is not found by another on any instance', async () => {
  const { fetch } = roundRobin();
  const transport = new StreamableHTTPClientTransport(new URL(hosts[0].url), { fetch });
  const client = new Client({ name: 'itest-v1-owner', version: '1.0.0' });
  await client.connect(transport);
  const sessionId = transport.sessionId;
  // The record names its owner; a key that is not a session id finds nothing.
  const keys = redis.cli('--scan', '--pattern', 'itest:legacy-session/*');
  assert.ok(keys.includes(sessionId), 'the record is in Redis under the prefix');
  const record = JSON.parse(redis.cli('GET', `itest:legacy-session/${sessionId}`));
  assert.equal(record.handshake.initialized, true);
  assert.ok(Number(redis.cli('PTTL', `itest:legacy-session/${sessionId}`)) > 0, 'the record expires by itself');
  await transport.terminateSession();
  await client.close();
});

test("every instance authorises a shared session's request with that request's own key, not the one its copy was made with", async () => {
  const broadKey = randomBytes(24).toString('base64url');
  const narrowKey = randomBytes(24).toString('base64url');
  const scoped = [];
  try {
    for (let i = 0; i < 2; i++)
      scoped.push(
        await HttpHost.start({
          plugins: ['ledger.so'],
          http: { instance_name: `scoped-${i + 1}` },
          sections: {
            auth: {
              mode: 'api_keys',
              api_keys: [
                { sha256: sha256Hex(broadKey), subject: 'alice', client_id: 'desk', scopes: ['ledger:read'] },
                { sha256: sha256Hex(narrowKey), subject: 'alice', client_id: 'phone', scopes: [] },
              ],
            },
            session: {
              backend: 'redis',
              redis: { url: redis.url, key_prefix: 'itest-scoped:', command_timeout_ms: 2000, connect_timeout_ms: 300 },
              pinned: { store: 'shop', user: 'ann' },
            },
          },
        }),
      );
    const broad = { Authorization: `Bearer ${broadKey}` };
    const narrow = { Authorization: `Bearer ${narrowKey}` };
    let id = 1;
    const open = async (headers) => {
      const init = await scoped[0].post(
        { jsonrpc: '2.0', id: id++, method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 't', version: '1' } } },
        { headers },
      );
      assert.equal(init.status, 200, init.text);
      return init.headers.get('mcp-session-id');
    };
    const balance = (host, sid, headers) =>
      host.post(
        { jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name: 'ledger_balance', arguments: {} } },
        { headers: { ...headers, 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': LEGACY } },
      );

    // Opened with the broad key on one instance; the other makes its copy
    // from a broad request, then meets the narrow key of the same subject.
    const wide = await open(broad);
    assert.equal((await balance(scoped[1], wide, broad)).status, 200);
    for (const host of scoped) {
      const refused = await balance(host, wide, narrow);
      assert.equal(refused.status, 403, refused.text);
      assert.match(refused.headers.get('www-authenticate') ?? '', /error="insufficient_scope"/);
      assert.ok(!refused.text.includes('"balance"'), 'the tool did not run');
    }

    // Opened with the narrow key; the broad one steps up on either instance.
    const slim = await open(narrow);
    assert.equal((await balance(scoped[1], slim, narrow)).status, 403);
    for (const host of scoped) {
      const stepped = await balance(host, slim, broad);
      assert.equal(stepped.status, 200, stepped.text);
      assert.equal(stepped.messages[0].result.structuredContent.balance, 100);
    }
  } finally {
    for (const host of scoped) await host.stop();
  }
});

test('Redis down: session requests get 503 STATE_UNAVAILABLE with Retry-After, /ready says why; Redis back: served again', async () => {
  const { fetch } = roundRobin();
  const transport = new StreamableHTTPClientTransport(new URL(hosts[0].url), { fetch });
  const client = new Client({ name: 'itest-v1-faults', version: '1.0.0' });
  await client.connect(transport);
  const sessionId = transport.sessionId;
  await client.close(); // keeps the session: no DELETE
  for (const host of hosts) {
    const ready = await globalThis.fetch(host.origin + '/ready');
    assert.equal(ready.status, 200, await ready.text());
  }

  await redis.stop();
  try {
    for (const host of hosts) {
      const res = await globalThis.fetch(host.url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': LEGACY },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list' }),
      });
      assert.equal(res.status, 503);
      assert.equal(res.headers.get('retry-after'), '1');
      const body = await res.json();
      assert.equal(body.error.data.code, 'STATE_UNAVAILABLE');
      const ready = await globalThis.fetch(host.origin + '/ready');
      assert.equal(ready.status, 503);
      // Which part, not where it is: the endpoint answers before any check.
      assert.match((await ready.json()).reason, /^the (state backend|notification bus) does not answer$/);
      assert.equal((await globalThis.fetch(host.origin + '/health')).status, 200, '/health stays up');
    }
  } finally {
    await redis.restart();
  }
  // The instances find Redis again by themselves (no persistence is
  // configured here, so the old session is gone, cleanly: a new one opens).
  for (const host of hosts) {
    let status = 0;
    const deadline = Date.now() + 8000;
    while (Date.now() < deadline) {
      status = (await globalThis.fetch(host.origin + '/ready')).status;
      if (status === 200) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(status, 200, 'ready again without a restart');
  }
  const again = new Client({ name: 'itest-v1-faults-again', version: '1.0.0' });
  const transport2 = new StreamableHTTPClientTransport(new URL(hosts[1].url), { fetch: roundRobin().fetch });
  await again.connect(transport2);
  const { tools } = await again.listTools();
  assert.ok(tools.length > 0);
  await transport2.terminateSession();
  await again.close();
});

test('Redis slow: what waits on a shared session holds no I/O thread; /health answers meanwhile, and nothing is lost', async () => {
  // Its own instance, whose Redis commands wait long enough to outlast the pause.
  const host = await redisInstance({ prefix: 'itest-slow:', commandTimeoutMs: 20000, http: { instance_name: 'gh-slow', threads: 2 } });
  const legacy = (sid) => ({ 'MCP-Protocol-Version': LEGACY, ...(sid ? { 'Mcp-Session-Id': sid } : {}) });
  const initialize = (id) => ({
    jsonrpc: '2.0', id, method: 'initialize',
    params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'slow', version: '1' } },
  });
  try {
    const opened = await host.post(initialize(1));
    assert.equal(opened.status, 200, opened.text);
    const sid = opened.headers.get('mcp-session-id');
    const other = (await host.post(initialize(2))).headers.get('mcp-session-id');
    for (const session of [sid, other])
      assert.equal((await host.post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { headers: legacy(session) })).status, 202);

    const pings = () => Number(/cmdstat_ping:calls=(\d+)/.exec(redis.cli('INFO', 'commandstats'))?.[1] ?? 0);
    const pingsBefore = pings();
    redis.pause();
    let pending;
    const stream = new AbortController();
    try {
      // Each on a connection of its own, over both I/O loops: every kind of
      // request that waits on the session's record while Redis does not answer.
      pending = [
        ...[10, 11, 12].map((id) => host.post({ jsonrpc: '2.0', id, method: 'tools/list' }, { headers: legacy(sid) })),
        host.post({ jsonrpc: '2.0', id: 13, method: 'logging/setLevel', params: { level: 'debug' } }, { headers: legacy(sid) }),
        host.post(initialize(14)),
        host.post({ jsonrpc: '2.0', id: 15, result: {} }, { headers: legacy(sid) }),
        fetch(host.url, { headers: { Accept: 'text/event-stream', ...legacy(sid) }, signal: stream.signal }),
        fetch(host.url, { method: 'DELETE', headers: legacy(other) }),
        // Its probe asks Redis: it waits too, but holds no I/O thread
        // either; and a crowd asking at once waits on one probe.
        ...Array.from({ length: 12 }, () => fetch(host.origin + '/ready')),
      ];
      // Settled or not, each is kept: a failure below must not leave them
      // rejecting unheard after the host stops.
      const outcomes = pending.map((p) => p.then((value) => ({ value }), (error) => ({ error })));
      pending = outcomes;
      await new Promise((r) => setTimeout(r, 300));
      // Without a free I/O loop these would wait for Redis (20 s).
      for (let i = 0; i < 4; i++) {
        const health = await fetch(host.origin + '/health', { signal: AbortSignal.timeout(5000) }).catch((e) =>
          assert.fail(`/health did not answer while Redis was stopped (${e.name}): an I/O thread waits on Redis`),
        );
        assert.equal(health.status, 200);
      }
      const probe = await host.post({ jsonrpc: '2.0', id: 16, method: 'server/discover', params: { _meta: modernMeta() } }, {
        headers: HttpHost.modernHeaders({ method: 'server/discover' }),
        signal: AbortSignal.timeout(5000),
      });
      assert.equal(probe.status, 200, 'a 2026-07-28 request, which needs no session, is served meanwhile');
      // And the others did wait on Redis all this time.
      const early = await Promise.race([Promise.race(outcomes).then(() => true), new Promise((r) => setTimeout(() => r(false), 50))]);
      assert.equal(early, false, 'no request that needs the session record was answered while Redis was stopped');
    } finally {
      redis.resume();
    }
    // Redis answers again: every waiting request completes, none was dropped.
    const settled = await Promise.all(pending);
    for (const outcome of settled) assert.ok(!outcome.error, String(outcome.error?.cause ?? outcome.error));
    const [list1, list2, list3, level, reopened, response, get, deleted, ...ready] = settled.map((o) => o.value);
    for (const list of [list1, list2, list3]) {
      assert.equal(list.status, 200, list.text);
      assert.ok(list.messages[0].result.tools.length > 0);
    }
    assert.equal(level.status, 200, level.text);
    assert.equal(reopened.status, 200, reopened.text);
    assert.ok(reopened.headers.get('mcp-session-id'));
    assert.equal(response.status, 202);
    assert.equal(get.status, 200);
    assert.match(get.headers.get('content-type'), /^text\/event-stream/);
    stream.abort();
    assert.equal(deleted.status, 204);
    for (const answer of ready) assert.equal(answer.status, 200, await answer.text());
    assert.ok(pings() - pingsBefore <= 2, `twelve /ready asked at once probed Redis ${pings() - pingsBefore} times`);
    const ended = await host.post({ jsonrpc: '2.0', id: 17, method: 'tools/list' }, { headers: legacy(other) });
    assert.equal(ended.status, 404, 'the DELETE that waited ended its session');
  } finally {
    redis.resume();
    const result = await host.stop();
    assert.equal(result.code, 0, host.stderr.slice(-3000));
  }
});

test('Redis slow: /ready on the operators\' listener waits on one probe off its thread; /metrics and /health answer meanwhile', async () => {
  const host = await redisInstance({
    prefix: 'itest-ops:',
    commandTimeoutMs: 20000,
    http: { instance_name: 'gh-ops' },
    sections: { metrics: { listen: '127.0.0.1:0', allow: ['127.0.0.1'] } },
  });
  try {
    await host.stderrMatching(/metrics, \/health, \/ready and \/status served on 127\.0\.0\.1:\d+/);
    const ops = `http://127.0.0.1:${Number(/served on 127\.0\.0\.1:(\d+)/.exec(host.stderr)[1])}`;
    assert.equal((await fetch(`${ops}/ready`)).status, 200);
    const pings = () => Number(/cmdstat_ping:calls=(\d+)/.exec(redis.cli('INFO', 'commandstats'))?.[1] ?? 0);
    const pingsBefore = pings();
    redis.pause();
    let pending = [];
    try {
      pending = [...Array.from({ length: 12 }, () => fetch(`${ops}/ready`)), fetch(`${ops}/status`)].map((p) =>
        p.then((value) => ({ value }), (error) => ({ error })),
      );
      await new Promise((r) => setTimeout(r, 300));
      // On the listener's one thread these would wait for Redis (20 s).
      for (const what of ['/metrics', '/health']) {
        const answer = await fetch(ops + what, { signal: AbortSignal.timeout(5000) }).catch((e) =>
          assert.fail(`${what} did not answer while Redis was stopped (${e.name}): the listener waits on the probe`),
        );
        assert.equal(answer.status, 200, what);
      }
      const early = await Promise.race([Promise.race(pending).then(() => true), new Promise((r) => setTimeout(() => r(false), 50))]);
      assert.equal(early, false, 'no /ready was answered before Redis did');
    } finally {
      redis.resume();
    }
    const settled = await Promise.all(pending);
    for (const outcome of settled) assert.ok(!outcome.error, String(outcome.error?.cause ?? outcome.error));
    const status = settled.pop().value;
    for (const { value } of settled) assert.deepEqual(await value.json(), { status: 'ready' });
    assert.equal(status.status, 200);
    assert.equal((await status.json()).status, 'ready');
    assert.ok(pings() - pingsBefore <= 2, `thirteen probes asked at once pinged Redis ${pings() - pingsBefore} times`);
  } finally {
    redis.resume();
    const result = await host.stop();
    assert.equal(result.code, 0, host.stderr.slice(-3000));
  }
});

test('Redis slow: 2026-07-28 calls, each drawing on a shared rate limit, hold no I/O thread either', async () => {
  // The no-op tool, quick (its calls run well under a millisecond), each
  // call a round trip to Redis for the caller's bucket.
  const host = await redisInstance({
    prefix: 'itest-calls:',
    commandTimeoutMs: 20000,
    plugins: ['echo.so'],
    gate: false,
    rateLimits: { calls_per_second: 100000, burst: 100000 },
    http: { threads: 2 },
  });
  const noop = (id) => {
    const message = { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'noop', arguments: {}, _meta: modernMeta() } };
    return host.post(message, { headers: HttpHost.modernHeaders(message) });
  };
  try {
    // Enough calls for the tool to count as quick (plugins::CallPace).
    for (let id = 1; id <= 80; id++) assert.equal((await noop(id)).status, 200, "served while Redis answers");
    redis.pause();
    let outcomes;
    try {
      outcomes = [];
      for (let id = 100; id < 108; id++) outcomes.push(noop(id).then((value) => ({ value }), (error) => ({ error })));
      await new Promise((r) => setTimeout(r, 300));
      for (let i = 0; i < 4; i++) {
        const health = await fetch(host.origin + '/health', { signal: AbortSignal.timeout(5000) }).catch((e) =>
          assert.fail(`/health did not answer while Redis was stopped (${e.name}): an I/O thread waits on Redis`),
        );
        assert.equal(health.status, 200);
      }
      const early = await Promise.race([Promise.race(outcomes).then(() => true), new Promise((r) => setTimeout(() => r(false), 50))]);
      assert.equal(early, false, 'the calls waited on Redis (their buckets) all this time');
    } finally {
      redis.resume();
    }
    for (const { value, error } of await Promise.all(outcomes)) {
      assert.ok(!error, String(error?.cause ?? error));
      assert.equal(value.status, 200, value.text);
      assert.ok(value.messages[0].result && !value.messages[0].result.isError, value.text);
    }
  } finally {
    redis.resume();
    const result = await host.stop();
    assert.equal(result.code, 0, host.stderr.slice(-3000));
  }
});
