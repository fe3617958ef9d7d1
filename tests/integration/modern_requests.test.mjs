// Protocol revision 2026-07-28: stateless requests, each carrying _meta with
// the revision and the client's capabilities; server/discover; resultType,
// serverInfo, caching hints; per-request log level; progress.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHost, modernMeta, MODERN, LEGACY } from './lib/host.mjs';

const VERSION = 'io.modelcontextprotocol/protocolVersion';
const CAPS = 'io.modelcontextprotocol/clientCapabilities';
const LOG_LEVEL = 'io.modelcontextprotocol/logLevel';
const SERVER_INFO = 'io.modelcontextprotocol/serverInfo';

function assertComplete(result) {
  assert.equal(result.resultType, 'complete');
  assert.equal(result._meta[SERVER_INFO].name, 'gatehouse');
  assert.equal(typeof result._meta[SERVER_INFO].version, 'string');
}

test('server/discover names both revisions, capabilities and caching hints', () =>
  withHost(async (host) => {
    const answer = await host.modern('server/discover');
    const r = answer.result;
    assertComplete(r);
    assert.ok(r.supportedVersions.includes(MODERN));
    assert.ok(r.supportedVersions.includes(LEGACY));
    assert.ok(r.capabilities.tools);
    assert.ok(Number.isInteger(r.ttlMs) && r.ttlMs >= 0);
    assert.ok(['public', 'private'].includes(r.cacheScope));
  }));

test('every 2026-07-28 result carries resultType and serverInfo', () =>
  withHost(async (host) => {
    const results = [
      (await host.modern('server/discover')).result,
      (await host.modern('tools/list')).result,
      (await host.modern('tools/call', { name: 'echo', arguments: { text: 'a' } })).result,
      (await host.modern('tools/call', { name: 'fail', arguments: {} })).result,
      (await host.modern('tools/call', { name: 'echo', arguments: { text: 1 } })).result,
    ];
    for (const r of results) assertComplete(r);
  }));

test('no initialize is needed and none is remembered', () =>
  withHost(async (host) => {
    const call = await host.modern('tools/call', { name: 'echo', arguments: { text: 'stateless' } });
    assert.equal(call.result.structuredContent.text, 'stateless');
    const who = await host.modern('tools/call', { name: 'whoami', arguments: {} });
    assert.equal(who.result.structuredContent.revision, MODERN);
    // Without _meta the same connection is still not initialized for 2025-11-25.
    const bare = await host.request('tools/list');
    assert.equal(bare.error?.code, -32602);
  }));

test('an unsupported protocol version is refused with -32022, supported and requested', () =>
  withHost(async (host) => {
    for (const requested of ['2030-01-01', 'not-a-version']) {
      const answer = await host.request('tools/list', { _meta: { ...modernMeta(), [VERSION]: requested } });
      assert.equal(answer.error?.code, -32022);
      assert.equal(answer.error.data.requested, requested);
      assert.ok(answer.error.data.supported.includes(MODERN));
    }
  }));

test('2025-11-25 in _meta without initialize is Invalid Request naming initialize, not -32022 (the version is supported)', () =>
  withHost(async (host) => {
    const answer = await host.request('tools/list', { _meta: { ...modernMeta(), [VERSION]: LEGACY } });
    // -32022 would list 2025-11-25 as supported, and a client picking it
    // from there would send the same request again for ever.
    assert.equal(answer.error?.code, -32600);
    assert.match(answer.error.message, /2025-11-25 starts with initialize/);
    await host.initialize();
    const after = await host.request('tools/list', { _meta: { [VERSION]: LEGACY } });
    assert.ok(Array.isArray(after.result?.tools), JSON.stringify(after));
  }));

test('a protocol version that is not a string is invalid params', () =>
  withHost(async (host) => {
    const answer = await host.request('tools/list', { _meta: { ...modernMeta(), [VERSION]: 20260728 } });
    assert.equal(answer.error?.code, -32602);
  }));

test('missing or malformed clientCapabilities is -32602', () =>
  withHost(async (host) => {
    const { [CAPS]: _, ...noCaps } = modernMeta();
    for (const meta of [noCaps, { ...noCaps, [CAPS]: 'all' }, { ...noCaps, [CAPS]: null }]) {
      const answer = await host.request('tools/list', { _meta: meta });
      assert.equal(answer.error?.code, -32602, JSON.stringify(meta));
      assert.match(answer.error.message, /clientCapabilities/);
    }
  }));

test('_meta that is not an object is -32602', () =>
  withHost(async (host) => {
    const answer = await host.request('tools/list', { _meta: 'modern' });
    assert.equal(answer.error?.code, -32602);
  }));

test('an invalid logLevel is -32602', () =>
  withHost(async (host) => {
    for (const level of ['verbose', 7, '']) {
      const answer = await host.modern('tools/list', {}, { [LOG_LEVEL]: level });
      assert.equal(answer.error?.code, -32602, JSON.stringify(level));
    }
  }));

test('tools/list is deterministic and carries ttlMs and cacheScope', () =>
  withHost(async (host) => {
    const first = (await host.modern('tools/list')).result;
    const second = (await host.modern('tools/list')).result;
    assert.deepEqual(second.tools, first.tools, 'two listings are identical');
    const names = first.tools.map((t) => t.name);
    assert.deepEqual(names, [...names].sort(), 'tools come in name order');
    assert.ok(Number.isInteger(first.ttlMs) && first.ttlMs >= 0);
    assert.ok(['public', 'private'].includes(first.cacheScope));
  }));

test('log messages only for requests that ask with a logLevel, at or above it', () =>
  withHost(async (host) => {
    const levels = (from) => host.notifications('notifications/message', from).map((n) => `${n.params.level}:${n.params.data}`);

    let from = host.messages.length;
    await host.modern('tools/call', { name: 'progress', arguments: { steps: 2 } });
    assert.deepEqual(levels(from), [], 'no logLevel, no notifications/message');

    from = host.messages.length;
    await host.modern('tools/call', { name: 'progress', arguments: { steps: 2 } }, { [LOG_LEVEL]: 'info' });
    assert.deepEqual(levels(from), ['info:step 1', 'info:step 2']);

    from = host.messages.length;
    await host.modern('tools/call', { name: 'progress', arguments: { steps: 1 } }, { [LOG_LEVEL]: 'debug' });
    assert.deepEqual(levels(from), ['info:step 1', 'debug:debug detail 1']);

    // The level is per request: the next request without it gets none again.
    from = host.messages.length;
    await host.modern('tools/call', { name: 'progress', arguments: { steps: 2 } });
    assert.deepEqual(levels(from), []);
  }));

test('progress notifications follow the progressToken (2026-07-28)', () =>
  withHost(async (host) => {
    const from = host.messages.length;
    const answer = await host.modern('tools/call', { name: 'progress', arguments: { steps: 4 } }, { progressToken: 42 });
    assertComplete(answer.result);
    const progress = host.notifications('notifications/progress', from);
    assert.deepEqual(progress.map((n) => n.params.progressToken), [42, 42, 42, 42]);
    assert.deepEqual(progress.map((n) => n.params.progress), [1, 2, 3, 4]);
    assert.deepEqual(progress.map((n) => n.params.message), ['step 1', 'step 2', 'step 3', 'step 4']);

    const bad = await host.modern('tools/call', { name: 'progress', arguments: {} }, { progressToken: { no: 'objects' } });
    assert.equal(bad.error?.code, -32602);
  }));

test('2025-11-25-only methods are not found on 2026-07-28', () =>
  withHost(async (host) => {
    for (const method of ['ping', 'logging/setLevel', 'initialize']) {
      const answer = await host.modern(method);
      assert.equal(answer.error?.code, -32601, method);
    }
  }));

test('both revisions can be served on one connection', () =>
  withHost(async (host) => {
    await host.initialize();
    const legacy = await host.request('tools/call', { name: 'whoami', arguments: {} });
    const modern = await host.modern('tools/call', { name: 'whoami', arguments: {} });
    assert.equal(legacy.result.structuredContent.revision, LEGACY);
    assert.equal(modern.result.structuredContent.revision, MODERN);
    assert.equal(Object.hasOwn(legacy.result, 'resultType'), false);
    assertComplete(modern.result);
  }));
