// What a broken or hostile client can write on stdin. After each, the host
// must still answer a ping, and it must never have written anything but
// valid JSON-RPC (the harness checks every line).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHost } from './lib/host.mjs';

// Writes `data`, then pings; resolves with what the host wrote in between
// (everything except the ping's answer).
async function answersTo(host, data) {
  const from = host.messages.length;
  host.write(data);
  const ping = await host.ping();
  assert.deepEqual(ping.result, {}, 'the host still answers a ping');
  return host.since(from).filter((m) => m !== ping);
}

test('invalid UTF-8 inside a JSON string is a parse error', () =>
  withHost(async (host) => {
    const line = Buffer.concat([
      Buffer.from('{"jsonrpc":"2.0","id":"utf","method":"tools/list","params":{"x":"'),
      Buffer.from([0xc3, 0x28, 0xff, 0xfe]),
      Buffer.from('"}}'),
    ]);
    const answers = await answersTo(host, line);
    assert.equal(answers.length, 1);
    assert.equal(answers[0].error.code, -32700);
  }));

test('a number too large for a double is a parse error, not the end of the host', () =>
  withHost(async (host) => {
    for (const line of [
      '{"jsonrpc":"2.0","id":"big-number","method":"ping","params":{"x":1e400}}',
      '{"jsonrpc":"2.0","id":1e999,"method":"ping"}',
    ]) {
      const answers = await answersTo(host, line);
      assert.equal(answers.length, 1);
      assert.equal(answers[0].error.code, -32700);
      assert.match(answers[0].error.message, /the number 1e(400|999) is too large for a double/);
    }
  }));

test('a 64 MiB line is refused naming the limit, without holding it in memory', () =>
  withHost(async (host) => {
    await host.ping(); // the host is up and has loaded its plugins
    const before = host.peakRssKiB();
    const size = 64 * 1024 * 1024;
    const head = Buffer.from('{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":"');
    const tail = Buffer.from('"}}\n');
    const payload = Buffer.alloc(size, 'a');
    head.copy(payload, 0);
    tail.copy(payload, size - tail.length);
    const from = host.messages.length;
    await host.writeLarge(payload);
    const ping = await host.ping();
    assert.deepEqual(ping.result, {});

    const answers = host.since(from).filter((m) => m !== ping);
    assert.equal(answers.length, 1, 'one refusal, not one per chunk');
    assert.equal(answers[0].error.code, -32600);
    assert.match(answers[0].error.message, /4194304 bytes/, 'the refusal names the limit');
    assert.equal(host.messages.some((m) => m.message.id === 'big'), false, 'the oversized request never ran');

    const grownKiB = host.peakRssKiB() - before;
    assert.ok(grownKiB < 24 * 1024, `peak RSS grew by ${grownKiB} KiB while reading a 64 MiB line`);
  }));

test('a configured max_message_bytes is the limit', () =>
  withHost({ limits: { max_message_bytes: 4096 } }, async (host) => {
    const answers = await answersTo(host, JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping', params: { pad: 'x'.repeat(5000) } }));
    assert.equal(answers.length, 1);
    assert.equal(answers[0].error.code, -32600);
    assert.match(answers[0].error.message, /4096 bytes/);
    // Just under the limit is served.
    const fits = await host.request('ping', { pad: 'x'.repeat(3000) });
    assert.deepEqual(fits.result, {});
  }));

test('JSON nested 100 000 deep is refused', () =>
  withHost(async (host) => {
    const depth = 100000;
    const bare = await answersTo(host, '['.repeat(depth) + ']'.repeat(depth));
    assert.equal(bare.length, 1);
    assert.equal(bare[0].error.code, -32600);
    assert.match(bare[0].error.message, /nests deeper/);

    const inside = await answersTo(host, `{"jsonrpc":"2.0","id":"deep","method":"ping","params":{"a":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}}`);
    assert.equal(inside.length, 1);
    assert.equal(inside[0].error.code, -32600);

    const unbalanced = await answersTo(host, '{'.repeat(depth));
    assert.equal(unbalanced.length, 1);
    assert.ok([-32600, -32700].includes(unbalanced[0].error.code));
  }));

test('a JSON-RPC batch is -32600', () =>
  withHost(async (host) => {
    const answers = await answersTo(host, JSON.stringify([
      { jsonrpc: '2.0', id: 'b1', method: 'ping' },
      { jsonrpc: '2.0', id: 'b2', method: 'ping' },
    ]));
    assert.equal(answers.length, 1);
    assert.equal(answers[0].error.code, -32600);
    assert.match(answers[0].error.message, /batch/i);
    const empty = await answersTo(host, '[]');
    assert.equal(empty.length, 1);
    assert.equal(empty[0].error.code, -32600);
  }));

test('responses, unknown notifications and empty lines are ignored', () =>
  withHost(async (host) => {
    await host.initialize();
    const silent = [
      JSON.stringify({ jsonrpc: '2.0', id: 77, result: {} }),
      JSON.stringify({ jsonrpc: '2.0', id: 78, error: { code: -32601, message: 'nope' } }),
      JSON.stringify({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' }),
      JSON.stringify({ jsonrpc: '2.0', method: 'notifications/whatever', params: { a: 1 } }),
      JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      '',
      '\r',
    ];
    for (const line of silent) assert.deepEqual(await answersTo(host, line), [], `no answer to ${JSON.stringify(line)}`);
  }));

test('CRLF line endings are accepted', () =>
  withHost(async (host) => {
    host.expectRequest({ jsonrpc: '2.0', id: 'crlf', method: 'ping' });
    host.write('{"jsonrpc":"2.0","id":"crlf","method":"ping"}\r\n', { newline: false });
    const answer = await host.response('crlf');
    assert.deepEqual(answer.message.result, {});
    host.expectRequest({ jsonrpc: '2.0', id: 'crlf2', method: 'ping' });
    host.write('{"jsonrpc":"2.0","id":"crlf2","method":"ping"}\r\n{"jsonrpc":"2.0","id":"lf","method":"ping"}', { newline: true });
    host.expectRequest({ jsonrpc: '2.0', id: 'lf', method: 'ping' });
    assert.deepEqual((await host.response('crlf2')).message.result, {});
    assert.deepEqual((await host.response('lf')).message.result, {});
  }));

test('a message split across writes and several messages in one write', () =>
  withHost(async (host) => {
    host.expectRequest({ jsonrpc: '2.0', id: 's', method: 'ping' });
    host.expectRequest({ jsonrpc: '2.0', id: 't', method: 'ping' });
    host.write('{"jsonrpc":"2.0",', { newline: false });
    // Give the host a chance to read the first half on its own.
    await new Promise((resolve) => setTimeout(resolve, 50));
    host.write('"id":"s","method":"ping"}\n{"jsonrpc":"2.0","id":"t","method":"ping"}');
    assert.deepEqual((await host.response('s')).message.result, {});
    assert.deepEqual((await host.response('t')).message.result, {});
  }));

test('the host keeps serving after every kind of garbage in one stream', () =>
  withHost(async (host) => {
    await host.initialize();
    host.write(Buffer.from([0xff, 0xfe, 0x00, 0x01]));
    host.write('{"jsonrpc":"2.0","id":');
    host.write('\u0000');
    host.write('[1,2,3]');
    host.write('null');
    const call = await host.request('tools/call', { name: 'echo', arguments: { text: 'survived' } });
    assert.equal(call.result.structuredContent.text, 'survived');
  }));

test('a message that is neither request, notification nor response is -32600 without an id', () =>
  withHost(async (host) => {
    await host.initialize();
    for (const line of [
      '{}',
      '{"jsonrpc":"2.0"}',
      '{"jsonrpc":"2.0","result":{}}',
      '{"jsonrpc":"2.0","error":{"code":1,"message":"x"}}',
      '{"jsonrpc":"2.0","result":{},"error":{"code":1,"message":"x"}}',
    ]) {
      const answers = await answersTo(host, line);
      assert.equal(answers.length, 1, `one answer to ${line}`);
      assert.equal(answers[0].error.code, -32600, line);
      assert.equal(Object.hasOwn(answers[0], 'id'), false, line);
    }
  }));
