// Three gatehouse instances sharing one Redis behind nginx round-robin with
// no stickiness (scripts/cluster.sh), driven by the official v2 client
// (@modelcontextprotocol/client, 2026-07-28). Every answer names its
// instance (Gatehouse-Instance), and each test shows its requests landing on
// different instances while the story holds: the gate's session, rules and
// critical notes; the rounds of one multi round-trip call; a change on one
// instance reaching a listen stream on another; an approval code exchanged
// once among racing instances; a kill -9 in a burst of writes losing no
// acknowledged write. The memory family's notes are in one PostgreSQL
// database all three share (scripts/postgres.sh starts a real one).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Cluster, recordingFetch, openListen } from './lib/cluster.mjs';
import { CheckedTransport } from './lib/checked_transport.mjs';
import { HttpHost } from './lib/http_host.mjs';
import { Postgres } from './lib/postgres.mjs';
import { MODERN } from './lib/host.mjs';

const MULTI_ROUND = 'test_input_required_result_multi_round';
const RATED = 'test_simple_text';
const RATED_BURST = 4;

let cluster;
let postgres;
before(async () => {
  postgres = await Postgres.start();
  // One tool has a bucket of its own, small and slow to refill, for the
  // rate-limit story; nothing else calls it.
  cluster = await Cluster.up({
    instances: 3,
    testPlugins: ['conformance.so'],
    testFamilies: ['conformance'],
    rateLimits: `{per_tool: {${RATED}: {calls_per_second: 0.01, burst: ${RATED_BURST}}}}`,
    memoryDatabase: postgres.url,
  });
});
after(async () => {
  try {
    // The database's password is in every instance's YAML, never in a log.
    for (let k = 1; k <= (cluster?.count ?? 0); k++) {
      const log = readFileSync(path.join(cluster.dir, `gh-${k}`, 'gatehouse.log'), 'utf8');
      assert.ok(log.includes('notes in postgresql'), `gh-${k} says where its notes are`);
      assert.ok(!log.includes(postgres.password), `gh-${k}'s log never shows the database password`);
    }
  } finally {
    await cluster?.down();
    await postgres?.stop();
  }
});

const code = (result) => result.structuredContent?.code ?? (result.isError ? result.content?.[0]?.text?.split(':')[0] : undefined);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A v2 client on `url` (nginx unless told); call() resolves with the tool
// result and the instance that answered its POST.
async function connectAgent(name, { url = cluster.url, capabilities } = {}) {
  const seen = [];
  const transport = new CheckedTransport(new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch(seen) }));
  const client = new Client({ name, version: '2.0.0' }, { capabilities, versionNegotiation: { mode: { pin: MODERN } } });
  await client.connect(transport);
  // The list is cached from here on (ttlMs), so each tools/call below is one POST.
  await client.listTools();
  const call = async (tool, args = {}) => {
    const result = await client.callTool({ name: tool, arguments: args });
    // This call's POST: the last with these arguments (an earlier one with
    // the same arguments got no answer, or this is a retry of it).
    const mine = seen.filter((r) => r.method === 'tools/call' && r.name === tool && JSON.stringify(r.arguments) === JSON.stringify(args));
    return { result, instance: mine.at(-1)?.instance };
  };
  const close = async () => {
    await client.close().catch(() => {});
    assert.deepEqual(transport.problems, [], 'every message the cluster sent fits the schema');
  };
  return { client, call, seen, close };
}

const ok = ({ result }) => {
  assert.equal(result.isError, undefined, JSON.stringify(result));
  return result.structuredContent;
};

// Deletes every note of the principal the way an agent must: a session,
// its critical notes read, forget_all's rules accepted. Leaves the notes
// to no other test.
async function forgetEverything(agent) {
  const session = ok(await agent.call('session_connect', { topic: 'clean-up' })).session;
  await agent.call('recall', { session, critical: true, limit: 50 });
  let answer = await agent.call('forget_all', { session, confirm: true });
  if (code(answer.result) === 'RULES_NOT_ACCEPTED') {
    await agent.call('session_rules_accept', { session, code: answer.result.structuredContent.next.code });
    answer = await agent.call('forget_all', { session, confirm: true });
  }
  return answer;
}

test('the session story, each step on another instance: a connect, critical notes and rules hold across all three', async () => {
  const agent = await connectAgent('itest-cluster-story');
  try {
    // Critical notes kept in one session are listed at the next connect.
    const first = ok(await agent.call('session_connect', { topic: 'till' })).session;
    for (const text of ['Close the till at six', 'Never refund in cash'])
      ok(await agent.call('remember', { session: first, text, critical: true }));

    const steps = [];
    const step = async (tool, args) => {
      const answer = await agent.call(tool, args);
      steps.push({ tool, instance: answer.instance });
      return answer.result;
    };
    const connected = await step('session_connect', { topic: 'orders' });
    const session = connected.structuredContent.session;
    assert.equal(connected.structuredContent.unread_critical_notes, 2);

    const unread = await step('forget_all', { session, confirm: true });
    assert.equal(code(unread), 'CRITICAL_NOTES_UNREAD', JSON.stringify(unread));
    assert.equal(unread.structuredContent.next.unread.length, 2);
    const read = await step('recall', { session, critical: true });
    assert.equal(read.structuredContent.unread_critical_notes, 0);
    assert.equal(read.structuredContent.notes.length, 2);

    // The notes read there count here: the next refusal is the rules'.
    const ruled = await step('forget_all', { session, confirm: true });
    assert.equal(code(ruled), 'RULES_NOT_ACCEPTED', JSON.stringify(ruled));
    const accepted = await step('session_rules_accept', { session, code: ruled.structuredContent.next.code });
    assert.equal(accepted.structuredContent.accepted, 'forget_all');
    const done = await step('forget_all', { session, confirm: true });
    assert.equal(done.isError, undefined, JSON.stringify(done));
    assert.equal(done.structuredContent.deleted, 2);
    const left = await step('recall', { session });
    assert.deepEqual(left.structuredContent.notes, [], 'the notes are gone for every instance');

    for (let i = 1; i < steps.length; ++i)
      assert.notEqual(steps[i].instance, steps[i - 1].instance, `steps ${i - 1} and ${i} on one instance: ${JSON.stringify(steps)}`);
    assert.deepEqual(new Set(steps.map((s) => s.instance)), new Set(['gh-1', 'gh-2', 'gh-3']));
  } catch (e) {
    await forgetEverything(agent).catch(() => {});
    throw e;
  } finally {
    await agent.close();
  }
});

test('the rounds of one multi round-trip call land on three instances and complete; a requestState of another server name is refused', async () => {
  const agent = await connectAgent('itest-cluster-rounds', { capabilities: { elicitation: { form: {} } } });
  let renamed;
  try {
    agent.client.setRequestHandler('elicitation/create', async (request) => ({
      action: 'accept',
      content: request.params.message.startsWith('Step 1') ? { name: 'Ann' } : { color: 'green' },
    }));
    const session = ok(await agent.call('session_connect', { topic: 'rounds' })).session;
    const done = await agent.client.callTool({ name: MULTI_ROUND, arguments: { session } });
    assert.equal(done.isError, undefined, JSON.stringify(done));
    assert.equal(done.content[0].text, 'Ann likes green.');
    const rounds = agent.seen.filter((r) => r.method === 'tools/call' && r.name === MULTI_ROUND);
    assert.equal(rounds.length, 3, 'ask, ask again, complete');
    assert.deepEqual(new Set(rounds.map((r) => r.instance)), new Set(['gh-1', 'gh-2', 'gh-3']), JSON.stringify(rounds));

    // An instance with the cluster's key and Redis but another server.name.
    renamed = await HttpHost.start({ config: cluster.configNamed(1, 'another-gatehouse', 'renamed'), listen: '127.0.0.1:0' });
    const elicitation = { 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } } };
    const asked = await renamed.modern('tools/call', { name: MULTI_ROUND, arguments: { session } }, { meta: elicitation });
    assert.equal(asked.headers.get('gatehouse-instance'), 'renamed');
    assert.equal(asked.answer.result?.resultType, 'input_required', JSON.stringify(asked.answer));
    const retry = {
      name: MULTI_ROUND,
      arguments: { session },
      inputResponses: { step1: { action: 'accept', content: { name: 'Ann' } } },
      requestState: asked.answer.result.requestState,
    };
    // Its own state opens there: the arguments and the answer fit.
    const own = await renamed.modern('tools/call', retry, { meta: elicitation });
    assert.deepEqual(Object.keys(own.answer.result.inputRequests), ['step2']);
    // Through nginx, on every instance of the cluster, it does not.
    const refusedOn = new Set();
    for (let i = 0; i < 3; ++i) {
      const reply = await cluster.modern('tools/call', retry, { meta: elicitation });
      assert.equal(reply.answer.error?.code, -32602, JSON.stringify(reply.answer));
      assert.match(reply.answer.error.message, /Invalid or expired requestState/);
      refusedOn.add(reply.instance);
    }
    assert.deepEqual(refusedOn, new Set(['gh-1', 'gh-2', 'gh-3']));
  } finally {
    await agent.close();
    if (renamed) assert.equal((await renamed.stop()).code, 0);
  }
});

test('a listen stream on one instance hears the tools/list change that a SIGHUP made on another (the Redis bus)', async () => {
  const [a, b] = [cluster.instance(1), cluster.instance(2)];
  const listed = async (instance) =>
    (await cluster.modern('tools/list', {}, { url: instance.url })).answer.result.tools.map((t) => t.name);
  const stream = await openListen(a.url, { toolsListChanged: true });
  const original = readFileSync(b.yaml, 'utf8');
  try {
    assert.equal(stream.instance, 'gh-1');
    assert.ok(!(await listed(b)).includes('create_session'), 'the sessions family starts on demand');
    // Nothing changed yet, so nothing is said (a bus that keeps losing its
    // subscription tells every stream "everything changed" on each return).
    await sleep(300);
    assert.deepEqual(stream.messages.map((m) => m.method), ['notifications/subscriptions/acknowledged']);
    // The operator lists the sessions family on gh-2 and sends it SIGHUP.
    const edited = original.replace(/exposure: on_demand/, 'exposure: listed');
    assert.notEqual(edited, original);
    writeFileSync(b.yaml, edited);
    let from = stream.messages.length;
    await cluster.reload(2);
    await stream.waitFor((m) => m.method === 'notifications/tools/list_changed', { from });
    assert.ok((await listed(b)).includes('create_session'), 'gh-2 lists it now');
    assert.ok(!(await listed(a)).includes('create_session'), 'gh-1 did not change: the notice came from gh-2, over Redis');

    writeFileSync(b.yaml, original);
    from = stream.messages.length;
    await cluster.reload(2);
    await stream.waitFor((m) => m.method === 'notifications/tools/list_changed', { from });
    assert.ok(!(await listed(b)).includes('create_session'));
    assert.deepEqual(stream.problems, []);
  } finally {
    writeFileSync(b.yaml, original);
    stream.close();
  }
});

// Approves on the confirmation page as a browser would, through nginx: GET
// for the form and its cookie, then POST it back. Resolves with the instances
// that served the two.
async function approveAt(url) {
  const shown = await fetch(url);
  assert.equal(shown.status, 200);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await shown.text())?.[1];
  assert.ok(csrf, 'the page carries its form');
  const posted = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: shown.headers.get('set-cookie').split(';')[0] },
    body: `csrf=${encodeURIComponent(csrf)}&action=approve`,
    redirect: 'manual',
  });
  assert.ok(posted.status < 400, `the approval was accepted (${posted.status})`);
  return [shown.headers.get('gatehouse-instance'), posted.headers.get('gatehouse-instance')];
}

test('one approval code, exchanged at once through nginx on all three instances, gives tokens exactly once', async () => {
  const agent = await connectAgent('itest-cluster-bots');
  const EXCHANGES = 9;
  try {
    const session = ok(await agent.call('session_connect', { topic: 'bots' })).session;
    for (let round = 0; round < 2; ++round) {
      const { session_id, confirmation_url } = ok(await agent.call('create_session', { session, type: 'LOGIN', external_user_id: `ext-${round}` }));
      assert.ok(confirmation_url.startsWith(`${cluster.origin}/pages/sessions/confirm/`), `the link names the proxy: ${confirmation_url}`);
      const [page, form] = await approveAt(confirmation_url);
      assert.notEqual(page, form, 'the form went back to another instance than the one that showed it');
      const approved = ok(await agent.call('get_session_status', { session, session_id }));
      assert.equal(approved.state, 'approved');
      const { approval_code } = approved;

      const from = agent.seen.length;
      const results = await Promise.all(
        Array.from({ length: EXCHANGES }, () => agent.call('exchange_session_approval_code', { session, approval_code })),
      );
      const winners = results.filter(({ result }) => result.isError === undefined);
      assert.equal(winners.length, 1, `exactly one exchange wins in round ${round}: ${JSON.stringify(results)}`);
      assert.equal(winners[0].result.structuredContent.session_id, session_id);
      assert.match(winners[0].result.structuredContent.access_token, /^gha_[0-9a-f]{64}$/);
      assert.deepEqual(
        results.filter(({ result }) => result.isError).map(({ result }) => code(result)),
        Array(EXCHANGES - 1).fill('APPROVAL_CODE_USED'),
      );
      const exchanged = agent.seen.slice(from).filter((r) => r.name === 'exchange_session_approval_code');
      assert.equal(exchanged.length, EXCHANGES);
      assert.deepEqual(new Set(exchanged.map((r) => r.instance)), new Set(['gh-1', 'gh-2', 'gh-3']), 'all three raced');
    }
  } finally {
    await agent.close();
  }
});

test('kill -9 of one instance in a burst of writes: no acknowledged write is lost and the client finishes on the others', async (t) => {
  const agent = await connectAgent('itest-cluster-burst');
  const WRITERS = 3;
  const PER_WRITER = 20;
  const KILL_AFTER = 12; // acknowledged writes before the kill
  const AFTER_KILL = 15; // and after it
  const acked = []; // { kind, key, instance, afterKill }
  let failed = 0;
  let killing;
  let killedAt; // acked.length when the kill had happened (gh-2 is gone)
  try {
    const session = ok(await agent.call('session_connect', { topic: 'burst' })).session;
    // A note (the memory family's shared SQLite file) or a gate session (Redis).
    const write = async (kind, key) => {
      for (let attempt = 0; attempt < 8; ++attempt) {
        try {
          const args = kind === 'note' ? { session, text: `burst note ${key}` } : { topic: key };
          // "After the kill" is decided when the write is sent: one sent
          // before it may still be answered by gh-2 after killedAt is set.
          const sentAfterKill = killedAt !== undefined;
          const { result, instance } = await agent.call(kind === 'note' ? 'remember' : 'session_connect', args);
          assert.equal(result.isError, undefined, JSON.stringify(result));
          acked.push({ kind, key, instance, handle: result.structuredContent.session, afterKill: sentAfterKill });
          return;
        } catch (e) {
          // Not acknowledged: the instance died with it, or nginx had no
          // answer for it. It may have been written; the client writes again.
          failed++;
          if (e.code === 'ERR_ASSERTION') throw e;
          await sleep(50);
        }
      }
      throw new Error(`never acknowledged: ${kind} ${key}`);
    };
    // Each writer writes one thing after another until it wrote its share
    // and the survivors took AFTER_KILL writes since the kill.
    let started = 0;
    const enough = (i) =>
      i >= PER_WRITER && killedAt !== undefined && acked.filter((a) => a.afterKill).length >= AFTER_KILL;
    await Promise.all(
      Array.from({ length: WRITERS }, async (_, w) => {
        for (let i = 0; !enough(i); ++i) {
          started++;
          await write(i % 4 === 3 ? 'session' : 'note', `burstw${w}n${i}`);
          if (acked.length >= KILL_AFTER && !killing) killing = cluster.kill(2).then(() => (killedAt = acked.length));
        }
      }),
    );
    assert.equal(acked.length, started, 'every write was acknowledged in the end');
    assert.ok(acked.some((a) => a.instance === 'gh-2' && !a.afterKill), 'gh-2 took writes before it was killed');
    const late = acked.filter((a) => a.afterKill);
    assert.ok(late.every((a) => a.instance !== 'gh-2'), `only the survivors took writes after the kill: ${JSON.stringify(late)}`);

    const verify = async (through, where) => {
      const notes = acked.filter((a) => a.kind === 'note').map((a) => a.key);
      for (let i = 0; i < notes.length; i += 20) {
        const batch = notes.slice(i, i + 20);
        const found = ok(await through.call('recall', { session, query: batch.join(' '), limit: 50 })).notes.map((n) => n.text);
        for (const key of batch) assert.ok(found.includes(`burst note ${key}`), `${where}: the acknowledged note ${key} is there`);
      }
      for (const a of acked.filter((x) => x.kind === 'session')) {
        const answer = await through.call('recall', { session: a.handle, limit: 1 });
        assert.equal(answer.result.isError, undefined, `${where}: the session of ${a.key} answers: ${JSON.stringify(answer.result)}`);
      }
    };
    await verify(agent, 'through nginx, on the survivors');
    await cluster.start(2);
    const direct = await connectAgent('itest-cluster-burst-restarted', { url: cluster.instance(2).url });
    try {
      await verify(direct, 'on gh-2 restarted');
    } finally {
      await direct.close();
    }
    t.diagnostic(`${acked.length} writes, ${late.length} after the kill; ${failed} attempts unacknowledged`);
  } finally {
    await agent.close();
  }
});

// The v1 SDK speaks 2025-11-25 with an Mcp-Session-Id: through nginx's round
// robin its POSTs land on several instances, its GET stream on one, and a
// change made on another instance still reaches that stream.
test('a 2025-11-25 client (@modelcontextprotocol/sdk) through nginx: POSTs on several instances, notifications on its GET stream', async () => {
  const { Client: ClientV1 } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport: HttpV1 } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const { ToolListChangedNotificationSchema } = await import('@modelcontextprotocol/sdk/types.js');
  const seen = [];
  const transport = new CheckedTransport(new HttpV1(new URL(cluster.url), { fetch: recordingFetch(seen) }));
  const client = new ClientV1({ name: 'itest-cluster-v1', version: '1.0.0' });
  const changes = [];
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => changes.push(Date.now()));
  const b = cluster.instance(2);
  const original = readFileSync(b.yaml, 'utf8');
  try {
    await client.connect(transport);
    const deadline = Date.now() + 5000;
    while (!seen.some((r) => r.method === 'GET' && r.status === 200) && Date.now() < deadline) await sleep(20);
    assert.ok(seen.some((r) => r.method === 'GET' && r.status === 200), 'the SDK opened its GET stream');
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'session_connect'));
    const connected = await client.callTool({ name: 'session_connect', arguments: { topic: 'v1-through-nginx' } });
    assert.equal(connected.isError, undefined, JSON.stringify(connected));
    await client.setLoggingLevel('info');
    const posts = new Set(seen.filter((r) => r.method !== 'GET' && r.method !== 'DELETE').map((r) => r.instance));
    // Several, not necessarily all: right after the kill -9 story nginx may
    // still hold the restarted instance out of its rotation (fail_timeout).
    assert.ok(posts.size >= 2, `the session's POSTs landed on several instances: ${JSON.stringify(seen)}`);

    // A change on gh-2 (SIGHUP after an exposure edit) reaches the GET
    // stream wherever nginx put it.
    writeFileSync(b.yaml, original.replace(/exposure: on_demand/, 'exposure: listed'));
    await cluster.reload(2);
    const until = Date.now() + 5000;
    while (!changes.length && Date.now() < until) await sleep(20);
    assert.ok(changes.length > 0, 'notifications/tools/list_changed reached the GET stream');
    await transport.inner.terminateSession();
  } finally {
    writeFileSync(b.yaml, original);
    await cluster.reload(2);
    await client.close().catch(() => {});
  }
  assert.deepEqual(transport.problems, [], 'every message the cluster sent fits the schema');
});

// One principal's bucket for a tool is one for the cluster: of many calls
// sent at once through nginx to the instances, the bucket's burst gets
// through, not a burst per instance.
test('a rate limit holds across the instances: one bucket for all of them', async () => {
  const agent = await connectAgent('itest-cluster-rates');
  try {
    const session = ok(await agent.call('session_connect', { topic: 'rates' })).session;
    const calls = 3 * (RATED_BURST + 2);
    const answers = await Promise.all(Array.from({ length: calls }, () => agent.call(RATED, { session })));
    // Through the limiter is what counts here (the gate comes after it).
    const limited = answers.filter(({ result }) => code(result) === 'RATE_LIMITED');
    const granted = answers.filter(({ result }) => code(result) !== 'RATE_LIMITED');
    assert.ok(granted.length <= RATED_BURST + 1, `at most one bucket's burst (plus what 0.01/s refills) got through: ${granted.length}`);
    assert.ok(granted.length >= 1);
    const instances = new Set(answers.map((a) => a.instance));
    // Several instances (nginx may still hold the instance restarted by the
    // kill -9 story out of its rotation): each alone would have granted the
    // whole burst.
    assert.ok(instances.size >= 2, 'the calls reached several instances');
    const refusedBy = new Set(limited.map((a) => a.instance));
    assert.ok(refusedBy.size >= 2, 'refusals came from several instances: they share the bucket');
  } finally {
    await agent.close();
  }
});
