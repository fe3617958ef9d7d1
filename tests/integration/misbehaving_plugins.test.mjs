// Plugins that break their contract, each a fixture in tests/fixtures/: the
// agent gets a tool error that blames the tool, stdout stays clean (the
// harness fails on any line that is not valid JSON-RPC), and the host keeps
// serving. A plugin that crashes the process (a segfault) cannot be contained
// in process; served with isolation: process it is (isolation.test.mjs), and
// docs/security.md says which to choose.
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

test('a result written over several lines, or naming a member twice, reaches the client on one line and as the host read it (both revisions)', () =>
  // An answer may carry a plugin's text as the plugin wrote it; one with a
  // line break would end a stdio message early (the harness fails on a line
  // that is not JSON-RPC), and one that names "content" twice would show a
  // client that keeps the first name another result than the one checked.
  withHost({ plugins: ['rawjson.so'] }, async (host) => {
    await host.initialize();
    for (const revision of ['2026-07-28', '2025-11-25']) {
      const ask = async (name) => {
        const id = host.nextId++;
        const params = { name, arguments: {} };
        host.send({ jsonrpc: '2.0', id, method: 'tools/call', params: revision === '2026-07-28' ? { ...params, _meta: modernMeta() } : params });
        return host.response(id);
      };
      const spaced = await ask('rawjson_spaced');
      assert.deepEqual(spaced.message.result.content, [{ type: 'text', text: 'spaced' }], revision);
      const repeated = await ask('rawjson_repeated');
      assert.deepEqual(repeated.message.result.content, [{ type: 'text', text: 'last' }], revision);
      assert.doesNotMatch(repeated.line, /first/, revision);
      // A compact result passes whole, with what the revision adds.
      const ok = await ask('rawjson_ok');
      assert.deepEqual(ok.message.result.content, [{ type: 'text', text: 'fine' }], revision);
      if (revision === '2026-07-28') {
        assert.equal(ok.message.result.resultType, 'complete');
        assert.deepEqual(Object.keys(ok.message.result._meta), ['io.modelcontextprotocol/serverInfo']);
      } else {
        assert.deepEqual(Object.keys(ok.message.result), ['content'], ok.line);
      }
    }
    assert.deepEqual(host.problems, []);
  }));

// rawjson_mirror answers with its own arguments, so each case is the result
// the plugin writes. Each breaks the revisions' CallToolResult schema in one
// place, which a client's typed parser would refuse as a whole.
const BROKEN_RESULTS = {
  'a text block without text': [{ content: [{ type: 'text' }] }, '/content/0'],
  'an unknown content type': [{ content: [{ type: 'text', text: 'a' }, { type: 'video', url: 'x' }] }, '/content/1/type'],
  'an image without data': [{ content: [{ type: 'image', mimeType: 'image/png' }] }, '/content/0'],
  'an image whose data is not base64': [{ content: [{ type: 'image', mimeType: 'image/png', data: 'not base64!' }] }, '/content/0/data'],
  'a resource_link without name': [{ content: [{ type: 'resource_link', uri: 'test://a' }] }, '/content/0'],
  'a resource without text or blob': [{ content: [{ type: 'resource', resource: { uri: 'test://a' } }] }, '/content/0/resource'],
  'priority above 1': [{ content: [{ type: 'text', text: 'a', annotations: { priority: 1.5 } }] }, '/content/0/annotations/priority'],
  'an unknown audience': [{ content: [{ type: 'text', text: 'a', annotations: { audience: ['user', 'robot'] } }] }, '/content/0/annotations/audience/1'],
  'isError that is not a boolean': [{ content: [{ type: 'text', text: 'it failed' }], isError: 'yes' }, '/isError'],
  'resultType input_required without inputRequests or requestState': [{ content: [], resultType: 'input_required' }, '/resultType'],
  'content that is not an array': [{ content: { type: 'text', text: 'a' } }, '/content'],
  '_meta that is not an object': [{ content: [], _meta: 'x' }, '/_meta'],
};

test('a result that breaks the protocol schema never reaches the client: a tool error names where (both revisions)', () =>
  withHost({ plugins: ['rawjson.so'] }, async (host) => {
    await host.initialize();
    for (const [what, [result, pointer]] of Object.entries(BROKEN_RESULTS)) {
      for (const revision of ['2026-07-28', '2025-11-25']) {
        const params = { name: 'rawjson_mirror', arguments: result };
        const answer = revision === '2026-07-28' ? await host.modern('tools/call', params) : await host.request('tools/call', params);
        const label = `${what} (${revision}): ${JSON.stringify(answer)}`;
        assert.equal(answer.result?.isError, true, label);
        assert.equal(answer.result.content.length, 1, label);
        assert.ok(answer.result.content[0].text.includes(`breaks the protocol's schema (at ${pointer}:`), label);
        assert.match(answer.result.content[0].text, /fault in the tool/, label);
        if (revision === '2026-07-28') assert.equal(answer.result.resultType, 'complete', label);
      }
    }
    // 2025-11-25 takes structuredContent only as an object; 2026-07-28 takes any value.
    const scalar = { name: 'rawjson_mirror', arguments: { content: [], structuredContent: 5 } };
    const legacy = await host.request('tools/call', scalar);
    assert.ok(legacy.result.content[0].text.includes('at /structuredContent:'), JSON.stringify(legacy));
    assert.equal((await host.modern('tools/call', scalar)).result.structuredContent, 5);
    // A plugin that flags its answer an error keeps the flag.
    const flagged = await host.modern('tools/call', { name: 'rawjson_mirror', arguments: { content: [{ type: 'text', text: 'it failed' }], isError: true } });
    assert.equal(flagged.result.isError, true);
    assert.equal(flagged.result.content[0].text, 'it failed');
    // Every kind of block, well formed, passes unchanged.
    const good = {
      content: [
        { type: 'text', text: 'a', annotations: { audience: ['user'], priority: 0.5, lastModified: '2026-01-01T00:00:00Z' } },
        { type: 'image', mimeType: 'image/png', data: 'aGVsbG8=' },
        { type: 'audio', mimeType: 'audio/wav', data: '' },
        { type: 'resource_link', uri: 'test://a', name: 'a', size: 3 },
        { type: 'resource', resource: { uri: 'test://b', blob: 'aGk=' } },
        { type: 'resource', resource: { uri: 'test://c', text: 'c', mimeType: 'text/plain' } },
      ],
    };
    const fine = await host.modern('tools/call', { name: 'rawjson_mirror', arguments: good });
    assert.deepEqual(fine.result.content, good.content, JSON.stringify(fine));
    // The result's own _meta stays, beside the server's identity a 2026-07-28 answer carries.
    const own = await host.modern('tools/call', { name: 'rawjson_mirror', arguments: { content: [], _meta: { 'example.com/trace': 'abc' } } });
    assert.deepEqual(own.result._meta['example.com/trace'], 'abc', JSON.stringify(own));
    assert.equal(own.result._meta['io.modelcontextprotocol/serverInfo'].name, 'gatehouse', JSON.stringify(own));
    assert.equal(fine.result._meta['io.modelcontextprotocol/serverInfo'].name, 'gatehouse', JSON.stringify(fine));
    assert.deepEqual(Object.keys(fine.result._meta), ['io.modelcontextprotocol/serverInfo'], JSON.stringify(fine));
    await host.stderrMatching(/rawjson_mirror.*breaks the protocol's schema/);
  }));

test('a family refusal (GH_STATUS_REFUSED) reaches the agent in the gate\'s shape; a malformed one is a fault of the tool', () =>
  withHost({ plugins: ['rawjson.so'] }, async (host) => {
    const refused = await host.modern('tools/call', { name: 'rawjson_refused', arguments: {} });
    assert.deepEqual(refused.result.content, [{ type: 'text', text: 'QUOTA_USED: The monthly quota is used up.' }]);
    assert.equal(refused.result.isError, true);
    assert.deepEqual(refused.result.structuredContent, {
      code: 'QUOTA_USED',
      message: 'The monthly quota is used up.',
      next: { retry: 'next month' },
    });
    for (const name of ['rawjson_refused_lowercase', 'rawjson_refused_next_array', 'rawjson_refused_no_message']) {
      const answer = await host.modern('tools/call', { name, arguments: {} });
      assert.equal(answer.result.isError, true, name);
      assert.equal(answer.result.structuredContent, undefined, name);
      assert.match(answer.result.content[0].text, new RegExp(`'${name}' refused with a malformed answer.*fault in the tool`), name);
    }
    await host.stderrMatching(/rawjson_refused_lowercase.*refused with an answer that is not/);
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

test('a cancelled call parked behind a stuck family gives its in-flight place back at its deadline', async () => {
  const host = new Host({
    plugins: ['echo.so', { path: 'stuck.so', max_in_flight: 1 }],
    // Three workers: one stays with the stuck call for good.
    limits: { tool_timeout_ms: 500, workers: 3, max_in_flight_per_principal: 2 },
  });
  try {
    const call = (id, name, args = {}) =>
      host.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, _meta: modernMeta() } });
    call('stuck', 'stuck_forever');
    assert.equal((await host.response('stuck')).message.result.structuredContent.code, 'TOOL_TIMEOUT');
    // The family's one place stays taken for good; this call waits for it,
    // and the client gives up on it.
    call('parked', 'stuck_ping');
    await host.ping();
    host.notify('notifications/cancelled', { requestId: 'parked' });
    await new Promise((r) => setTimeout(r, 900)); // past its deadline
    // Both of this caller's places are free again: a long call and a quick one at once.
    call('long', 'slow', { ms: 2000 });
    await host.ping();
    const quick = await host.modern('tools/call', { name: 'echo', arguments: { text: 'room' } });
    assert.equal(quick.result?.structuredContent?.text, 'room', JSON.stringify(quick));
    assert.equal(host.messages.filter((m) => m.message.id === 'parked').length, 0, 'a cancelled call gets no answer');
    await host.response('long');
  } finally {
    const exit = await host.close({ timeoutMs: 30000 });
    assert.equal(exit.code, 0, host.stderr.slice(-2000));
  }
});

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
