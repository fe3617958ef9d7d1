// The Tasks extension (io.modelcontextprotocol/tasks) against the real
// binary serving the conformance fixture over HTTP: the official v2 client
// (@modelcontextprotocol/client, 2026-07-28) starting, polling and
// cancelling tasks; a task that needs the person; another principal kept out
// of every task operation; notifications/tasks on subscriptions/listen; the
// bounds (tasks per principal, poll pace, result size, retention); a host
// restarted or killed mid-task; and, on a shared Redis, a task started on one
// instance and polled, answered and cancelled through another.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { HttpHost, withHttpHost } from './lib/http_host.mjs';
import { eventually } from './lib/host.mjs';
import { openListen } from './lib/cluster.mjs';
import { Redis } from './lib/redis.mjs';
import { AuthorizationServer } from './lib/authorization_server.mjs';

const TASKS = 'io.modelcontextprotocol/tasks';
const CAPS = 'io.modelcontextprotocol/clientCapabilities';
const withTasks = { [CAPS]: { elicitation: {}, extensions: { [TASKS]: {} } } };
const fast = { poll_interval_ms: 100 };

const sha256Hex = (text) => createHash('sha256').update(text).digest('hex');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A 2026-07-28 request declaring the extension; resolves with the answer.
async function ask(host, method, params = {}, { headers = {}, meta = withTasks } = {}) {
  const reply = await host.modern(method, { ...params, _meta: meta }, { headers });
  assert.ok(reply.answer, `no answer to ${method}: ${reply.status} ${reply.text}`);
  return reply.answer;
}

async function startTask(host, name, args, options) {
  const answer = await ask(host, 'tools/call', { name, arguments: args }, options);
  assert.equal(answer.result?.resultType, 'task', JSON.stringify(answer));
  return answer.result;
}

async function until(host, taskId, statuses, options, timeoutMs = 15000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await ask(host, 'tasks/get', { taskId }, options);
    assert.ok(answer.result, JSON.stringify(answer));
    if (statuses.includes(answer.result.status)) return answer.result;
    if (Date.now() > deadline) throw new Error(`task ${taskId} stayed ${answer.result.status}`);
    await sleep(150);
  }
}

// Polls tasks/get until the task, still working, says `pattern` in its
// statusMessage; resolves with the task. A task that stops working first
// fails at once.
function saying(host, taskId, pattern, options) {
  return eventually(
    `task ${taskId} to say ${pattern}`,
    async () => {
      const answer = await ask(host, 'tasks/get', { taskId }, options);
      if (answer.error?.data?.code !== 'POLLED_TOO_FAST') {
        assert.ok(answer.result, JSON.stringify(answer));
        assert.equal(answer.result.status, 'working', JSON.stringify(answer.result));
        if (pattern.test(answer.result.statusMessage ?? '')) return answer.result;
      }
      await sleep(100); // the pace of tasks/get (tasks.poll_interval_ms in these tests)
      return undefined;
    },
    15000,
  );
}

// The v2 client predates the extension: it refuses a tools/call answered
// with resultType "task" (UnsupportedResultType), so the task is created
// with a raw request; everything after it goes through the client, which
// declares the extension per request and sets Mcp-Name to the task's id.
test('the v2 client polls a task to completion with its result, and cancels another', () =>
  withHttpHost({ plugins: ['conformance.so'], sections: { tasks: fast } }, async (host) => {
    const client = new Client(
      { name: 'gatehouse-itests', version: '1.0.0' },
      { capabilities: { elicitation: {}, extensions: { [TASKS]: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(new StreamableHTTPClientTransport(new URL(host.url)));
    const anything = z.object({}).passthrough();
    const discovered = client.getServerCapabilities();
    assert.ok(discovered.extensions?.[TASKS], JSON.stringify(discovered));
    await assert.rejects(
      client.request({ method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 1 } } }, anything),
      /Unsupported result type 'task'/,
    );

    const created = await startTask(host, 'slow_compute', { seconds: 1, label: 'v2' });
    assert.match(created.taskId, /^[0-9a-f]{32}$/);
    assert.equal(created.status, 'working');
    let task;
    for (;;) {
      task = await client.request({ method: 'tasks/get', params: { taskId: created.taskId } }, anything);
      if (task.status === 'completed') break;
      assert.equal(task.status, 'working');
      await sleep(task.pollIntervalMs);
    }
    assert.equal(task.result.content[0].text, "Computed 'v2' in 1 s.");

    const long = await startTask(host, 'slow_compute', { seconds: 60 });
    const ack = await client.request({ method: 'tasks/cancel', params: { taskId: long.taskId } }, anything);
    // An empty acknowledgement (the client takes resultType "complete" off).
    assert.deepEqual(Object.keys(ack).filter((k) => k !== '_meta'), []);
    for (;;) {
      task = await client.request({ method: 'tasks/get', params: { taskId: long.taskId } }, anything);
      if (task.status !== 'working') break;
      await sleep(task.pollIntervalMs);
    }
    assert.equal(task.status, 'cancelled');
    await client.close();
  }));

// A v2 client declaring the extension (its tasks/* requests are its own).
async function tasksClient(host) {
  const client = new Client(
    { name: 'gatehouse-itests', version: '1.0.0' },
    { capabilities: { elicitation: {}, extensions: { [TASKS]: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(host.url)));
  return client;
}

test('a task that needs the person waits in input_required until tasks/update answers it', () =>
  withHttpHost({ plugins: ['conformance.so'], sections: { tasks: fast } }, async (host) => {
    const client = await tasksClient(host);
    const anything = z.object({}).passthrough();
    const get = (taskId) => client.request({ method: 'tasks/get', params: { taskId } }, anything);
    const update = (taskId, inputResponses) =>
      client.request({ method: 'tasks/update', params: { taskId, inputResponses } }, anything);
    const created = await startTask(host, 'confirm_delete', { filename: 'report.txt' });
    let waiting = await get(created.taskId);
    while (waiting.status === 'working') {
      await sleep(waiting.pollIntervalMs);
      waiting = await get(created.taskId);
    }
    assert.equal(waiting.status, 'input_required');
    const [key] = Object.keys(waiting.inputRequests);
    assert.equal(waiting.inputRequests[key].method, 'elicitation/create');
    assert.match(waiting.inputRequests[key].params.message, /Delete report\.txt\?/);
    // An answer to a key never asked is ignored: the task still waits.
    await update(created.taskId, { 'r9.other': { action: 'accept' } });
    assert.equal((await get(created.taskId)).status, 'input_required');
    await update(created.taskId, { [key]: { action: 'accept', content: { confirm: true } } });
    let done = await get(created.taskId);
    while (done.status === 'working' || done.status === 'input_required') {
      await sleep(done.pollIntervalMs);
      done = await get(created.taskId);
    }
    assert.equal(done.status, 'completed');
    assert.equal(done.result.content[0].text, 'Deleted report.txt.');
    await client.close();
  }));

test('a task cancelled while it runs ends cancelled even when its round then asks for input', () =>
  withHttpHost({ plugins: ['conformance.so'], sections: { tasks: fast } }, async (host) => {
    // The plugin sleeps without looking at its cancellation, then asks.
    // Before, the task then waited in input_required with its cancellation
    // pending, and every later tasks/cancel was acknowledged and ignored.
    const created = await startTask(host, 'confirm_delete', { filename: 'late.txt', wait_ms: 1500 });
    const ack = await ask(host, 'tasks/cancel', { taskId: created.taskId });
    assert.ok(ack.result, JSON.stringify(ack));
    const ended = await until(host, created.taskId, ['cancelled', 'completed', 'failed', 'input_required']);
    assert.equal(ended.status, 'cancelled', JSON.stringify(ended));
  }));

test("another principal's task is unknown to every task operation and to subscriptions/listen", async () => {
  const keys = { ann: 'ann-key-0123456789', bob: 'bob-key-0123456789' };
  await withHttpHost(
    {
      plugins: ['conformance.so'],
      sections: {
        tasks: fast,
        auth: { mode: 'api_keys', api_keys: Object.entries(keys).map(([subject, key]) => ({ sha256: sha256Hex(key), subject })) },
      },
    },
    async (host) => {
      const as = (who) => ({ headers: { Authorization: `Bearer ${keys[who]}` } });
      const created = await startTask(host, 'confirm_delete', { filename: 'ann.txt' }, as('ann'));
      await until(host, created.taskId, ['input_required'], as('ann'));
      for (const [method, params] of [
        ['tasks/get', { taskId: created.taskId }],
        ['tasks/update', { taskId: created.taskId, inputResponses: {} }],
        ['tasks/cancel', { taskId: created.taskId }],
      ]) {
        const answer = await ask(host, method, params, as('bob'));
        assert.equal(answer.error?.code, -32602, `${method}: ${JSON.stringify(answer)}`);
        assert.match(answer.error.message, /Task not found/);
      }
      const unknown = await ask(host, 'tasks/get', { taskId: 'f'.repeat(32) }, as('bob'));
      assert.equal(unknown.error.message, (await ask(host, 'tasks/get', { taskId: created.taskId }, as('bob'))).error.message);
      // Bob's listen follows none of Ann's tasks.
      const listen = await openListen(host.url, { taskIds: [created.taskId] }, { meta: withTasks, ...as('bob') });
      const ack = listen.messages.find((m) => m.method === 'notifications/subscriptions/acknowledged');
      assert.deepEqual(ack.params.notifications.taskIds, []);
      listen.close();
      assert.deepEqual(listen.problems, []);
      // Ann's task is untouched by all of it.
      assert.equal((await ask(host, 'tasks/get', { taskId: created.taskId }, as('ann'))).result.status, 'input_required');
    },
  );
});

test("polling another's task id spends the poller's own allowance, never the owner's", async () => {
  const keys = { ann: 'ann-key-0123456789', bob: 'bob-key-0123456789' };
  await withHttpHost(
    {
      plugins: ['conformance.so'],
      sections: {
        tasks: { poll_interval_ms: 60000, poll_burst: 2 },
        auth: { mode: 'api_keys', api_keys: Object.entries(keys).map(([subject, key]) => ({ sha256: sha256Hex(key), subject })) },
      },
    },
    async (host) => {
      const as = (who) => ({ headers: { Authorization: `Bearer ${keys[who]}` } });
      const created = await startTask(host, 'slow_compute', { seconds: 60 }, as('ann'));
      // Bob learnt the id: his polls find nothing, and soon he is told to slow down.
      const bobs = [];
      for (let i = 0; i < 4; i++) bobs.push(await ask(host, 'tasks/get', { taskId: created.taskId }, as('bob')));
      assert.match(bobs[0].error?.message ?? '', /Task not found/, JSON.stringify(bobs[0]));
      assert.equal(bobs[3].error?.data?.code, 'POLLED_TOO_FAST', JSON.stringify(bobs[3]));
      // Ann's own allowance is whole: two polls in a row answer.
      for (let i = 0; i < 2; i++) {
        const own = await ask(host, 'tasks/get', { taskId: created.taskId }, as('ann'));
        assert.equal(own.result?.status, 'working', JSON.stringify(own));
      }
      await ask(host, 'tasks/cancel', { taskId: created.taskId }, as('ann'));
    },
  );
});

test("a task whose family is at its cap waits for its turn and runs, where it used to end at once with PLUGIN_BUSY", () =>
  withHttpHost(
    { plugins: [{ path: 'conformance.so', max_in_flight: 1 }], sections: { tasks: fast } },
    async (host) => {
      // Four seconds: the second must be seen waiting while the first still
      // computes, and polls on a loaded machine take their time.
      const first = await startTask(host, 'slow_compute', { seconds: 4, label: 'first' });
      // Its progress ("computing") shows it inside the plugin, holding the one place.
      await saying(host, first.taskId, /computing/);
      const second = await startTask(host, 'slow_compute', { seconds: 0, label: 'second' });
      // While the first holds the family's one place, the second says why it waits.
      const waiting = await saying(host, second.taskId, /PLUGIN_BUSY/);
      assert.match(waiting.statusMessage, /waiting to run.*PLUGIN_BUSY/, JSON.stringify(waiting));
      const done = await until(host, second.taskId, ['completed', 'failed', 'cancelled']);
      assert.equal(done.status, 'completed');
      assert.notEqual(done.result?.isError, true, JSON.stringify(done));
      assert.match(JSON.stringify(done.result), /Computed 'second' in 0 s/);
      assert.equal((await until(host, first.taskId, ['completed'])).status, 'completed');
    },
  ));

test('notifications/tasks on subscriptions/listen follow a task to its end; without the extension the listen is refused', () =>
  withHttpHost({ plugins: ['conformance.so'], sections: { tasks: fast } }, async (host) => {
    const refused = await host.modern('subscriptions/listen', { notifications: { taskIds: ['x'] } });
    assert.equal(refused.answer.error?.code, -32021);
    assert.ok(refused.answer.error.data.requiredCapabilities.extensions[TASKS]);

    // A task that cannot complete before the listen is open: it waits for
    // the person's confirmation, given only once the listen was acknowledged.
    const created = await startTask(host, 'confirm_delete', { filename: 'followed.txt' });
    const listen = await openListen(host.url, { taskIds: [created.taskId] }, { meta: withTasks });
    const ack = listen.messages.find((m) => m.method === 'notifications/subscriptions/acknowledged');
    assert.deepEqual(ack.params.notifications.taskIds, [created.taskId]);
    const waiting = await until(host, created.taskId, ['input_required', 'completed', 'failed', 'cancelled']);
    assert.equal(waiting.status, 'input_required', JSON.stringify(waiting));
    const [key] = Object.keys(waiting.inputRequests);
    const updated = await ask(host, 'tasks/update', {
      taskId: created.taskId,
      inputResponses: { [key]: { action: 'accept', content: { confirm: true } } },
    });
    assert.ok(updated.result, JSON.stringify(updated));
    const completed = await listen.waitFor((m) => m.method === 'notifications/tasks' && m.params.status === 'completed');
    listen.close();
    assert.equal(completed.params.taskId, created.taskId);
    assert.equal(completed.params.result.content[0].text, 'Deleted followed.txt.');
    assert.deepEqual(listen.problems, []);
  }));

test('bounds: unfinished tasks per principal, the pace of tasks/get, the size of a result, and retention', () =>
  withHttpHost(
    {
      plugins: ['conformance.so'],
      sections: { tasks: { max_per_principal: 2, poll_interval_ms: 1000, poll_burst: 2, max_result_bytes: 1024, ttl_ms: 3000 } },
    },
    async (host) => {
      const first = await startTask(host, 'slow_compute', { seconds: 60 });
      const second = await startTask(host, 'slow_compute', { seconds: 60 });
      const third = await ask(host, 'tools/call', { name: 'slow_compute', arguments: { seconds: 60 } });
      assert.equal(third.result.isError, true);
      assert.equal(third.result.structuredContent.code, 'TOO_MANY_TASKS');
      // A finished task makes room again (once its round has stopped).
      await ask(host, 'tasks/cancel', { taskId: first.taskId });
      let fourth;
      for (let i = 0; i < 50 && !fourth; i++) {
        const answer = await ask(host, 'tools/call', { name: 'slow_compute', arguments: { seconds: 60 } });
        if (answer.result?.resultType === 'task') fourth = answer.result;
        else await sleep(100);
      }
      assert.ok(fourth, 'a cancelled task never made room');
      await ask(host, 'tasks/cancel', { taskId: second.taskId });
      await ask(host, 'tasks/cancel', { taskId: fourth.taskId });

      // tasks/get: a burst of two, then one per pollIntervalMs.
      assert.equal(first.pollIntervalMs, 1000);
      const polls = [];
      for (let i = 0; i < 3; i++) polls.push(await ask(host, 'tasks/get', { taskId: second.taskId }));
      assert.ok(polls[0].result && polls[1].result);
      assert.equal(polls[2].error?.data?.code, 'POLLED_TOO_FAST', JSON.stringify(polls[2]));
      assert.ok(polls[2].error.data.retryAfterMs > 0);
      await sleep(1100);
      assert.ok((await ask(host, 'tasks/get', { taskId: second.taskId })).result);

      // A result over max_result_bytes is not kept; the task says why.
      const large = await startTask(host, 'slow_compute', { seconds: 0, label: 'x'.repeat(2000) });
      let kept;
      // One poll a second: the pace refills as fast as it is spent.
      for (let i = 0; i < 5 && kept?.status !== 'completed'; i++) {
        await sleep(i ? 1000 : 200);
        kept = (await ask(host, 'tasks/get', { taskId: large.taskId })).result;
      }
      assert.equal(kept.status, 'completed');
      assert.equal(kept.result.isError, true);
      assert.equal(kept.result.structuredContent.code, 'RESULT_TOO_LARGE');

      // Retention: ttlMs after its creation the task is gone.
      assert.equal(large.ttlMs, 3000);
      await sleep(3200);
      const gone = await ask(host, 'tasks/get', { taskId: large.taskId });
      assert.equal(gone.error?.code, -32602);
    },
  ));

test('a host restarted mid-task reports the task failed with the reason; so does one killed, once its lease lapses', async () => {
  const options = {
    plugins: ['conformance.so'],
    sections: { tasks: { ...fast, lease_ms: 1500 }, session: { backend: 'sqlite', pinned: { store: 'shop', user: 'ann' } } },
  };
  let host = await HttpHost.start(options);
  try {
    const stopped = await startTask(host, 'slow_compute', { seconds: 60 });
    host = await host.restart(options);
    const afterStop = (await ask(host, 'tasks/get', { taskId: stopped.taskId })).result;
    assert.equal(afterStop.status, 'failed');
    assert.equal(afterStop.error.code, -32603);
    assert.match(afterStop.error.message, /stopped before it finished/);

    const killed = await startTask(host, 'slow_compute', { seconds: 60 });
    host.child.kill('SIGKILL');
    await host.exit;
    host = await HttpHost.start({ ...options, config: host.config, listen: new URL(host.url).host });
    await sleep(1700);
    const afterKill = (await ask(host, 'tasks/get', { taskId: killed.taskId })).result;
    assert.equal(afterKill.status, 'failed');
    assert.match(afterKill.error.message, /stopped before it finished \(instance '[0-9a-f]+'\)/);
  } finally {
    await host.stop();
  }
});

test("a token of the same owner without the tool's scope cannot answer its task; the task goes on waiting", async () => {
  const as = await AuthorizationServer.start();
  try {
    await withHttpHost(
      {
        plugins: ['conformance.so'],
        sections: {
          tasks: fast,
          auth: { mode: 'jwt', issuers: [as.issuer], scopes_supported: ['files:delete'] },
          domains: { conformance: { tools: { confirm_delete: { scope: 'files:delete' } } } },
        },
      },
      async (host) => {
        const as_ = (scope) => ({ headers: { Authorization: `Bearer ${as.mint({ aud: host.url, sub: 'ann', scope })}` } });
        const created = await startTask(host, 'confirm_delete', { filename: 'ann.txt' }, as_('files:delete'));
        const waiting = await until(host, created.taskId, ['input_required'], as_('files:delete'));
        const [key] = Object.keys(waiting.inputRequests);
        const answer = { [key]: { action: 'accept', content: { confirm: true } } };
        // Same issuer and subject, so the same owner: it may read the task,
        // but answering it would run the tool's next round without its scope.
        const narrow = as_('other');
        const refused = await ask(host, 'tasks/update', { taskId: created.taskId, inputResponses: answer }, narrow);
        assert.equal(refused.error?.data?.code, 'INSUFFICIENT_SCOPE', JSON.stringify(refused));
        assert.match(refused.error.message, /needs the scope 'files:delete'/);
        assert.equal((await ask(host, 'tasks/get', { taskId: created.taskId }, narrow)).result.status, 'input_required');
        await ask(host, 'tasks/update', { taskId: created.taskId, inputResponses: answer }, as_('files:delete'));
        const done = await until(host, created.taskId, ['completed', 'failed'], as_('files:delete'));
        assert.equal(done.result.content[0].text, 'Deleted ann.txt.');
      },
    );
  } finally {
    await as.stop();
  }
});

test('on a shared Redis a task started on one instance is polled, answered and cancelled through another', async () => {
  const redis = await Redis.start();
  const hosts = [];
  try {
    for (let i = 0; i < 2; i++)
      hosts.push(
        await HttpHost.start({
          plugins: ['conformance.so'],
          http: { instance_name: `gh-${i + 1}` },
          sections: {
            tasks: fast,
            input_requests: { state_keys: ['MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY='] },
            session: { backend: 'redis', redis: { url: redis.url, key_prefix: 'tasks:' }, pinned: { store: 'shop', user: 'ann' } },
          },
        }),
      );
    const [a, b] = hosts;
    const computed = await startTask(a, 'slow_compute', { seconds: 1, label: 'shared' });
    const done = await until(b, computed.taskId, ['completed']);
    assert.equal(done.result.content[0].text, "Computed 'shared' in 1 s.");

    // Answered through B: the next round runs on B.
    const asked = await startTask(a, 'confirm_delete', { filename: 'shared.txt' });
    const waiting = await until(b, asked.taskId, ['input_required']);
    const [key] = Object.keys(waiting.inputRequests);
    await ask(b, 'tasks/update', { taskId: asked.taskId, inputResponses: { [key]: { action: 'accept', content: { confirm: false } } } });
    assert.equal((await until(a, asked.taskId, ['completed'])).result.content[0].text, 'Kept shared.txt.');

    // Cancelled through B while it runs on A.
    const long = await startTask(a, 'slow_compute', { seconds: 60 });
    await ask(b, 'tasks/cancel', { taskId: long.taskId });
    const cancelled = await until(b, long.taskId, ['cancelled', 'completed', 'failed'], undefined, 5000);
    assert.equal(cancelled.status, 'cancelled');
  } finally {
    for (const h of hosts) await h.stop();
    await redis.close();
  }
});

test('a 2026-07-28 client without the extension: optional tools run as plain calls, required ones get -32021, tasks/* are refused', () =>
  withHttpHost({ plugins: ['conformance.so'], sections: { tasks: fast } }, async (host) => {
    const plain = await ask(host, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0, label: 'plain' } }, { meta: {} });
    assert.equal(plain.result.resultType, 'complete');
    assert.equal(plain.result.content[0].text, "Computed 'plain' in 0 s.");
    const required = await ask(host, 'tools/call', { name: 'failing_job', arguments: {} }, { meta: {} });
    assert.equal(required.error?.code, -32021);
    assert.deepEqual(required.error.data.requiredCapabilities, { extensions: { [TASKS]: {} } });
    for (const method of ['tasks/get', 'tasks/cancel'])
      assert.equal((await ask(host, method, { taskId: 'x' }, { meta: {} })).error?.code, -32021);
  }));


// 2025-11-25 has no way to declare the extension: a tool that runs only as a
// task answers with a job handle, and job_status, job_result and job_cancel
// follow it (owner-checked like tasks/get). A tool that merely supports
// tasks runs as a plain call, as before.
test('a 2025-11-25 client (the v1 SDK) gets a job handle and follows the job with the job tools', () =>
  withHttpHost({ plugins: ['conformance.so'], sections: { tasks: fast } }, async (host) => {
    const client = new ClientV1({ name: 'itest-v1-jobs', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Alice' } }));
    await client.connect(new HttpV1(new URL(host.url)));
    const { tools } = await client.listTools();
    for (const name of ['job_status', 'job_result', 'job_cancel']) assert.ok(tools.some((t) => t.name === name), name);

    const plain = await client.callTool({ name: 'slow_compute', arguments: { seconds: 0, label: 'v1' } });
    assert.equal(plain.content[0].text, "Computed 'v1' in 0 s.");

    // Asked before its task starts: the elicitation goes to the client as a request, then the job runs.
    const started = await client.callTool({ name: 'test_tool_with_task', arguments: {} });
    const job = started.structuredContent.job;
    assert.match(job.id, /^[0-9a-f]{32}$/);
    assert.match(started.content[0].text, /runs as a job/);
    const early = await client.callTool({ name: 'job_result', arguments: { job: job.id } });
    assert.equal(early.isError, true, JSON.stringify(early));
    assert.equal(early.structuredContent?.code, 'JOB_NOT_FINISHED', JSON.stringify(early));
    // job_status and job_result share the job's pace (pollIntervalMs after
    // a burst): a call refused as too soon is made again when it may be.
    const jobTool = async (name, id) => {
      for (let i = 0; i < 20; i++) {
        const answer = await client.callTool({ name, arguments: { job: id } });
        if (answer.structuredContent?.code !== 'POLLED_TOO_FAST') return answer;
        await sleep(answer.structuredContent.retryAfterMs ?? 100);
      }
      throw new Error(`${name} of ${id} was refused as too soon 20 times`);
    };
    // Polls job_status until the job is no longer working; its last status.
    const settled = (handle) =>
      eventually(`job ${handle.id} to finish`, async () => {
        const status = await jobTool('job_status', handle.id);
        assert.ok(status.structuredContent?.status, JSON.stringify(status));
        if (status.structuredContent.status !== 'working') return status;
        await sleep(handle.pollIntervalMs);
        return undefined;
      }, 15000);
    const status = await settled(job);
    assert.equal(status.structuredContent.status, 'completed');
    const result = await jobTool('job_result', job.id);
    assert.equal(result.content[0].text, 'Hello, Alice!');

    // A tool error is the job's result; a cancelled job has none.
    const failing = (await client.callTool({ name: 'failing_job', arguments: {} })).structuredContent.job;
    const cancelled = await client.callTool({ name: 'job_cancel', arguments: { job: failing.id } });
    assert.ok(['cancelled', 'working'].includes(cancelled.structuredContent.status), JSON.stringify(cancelled));
    assert.equal((await settled(failing)).structuredContent.status, 'cancelled');
    const none = await jobTool('job_result', failing.id);
    assert.equal(none.structuredContent?.code, 'JOB_CANCELLED', JSON.stringify(none));
    const unknown = await client.callTool({ name: 'job_status', arguments: { job: 'f'.repeat(32) } });
    assert.equal(unknown.structuredContent?.code, 'JOB_NOT_FOUND', JSON.stringify(unknown));

    // A job tool with an outputSchema: the handle is no output of the tool,
    // so the schema is not listed to this client, whose SDK would otherwise
    // refuse the handle ("has an output schema but did not return structured content").
    const report = tools.find((t) => t.name === 'report_job');
    assert.ok(report, 'report_job is listed');
    assert.equal(report.outputSchema, undefined, JSON.stringify(report));
    const handle = await client.callTool({ name: 'report_job', arguments: {} });
    const reportJob = handle.structuredContent.job;
    assert.match(reportJob.id, /^[0-9a-f]{32}$/);
    assert.equal((await settled(reportJob)).structuredContent.status, 'completed');
    const reported = await jobTool('job_result', reportJob.id);
    assert.deepEqual(reported.structuredContent, { pages: 3 }, JSON.stringify(reported));
    await client.close();
  }));

test('a 2026-07-28 client with the extension is listed a job tool with its outputSchema, and its task result carries the output', () =>
  withHttpHost({ plugins: ['conformance.so'], sections: { tasks: fast } }, async (host) => {
    const listed = (await ask(host, 'tools/list')).result.tools.find((t) => t.name === 'report_job');
    assert.ok(JSON.stringify(listed.outputSchema ?? null).includes('"pages"'), JSON.stringify(listed));
    const task = await startTask(host, 'report_job', {});
    const done = await until(host, task.taskId, ['completed', 'failed']);
    assert.deepEqual(done.result.structuredContent, { pages: 3 }, JSON.stringify(done));
  }));
