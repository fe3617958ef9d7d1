// The three tiers of failure as the wire shows them: JSON-RPC errors for
// messages the host cannot serve, tool errors (isError) for calls that ran or
// whose arguments broke the inputSchema. Each case runs in both revisions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHost, modernMeta, LEGACY, MODERN } from './lib/host.mjs';

// Sends a request in the given revision (2025-11-25 after initialize).
async function call(host, revision, method, params) {
  if (revision === MODERN) return host.modern(method, params ?? {});
  return host.request(method, params);
}

async function start(host, revision) {
  if (revision === LEGACY) await host.initialize();
}

// Returns the answer with no id (the host could not know it) that arrives next.
async function anonymousAnswer(host, line) {
  const from = host.messages.length;
  host.write(line);
  const entry = await host.waitFor((m) => Object.hasOwn(m, 'error') && !Object.hasOwn(m, 'id'), {
    fromIndex: from,
    what: `the error for ${line.slice(0, 80)}`,
  });
  return entry.message;
}

test('parse error -32700 without an id, and the host keeps serving', () =>
  withHost(async (host) => {
    for (const line of ['{"jsonrpc":"2.0","id":1,"method":', 'not json at all', '{"jsonrpc":"2.0",}']) {
      const answer = await anonymousAnswer(host, line);
      assert.equal(answer.error.code, -32700, line);
    }
    assert.deepEqual((await host.ping()).result, {});
  }));

test('invalid requests are -32600', () =>
  withHost(async (host) => {
    // The id is echoed when it is a valid id, else the answer has none.
    const cases = [
      { line: '{"id":"r1","method":"ping"}', id: 'r1' },
      { line: '{"jsonrpc":"1.0","id":"r2","method":"ping"}', id: 'r2' },
      { line: '{"jsonrpc":"2.0","id":null,"method":"ping"}' },
      { line: '{"jsonrpc":"2.0","id":1.5,"method":"ping"}' },
      { line: '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}' },
      { line: '{"jsonrpc":"2.0","id":[1],"method":"ping"}' },
      { line: '{"jsonrpc":"2.0","id":true,"method":"ping"}' },
      { line: '{"jsonrpc":"2.0","id":"r3","method":42}', id: 'r3' },
      { line: '{"jsonrpc":"2.0","id":"r4","method":null}', id: 'r4' },
      { line: '{"jsonrpc":"2.0","id":"r5"}', id: 'r5' },
      { line: '{"jsonrpc":"2.0","id":"r6","method":"ping","params":"not an object"}', id: 'r6', code: -32602 },
      { line: '"just a string"' },
      { line: '42' },
    ];
    for (const { line, id, code = -32600 } of cases) {
      let answer;
      if (id !== undefined) {
        host.expectRequest(JSON.parse(line));
        host.write(line);
        answer = (await host.response(id)).message;
      } else {
        answer = await anonymousAnswer(host, line);
      }
      assert.equal(answer.error?.code, code, line);
    }
    assert.deepEqual((await host.ping()).result, {});
  }));

for (const revision of [LEGACY, MODERN]) {
  test(`method not found -32601 (${revision})`, () =>
    withHost(async (host) => {
      await start(host, revision);
      for (const method of ['tools/explode', 'resources/read', '']) {
        const answer = await call(host, revision, method, {});
        assert.equal(answer.error?.code, -32601, method);
      }
    }));

  test(`invalid params -32602 (${revision})`, () =>
    withHost(async (host) => {
      await start(host, revision);
      const unknown = await call(host, revision, 'tools/call', { name: 'no_such_tool', arguments: {} });
      assert.equal(unknown.error?.code, -32602);
      assert.match(unknown.error.message, /no_such_tool/);

      const noName = await call(host, revision, 'tools/call', { arguments: {} });
      assert.equal(noName.error?.code, -32602);

      for (const args of [[], 'text', 7, true]) {
        const answer = await call(host, revision, 'tools/call', { name: 'echo', arguments: args });
        assert.equal(answer.error?.code, -32602, `arguments ${JSON.stringify(args)}`);
      }

      // params itself not an object (the revision cannot even be read then)
      for (const params of [[1, 2], 'params', 3]) {
        const answer = await host.request('tools/call', params);
        assert.equal(answer.error?.code, -32602, `params ${JSON.stringify(params)}`);
      }
    }));

  test(`arguments that break the inputSchema are a tool error naming the pointer (${revision})`, () =>
    withHost(async (host) => {
      await start(host, revision);
      const wrongType = await call(host, revision, 'tools/call', { name: 'echo', arguments: { text: 5 } });
      assert.equal(wrongType.result.isError, true);
      assert.match(wrongType.result.content[0].text, /\/text/);

      const missing = await call(host, revision, 'tools/call', { name: 'echo', arguments: {} });
      assert.equal(missing.result.isError, true);
      assert.match(missing.result.content[0].text, /text/);

      const outOfRange = await call(host, revision, 'tools/call', { name: 'slow', arguments: { ms: -1 } });
      assert.equal(outOfRange.result.isError, true);
      assert.match(outOfRange.result.content[0].text, /\/ms/);
    }));

  test(`a tool breaking its outputSchema, failing and crashing (${revision})`, () =>
    withHost(async (host) => {
      await start(host, revision);
      const bad = await call(host, revision, 'tools/call', { name: 'bad_output', arguments: {} });
      assert.equal(bad.result.isError, true);
      assert.match(bad.result.content[0].text, /outputSchema/);
      assert.match(bad.result.content[0].text, /\/count/);
      assert.equal(Object.hasOwn(bad.result, 'structuredContent'), false, 'the broken result is not passed on');

      const fail = await call(host, revision, 'tools/call', { name: 'fail', arguments: {} });
      assert.equal(fail.result.isError, true);
      assert.equal(fail.result.content[0].text, 'No note 99: nothing was deleted.');

      const crash = await call(host, revision, 'tools/call', { name: 'crash', arguments: {} });
      assert.equal(crash.result.isError, true);
      const text = crash.result.content[0].text;
      assert.match(text, /crash/);
      assert.doesNotMatch(JSON.stringify(crash), /secret|internal detail/, 'the exception text stays in the log');
      await host.stderrMatching(/\/secret\/path/); // the operator finds the detail in the log

      // The plugin still serves after its crash.
      const echo = await call(host, revision, 'tools/call', { name: 'echo', arguments: { text: 'still here' } });
      assert.equal(echo.result.structuredContent.text, 'still here');
    }));
}

test('an unknown tool\'s name is echoed once, cut short when longer than any tool name', () =>
  withHost(async (host) => {
    const name = 'x'.repeat(100000);
    const answer = await host.modern('tools/call', { name, arguments: {} });
    assert.equal(answer.error?.code, -32602);
    assert.ok(JSON.stringify(answer.error).length < 400, `the error stays short: ${JSON.stringify(answer.error).length} bytes`);
    assert.match(answer.error.message, /^Unknown tool: 'x{64}… \(100000 bytes\)'/);
    // A multi-byte character at the cut is never split.
    const accented = await host.modern('tools/call', { name: 'x'.repeat(63) + 'é'.repeat(10), arguments: {} });
    assert.match(accented.error.message, /^Unknown tool: 'x{63}… \(83 bytes\)'/);
  }));

test('an integer above 2^63-1 in the arguments is refused naming its pointer, before the tool runs', () =>
  withHost({ plugins: ['echo.so', 'rawjson.so'] }, async (host) => {
    // Written as text: a JavaScript number cannot hold 2^64-1 exactly.
    const call = (id, args) =>
      `{"jsonrpc":"2.0","id":"${id}","method":"tools/call","params":{"name":"rawjson_mirror","arguments":${args},"_meta":${JSON.stringify(modernMeta())}}}`;
    for (const [id, args, pointer] of [
      ['top', '{"content":[],"n":18446744073709551615}', '/n'],
      ['nested', '{"content":[],"ids":[1,{"note_id":9223372036854775808}]}', '/ids/1/note_id'],
    ]) {
      host.write(call(id, args));
      host.expectRequest({ jsonrpc: '2.0', id, method: 'tools/call' });
      const answer = (await host.response(id)).message;
      assert.equal(answer.result?.isError, true, JSON.stringify(answer));
      assert.equal(answer.result.structuredContent.code, 'INTEGER_OUT_OF_RANGE');
      assert.equal(answer.result.structuredContent.next.pointer, pointer);
      assert.match(answer.result.content[0].text, new RegExp(`at ${pointer} .*out of range`));
    }
    host.write(call('max', '{"content":[],"n":9223372036854775807}'));
    host.expectRequest({ jsonrpc: '2.0', id: 'max', method: 'tools/call' });
    const max = (await host.response('max')).message;
    assert.equal(max.result.isError, undefined, JSON.stringify(max));
  }));

test('a modern request with params that are not an object is -32602', () =>
  withHost(async (host) => {
    host.write(JSON.stringify({ jsonrpc: '2.0', id: 'p', method: 'tools/list', params: [modernMeta()] }));
    host.expectRequest({ jsonrpc: '2.0', id: 'p', method: 'tools/list' });
    const answer = (await host.response('p')).message;
    assert.equal(answer.error?.code, -32602);
  }));
