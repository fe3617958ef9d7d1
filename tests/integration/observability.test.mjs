// What operators see (docs/operations.md), on the real binary: Prometheus
// metrics moving for each cause and passing `promtool check metrics`, a real
// Prometheus scraping them, W3C trace context from _meta and from headers in
// the log line, the audit line, the plugin's call context and the exported
// span (decoded with the OpenTelemetry packages' own protobuf decoder), and
// no secret in any of them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { HttpHost } from './lib/http_host.mjs';
import { Host, binaryPath, eventually } from './lib/host.mjs';
import { sha256Hex } from './lib/authorization_server.mjs';
import { onFreePort, PortTaken } from './lib/ports.mjs';

const require = createRequire(import.meta.url);
const otlp = require('@opentelemetry/otlp-transformer/build/src/generated/root.js').opentelemetry.proto;

const sessionPlugin = () => path.resolve(path.dirname(binaryPath()), '../lib/gatehouse/plugins/session.so');
const INCOMING = '0af7651916cd43dd8448eb211c80319c';
const PARENT = 'b7ad6b7169203331';
const traceparent = (trace = INCOMING, parent = PARENT) => `00-${trace}-${parent}-01`;

// An OTLP/HTTP traces endpoint: every request body decoded as an
// ExportTraceServiceRequest, its spans kept with hex ids.
async function startCollector() {
  const spans = [];
  const resources = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      assert.equal(req.url, '/v1/traces');
      assert.equal(req.headers['content-type'], 'application/x-protobuf');
      const decoded = otlp.collector.trace.v1.ExportTraceServiceRequest.decode(Buffer.concat(chunks));
      const plain = otlp.collector.trace.v1.ExportTraceServiceRequest.toObject(decoded, { longs: String, bytes: Buffer, defaults: false });
      for (const rs of plain.resourceSpans ?? []) {
        resources.push(rs.resource);
        for (const ss of rs.scopeSpans ?? [])
          for (const span of ss.spans ?? [])
            spans.push({
              ...span,
              traceId: span.traceId.toString('hex'),
              spanId: span.spanId.toString('hex'),
              parentSpanId: span.parentSpanId ? span.parentSpanId.toString('hex') : '',
              attrs: Object.fromEntries((span.attributes ?? []).map((a) => [a.key, Object.values(a.value)[0]])),
            });
      }
      res.writeHead(200, { 'Content-Type': 'application/x-protobuf' });
      res.end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${server.address().port}/v1/traces`, spans, resources, close: () => server.close() };
}

// The value of one series of an exposition (labels as written), or undefined.
function sample(exposition, name, labels = {}) {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of exposition.split('\n')) {
    if (line.startsWith('#') || !line.startsWith(name)) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = match[3] ? match[3].split(/,(?=[a-z_]+=")/) : [];
    if (wanted.every((w) => have.includes(w))) return Number(match[4]);
  }
  return undefined;
}

function promtoolCheck(exposition) {
  const run = spawnSync('promtool', ['check', 'metrics'], { input: exposition, encoding: 'utf8' });
  assert.equal(run.status, 0, `promtool check metrics:\n${run.stdout}${run.stderr}`);
}

const auditLines = (file) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];

test('metrics, audit, trace context and spans for each cause, over HTTP with auth on', async () => {
  const collector = await startCollector();
  const key = randomBytes(24).toString('base64url');
  const bearer = { Authorization: `Bearer ${key}` };
  let scene;
  const host = await HttpHost.start({
    gate: true,
    plugins: [sessionPlugin(), 'gated.so', 'echo.so', 'ledger.so', { path: 'stuck.so', tool_timeout_ms: 300 }],
    rateLimits: { per_tool: { echo_noop: { calls_per_second: 0.001, burst: 1 } } },
    sections: {
      log_format: 'json',
      domains: {
        gated: { settings: { critical: [{ id: 'n1', title: 'Close the till at six' }] } },
        echo: { prefix: 'echo_', tools: { whoami: { gated: false }, noop: { gated: false } } },
        stuck: { tools: { stuck_forever: { gated: false } } },
      },
      session: (dir) => {
        scene = dir;
        writeFileSync(path.join(dir, 'program.json'), JSON.stringify({ running: true, store: 'shop', user: 'ann', updated: '2026-11-30T10:00:00Z' }));
        writeFileSync(path.join(dir, 'grants.yaml'), 'grants:\n  shop:\n    ann: [orders.read]\n');
        return { backend: 'memory', program_state_file: path.join(dir, 'program.json'), grants_file: path.join(dir, 'grants.yaml') };
      },
      license: (dir) => ({ file: path.join(dir, 'no-license.json'), free_families: ['session', 'gated', 'echo', 'stuck'] }),
      auth: { mode: 'api_keys', api_keys: [{ sha256: sha256Hex(key), subject: 'ops-bot', client_id: 'ci', scopes: ['ledger:read'] }] },
      audit: (dir) => ({ file: path.join(dir, 'audit.jsonl') }),
      tracing: { otlp_endpoint: collector.url, service_name: 'gatehouse-itest' },
    },
  });
  const auditFile = path.join(scene, 'audit.jsonl');
  const metricsUrl = host.origin + '/metrics';
  const scrape = async () => {
    const response = await fetch(metricsUrl, { headers: bearer });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
    return response.text();
  };
  const call = async (name, args = {}, { meta = {}, headers = {} } = {}) => {
    const reply = await host.modern('tools/call', { name, arguments: args }, { headers: { ...bearer, ...headers }, meta });
    assert.equal(reply.status, 200, reply.text);
    return reply.answer.result;
  };
  try {
    // Authentication failures, by reason; a scrape without a token is one.
    const anonymous = await fetch(metricsUrl);
    assert.equal(anonymous.status, 401, await anonymous.text());
    assert.equal((await host.modern('tools/call', { name: 'echo_noop' }, { headers: { Authorization: 'Bearer wrong' } })).status, 401);
    const before = await scrape();
    promtoolCheck(before);
    assert.equal(sample(before, 'gatehouse_auth_failures_total', { reason: 'missing' }), 1);
    assert.equal(sample(before, 'gatehouse_auth_failures_total', { reason: 'rejected' }), 1);
    assert.equal(sample(before, 'gatehouse_build_info', { abi: '1.8' }), 1);
    assert.equal(sample(before, 'gatehouse_families_loaded'), 5, host.stderr);

    // A refusal of each of the gate's codes, and of the host's limits.
    assert.equal((await call('count')).structuredContent.code, 'NOT_CONNECTED');
    const session = (await call('session_connect', { topic: 'orders' })).structuredContent.session;
    assert.equal((await call('guarded', { session })).structuredContent.code, 'NOT_GRANTED');
    assert.equal((await call('count', { session })).structuredContent.code, 'CRITICAL_NOTES_UNREAD');
    await call('read_critical', { session });
    assert.equal((await call('ruled', { session })).structuredContent.code, 'RULES_NOT_ACCEPTED');
    assert.equal((await call('ledger_balance', {})).structuredContent.code, 'LICENSE_MISSING');
    writeFileSync(path.join(scene, 'program.json'), JSON.stringify({ running: true, store: 'other', user: 'ann', updated: '2026-11-30T10:01:00Z' }));
    assert.equal((await call('count', { session })).structuredContent.code, 'STORE_SWITCHED');
    writeFileSync(path.join(scene, 'program.json'), JSON.stringify({ running: true, store: 'shop', user: 'ann', updated: '2026-11-30T10:02:00Z' }));
    assert.equal((await call('count', { session })).structuredContent.count, 1);
    assert.equal((await call('echo_noop')).isError, undefined);
    assert.equal((await call('echo_noop')).structuredContent.code, 'RATE_LIMITED');
    // A timeout, traced from the HTTP headers (no traceparent in _meta).
    const stuckTrace = randomBytes(16).toString('hex');
    const timedOut = await call('stuck_forever', {}, { headers: { traceparent: traceparent(stuckTrace), tracestate: 'vendor=x1' } });
    assert.equal(timedOut.structuredContent.code, 'TOOL_TIMEOUT');
    // A protocol error: a tool that does not exist is not a label.
    const unknown = await host.modern('tools/call', { name: 'no_such_tool' }, { headers: bearer });
    assert.equal(unknown.answer.error.code, -32602);
    // The call context carries the trace, with this request's span as parent.
    const context = (await call('echo_whoami', {}, { meta: { traceparent: traceparent() } })).structuredContent;
    const passedOn = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(context.trace.traceparent);
    assert.ok(passedOn, JSON.stringify(context.trace));
    assert.equal(passedOn[1], INCOMING);
    assert.notEqual(passedOn[2], PARENT);

    const after = await scrape();
    promtoolCheck(after);
    const refusals = (family, tool, code) => sample(after, 'gatehouse_tool_refusals_total', { family, tool, code });
    assert.equal(refusals('gated', 'count', 'NOT_CONNECTED'), 1);
    assert.equal(refusals('gated', 'guarded', 'NOT_GRANTED'), 1);
    assert.equal(refusals('gated', 'count', 'CRITICAL_NOTES_UNREAD'), 1);
    assert.equal(refusals('gated', 'ruled', 'RULES_NOT_ACCEPTED'), 1);
    assert.equal(refusals('ledger', 'ledger_balance', 'LICENSE_MISSING'), 1);
    assert.equal(refusals('gated', 'count', 'STORE_SWITCHED'), 1);
    assert.equal(refusals('echo', 'echo_noop', 'RATE_LIMITED'), 1);
    assert.equal(refusals('stuck', 'stuck_forever', 'TOOL_TIMEOUT'), 1);
    const calls = (family, tool, outcome) => sample(after, 'gatehouse_tool_calls_total', { family, tool, outcome });
    assert.equal(calls('gated', 'count', 'refused'), 3);
    assert.equal(calls('gated', 'count', 'ok'), 1);
    assert.equal(calls('echo', 'echo_noop', 'ok'), 1);
    assert.equal(calls('stuck', 'stuck_forever', 'timeout'), 1);
    assert.equal(sample(after, 'gatehouse_rate_limited_total', { limit: 'rate_limits.per_tool.echo_noop' }), 1);
    assert.equal(sample(after, 'gatehouse_tool_call_duration_seconds_count', { family: 'gated' }), 7);
    assert.ok(sample(after, 'gatehouse_tool_call_duration_seconds_sum', { family: 'stuck' }) >= 0.3);
    assert.equal(sample(after, 'gatehouse_requests_total', { method: 'tools/call', revision: '2026-07-28', outcome: 'error' }), 1);
    assert.equal(sample(after, 'gatehouse_requests_total', { method: 'tools/call', revision: '2026-07-28', outcome: 'result' }), 13);
    assert.ok(!after.includes('no_such_tool'), 'a name a client sent is never a label value');
    assert.ok(sample(after, 'process_resident_memory_bytes') > 1e6);
    // A call counts as in flight until just after its answer is written (so
    // stdio's drain at the end of input never closes stdout before the last
    // answer): a scrape sent the moment the answer came may still count it.
    await eventually('no call in flight', async () => sample(await scrape(), 'gatehouse_calls_in_flight') === 0, 5000);

    // The audit log: a line per call, the gate's decision and the session's store and user.
    const lines = await eventually('the audit lines', () => {
      const read = auditLines(auditFile);
      return read.length >= 13 && read;
    });
    for (const line of lines) {
      assert.equal(line.principal, 'token::ops-bot');
      assert.equal(line.principal_kind, 'token');
      assert.match(line.trace_id, /^[0-9a-f]{32}$/);
      assert.match(line.span_id, /^[0-9a-f]{16}$/);
      assert.equal(line.transport, 'http');
      assert.ok(!('arguments' in line), 'arguments only when audit.include_arguments');
    }
    const granted = lines.find((l) => l.tool === 'guarded');
    assert.equal(granted.decision, 'refused');
    assert.equal(granted.code, 'NOT_GRANTED');
    assert.equal(granted.store, 'shop');
    assert.equal(granted.user, 'ann');
    assert.equal(lines.find((l) => l.tool === 'count' && l.outcome === 'ok').decision, 'allowed');
    const stuckLine = lines.find((l) => l.tool === 'stuck_forever');
    assert.equal(stuckLine.outcome, 'timeout');
    assert.equal(stuckLine.trace_id, stuckTrace);
    assert.ok(stuckLine.duration_ms >= 300);
    const whoamiLine = lines.find((l) => l.tool === 'echo_whoami');
    assert.equal(whoamiLine.trace_id, INCOMING);
    assert.equal(whoamiLine.span_id, passedOn[2], 'the audit line and the call context name the same span');

    // The log line of the timed-out call names its trace (log_format: json).
    const logLines = host.stderr.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    const warning = logLines.find((l) => /stuck_forever' did not finish/.test(l.message));
    assert.ok(warning, 'the timeout is logged');
    assert.equal(warning.trace_id, stuckTrace);
    assert.equal(warning.span_id, stuckLine.span_id);

    // Spans, as the collector decoded them.
    const spanOf = (traceId, name) => collector.spans.find((s) => s.traceId === traceId && s.name === name);
    const whoamiSpan = await eventually('the whoami span', () => spanOf(INCOMING, 'tools/call echo_whoami'));
    assert.equal(whoamiSpan.parentSpanId, PARENT);
    assert.equal(whoamiSpan.spanId, passedOn[2]);
    assert.equal(whoamiSpan.kind, otlp.trace.v1.Span.SpanKind.SPAN_KIND_SERVER);
    assert.equal(whoamiSpan.attrs['gen_ai.operation.name'], 'execute_tool');
    assert.equal(whoamiSpan.attrs['gen_ai.tool.name'], 'echo_whoami');
    assert.equal(whoamiSpan.attrs['mcp.method.name'], 'tools/call');
    assert.equal(whoamiSpan.attrs['mcp.protocol.version'], '2026-07-28');
    assert.equal(whoamiSpan.attrs['network.transport'], 'tcp');
    assert.ok(BigInt(whoamiSpan.endTimeUnixNano) >= BigInt(whoamiSpan.startTimeUnixNano));
    const stuckSpan = await eventually('the timed-out span', () => spanOf(stuckTrace, 'tools/call stuck_forever'));
    assert.equal(stuckSpan.traceState, 'vendor=x1');
    assert.equal(stuckSpan.status.code, otlp.trace.v1.Status.StatusCode.STATUS_CODE_ERROR);
    assert.equal(stuckSpan.attrs['error.type'], 'TOOL_TIMEOUT');
    const resource = Object.fromEntries(collector.resources[0].attributes.map((a) => [a.key, Object.values(a.value)[0]]));
    assert.equal(resource['service.name'], 'gatehouse-itest');

    // No secret anywhere an operator reads.
    const everything = [after, readFileSync(auditFile, 'utf8'), host.stderr, JSON.stringify(collector.spans)].join('\n');
    assert.ok(!everything.includes(key), 'the API key appears in no metric, audit line, log line or span');
    assert.ok(!everything.includes(session), 'the session handle appears in none either');
  } finally {
    collector.close();
    await host.stop();
  }
  assert.deepEqual(host.problems, []);
});

test('metrics.listen serves a stdio host to a real Prometheus; the audit file is reopened on SIGHUP', async () => {
  const work = mkdtempSync(path.join(tmpdir(), 'gatehouse-prometheus-'));
  const host = new Host({
    plugins: ['echo.so'],
    sections: {
      metrics: { listen: '127.0.0.1:0', allow: ['127.0.0.1'] },
      audit: (dir) => ({ file: path.join(dir, 'audit.jsonl'), include_arguments: true }),
    },
  });
  const auditFile = path.join(host.config.dir, 'audit.jsonl');
  let prometheus;
  try {
    await host.stderrMatching(/metrics, \/health, \/ready and \/status served on 127\.0\.0\.1:\d+/);
    const port = Number(/served on 127\.0\.0\.1:(\d+)/.exec(host.stderr)[1]);
    const base = `http://127.0.0.1:${port}`;
    assert.deepEqual(await (await fetch(`${base}/health`)).json(), { status: 'ok' });
    assert.deepEqual(await (await fetch(`${base}/ready`)).json(), { status: 'ready' });
    assert.equal((await fetch(`${base}/mcp`)).status, 404, 'nothing of MCP is served there');
    assert.equal((await fetch(`${base}/metrics`, { method: 'POST' })).status, 405);

    const echoed = await host.modern('tools/call', { name: 'echo', arguments: { text: 'hello' } }, { traceparent: traceparent() });
    assert.equal(echoed.result.isError, undefined);
    promtoolCheck(await (await fetch(`${base}/metrics`)).text());

    // logrotate moves the file away, then sends SIGHUP: the next line goes to a new file.
    await eventually('the first audit line', () => auditLines(auditFile).length === 1);
    const first = auditLines(auditFile)[0];
    assert.equal(first.transport, 'stdio');
    assert.deepEqual(first.arguments, { text: 'hello' }, 'audit.include_arguments writes what the agent sent');
    assert.equal(first.trace_id, INCOMING);
    renameSync(auditFile, auditFile + '.1');
    host.child.kill('SIGHUP');
    // Calls until one lands in the new file: those before the reopen still
    // go to the moved one, after the echo line.
    await eventually('a line in the new file', async () => {
      const noop = await host.modern('tools/call', { name: 'noop', arguments: {} });
      assert.equal(noop.result?.isError, undefined, JSON.stringify(noop));
      return auditLines(auditFile).length >= 1;
    });
    const moved = auditLines(auditFile + '.1');
    assert.equal(moved[0].tool, 'echo', 'the moved file starts with the line written before it moved');
    assert.deepEqual(moved.slice(1).map((l) => l.tool), moved.slice(1).map(() => 'noop'));
    assert.ok(auditLines(auditFile).every((l) => l.tool === 'noop'), 'the new file holds only what came after the move');

    // A real Prometheus, scraping every second, on a port that was free when
    // asked for: another process may take it before Prometheus binds it, and
    // then it ends saying so; another port, a few times.
    writeFileSync(
      path.join(work, 'prometheus.yml'),
      `global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n  - job_name: gatehouse\n    static_configs: [{targets: ['127.0.0.1:${port}']}]\n`,
    );
    let promLog = '';
    const promPort = await onFreePort(async (candidate) => {
      promLog = '';
      prometheus = spawn(
        'prometheus',
        [`--config.file=${path.join(work, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(work, 'data')}`, `--web.listen-address=127.0.0.1:${candidate}`],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      prometheus.stderr.on('data', (c) => (promLog += c));
      const ended = once(prometheus, 'exit').then(() => 'ended');
      const listening = eventually('Prometheus to listen', async () => {
        if (prometheus.exitCode !== null) return true;
        try {
          return (await fetch(`http://127.0.0.1:${candidate}/-/healthy`)).ok;
        } catch {
          return false;
        }
      }, 30000).then(() => 'listening');
      if ((await Promise.race([ended, listening])) === 'listening' && prometheus.exitCode === null) return candidate;
      await ended;
      prometheus = undefined;
      const message = `Prometheus did not start:\n${promLog.slice(-2000)}`;
      throw /address already in use/.test(promLog) ? new PortTaken(message) : new Error(message);
    });
    const query = async (q) => {
      try {
        const r = await fetch(`http://127.0.0.1:${promPort}/api/v1/query?query=${encodeURIComponent(q)}`);
        if (!r.ok) return undefined;
        const body = await r.json();
        return body.data.result.length ? body.data.result : undefined;
      } catch {
        return undefined;
      }
    };
    const up = await eventually('Prometheus to scrape the host', () => query('up{job="gatehouse"} == 1'), 30000).catch((e) => {
      throw new Error(`${e.message}\n${promLog.slice(-2000)}`);
    });
    assert.equal(up[0].value[1], '1');
    const echoCalls = await eventually('the tool calls in Prometheus', () =>
      query('gatehouse_tool_calls_total{family="echo",tool="echo",outcome="ok"}'),
    );
    assert.equal(echoCalls[0].value[1], '1');
    const targets = await (await fetch(`http://127.0.0.1:${promPort}/api/v1/targets`)).json();
    assert.equal(targets.data.activeTargets[0].health, 'up', JSON.stringify(targets.data.activeTargets[0]));
  } finally {
    if (prometheus) {
      prometheus.kill('SIGTERM');
      await once(prometheus, 'exit');
    }
    await host.close();
    rmSync(work, { recursive: true, force: true });
  }
});

test('a call through call_tool is audited with the arguments it forwards, the session handle left out', async () => {
  const host = new Host({
    plugins: ['echo.so'],
    sections: {
      domains: { echo: { exposure: 'on_demand' } },
      audit: (dir) => ({ file: path.join(dir, 'audit.jsonl'), include_arguments: true }),
    },
  });
  const auditFile = path.join(host.config.dir, 'audit.jsonl');
  try {
    const answer = await host.modern('tools/call', {
      name: 'call_tool',
      arguments: { name: 'echo', arguments: { text: 'through call_tool', session: '0123456789abcdef0123456789abcdef' } },
    });
    assert.ok(answer.result, JSON.stringify(answer));
    await eventually('the audit line', () => auditLines(auditFile).length === 1);
    const line = auditLines(auditFile)[0];
    assert.equal(line.tool, 'echo');
    assert.deepEqual(line.arguments, { text: 'through call_tool' });
    assert.ok(!readFileSync(auditFile, 'utf8').includes('0123456789abcdef0123456789abcdef'));
  } finally {
    await host.close();
  }
  assert.deepEqual(host.problems, []);
});

test('metrics.allow keeps other addresses out; a listener off loopback without it is refused at load; load failures are counted', async () => {
  const { writeConfig } = await import('./lib/host.mjs');
  const { file } = writeConfig({ plugins: ['echo.so'], sections: { metrics: { listen: '0.0.0.0:9464' } } });
  const run = spawnSync(binaryPath(), ['check-config', '--config', file], { encoding: 'utf8' });
  assert.notEqual(run.status, 0);
  assert.match(run.stderr + run.stdout, /gatehouse\.yaml:\d+:\d+.*metrics\.listen on 0\.0\.0\.0 \(not loopback\) needs metrics\.allow/);

  const host = await HttpHost.start({ plugins: ['echo.so'], sections: { metrics: { allow: ['10.0.0.0/8'] } } });
  try {
    const refused = await fetch(host.origin + '/metrics');
    assert.equal(refused.status, 403);
    assert.match(await refused.text(), /metrics\.allow/);
  } finally {
    await host.stop();
  }
  // Loopback allowed, and a plugin that does not load is counted.
  const counted = await HttpHost.start({
    plugins: ['echo.so', 'broken_not_a_library.so'],
    sections: { metrics: { allow: ['127.0.0.0/8', '::1'] } },
  });
  try {
    const exposition = await (await fetch(counted.origin + '/metrics')).text();
    assert.equal(sample(exposition, 'gatehouse_plugin_load_failures_total'), 1);
    assert.equal(sample(exposition, 'gatehouse_families_loaded'), 1);
  } finally {
    await counted.stop();
  }
});

test('a task round is audited and traced as a call of its own, under the call that started the task', async () => {
  const TASKS = 'io.modelcontextprotocol/tasks';
  const meta = {
    'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS]: {} } },
    traceparent: traceparent(),
  };
  let dir;
  const host = await HttpHost.start({
    plugins: ['conformance.so'],
    sections: { tasks: { poll_interval_ms: 100 }, audit: (d) => ((dir = d), { file: path.join(d, 'audit.jsonl') }) },
  });
  try {
    const created = await host.modern('tools/call', { name: 'slow_compute', arguments: { seconds: 1 } }, { meta });
    const task = created.answer.result;
    assert.equal(task.resultType, 'task', created.text);
    const lines = await eventually('the round\'s audit line', () => {
      const read = auditLines(path.join(dir, 'audit.jsonl'));
      return read.find((l) => l.event === 'task_round') && read;
    });
    const start = lines.find((l) => l.event === 'tool_call');
    const round = lines.find((l) => l.event === 'task_round');
    assert.equal(start.outcome, 'task');
    assert.equal(round.task_id, task.taskId);
    assert.equal(round.outcome, 'ok');
    assert.equal(round.tool, 'slow_compute');
    assert.equal(round.transport, 'task');
    assert.equal(round.trace_id, INCOMING, 'the round continues the caller\'s trace');
    assert.notEqual(round.span_id, start.span_id);
    const exposition = await (await fetch(host.origin + '/metrics')).text();
    assert.equal(sample(exposition, 'gatehouse_tool_calls_total', { tool: 'slow_compute', outcome: 'task' }), 1);
    assert.equal(sample(exposition, 'gatehouse_tool_calls_total', { tool: 'slow_compute', outcome: 'ok' }), 1);
  } finally {
    await host.stop();
  }
});

test('a collector that accepts and never answers costs each export its timeout, not the exporter or the shutdown', async () => {
  // Accepts, reads, never writes a byte back.
  const { createServer: createTcpServer } = await import('node:net');
  const sockets = [];
  const silent = createTcpServer((socket) => {
    sockets.push(socket);
    socket.on('data', () => {});
    socket.on('error', () => {});
  });
  silent.listen(0, '127.0.0.1');
  await once(silent, 'listening');
  const host = await HttpHost.start({
    plugins: ['echo.so'],
    sections: { tracing: { otlp_endpoint: `http://127.0.0.1:${silent.address().port}/v1/traces`, export_timeout_ms: 500 } },
  });
  try {
    for (let i = 0; i < 3; i++) {
      const reply = await host.modern('tools/call', { name: 'echo', arguments: { text: `span ${i}` } });
      assert.equal(reply.status, 200, reply.text);
    }
    // Before, the exporter's blocking read never returned: nothing was logged.
    await host.stderrMatching(/span export to 127\.0\.0\.1:\d+\/v1\/traces failed: .*(timeout|timed out|no answer)/i, 10000);
  } finally {
    // Before, the shutdown's flush waited for that read for ever.
    const started = Date.now();
    await host.stop({ timeoutMs: 10000 });
    assert.ok(Date.now() - started < 10000);
    for (const s of sockets) s.destroy();
    silent.close();
  }
});

test("a request id of many kilobytes is cut in the audit line, with its length said", async () => {
  let auditFile;
  const host = new Host({
    plugins: ['echo.so'],
    sections: { audit: (dir) => ({ file: (auditFile = path.join(dir, 'audit.jsonl')) }) },
  });
  try {
    const id = 'x'.repeat(10000);
    host.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' }, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } });
    assert.equal((await host.response(id)).message.result.structuredContent.text, 'hi');
    const line = await eventually('the audit line', () => {
      const text = existsSync(auditFile) ? readFileSync(auditFile, 'utf8') : '';
      return text.includes('"request_id"') ? text : null;
    });
    const audited = JSON.parse(line.trim().split('\n').at(-1));
    assert.ok(audited.request_id.length < 400, `${audited.request_id.length} characters`);
    assert.match(audited.request_id, /^x+\.\.\. \(10000 bytes\)$/);
  } finally {
    const exit = await host.close();
    assert.equal(exit.code, 0, host.stderr.slice(-2000));
  }
});

test('a call refused by max_in_flight_per_principal has its audit line', async () => {
  let auditFile;
  const host = new Host({
    plugins: ['echo.so'],
    limits: { max_in_flight_per_principal: 1, tool_timeout_ms: 3000 },
    sections: { audit: (dir) => ({ file: (auditFile = path.join(dir, 'audit.jsonl')) }) },
  });
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
  try {
    host.send({ jsonrpc: '2.0', id: 'holder', method: 'tools/call', params: { name: 'slow', arguments: { ms: 60000 }, _meta: meta } });
    host.send({ jsonrpc: '2.0', id: 'one-too-many', method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' }, _meta: meta } });
    assert.equal((await host.response('one-too-many')).message.error?.data?.code, 'TOO_MANY_IN_FLIGHT');
    const line = await eventually('the refused call audited', () => {
      const text = existsSync(auditFile) ? readFileSync(auditFile, 'utf8') : '';
      return text.split('\n').find((l) => l.includes('"one-too-many"')) ?? null;
    });
    assert.match(line, /"tool":"echo"/);
    assert.match(line, /"outcome":"protocol_error"/);
    host.notify('notifications/cancelled', { requestId: 'holder' });
  } finally {
    const exit = await host.close();
    assert.equal(exit.code, 0, host.stderr.slice(-2000));
  }
});
