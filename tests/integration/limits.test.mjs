// The host's bounds on tool calls (limits: and rate_limits: in the YAML): each
// refusal names its limit and value, and the host keeps serving meanwhile.
// Every wait is for an event (an answer, a progress notification), never a
// duration.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { withHost, modernMeta, binaryPath } from './lib/host.mjs';

function toolCall(id, name, args, meta = modernMeta()) {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, _meta: meta } };
}

// Resolves once the call sent with this progress token is inside its plugin.
function inside(host, token) {
  return host.waitFor((m) => m.method === 'notifications/progress' && m.params.progressToken === token, {
    what: `progress from ${token}`,
  });
}

test('a string over max_string_bytes is refused naming where, its size and the limit; the host keeps serving', () =>
  withHost({ limits: { max_string_bytes: 1024 } }, async (host) => {
    host.send(toolCall('holder', 'slow', { ms: 500 }, modernMeta({ progressToken: 'holder' })));
    await inside(host, 'holder');

    const long = await host.modern('tools/call', { name: 'echo', arguments: { text: 'x'.repeat(1025) } });
    assert.equal(long.result.isError, true);
    assert.equal(long.result.structuredContent.code, 'ARGUMENT_TOO_LARGE');
    assert.deepEqual(long.result.structuredContent.next, {
      pointer: '/text',
      bytes: 1025,
      maxBytes: 1024,
      limit: 'max_string_bytes',
    });
    assert.match(long.result.content[0].text, /\/text.*1025 bytes.*1024 bytes \(limits\.max_string_bytes\)/);

    // Deep inside, and in a key: found before the schema (which forbids both) is consulted.
    const nested = await host.modern('tools/call', {
      name: 'echo',
      arguments: { text: 'ok', more: [{ a: 'short' }, { b: 'y'.repeat(2000) }] },
    });
    assert.equal(nested.result.structuredContent.code, 'ARGUMENT_TOO_LARGE');
    assert.equal(nested.result.structuredContent.next.pointer, '/more/1/b');
    const key = await host.modern('tools/call', { name: 'echo', arguments: { text: 'ok', ['k'.repeat(3000)]: 1 } });
    assert.equal(key.result.structuredContent.code, 'ARGUMENT_TOO_LARGE');
    assert.match(key.result.content[0].text, /An object key/);
    assert.ok(key.result.content[0].text.length < 1000, 'the refusal does not echo the long key');

    const atLimit = await host.modern('tools/call', { name: 'echo', arguments: { text: 'z'.repeat(1024) } });
    assert.equal(atLimit.result.structuredContent.text, 'z'.repeat(1024));
    const holder = await host.response('holder');
    assert.equal(holder.message.result.content[0].text, 'slept', 'the call in flight was not disturbed');
  }));

test('a long string meeting a schema pattern never overflows the stack: refused above the default limit, validated below it', () =>
  withHost({ plugins: ['echo.so', 'pattern.so'] }, async (host) => {
    // Above the default max_string_bytes (65536): refused before validation.
    const over = await host.modern('tools/call', { name: 'pattern_match', arguments: { text: 'ab'.repeat(40000) } });
    assert.equal(over.result.structuredContent.code, 'ARGUMENT_TOO_LARGE');
    assert.equal(over.result.structuredContent.next.maxBytes, 65536);
    // At the limit: std::regex recurses per character, far past a default
    // 8 MiB thread stack; the workers' stacks are sized for it.
    const at = await host.modern('tools/call', { name: 'pattern_match', arguments: { text: 'a'.repeat(65536) } });
    assert.equal(at.result.isError, undefined, JSON.stringify(at.result).slice(0, 300));
    assert.equal(at.result.content[0].text, '65536');
    const mismatch = await host.modern('tools/call', {
      name: 'pattern_match',
      arguments: { text: 'b'.repeat(65535) + 'c' },
    });
    assert.equal(mismatch.result.isError, true);
    assert.match(mismatch.result.content[0].text, /\/text/);
    assert.deepEqual((await host.ping()).result, {});
  }));

test('max_in_flight_per_principal refuses one more call with a JSON-RPC error; cheap requests are still served', () =>
  withHost({ limits: { max_in_flight_per_principal: 2, tool_timeout_ms: 4000 } }, async (host) => {
    host.send(toolCall('h1', 'slow', { ms: 60000 }));
    host.send(toolCall('h2', 'slow', { ms: 60000 }));
    host.send(toolCall('third', 'echo', { text: 'one too many' }));
    const third = (await host.response('third')).message;
    assert.equal(third.error.code, -32603);
    assert.deepEqual(third.error.data, {
      code: 'TOO_MANY_IN_FLIGHT',
      limit: 'max_in_flight_per_principal',
      maxInFlight: 2,
    });
    assert.match(third.error.message, /2 requests in flight.*limits\.max_in_flight_per_principal/);
    assert.deepEqual((await host.ping()).result, {});
    assert.ok((await host.modern('tools/list')).result.tools.length > 0);

    // A call answered (here by its timeout) gives its place back before the answer is written.
    await host.response('h1');
    const after = await host.modern('tools/call', { name: 'echo', arguments: { text: 'room again' } });
    assert.equal(after.result.structuredContent.text, 'room again');
  }));

test('max_in_flight_per_plugin: a call into a full family waits its turn holding no worker; other families are served', () =>
  withHost({ limits: { max_in_flight_per_plugin: 1, workers: 2 } }, async (host) => {
    host.send(toolCall('holder', 'slow', { ms: 60000 }, modernMeta({ progressToken: 'holder' })));
    await inside(host, 'holder');
    host.send(toolCall('waiter', 'echo', { text: 'my turn' }, modernMeta()));
    host.send(toolCall('waiter2', 'echo', { text: 'after it' }, modernMeta()));
    // One worker holds the holder; the waiting calls hold none, so the other
    // family keeps the second worker, call after call.
    for (let i = 0; i < 3; i++) {
      const other = await host.modern('tools/call', { name: 'overlap', arguments: { ms: 0 } });
      assert.equal(other.result.isError ?? false, false, JSON.stringify(other));
    }
    assert.equal(host.messages.some((m) => m.message.id === 'waiter'), false, 'the family stays at its cap');
    host.notify('notifications/cancelled', { requestId: 'holder' });
    assert.equal((await host.response('waiter')).message.result.structuredContent.text, 'my turn');
    assert.equal((await host.response('waiter2')).message.result.structuredContent.text, 'after it');
  }));

test('a plugins entry overrides max_in_flight for its family', () =>
  withHost({ plugins: [{ path: 'echo.so', max_in_flight: 2 }, 'serial.so'], limits: { max_in_flight_per_plugin: 1 } }, async (host) => {
    host.send(toolCall('a', 'slow', { ms: 60000 }, modernMeta({ progressToken: 'a' })));
    host.send(toolCall('b', 'slow', { ms: 60000 }, modernMeta({ progressToken: 'b' })));
    await inside(host, 'a');
    await inside(host, 'b'); // two at once: the entry's 2, not the default 1
    host.send(toolCall('c', 'noop', {}, modernMeta()));
    await host.ping();
    assert.equal(host.messages.some((m) => m.message.id === 'c'), false, 'a third waits');
    host.notify('notifications/cancelled', { requestId: 'a' });
    assert.equal((await host.response('c')).message.result.isError ?? false, false);
    host.notify('notifications/cancelled', { requestId: 'b' });
  }));

for (const meta of [modernMeta(), undefined]) {
  const revision = meta ? '2026-07-28' : '2025-11-25';
  test(`tool_timeout_ms answers at once with a tool error, cancels the plugin, and never answers twice (${revision})`, () =>
    withHost({ limits: { tool_timeout_ms: 300, workers: 1 } }, async (host) => {
      if (!meta) await host.initialize();
      host.send(toolCall('long', 'slow', { ms: 60000 }, meta));
      const timedOut = (await host.response('long')).message;
      assert.equal(timedOut.result.isError, true);
      assert.equal(timedOut.result.structuredContent.code, 'TOOL_TIMEOUT');
      assert.deepEqual(timedOut.result.structuredContent.next, { timeoutMs: 300 });
      assert.match(timedOut.result.content[0].text, /'slow' took longer than 300 ms.*limits\.tool_timeout_ms/);
      // One worker: this echo runs only once the cancelled slow call has left the plugin.
      host.send(toolCall('next', 'echo', { text: 'after the timeout' }, meta));
      const next = (await host.response('next')).message;
      assert.equal(next.result.structuredContent.text, 'after the timeout');
      // The same id again is a new request, answered on its own.
      host.send(toolCall('long', 'echo', { text: 'reused id' }, meta));
      await host.waitFor((m) => m.id === 'long' && m.result?.structuredContent?.text === 'reused id', {
        what: 'the answer to the reused id',
      });
      await host.ping();
      assert.equal(host.messages.filter((m) => m.message.id === 'long').length, 2, 'one answer per request');
    }));
}

test('a plugins entry overrides tool_timeout_ms for its family', () =>
  withHost({ plugins: [{ path: 'echo.so', tool_timeout_ms: 200 }, 'serial.so'] }, async (host) => {
    const timedOut = await host.modern('tools/call', { name: 'slow', arguments: { ms: 60000 } });
    assert.equal(timedOut.result.structuredContent.code, 'TOOL_TIMEOUT');
    assert.match(timedOut.result.content[0].text, /200 ms.*tool_timeout_ms of its plugins entry/);
    const serial = await host.modern('tools/call', { name: 'overlap', arguments: { ms: 0 } });
    assert.equal(serial.result.structuredContent.max_concurrent, 1);
  }));

test('rate_limits: a principal over its bucket gets RATE_LIMITED with retryAfterMs; nothing ran', () =>
  withHost({ rateLimits: { calls_per_second: 0.01, burst: 2 } }, async (host) => {
    for (const text of ['one', 'two']) {
      const ok = await host.modern('tools/call', { name: 'echo', arguments: { text } });
      assert.equal(ok.result.structuredContent.text, text);
    }
    const limited = await host.modern('tools/call', { name: 'progress', arguments: { steps: 1 } });
    assert.equal(limited.result.isError, true);
    assert.equal(limited.result.structuredContent.code, 'RATE_LIMITED');
    const { retryAfterMs, limit } = limited.result.structuredContent.next;
    assert.equal(limit, 'rate_limits');
    assert.ok(Number.isInteger(retryAfterMs) && retryAfterMs > 0 && retryAfterMs <= 100000, `retryAfterMs ${retryAfterMs}`);
    assert.match(limited.result.content[0].text, new RegExp(`0\\.01 calls per second, bursts of 2.*Retry in ${retryAfterMs} ms`));
    assert.doesNotMatch(host.stderr, /\[echo\] step 1/, 'the refused call never reached its plugin');
    assert.deepEqual((await host.ping()).result, {}, 'other requests are not rate limited');
  }));

test('rate_limits.per_tool limits one tool and leaves the others alone', () =>
  withHost({ rateLimits: { per_tool: { echo: { calls_per_second: 0.01, burst: 1 } } } }, async (host) => {
    const first = await host.modern('tools/call', { name: 'echo', arguments: { text: 'first' } });
    assert.equal(first.result.structuredContent.text, 'first');
    const second = await host.modern('tools/call', { name: 'echo', arguments: { text: 'second' } });
    assert.equal(second.result.structuredContent.code, 'RATE_LIMITED');
    assert.equal(second.result.structuredContent.next.limit, 'rate_limits.per_tool.echo');
    for (let i = 0; i < 5; i++) {
      const noop = await host.modern('tools/call', { name: 'noop', arguments: {} });
      assert.equal(noop.result.isError, undefined);
    }
    assert.doesNotMatch(host.stderr, /names no tool this host publishes/);
  }));

test('a per-tool limit or a disabled domain that names nothing is reported at start: a typo there would leave a tool unlimited or a family served', () =>
  withHost({
    rateLimits: { per_tool: { ecko: { calls_per_second: 0.01, burst: 1 } } },
    sections: { domains: { serail: { enabled: false } } },
  }, async (host) => {
    await host.stderrMatching(/rate_limits\.per_tool\.ecko names no tool this host publishes now .*it limits nothing/);
    await host.stderrMatching(/domains\.serail disables a family no loaded plugin or upstream has; is it spelled as the family is named/);
    assert.equal((await host.modern('tools/call', { name: 'overlap', arguments: { ms: 1 } })).result?.isError, undefined, 'the family meant is served');
  }));

test('a session opens or is refused promptly while a family that is not reentrant is busy with a long call', () =>
  withHost(
    {
      gate: true,
      plugins: [path.resolve(path.dirname(binaryPath()), '../lib/gatehouse/plugins/session.so'), 'serial.so'],
      sections: { session: { backend: 'memory', pinned: { store: 'shop', user: 'ann' } } },
    },
    async (host) => {
      const first = await host.modern('tools/call', { name: 'session_connect', arguments: { topic: 'orders' } });
      const session = first.result.structuredContent.session;
      assert.ok(session, JSON.stringify(first));
      // The serial family holds its one place for five seconds.
      const long = host.modern('tools/call', { name: 'overlap', arguments: { session, ms: 5000 } });
      await host.stderrMatching(/\[serial\] overlap inside, 5000 ms/);
      const began = Date.now();
      const second = await host.modern('tools/call', { name: 'session_connect', arguments: { topic: 'returns' } });
      const waited = Date.now() - began;
      // Its critical notes could not be asked in time: said so, not waited out.
      assert.equal(second.result.structuredContent.code, 'CRITICAL_NOTES_UNAVAILABLE', JSON.stringify(second));
      assert.ok(waited < 4500, `session_connect waited ${waited} ms for the family's long call`);
      const done = await long;
      assert.equal(done.result.structuredContent.max_concurrent, 1);
      // Free again: sessions open.
      const third = await host.modern('tools/call', { name: 'session_connect', arguments: { topic: 'returns' } });
      assert.ok(third.result.structuredContent.session, JSON.stringify(third));
    },
  ));
