// Multi round-trip requests against the real binary: a 2026-07-28 tool call
// answers InputRequiredResult with a sealed requestState, the retry with the
// client's answers completes, and every way a requestState can be misused is
// refused with -32602; two processes sharing a key accept each other's state.
// 2025-11-25 clients get real server-to-client requests on stdio instead.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Host, withHost, modernMeta } from './lib/host.mjs';
import { withHttpHost, HttpHost } from './lib/http_host.mjs';

const PLUGINS = ['conformance.so'];
const newKey = () => randomBytes(32).toString('base64');
const withKey = (key, extra = {}) => ({ plugins: PLUGINS, ...extra, env: { ...extra.env, GATEHOUSE_STATE_KEY: key } });

const call = (host, name, args = {}, extra = {}, capabilities = { elicitation: {} }) =>
  host.modern('tools/call', { name, arguments: args, ...extra }, { 'io.modelcontextprotocol/clientCapabilities': capabilities });

const confirm = { confirm: { action: 'accept', content: { ok: true } } };

async function firstRound(host, name = 'test_input_required_result_request_state', args = {}) {
  const answer = await call(host, name, args);
  assert.equal(answer.result?.resultType, 'input_required', JSON.stringify(answer));
  assert.equal(typeof answer.result.requestState, 'string');
  return answer.result;
}

function assertRefusedState(answer) {
  assert.equal(answer.error?.code, -32602, JSON.stringify(answer));
  assert.match(answer.error.message, /Invalid or expired requestState/);
}

test('a 2026-07-28 tool asks, and the retry with the answers and the sealed state completes', () =>
  withHost({ plugins: PLUGINS }, async (host) => {
    const round1 = await firstRound(host);
    assert.deepEqual(Object.keys(round1.inputRequests), ['confirm']);
    assert.equal(round1.inputRequests.confirm.method, 'elicitation/create');
    assert.ok(!round1.requestState.includes('awaiting'), 'the plugin state is sealed, not readable');
    const done = await call(host, 'test_input_required_result_request_state', {}, { inputResponses: confirm, requestState: round1.requestState });
    assert.equal(done.result.resultType, 'complete');
    assert.match(done.result.content[0].text, /^state-ok/);

    // Missing answers ask again; answers nobody asked for are ignored.
    const again = await call(host, 'test_input_required_result_request_state', {}, { inputResponses: { other: { action: 'accept', content: {} } }, requestState: round1.requestState });
    assert.equal(again.result.resultType, 'input_required');
    assert.deepEqual(Object.keys(again.result.inputRequests), ['confirm']);
    assert.notEqual(again.result.requestState, round1.requestState);
  }));

test('through call_tool the rounds are those of a direct call: the retry\'s answers and state reach the tool (both revisions)', () =>
  withHost({ plugins: PLUGINS, sections: { domains: { conformance: { exposure: 'on_demand' } } } }, async (host) => {
    const target = { name: 'test_input_required_result_request_state', arguments: {} };
    const round1 = await call(host, 'call_tool', target);
    assert.equal(round1.result?.resultType, 'input_required', JSON.stringify(round1));
    assert.deepEqual(Object.keys(round1.result.inputRequests), ['confirm']);
    const done = await call(host, 'call_tool', target, { inputResponses: confirm, requestState: round1.result.requestState });
    assert.equal(done.result?.resultType, 'complete', JSON.stringify(done));
    assert.match(done.result.content[0].text, /^state-ok/);
    // The state is the forwarded call's: the same tool called directly accepts it, and a changed one is refused alike.
    const direct = await call(host, target.name, {}, { inputResponses: confirm, requestState: round1.result.requestState });
    assert.match(direct.result.content[0].text, /^state-ok/);
    assertRefusedState(await call(host, 'call_tool', target, { inputResponses: confirm, requestState: 'x' + round1.result.requestState }));
    // 2025-11-25: the host asks the client itself, through call_tool as directly.
    await host.initialize(undefined, { roots: {} });
    const from = host.messages.length;
    const pending = host.request('tools/call', { name: 'call_tool', arguments: { name: 'test_input_required_result_list_roots', arguments: {} } });
    const ask = (await host.waitFor((m) => m.method === 'roots/list' && Object.hasOwn(m, 'id'), { fromIndex: from })).message;
    host.write(JSON.stringify({ jsonrpc: '2.0', id: ask.id, result: { roots: [{ uri: 'file:///work/shop', name: 'shop' }] } }));
    assert.equal((await pending).result.content[0].text, 'Client roots: file:///work/shop');
  }));

test('a requestState changed by one character, or not a state at all, is refused', () =>
  withHost({ plugins: PLUGINS }, async (host) => {
    const { requestState } = await firstRound(host);
    const i = Math.floor(requestState.length / 2);
    const flipped = requestState.slice(0, i) + (requestState[i] === 'A' ? 'B' : 'A') + requestState.slice(i + 1);
    for (const state of [flipped, requestState + '-TAMPERED', 'x'])
      assertRefusedState(await call(host, 'test_input_required_result_request_state', {}, { inputResponses: confirm, requestState: state }));
    const notString = await call(host, 'test_input_required_result_request_state', {}, { inputResponses: confirm, requestState: 7 });
    assert.equal(notString.error?.code, -32602);
    const nullResponses = await call(host, 'test_input_required_result_elicitation', {}, { inputResponses: null });
    assert.equal(nullResponses.error?.code, -32602);
    const numberResponse = await call(host, 'test_input_required_result_elicitation', {}, { inputResponses: { user_name: 12345 } });
    assert.equal(numberResponse.error?.code, -32602);
  }));

test('a requestState replayed on another tool or with other arguments is refused', () =>
  withHost({ plugins: PLUGINS }, async (host) => {
    const { requestState } = await firstRound(host);
    assertRefusedState(await call(host, 'test_input_required_result_tampered_state', {}, { inputResponses: confirm, requestState }));
    const asked = await firstRound(host, 'test_elicitation', { message: 'Who are you?' });
    const answer = { user: { action: 'accept', content: { username: 'ann', email: 'ann@example.com' } } };
    assertRefusedState(await call(host, 'test_elicitation', { message: 'Something else' }, { inputResponses: answer, requestState: asked.requestState }));
    const done = await call(host, 'test_elicitation', { message: 'Who are you?' }, { inputResponses: answer, requestState: asked.requestState });
    assert.match(done.result.content[0].text, /action=accept/);
  }));

test('two processes sharing a key accept each other\'s state; another principal, server name or key does not', async () => {
  const key = newKey();
  const a = new Host(withKey(key, { env: { GATEHOUSE_PRINCIPAL: 'ann' } }));
  const b = new Host(withKey(key, { env: { GATEHOUSE_PRINCIPAL: 'ann' } }));
  const mallory = new Host(withKey(key, { env: { GATEHOUSE_PRINCIPAL: 'mallory' } }));
  const renamed = new Host(withKey(key, { env: { GATEHOUSE_PRINCIPAL: 'ann' }, sections: { server: { name: 'another-gatehouse' } } }));
  // The old key rotated out: only the new one is held.
  const rotatedOut = new Host(withKey(newKey(), { env: { GATEHOUSE_PRINCIPAL: 'ann' } }));
  // Both keys held, the new one first: old state still opens.
  const rotating = new Host(withKey(`${newKey()},${key}`, { env: { GATEHOUSE_PRINCIPAL: 'ann' } }));
  try {
    const { requestState } = await firstRound(a);
    const retry = { inputResponses: confirm, requestState };
    const done = await call(b, 'test_input_required_result_request_state', {}, retry);
    assert.match(done.result?.content?.[0]?.text ?? JSON.stringify(done), /^state-ok/);
    assert.match((await call(rotating, 'test_input_required_result_request_state', {}, retry)).result.content[0].text, /^state-ok/);
    assertRefusedState(await call(mallory, 'test_input_required_result_request_state', {}, retry));
    assertRefusedState(await call(renamed, 'test_input_required_result_request_state', {}, retry));
    assertRefusedState(await call(rotatedOut, 'test_input_required_result_request_state', {}, retry));
    assert.doesNotMatch(a.stderr, /no requestState key configured/);
  } finally {
    for (const h of [a, b, mallory, renamed, rotatedOut, rotating]) await h.close();
  }
});

test('without a configured key each process makes its own and says so', async () => {
  const a = new Host({ plugins: PLUGINS });
  const b = new Host({ plugins: PLUGINS });
  try {
    const { requestState } = await firstRound(a);
    assertRefusedState(await call(b, 'test_input_required_result_request_state', {}, { inputResponses: confirm, requestState }));
    await a.stderrMatching(/no requestState key configured/);
  } finally {
    await a.close();
    await b.close();
  }
});

test('an expired requestState is refused', () =>
  withHost({ plugins: PLUGINS, sections: { input_requests: { state_ttl_ms: 1000 } } }, async (host) => {
    const { requestState } = await firstRound(host);
    await new Promise((r) => setTimeout(r, 1300));
    assertRefusedState(await call(host, 'test_input_required_result_request_state', {}, { inputResponses: confirm, requestState }));
  }));

test('a malformed state key in the environment stops the host with a reason', async () => {
  const host = new Host({ plugins: PLUGINS, env: { GATEHOUSE_STATE_KEY: 'c2hvcnQ=' } });
  const { code } = await host.exit;
  assert.equal(code, 1);
  assert.match(host.stderr, /GATEHOUSE_STATE_KEY: key 1 is not base64 of exactly 32 bytes/);
  await host.close();
});

test('an input request the client did not declare is never sent: -32021, HTTP 400 for 2026-07-28', () =>
  withHttpHost({ plugins: PLUGINS }, async (host) => {
    const reply = await host.modern('tools/call', { name: 'test_missing_capability', arguments: {} });
    assert.equal(reply.status, 400);
    assert.equal(reply.answer.error.code, -32021);
    assert.deepEqual(reply.answer.error.data.requiredCapabilities, { sampling: {} });
    assert.ok(!reply.messages.some((m) => m.method && Object.hasOwn(m, 'id')), 'no request to the client');

    const url = await host.modern('tools/call', { name: 'test_input_required_result_elicitation', arguments: {} }, {
      meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } } },
    });
    assert.deepEqual(url.answer.error?.data?.requiredCapabilities, { elicitation: { form: {} } });

    // The tool that checks first asks only for what the client can give.
    const sampled = await host.modern('tools/call', { name: 'test_input_required_result_capabilities', arguments: {} }, {
      meta: { 'io.modelcontextprotocol/clientCapabilities': { sampling: {} } },
    });
    assert.deepEqual(Object.values(sampled.answer.result.inputRequests).map((r) => r.method), ['sampling/createMessage']);
  }));

test('prompts/get and resources/read rounds; other methods never answer input_required', () =>
  withHttpHost({ plugins: PLUGINS }, async (host) => {
    const meta = { meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } } };
    const asked = await host.modern('prompts/get', { name: 'test_input_required_result_prompt' }, meta);
    assert.equal(asked.answer.result.resultType, 'input_required');
    const done = await host.modern('prompts/get', {
      name: 'test_input_required_result_prompt',
      inputResponses: { user_context: { action: 'accept', content: { context: 'the till' } } },
      requestState: asked.answer.result.requestState,
    }, meta);
    assert.match(done.answer.result.messages[0].content.text, /the till/);
    // Other methods ignore what they do not know, and never ask.
    const listed = await host.modern('tools/list', { inputResponses: {}, requestState: 'x' });
    assert.equal(listed.answer.result.resultType, 'complete');
  }));

test('2025-11-25 over stdio: the host asks the client itself and resumes the tool', () =>
  withHost({ plugins: PLUGINS }, async (host) => {
    await host.initialize(undefined, { roots: {}, sampling: {} });
    const from = host.messages.length;
    const pending = host.request('tools/call', { name: 'test_input_required_result_list_roots', arguments: {} });
    const ask = (await host.waitFor((m) => m.method === 'roots/list' && Object.hasOwn(m, 'id'), { fromIndex: from })).message;
    host.write(JSON.stringify({ jsonrpc: '2.0', id: ask.id, result: { roots: [{ uri: 'file:///work/shop', name: 'shop' }] } }));
    const answer = await pending;
    assert.equal(answer.result.content[0].text, 'Client roots: file:///work/shop');

    // Declined by the client: the tool call fails with the client's reason.
    const refused = host.request('tools/call', { name: 'test_sampling', arguments: { prompt: 'hi' } });
    const sampling = (await host.waitFor((m) => m.method === 'sampling/createMessage', { fromIndex: from })).message;
    host.write(JSON.stringify({ jsonrpc: '2.0', id: sampling.id, error: { code: -1, message: 'User rejected sampling request' } }));
    assert.match((await refused).error.message, /refused the server's sampling\/createMessage \(User rejected/);

    // Not declared: never asked.
    const undeclared = await host.request('tools/call', { name: 'test_elicitation', arguments: { message: 'm' } });
    assert.equal(undeclared.error.code, -32021);
  }));
