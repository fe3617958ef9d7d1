// Plugins that break their contract, each a fixture in tests/fixtures/: the
// agent gets a tool error that blames the tool, stdout stays clean (the
// harness fails on any line that is not valid JSON-RPC), and the host keeps
// serving. A plugin that crashes the process (a segfault) cannot be contained
// in-process; docs/security.md says what operators do about it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Host, withHost, modernMeta } from './lib/host.mjs';

test('a raw C plugin answering invalid JSON, a non-object or garbage bytes gets a tool error each; it still serves', () =>
  withHost({ plugins: ['echo.so', 'rawjson.so'] }, async (host) => {
    for (const name of ['rawjson_truncated', 'rawjson_not_object', 'rawjson_garbage']) {
      const answer = await host.modern('tools/call', { name, arguments: {} });
      assert.equal(answer.result.isError, true, name);
      assert.match(answer.result.content[0].text, new RegExp(`'${name}' returned a malformed result.*fault in the tool`), name);
    }
    await host.stderrMatching(/rawjson_truncated.*malformed JSON/);
    const ok = await host.modern('tools/call', { name: 'rawjson_ok', arguments: {} });
    assert.equal(ok.result.content[0].text, 'fine');
    const echo = await host.modern('tools/call', { name: 'echo', arguments: { text: 'others too' } });
    assert.equal(echo.result.structuredContent.text, 'others too');
  }));

test('a plugin that throws and one that breaks its outputSchema get tool errors; the host goes on', () =>
  withHost(async (host) => {
    const crash = await host.modern('tools/call', { name: 'crash', arguments: {} });
    assert.equal(crash.result.isError, true);
    assert.doesNotMatch(JSON.stringify(crash), /secret/);
    const bad = await host.modern('tools/call', { name: 'bad_output', arguments: {} });
    assert.equal(bad.result.isError, true);
    assert.match(bad.result.content[0].text, /breaks its own outputSchema/);
    const echo = await host.modern('tools/call', { name: 'echo', arguments: { text: 'fine' } });
    assert.equal(echo.result.structuredContent.text, 'fine');
  }));

test('a plugin printing to stdout during calls never reaches the protocol stream', () =>
  withHost({ plugins: ['echo.so', 'noisy.so'] }, async (host) => {
    for (let i = 0; i < 5; i++) {
      const answer = await host.modern('tools/call', { name: 'noisy_shout', arguments: {} });
      assert.equal(answer.result.content[0].text, 'shouted');
    }
    await host.stderrMatching(/noisy write in a call/);
    await host.stderrMatching(/noisy printf in a call/);
  }));

test('a plugin that blocks for ever: the timeout answers, other calls are served, its family is capped (calls wait, then time out), shutdown completes', async () => {
  const host = new Host({
    plugins: ['echo.so', { path: 'stuck.so', max_in_flight: 1 }],
    limits: { tool_timeout_ms: 500, workers: 2 },
  });
  try {
    host.send({
      jsonrpc: '2.0',
      id: 'stuck',
      method: 'tools/call',
      params: { name: 'stuck_forever', arguments: {}, _meta: modernMeta({ progressToken: 'stuck' }) },
    });
    const timedOut = (await host.response('stuck')).message;
    assert.equal(timedOut.result.structuredContent.code, 'TOOL_TIMEOUT');
    assert.match(timedOut.result.content[0].text, /'stuck_forever' took longer than 500 ms/);

    // The stuck call still holds its worker and the family's one place: more
    // calls into the family wait for it, holding no worker, until their own
    // timeout answers them.
    for (const name of ['stuck_forever', 'stuck_ping'])
      host.send({ jsonrpc: '2.0', id: `waiting-${name}`, method: 'tools/call', params: { name, arguments: {}, _meta: modernMeta() } });
    // Meanwhile the other worker serves everyone else.
    for (let i = 0; i < 3; i++) {
      const echo = await host.modern('tools/call', { name: 'echo', arguments: { text: `still ${i}` } });
      assert.equal(echo.result.structuredContent.text, `still ${i}`);
    }
    for (const name of ['stuck_forever', 'stuck_ping']) {
      const waited = (await host.response(`waiting-${name}`)).message;
      assert.equal(waited.result.structuredContent.code, 'TOOL_TIMEOUT', name);
    }
    assert.equal(host.messages.filter((m) => m.message.id === 'stuck').length, 1);
  } finally {
    // close() fails unless the host exits (it cannot join the stuck worker,
    // so it leaves without unloading the plugins).
    const exit = await host.close({ timeoutMs: 30000 });
    assert.equal(exit.code, 0, host.stderr.slice(-2000));
  }
  assert.match(host.stderr, /exiting without unloading the plugins/);
});
