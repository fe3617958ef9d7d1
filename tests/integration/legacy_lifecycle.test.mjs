// Protocol revision 2025-11-25: the initialize handshake and what lives in the
// connection after it (log level, capabilities), ping, tools, cancellation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHost, LEGACY } from './lib/host.mjs';

test('initialize negotiates 2025-11-25 when the client asks for it', () =>
  withHost(async (host) => {
    const result = await host.initialize(LEGACY);
    assert.equal(result.protocolVersion, LEGACY);
    assert.equal(result.serverInfo.name, 'gatehouse');
    assert.ok(result.capabilities.tools, 'the server announces tools');
    assert.ok(result.capabilities.logging, 'the server announces logging');
    assert.equal(Object.hasOwn(result, 'resultType'), false, '2025-11-25 results carry no resultType');
  }));

test('initialize with an unknown version is answered with 2025-11-25', () =>
  withHost(async (host) => {
    const result = await host.initialize('1999-01-01');
    assert.equal(result.protocolVersion, LEGACY);
    // The connection is usable after the client accepts the counter-offer.
    const list = await host.request('tools/list');
    assert.ok(list.result.tools.length > 0);
  }));

test('a second initialize on the same connection is refused', () =>
  withHost(async (host) => {
    await host.initialize();
    const again = await host.request('initialize', { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'x', version: '1' } });
    assert.equal(again.error?.code, -32600);
  }));

test('ping is answered before and after initialize', () =>
  withHost(async (host) => {
    const early = await host.ping();
    assert.deepEqual(early.result, {});
    await host.initialize();
    const late = await host.ping();
    assert.deepEqual(late.result, {});
  }));

test('requests other than initialize and ping are refused before initialize', () =>
  withHost(async (host) => {
    for (const method of ['tools/list', 'tools/call', 'logging/setLevel']) {
      const answer = await host.request(method, method === 'tools/call' ? { name: 'echo', arguments: { text: 'x' } } : undefined);
      assert.equal(answer.error?.code, -32602, `${method} before initialize`);
      assert.match(answer.error.message, /_meta/, 'the sentence names the missing _meta');
      assert.match(answer.error.message, /initialize/, 'the sentence names initialize');
    }
    // The refusals did not initialize anything by accident.
    await host.initialize();
    const list = await host.request('tools/list');
    assert.ok(Array.isArray(list.result.tools));
  }));

test('tools/list and tools/call after initialize', () =>
  withHost(async (host) => {
    await host.initialize();
    const list = await host.request('tools/list');
    const names = list.result.tools.map((t) => t.name);
    for (const name of ['echo', 'slow', 'progress', 'overlap']) assert.ok(names.includes(name), `${name} is listed`);
    const echo = list.result.tools.find((t) => t.name === 'echo');
    assert.equal(echo.inputSchema.type, 'object');
    assert.deepEqual(echo.inputSchema.required, ['text']);
    assert.equal(Object.hasOwn(list.result, 'ttlMs'), false, 'ttlMs belongs to 2026-07-28');

    const call = await host.request('tools/call', { name: 'echo', arguments: { text: 'hello legacy' } });
    assert.equal(call.result.isError ?? false, false);
    assert.deepEqual(call.result.structuredContent, { text: 'hello legacy' });
    assert.deepEqual(call.result.content, [{ type: 'text', text: 'hello legacy' }]);
  }));

test('whoami sees the 2025-11-25 revision in its call context', () =>
  withHost(async (host) => {
    await host.initialize();
    const call = await host.request('tools/call', { name: 'whoami', arguments: {} });
    assert.equal(call.result.structuredContent.revision, LEGACY);
    assert.equal(call.result.structuredContent.tool, 'whoami');
    assert.equal(call.result.structuredContent.family, 'echo');
  }));

function messagesOf(host, from) {
  return host.notifications('notifications/message', from).map((n) => `${n.params.level}:${n.params.data}`);
}

test('logging/setLevel: notifications/message only at or above the level', () =>
  withHost(async (host) => {
    await host.initialize();

    let from = host.messages.length;
    await host.request('tools/call', { name: 'progress', arguments: { steps: 2 } });
    assert.deepEqual(messagesOf(host, from), [], 'no log messages before logging/setLevel');

    const set = await host.request('logging/setLevel', { level: 'info' });
    assert.deepEqual(set.result, {});
    from = host.messages.length;
    await host.request('tools/call', { name: 'progress', arguments: { steps: 2 } });
    assert.deepEqual(messagesOf(host, from), ['info:step 1', 'info:step 2']);
    for (const n of host.notifications('notifications/message', from)) assert.equal(n.params.logger, 'echo');

    await host.request('logging/setLevel', { level: 'debug' });
    from = host.messages.length;
    await host.request('tools/call', { name: 'progress', arguments: { steps: 2 } });
    assert.deepEqual(messagesOf(host, from), ['info:step 1', 'debug:debug detail 1', 'info:step 2', 'debug:debug detail 2']);

    await host.request('logging/setLevel', { level: 'warning' });
    from = host.messages.length;
    await host.request('tools/call', { name: 'progress', arguments: { steps: 2 } });
    assert.deepEqual(messagesOf(host, from), [], 'info and debug are below warning');
  }));

test('logging/setLevel refuses an unknown level', () =>
  withHost(async (host) => {
    await host.initialize();
    for (const params of [{ level: 'verbose' }, { level: 3 }, {}]) {
      const answer = await host.request('logging/setLevel', params);
      assert.equal(answer.error?.code, -32602, JSON.stringify(params));
    }
  }));

test('progress notifications follow the progressToken (2025-11-25)', () =>
  withHost(async (host) => {
    await host.initialize();
    const from = host.messages.length;
    const answer = await host.request('tools/call', { name: 'progress', arguments: { steps: 3 }, _meta: { progressToken: 'legacy-token' } });
    assert.equal(answer.result.content[0].text, 'done');
    const progress = host.notifications('notifications/progress', from);
    assert.deepEqual(progress.map((n) => n.params.progressToken), ['legacy-token', 'legacy-token', 'legacy-token']);
    assert.deepEqual(progress.map((n) => n.params.progress), [1, 2, 3]);
    for (const n of progress) assert.equal(n.params.total, 3);

    const quiet = host.messages.length;
    await host.request('tools/call', { name: 'progress', arguments: { steps: 2 } });
    assert.deepEqual(host.notifications('notifications/progress', quiet), [], 'no token, no progress');
  }));

test('notifications/cancelled stops a call and it is never answered (2025-11-25)', () =>
  // One worker: a call that follows can only run once the cancelled one let go.
  withHost({ limits: { workers: 1 } }, async (host) => {
    await host.initialize();
    host.send({ jsonrpc: '2.0', id: 'long', method: 'tools/call', params: { name: 'slow', arguments: { ms: 60000 } } });
    host.notify('notifications/cancelled', { requestId: 'long', reason: 'the user changed their mind' });
    const after = await host.request('tools/call', { name: 'echo', arguments: { text: 'next' } });
    assert.equal(after.result.structuredContent.text, 'next');
    await host.ping();
    assert.equal(host.messages.some((m) => m.message.id === 'long'), false, 'the cancelled call got no answer');
  }));
