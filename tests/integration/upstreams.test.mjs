// MCP servers mounted as families (upstreams: in the YAML): the host is their
// client. Real servers from npm (@modelcontextprotocol/server-memory and
// server-everything, both over stdio), a hand-written hostile one
// (tests/fixtures/upstream/hostile_server.mjs), and another gatehouse.
// Their tools join the registry under the name hook and pass the same gate.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { withHost, writeConfig, binaryPath, modernMeta, MODERN, eventually } from './lib/host.mjs';

import { HttpHost } from './lib/http_host.mjs';
import { makeCertificates } from './lib/certificates.mjs';
import { onFreePort, PortTaken } from './lib/ports.mjs';
import { startScriptedUpstream } from './lib/scripted_upstream.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const packageBin = (name, file) => path.join(path.dirname(require.resolve(`${name}/package.json`)), file);
const NODE = process.execPath;
const MEMORY = packageBin('@modelcontextprotocol/server-memory', 'dist/index.js');
const EVERYTHING = packageBin('@modelcontextprotocol/server-everything', 'dist/index.js');
const HOSTILE = path.resolve(HERE, '../fixtures/upstream/hostile_server.mjs');

const memory = (dir) => ({ name: 'mem', command: [NODE, MEMORY], env: { MEMORY_FILE_PATH: path.join(dir, 'memory.jsonl') } });
const everything = { name: 'everything', command: [NODE, EVERYTHING, 'stdio'] };
const hostile = (extra = {}) => ({ name: 'hostile', command: [NODE, HOSTILE], tool_timeout_ms: 3000, ...extra });

const names = (tools) => tools.map((t) => t.name);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const CHANGING = path.resolve(HERE, '../fixtures/upstream/changing_server.mjs');
const AGENT_ANSWERS = {
  'roots/list': { roots: [{ uri: 'file:///srv/agent-root', name: 'agent' }] },
  'elicitation/create': { action: 'accept', content: { colour: 'teal', name: 'Ada Lovelace' } },
  'sampling/createMessage': { model: 'agent-model', role: 'assistant', content: { type: 'text', text: 'words from the agent\'s model' } },
};
const ALL_INPUTS = { elicitation: {}, sampling: {}, roots: {} };

// A 2026-07-28 tool call driven round by round, as a client does: each
// InputRequiredResult is answered by method and the call made again with the
// answers and the requestState. The final answer, and everything asked.
async function rounds(host, name, args, capabilities, answers = AGENT_ANSWERS) {
  const meta = { 'io.modelcontextprotocol/clientCapabilities': capabilities };
  const asked = [];
  let retry = {};
  for (let round = 0; round < 6; round++) {
    const answer = await host.modern('tools/call', { name, arguments: args, ...retry }, meta);
    if (answer.result?.resultType !== 'input_required') return { answer, asked };
    const inputResponses = {};
    for (const [key, request] of Object.entries(answer.result.inputRequests ?? {})) {
      asked.push(request);
      inputResponses[key] = answers[request.method];
    }
    retry = { inputResponses, requestState: answer.result.requestState };
  }
  throw new Error(`${name} asked for input more than 6 rounds in a row`);
}

// The same answers, from a real client's own request handlers.
function answerAsAgent(client, schemas, seen) {
  for (const [method, schema] of Object.entries(schemas))
    client.setRequestHandler(schema, async (request) => {
      seen.push(request);
      return AGENT_ANSWERS[method];
    });
}
// `gatehouse plugins --json`; it exits 1 when a family did not load, and still reports.
const pluginsJson = (file) =>
  JSON.parse(spawnSync(binaryPath(), ['plugins', '--config', file, '--json'], { encoding: 'utf8' }).stdout);

test('server-memory and server-everything mount beside a plugin family: listed under the name hook, called, with progress', () =>
  withHost({ plugins: ['echo.so'], sections: { upstreams: (dir) => [memory(dir), everything] } }, async (host) => {
    await host.stderrMatching(/family 'mem' loaded: .*an upstream speaking 2025-11-25/, 30000);
    await host.stderrMatching(/family 'everything' loaded: /, 30000);
    const tools = (await host.modern('tools/list')).result.tools;
    for (const name of ['echo', 'mem_create_entities', 'mem_search_nodes', 'everything_echo', 'everything_get-sum'])
      assert.ok(names(tools).includes(name), `${name} is listed: ${names(tools)}`);
    const call = async (name, args, meta) => (await host.modern('tools/call', { name, arguments: args }, meta)).result;

    assert.equal((await call('echo', { text: 'native' })).structuredContent.text, 'native');
    const created = await call('mem_create_entities', {
      entities: [{ name: 'Ann', entityType: 'person', observations: ['drinks green tea'] }],
    });
    assert.equal(created.isError, undefined, JSON.stringify(created));
    const found = await call('mem_search_nodes', { query: 'tea' });
    assert.match(JSON.stringify(found), /Ann/);
    assert.match((await call('everything_get-sum', { a: 2, b: 3 })).content[0].text, /5/);
    // Its outputSchema, checked here against what it answered, holds.
    const structured = await call('everything_get-structured-content', { location: 'New York' });
    assert.equal(structured.isError, undefined, JSON.stringify(structured));
    assert.equal(typeof structured.structuredContent.temperature, 'number');

    // Progress the upstream reports reaches the agent under the agent's own token.
    const from = host.messages.length;
    const long = await call('everything_trigger-long-running-operation', { duration: 1, steps: 3 }, { progressToken: 'p-1' });
    assert.equal(long.isError, undefined, JSON.stringify(long));
    const progress = host.notifications('notifications/progress', from);
    assert.ok(progress.length >= 2, `progress relayed: ${JSON.stringify(progress)}`);
    assert.ok(progress.every((n) => n.params.progressToken === 'p-1'));

    // Its resources keep their URIs, its templates theirs, its prompts take the hook; completions pass.
    const resources = (await host.modern('resources/list')).result.resources;
    const doc = resources.find((r) => r.uri.startsWith('demo://resource/static/document/'));
    assert.ok(doc, JSON.stringify(resources.map((r) => r.uri)));
    const read = (await host.modern('resources/read', { uri: doc.uri })).result;
    assert.equal(read.contents[0].uri, doc.uri, JSON.stringify(read));
    const templates = (await host.modern('resources/templates/list')).result.resourceTemplates;
    assert.ok(templates.some((t) => t.uriTemplate === 'demo://resource/dynamic/text/{resourceId}'), JSON.stringify(templates));
    const dynamic = (await host.modern('resources/read', { uri: 'demo://resource/dynamic/text/7' })).result;
    assert.match(JSON.stringify(dynamic.contents), /7/);
    const unknown = await host.modern('resources/read', { uri: 'demo://resource/nowhere' });
    assert.ok(unknown.error, 'an unknown URI is an error');
    const prompts = names((await host.modern('prompts/list')).result.prompts);
    assert.ok(prompts.includes('everything_simple-prompt') && prompts.includes('everything_completable-prompt'), String(prompts));
    const prompt = (await host.modern('prompts/get', { name: 'everything_simple-prompt' })).result;
    assert.equal(prompt.messages[0].content.text, 'This is a simple prompt without arguments.');
    const completion = (await host.modern('completion/complete', {
      ref: { type: 'ref/prompt', name: 'everything_completable-prompt' },
      argument: { name: 'department', value: 'Eng' },
    })).result;
    assert.deepEqual(completion.completion.values, ['Engineering']);

    const listed = pluginsJson(host.config.file).families.find((f) => f.family === 'mem');
    assert.equal(listed.upstream.protocol, '2025-11-25');
    assert.match(listed.upstream.reaches, /server-memory/);
  }));

async function withRealClient(makeClient, makeTransport, configFile, body) {
  const transport = makeTransport({
    command: binaryPath(),
    args: ['serve', '--config', configFile],
    env: { PATH: process.env.PATH, GATEHOUSE_LOG: 'warn', ASAN_OPTIONS: process.env.ASAN_OPTIONS ?? '' },
    stderr: 'pipe',
  });
  const client = makeClient();
  try {
    await client.connect(transport);
    await body(client);
  } finally {
    await client.close();
  }
}

test('a real v1 and a real v2 client list the upstreams\' tools and the plugin\'s, and call each', async () => {
  const config = writeConfig({ plugins: ['echo.so'], sections: { upstreams: (dir) => [memory(dir), everything] } });
  try {
    const story = async (client, seen) => {
      const { tools } = await client.listTools();
      for (const name of ['echo', 'mem_read_graph', 'everything_echo']) assert.ok(names(tools).includes(name), name);
      // server-everything asks its client for a form and for a sampling during
      // these calls: the agent's client is asked and its answers go back.
      const elicited = await client.callTool({ name: 'everything_trigger-elicitation-request', arguments: {} });
      assert.equal(elicited.isError ?? false, false, JSON.stringify(elicited));
      assert.match(JSON.stringify(elicited.content), /Ada Lovelace/);
      const sampled = await client.callTool({ name: 'everything_trigger-sampling-request', arguments: { prompt: 'a haiku', maxTokens: 20 } });
      assert.equal(sampled.isError ?? false, false, JSON.stringify(sampled));
      assert.match(sampled.content[0].text, /words from the agent's model/);
      const form = seen.find((r) => r.method === 'elicitation/create');
      assert.match(form?.params.message ?? '', /Please provide inputs/, JSON.stringify(seen));
      assert.ok(form.params.requestedSchema.properties.name, 'the server\'s own schema reaches the agent');
      assert.match(JSON.stringify(seen.find((r) => r.method === 'sampling/createMessage')?.params.messages), /a haiku/);
      assert.equal((await client.callTool({ name: 'echo', arguments: { text: 'a' } })).structuredContent.text, 'a');
      const echoed = await client.callTool({ name: 'everything_echo', arguments: { message: 'through the gate' } });
      assert.match(echoed.content[0].text, /through the gate/);
      const graph = await client.callTool({ name: 'mem_read_graph', arguments: {} });
      assert.equal(graph.isError ?? false, false, JSON.stringify(graph));
    };
    const v1seen = [];
    await withRealClient(
      () => {
        const client = new ClientV1({ name: 'itest-v1', version: '1.0.0' }, { capabilities: { elicitation: {}, sampling: {} } });
        answerAsAgent(client, { 'elicitation/create': ElicitRequestSchema, 'sampling/createMessage': CreateMessageRequestSchema }, v1seen);
        return client;
      },
      (p) => new StdioV1(p),
      config.file,
      (client) => story(client, v1seen),
    );
    const v2seen = [];
    await withRealClient(
      () => {
        const client = new ClientV2(
          { name: 'itest-v2', version: '1.0.0' },
          { capabilities: { elicitation: { form: {} }, sampling: {} }, versionNegotiation: { mode: { pin: MODERN } } },
        );
        answerAsAgent(client, { 'elicitation/create': 'elicitation/create', 'sampling/createMessage': 'sampling/createMessage' }, v2seen);
        return client;
      },
      (p) => new StdioV2(p),
      config.file,
      (client) => story(client, v2seen),
    );
    // A client that cannot sample: the upstream hears so at once, and its tool says what failed.
    await withRealClient(
      () => new ClientV1({ name: 'itest-v1-plain', version: '1.0.0' }),
      (p) => new StdioV1(p),
      config.file,
      async (client) => {
        const sampled = await client.callTool({ name: 'everything_trigger-sampling-request', arguments: { prompt: 'x', maxTokens: 5 } });
        assert.equal(sampled.isError, true, JSON.stringify(sampled));
        assert.match(JSON.stringify(sampled.content), /does not offer/);
      },
    );
  } finally {
    rmSync(config.dir, { recursive: true, force: true });
  }
});

test('a name clash between two upstreams is refused naming both, the other families keep serving, and the hook resolves it', () => {
  const clashing = writeConfig({
    plugins: ['ledger.so'],
    sections: { upstreams: [{ ...everything, names: 'none' }, { name: 'again', command: [NODE, EVERYTHING, 'stdio'], names: 'none' }] },
  });
  const resolved = writeConfig({
    plugins: ['ledger.so'],
    sections: { upstreams: [{ ...everything, names: 'none' }, { name: 'again', command: [NODE, EVERYTHING, 'stdio'], names: 'second-{name}', resources: false }] },
  });
  try {
    const refused = pluginsJson(clashing.file);
    assert.deepEqual(refused.families.map((f) => f.family).sort(), ['everything', 'ledger']);
    assert.equal(refused.failures.length, 1);
    assert.equal(refused.failures[0].path, "upstream 'again'");
    assert.match(refused.failures[0].reason, /tool name 'echo' of upstream 'again' clashes with family 'everything'; set names/);
    const both = pluginsJson(resolved.file);
    assert.deepEqual(both.failures, []);
    const tools = both.families.flatMap((f) => f.tools.map((t) => t.name));
    assert.ok(tools.includes('echo') && tools.includes('second-echo') && tools.includes('ledger_balance'), String(tools));
  } finally {
    rmSync(clashing.dir, { recursive: true, force: true });
    rmSync(resolved.dir, { recursive: true, force: true });
  }
});

test('an upstream tool behind the gate: refused without a session, without its grant, and until its rules are accepted', () =>
  withHost(
    {
      gate: true,
      plugins: [path.resolve(path.dirname(binaryPath()), '../lib/gatehouse/plugins/session.so')],
      sections: {
        session: { backend: 'memory', pinned: { store: 'shop', user: 'ann' }, grants: { shop: { ann: ['echoing'] } } },
        upstreams: [{ ...everything, required_scopes: ['echoing'], rules: 'Echo only what the person said.' }],
        domains: { everything: { tools: { 'get-sum': { required_scopes: ['arithmetic'] } } } },
      },
    },
    async (host) => {
      const call = async (name, args) => (await host.modern('tools/call', { name, arguments: args })).result;
      const listed = (await host.modern('tools/list')).result.tools.find((t) => t.name === 'everything_echo');
      assert.ok(listed.inputSchema.required.includes('session'), 'a gated upstream tool takes the session handle');
      assert.equal((await call('everything_echo', { message: 'hi' })).structuredContent.code, 'NOT_CONNECTED');
      const session = (await call('session_connect', { topic: 'talk' })).structuredContent.session;
      const sum = await call('everything_get-sum', { session, a: 1, b: 2 });
      assert.equal(sum.structuredContent.code, 'NOT_GRANTED');
      assert.deepEqual(sum.structuredContent.next.missing_scopes, ['arithmetic']);
      const refused = await call('everything_echo', { session, message: 'hi' });
      assert.equal(refused.structuredContent.code, 'RULES_NOT_ACCEPTED');
      assert.equal(refused.structuredContent.next.rules, 'Echo only what the person said.');
      await call('session_rules_accept', { session, code: refused.structuredContent.next.code });
      const echoed = await call('everything_echo', { session, message: 'hi' });
      assert.match(echoed.content[0].text, /hi/);
    },
  ));

test('a hostile upstream: broken schemas caught, bounds kept, a crash answered UPSTREAM_UNAVAILABLE and the server started again', () =>
  withHost({
    plugins: ['echo.so'],
    limits: { max_message_bytes: 1 << 20 },
    sections: { upstreams: [hostile()], metrics: { listen: '127.0.0.1:0', allow: ['127.0.0.1'] } },
  }, async (host) => {
    await host.stderrMatching(/family 'hostile' loaded: hostile 6\.6\.6/, 30000);
    await host.stderrMatching(/metrics, \/health, \/ready and \/status served on 127\.0\.0\.1:\d+/);
    const port = Number(/served on 127\.0\.0\.1:(\d+)/.exec(host.stderr)[1]);
    const up = async () => {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      assert.doesNotMatch(text, /gatehouse_upstream_up\{family="echo"\}/, 'a plugin family has no such series');
      return Number(/gatehouse_upstream_up\{family="hostile"\} (\d+)/.exec(text)?.[1]);
    };
    assert.equal(await up(), 1);
    const status = async () => (await fetch(`http://127.0.0.1:${port}/status`)).json();
    const first = await status();
    assert.equal(first.status, 'ready');
    const hostile = first.families.find((f) => f.family === 'hostile');
    assert.equal(hostile.kind, 'upstream');
    assert.equal(hostile.serving, true);
    assert.equal(hostile.protocol, '2025-11-25');
    assert.match(hostile.reaches, /hostile_server\.mjs/);
    assert.deepEqual(first.families.find((f) => f.family === 'echo').kind, 'plugin');
    assert.match(host.stderr, /tool 'bad name!' is left out/);
    assert.match(host.stderr, /upstream 'hostile': tool 'bad_schema' is left out: /);
    // Entries with no name, or a name that is not text, are left out, and
    // so is every copy of a name listed twice.
    assert.equal(host.stderr.match(/upstream 'hostile' lists a tool with no name; left out/g)?.length, 2);
    assert.match(host.stderr, /upstream 'hostile' lists tool 'twice' more than once; every copy is left out/);
    const call = async (name, args = {}, meta) => (await host.modern('tools/call', { name, arguments: args }, meta)).result;
    const tools = names((await host.modern('tools/list')).result.tools);
    assert.ok(tools.includes('hostile_count') && !tools.some((n) => n.includes('bad name') || n.includes('bad_schema')), String(tools));
    assert.ok(!tools.includes('hostile_twice'), String(tools));
    // The host runs no regex a server wrote: its patterns are left out of
    // the schemas the host checks and publishes, so neither an argument
    // that would backtrack for ever nor a result too long for a backtracking
    // engine's stack harms the host; what patternProperties allowed stays allowed.
    const regexTool = (await host.modern('tools/list')).result.tools.find((t) => t.name === 'hostile_regex');
    assert.ok(regexTool && !/pattern/.test(JSON.stringify([regexTool.inputSchema, regexTool.outputSchema])), JSON.stringify(regexTool));
    // A definition named as a keyword is a name: kept, without its pattern.
    assert.deepEqual(regexTool.outputSchema.$defs, { default: { type: 'string' } });
    const regex = await call('hostile_regex', { s: `${'a'.repeat(40)}!` });
    assert.equal(regex.structuredContent?.s?.length, 200000, JSON.stringify(regex).slice(0, 300));
    assert.equal(regex.structuredContent.x1, 'kept');

    assert.deepEqual((await call('hostile_count')).structuredContent, { count: 3 });
    const broken = await call('hostile_broken_count');
    assert.equal(broken.isError, true);
    assert.match(broken.content[0].text, /breaks its own outputSchema \(at \/count/);
    const bare = await call('hostile_no_structure');
    assert.equal(bare.isError, true);
    assert.match(bare.content[0].text, /no structured result although it declares an outputSchema/);

    // Progress, and a cancellation passed on.
    const from = host.messages.length;
    assert.equal((await call('hostile_progress', {}, { progressToken: 7 })).content[0].text, 'done');
    assert.deepEqual(host.notifications('notifications/progress', from).map((n) => n.params.message), ['step 1', 'step 2', 'step 3']);
    // A notice the size of a message keeps only what progress is, its message cut to 1 KiB of whole letters.
    const padded = host.messages.length;
    assert.equal((await call('hostile_progress', { pad: 200000 }, { progressToken: 8 })).content[0].text, 'done');
    const big = host.notifications('notifications/progress', padded);
    assert.equal(big.length, 3);
    for (const n of big) {
      assert.ok(Buffer.byteLength(n.params.message) <= 1024 + 3, String(Buffer.byteLength(n.params.message)));
      assert.match(n.params.message, /^step \d(é)+…$/);
      assert.equal(n.params.extra, undefined);
    }
    // What it logs and writes on stderr without end reaches the host's log at most a burst's worth at once.
    const chattering = Date.now();
    assert.equal((await call('hostile_chatter')).content[0].text, 'said');
    // At least once for its messages, once for its stderr.
    await eventually('both allowances spent', () =>
      host.stderr.match(/\[hostile\] writes more than 50 lines a second into the host's log; the next are counted, not written/g)?.length >= 2);
    await sleep(300);
    const logged = (pattern) => host.stderr.match(pattern)?.length ?? 0;
    // 500 at once, and 50 a second for as long as it went on.
    const allowed = 500 + Math.ceil((50 * (Date.now() - chattering)) / 1000) + 5;
    assert.ok(logged(/chatter message \d+/g) <= allowed, `${logged(/chatter message \d+/g)} of 1500 messages logged, ${allowed} allowed`);
    assert.ok(logged(/chatter line \d+/g) <= allowed, `${logged(/chatter line \d+/g)} of 1500 stderr lines logged, ${allowed} allowed`);
    assert.ok(logged(/chatter message \d+/g) >= 400);
    host.send({ jsonrpc: '2.0', id: 'w', method: 'tools/call', params: { name: 'hostile_wait', arguments: {}, _meta: modernMeta() } });
    await new Promise((resolve) => setTimeout(resolve, 200));
    host.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'w', _meta: modernMeta() } });
    const heard = async () => (await call('hostile_cancellations')).structuredContent.cancelled.length;
    for (let i = 0; i < 50 && (await heard()) === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(await heard(), 1, 'the upstream heard notifications/cancelled');

    // Nested past limits.max_json_depth: never parsed; the call times out.
    const deep = await call('hostile_deep');
    assert.equal(deep.structuredContent.code, 'TOOL_TIMEOUT', JSON.stringify(deep));
    await host.stderrMatching(/\[hostile\] sent something that is not a JSON-RPC message \(nested over 64 levels/);

    // A line past limits.max_message_bytes ends the connection; the host starts the server again.
    const pid = Number((await call('hostile_pid')).content[0].text);
    const flood = await call('hostile_flood');
    assert.equal(flood.structuredContent.code, 'UPSTREAM_UNAVAILABLE', JSON.stringify(flood));
    assert.match(flood.structuredContent.message, /over 1048576 bytes/);
    await host.stderrMatching(/upstream 'hostile' serves again/, 15000);

    // An exit mid-call: the call hears UPSTREAM_UNAVAILABLE, the other families never stop.
    const exited = await call('hostile_exit');
    assert.equal(exited.structuredContent.code, 'UPSTREAM_UNAVAILABLE');
    assert.match(exited.structuredContent.message, /exited with status 7/);
    assert.equal(exited.structuredContent.next.action, 'retry');
    assert.equal((await call('echo', { text: 'still here' })).structuredContent.text, 'still here');
    let again;
    for (let i = 0; i < 100; i++) {
      again = await call('hostile_pid');
      if (!again.isError) break;
      assert.equal(again.structuredContent.code, 'UPSTREAM_UNAVAILABLE');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.notEqual(Number(again.content[0].text), pid, 'served from a new process');
    assert.equal(await up(), 1, 'connected again');
    assert.equal((await status()).families.find((f) => f.family === 'hostile').serving, true);

    // A server that stops reading: the agent hears at the tool's timeout, and
    // the sender is held 10 s at most before the server is ended and started again.
    assert.equal((await call('hostile_stall')).content[0].text, 'no longer reading');
    const stalled = await call('hostile_count', { parts: Array(4).fill('x'.repeat(60000)) });
    assert.equal(stalled.structuredContent.code, 'TOOL_TIMEOUT', JSON.stringify(stalled));
    await host.stderrMatching(/\[hostile\] stopped reading its input for 10 s; the host ends it/, 15000);
    await host.stderrMatching(/upstream 'hostile' \(.*\) stopped serving: its output ended: it was killed by signal 9/);
    await host.stderrMatching(/upstream 'hostile' \(.*hostile_server\.mjs\) stopped serving: its output ended: it exited with status 7; connecting again in \d+ ms/);
    assert.equal(host.child.exitCode, null);
  }));

test('an upstream\'s hints say what the host enforces: readOnlyHint and destructiveHint follow the risk the gate checks, hints of the wrong type are dropped', () =>
  withHost({ plugins: [], sections: { upstreams: [hostile(), hostile({ name: 'strict', risk: 'write' })] } }, async (host) => {
    await host.stderrMatching(/family 'strict' loaded: hostile 6\.6\.6/, 30000);
    await host.stderrMatching(/family 'hostile' loaded: hostile 6\.6\.6/, 30000);
    const tools = [];
    for (let cursor; ;) {
      const page = (await host.modern('tools/list', cursor ? { cursor } : {})).result;
      tools.push(...page.tools);
      if (!(cursor = page.nextCursor)) break;
    }
    const hints = (name) => tools.find((t) => t.name === name)?.annotations;
    // The server says read-only and nothing overrides it: read, and said so.
    assert.equal(hints('hostile_pid').readOnlyHint, true);
    // The operator made every tool of `strict` a write: its client is not told read-only.
    assert.equal(hints('strict_pid').readOnlyHint, false);
    assert.equal(hints('strict_pid').destructiveHint, false);
    // 'yes' and 1 are no hints: a write, said so; the boolean openWorldHint passes, the rest do not.
    assert.deepEqual(hints('hostile_loose_hints'), { readOnlyHint: false, destructiveHint: false, openWorldHint: true });
  }));

test('an upstream tool published under a host tool\'s name is left out: call_tool stays the host\'s and forwards to the family named', () =>
  withHost({ plugins: ['echo.so'], sections: { upstreams: [hostile({ names: 'none', allow: ['count', 'call_tool'] })], domains: { echo: { exposure: 'on_demand' } } } }, async (host) => {
    await host.stderrMatching(/upstream 'hostile': tool 'call_tool' is left out: 'call_tool' is the name of one of the host's own tools/);
    const listed = (await host.modern('tools/list')).result.tools.filter((t) => t.name === 'call_tool');
    assert.equal(listed.length, 1);
    assert.doesNotMatch(listed[0].description, /The name of a host tool/);
    // The host's call_tool reaches the server's `count`; the server's own
    // call_tool would have answered nothing.
    const forwarded = await host.modern('tools/call', { name: 'call_tool', arguments: { name: 'count', arguments: {} } });
    assert.deepEqual(forwarded.result.structuredContent, { count: 3 }, JSON.stringify(forwarded));
  }));

test('what an upstream asks during a call reaches the agent and goes back; what the agent cannot answer is refused; an abandoned call is ended', () =>
  withHost({
    plugins: [],
    sections: { upstreams: [hostile()], input_requests: { client_timeout_ms: 1000, state_ttl_ms: 1000 } },
  }, async (host) => {
    await host.stderrMatching(/family 'hostile' loaded/, 30000);
    const heard = async () => (await host.modern('tools/call', { name: 'hostile_heard', arguments: {} })).result.structuredContent;
    assert.deepEqual(Object.keys((await heard()).capabilities).sort(), ['elicitation', 'roots', 'sampling'], 'declared at initialize');

    // An agent that offers forms and roots, not sampling.
    const methods = ['roots/list', 'elicitation/create', 'sampling/createMessage'];
    const { answer, asked } = await rounds(host, 'hostile_ask', { methods }, { elicitation: {}, roots: {} });
    assert.equal(answer.result?.isError, undefined, JSON.stringify(answer));
    const got = answer.result.structuredContent.answers;
    assert.deepEqual(got['roots/list'].result, AGENT_ANSWERS['roots/list']);
    assert.deepEqual(got['elicitation/create'].result, AGENT_ANSWERS['elicitation/create']);
    assert.equal(got['sampling/createMessage'].error?.code, -32601, JSON.stringify(got));
    assert.match(got['sampling/createMessage'].error.message, /does not offer/);
    assert.deepEqual(asked.map((r) => r.method).sort(), ['elicitation/create', 'roots/list']);
    assert.equal(asked.find((r) => r.method === 'elicitation/create').params.message, 'Which colour?');

    // Answers that do not fit the round: asked again for what is missing.
    const first = await host.modern('tools/call', { name: 'hostile_ask', arguments: { methods: ['elicitation/create'] } },
      { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } });
    assert.equal(first.result?.resultType, 'input_required', JSON.stringify(first));
    const [key] = Object.keys(first.result.inputRequests);
    const again = await host.modern('tools/call', {
      name: 'hostile_ask', arguments: { methods: ['elicitation/create'] }, inputResponses: { other: { action: 'decline' } }, requestState: first.result.requestState,
    }, { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } });
    assert.deepEqual(Object.keys(again.result?.inputRequests ?? {}), [key], JSON.stringify(again));

    // Then the agent never comes back: past the wait the host ends the call upstream.
    const before = (await heard()).heard.length;
    let late;
    for (let i = 0; i < 100 && !late; i++) {
      await sleep(50);
      late = (await heard()).heard.slice(before).find((h) => h.error);
    }
    assert.match(late?.error.message ?? '', /the agent did not answer within 1000 ms/);
    await host.stderrMatching(/call\(s\) that asked for input were not answered within 1000 ms; ended/);
    const cancelled = (await host.modern('tools/call', { name: 'hostile_cancellations', arguments: {} })).result.structuredContent.cancelled;
    assert.equal(cancelled.length, 1, 'the server heard its call was cancelled');
  }));

// An HTTP upstream (2025-11-25) whose tool `ask` asks its client for a form
// on the call's own stream, the form's message `pad` characters long, and
// never answers: each call waits for its agent. `held` keeps the calls'
// streams, `answers` what the host posted back.
async function startAskingUpstream(pad) {
  const held = [];
  const answers = [];
  const upstream = await startScriptedUpstream({
    name: 'asking',
    tools: [{ name: 'ask', inputSchema: { type: 'object' } }],
    onNotification: (message) => { answers.push(message); return false; },
    onCall: (message, req, res) => {
      if (message.method !== 'tools/call') return false;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const ask = { jsonrpc: '2.0', id: `ask-${message.id}`, method: 'elicitation/create', params: { message: 'x'.repeat(pad), requestedSchema: { type: 'object', properties: {} } } };
      res.write(`data: ${JSON.stringify(ask)}\n\n`);
      held.push(res);
      return true;
    },
  });
  return {
    url: upstream.url, answers,
    close() {
      for (const res of held) res.destroy();
      upstream.close();
    },
  };
}

test('what upstream asks hold while their calls wait for the agent is bounded in bytes for each principal, and a call past it is refused and ended upstream', async () => {
  const pad = 60000;
  const upstream = await startAskingUpstream(pad);
  const { answers } = upstream;
  try {
    // 64 KiB messages: one principal's waiting calls hold at most 4 of them (256 KiB) in asks.
    await withHost({ plugins: [], sections: { upstreams: [{ name: 'asking', url: upstream.url }], limits: { max_message_bytes: 64 * 1024 } } },
      async (host) => {
        await host.stderrMatching(/family 'asking' loaded/, 30000);
        const meta = { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } };
        const ask = () => host.modern('tools/call', { name: 'asking_ask', arguments: {} }, meta);
        for (let i = 0; i < 4; i++) {
          const parked = await ask();
          assert.equal(parked.result?.resultType, 'input_required', `call ${i + 1}: ${JSON.stringify(parked).slice(0, 400)}`);
          assert.equal(Object.values(parked.result.inputRequests)[0].params.message.length, pad);
        }
        const refused = await ask();
        assert.equal(refused.result?.isError, true, JSON.stringify(refused).slice(0, 400));
        assert.match(refused.result.content[0].text, /this principal's calls of family 'asking' that wait for answers hold \d+ bytes of asks, and \d+ more would pass the 262144 it keeps for one principal/);
        // The refused call's ask is refused upstream, and the call cancelled there.
        const refusal = await eventually('the ask refused upstream', () =>
          answers.find((m) => m.error && /the host cannot keep the call open: this principal's calls/.test(m.error.message)), 5000);
        await eventually('the call cancelled upstream', () =>
          answers.some((m) => m.method === 'notifications/cancelled' && `ask-${m.params.requestId}` === refusal.id), 5000);
      });
  } finally {
    upstream.close();
  }
});

test('what upstream asks hold while their calls wait is bounded for the whole family too: five principals fill it, and the next is refused', async () => {
  const { AuthorizationServer } = await import('./lib/authorization_server.mjs');
  const upstream = await startAskingUpstream(60000);
  const as = await AuthorizationServer.start();
  // 64 KiB messages: the family keeps 1 MiB of asks in all (17 of these), each principal 256 KiB (4).
  const host = await HttpHost.start({
    plugins: [],
    sections: {
      upstreams: [{ name: 'asking', url: upstream.url }],
      limits: { max_message_bytes: 64 * 1024 },
      auth: { mode: 'jwt', issuers: [as.issuer], fetch_timeout_ms: 1500 },
    },
  });
  try {
    await eventually('the upstream family', () => /family 'asking' loaded/.test(host.stderr), 30000);
    const ask = (who) => host.modern('tools/call', { name: 'asking_ask', arguments: {} }, {
      headers: { Authorization: `Bearer ${as.mint({ aud: host.url, sub: who })}` },
      meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } },
    });
    let kept = 0;
    for (const who of ['p1', 'p2', 'p3', 'p4'])
      for (let i = 0; i < 4; i++) {
        const { answer } = await ask(who);
        assert.equal(answer.result?.resultType, 'input_required', `${who} call ${i + 1}: ${JSON.stringify(answer).slice(0, 300)}`);
        kept++;
      }
    const fifth = (await ask('p5')).answer;
    assert.equal(fifth.result?.resultType, 'input_required', JSON.stringify(fifth).slice(0, 300));
    const refused = (await ask('p5')).answer;
    assert.equal(refused.result?.isError, true, JSON.stringify(refused).slice(0, 300));
    assert.match(refused.result.content[0].text, /the calls of family 'asking' that wait for answers hold \d+ bytes of asks, and \d+ more would pass the 1048576 it keeps/);
    assert.equal(kept, 16);
  } finally {
    await host.stop();
    await as.stop().catch(() => {});
    upstream.close();
  }
});

test('a stdio upstream that leaves a daemon of its own holding its output: its end is still seen, it is started again, and the host stops at once', async () => {
  // The command starts a daemon in a session of its own, beyond its group's
  // signals, which keeps the server's stdout and stderr open for 30 s.
  const script = `setsid sleep 30 & echo "daemon $!" >&2; exec ${JSON.stringify(NODE)} ${JSON.stringify(HOSTILE)}`;
  let daemons = [];
  try {
    await withHost({
      plugins: [], sections: { upstreams: [{ name: 'hostile', command: ['/bin/sh', '-c', script], tool_timeout_ms: 20000 }] },
    }, async (host) => {
      await host.stderrMatching(/family 'hostile' loaded/, 30000);
      const call = async (name) => (await host.modern('tools/call', { name, arguments: {} })).result;
      const pid = Number((await call('hostile_pid')).content[0].text);
      const began = Date.now();
      const exited = await call('hostile_exit');
      assert.equal(exited.structuredContent?.code, 'UPSTREAM_UNAVAILABLE', JSON.stringify(exited));
      assert.ok(Date.now() - began < 5000, `its end was seen after ${Date.now() - began} ms`);
      await host.stderrMatching(/upstream 'hostile' serves again/, 15000);
      assert.notEqual(Number((await call('hostile_pid')).content[0].text), pid);
      // A server that answers and exits at once: its answer, still in the pipe, is read.
      const last = await call('hostile_answer_exit');
      assert.equal(last.content?.[0]?.text, 'said before the end', JSON.stringify(last));
      await eventually('the third server', () => host.stderr.match(/upstream 'hostile' serves again/g)?.length >= 2, 15000);
      daemons = [...host.stderr.matchAll(/daemon (\d+)/g)].map((m) => Number(m[1]));
      assert.ok(daemons.length >= 3, host.stderr);
      process.kill(daemons[0], 0); // the first daemon lives on, holding the first server's output
      // withHost then closes stdin: the host ends the second server, whose
      // daemon holds its output as well, and must exit well before the daemon does.
    });
  } finally {
    for (const daemon of daemons) try { process.kill(daemon, 'SIGKILL'); } catch { /* gone */ }
  }
});

test('an upstream down at start is reported and tried again, joins when it answers, and SIGHUP adds and removes upstreams, each change told to agents', async () => {
  const sections = { upstreams: [{ name: 'missing', command: ['/nonexistent/server'] }] };
  const config = writeConfig({ plugins: ['echo.so'], sections });
  try {
    // The one-shot command reports it as not loaded.
    const out = pluginsJson(config.file);
    assert.deepEqual(out.families.map((f) => f.family), ['echo']);
    assert.equal(out.failures[0].path, "upstream 'missing'");
    assert.match(out.failures[0].reason, /cannot start \/nonexistent\/server/);
  } finally {
    rmSync(config.dir, { recursive: true, force: true });
  }
  // A serving host keeps both as families with nothing listed, and tries again.
  const marker = (dir) => path.join(dir, 'late-may-start');
  const late = (dir) => ({ name: 'late', command: ['/bin/sh', '-c', `test -e '${marker(dir)}' && exec '${NODE}' '${CHANGING}' modern`] });
  await withHost({
    plugins: ['echo.so'],
    sections: {
      upstreams: (dir) => [sections.upstreams[0], late(dir)],
      metrics: { listen: '127.0.0.1:0', allow: ['127.0.0.1'] },
    },
  }, async (host) => {
    await host.stderrMatching(/\/status served on 127\.0\.0\.1:(\d+)/);
    assert.match(host.stderr, /upstream 'missing' is not reachable yet: .*cannot start \/nonexistent\/server/);
    const port = Number(/\/status served on 127\.0\.0\.1:(\d+)/.exec(host.stderr)[1]);
    const status = async () => (await fetch(`http://127.0.0.1:${port}/status`)).json();
    const first = await status();
    assert.deepEqual(first.families.map((f) => [f.family, f.kind, f.serving]),
      [['echo', 'plugin', true], ['missing', 'upstream', false], ['late', 'upstream', false]]);
    assert.match(first.families[1].why, /cannot start \/nonexistent\/server/);
    assert.deepEqual(first.not_loaded, []);
    assert.equal((await host.modern('tools/call', { name: 'echo', arguments: { text: 'on' } })).result.structuredContent.text, 'on');
    // A tool its name hook would name answers UPSTREAM_UNAVAILABLE, not "unknown".
    const early = await host.modern('tools/call', { name: 'late_streams', arguments: {} });
    assert.equal(early.error.code, -32602);
    assert.equal(early.error.data.code, 'UPSTREAM_UNAVAILABLE');
    assert.equal(early.error.data.family, 'late');
    assert.equal(early.error.data.next.action, 'retry');
    const unknown = await host.modern('tools/call', { name: 'nobody_here', arguments: {} });
    assert.equal(unknown.error.data, undefined);

    host.send({ jsonrpc: '2.0', id: 'agent-listen', method: 'subscriptions/listen', params: { _meta: modernMeta(), notifications: { toolsListChanged: true } } });
    await host.waitFor((m) => m.method === 'notifications/subscriptions/acknowledged');
    const heard = () => host.notifications('notifications/tools/list_changed').length;

    // The server can start now: it joins, with its tools, and the agent is told.
    writeFileSync(marker(host.config.dir), '');
    await eventually('late serving', async () => (await host.modern('tools/call', { name: 'late_streams', arguments: {} })).result, 40000);
    await eventually('the agent told of late', () => heard() >= 1);
    assert.deepEqual((await status()).families.map((f) => [f.family, f.serving]), [['echo', true], ['missing', false], ['late', true]]);

    // SIGHUP: 'missing' and 'late' leave, 'again' joins.
    const told = heard();
    const yaml = readFileSync(host.config.file, 'utf8').split('\n');
    const at = yaml.findIndex((line) => line.startsWith('upstreams:'));
    // 'echo' names the plugin's family: refused, and /status says so.
    yaml[at] = `upstreams: ${JSON.stringify([{ name: 'again', command: [NODE, CHANGING, 'modern'] }, { name: 'echo', command: [NODE, CHANGING, 'modern'] }])}`;
    writeFileSync(host.config.file, yaml.join('\n'));
    host.child.kill('SIGHUP');
    const listed = async () => names((await host.modern('tools/list')).result.tools);
    await eventually('again listed, late gone', async () => {
      const now = await listed();
      return now.includes('again_grow') && !now.includes('late_grow');
    });
    await eventually('the agent told of the re-read', () => heard() > told);
    const gone = await host.modern('tools/call', { name: 'late_streams', arguments: {} });
    assert.equal(gone.error.code, -32602);
    assert.equal(gone.error.data, undefined);
    const reread = await status();
    assert.deepEqual(reread.families.map((f) => [f.family, f.serving]), [['echo', true], ['again', true]]);
    assert.deepEqual(reread.not_loaded.map((f) => f.what), ["upstream 'echo'"]);
    assert.match(reread.not_loaded[0].why, /family 'echo' is already served by .*echo\.so/);
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    assert.match(metrics, /^gatehouse_plugin_load_failures_total 1$/m);
    assert.deepEqual((await host.modern('tools/call', { name: 'again_grow', arguments: {} })).result.content[0].text, 'grown');
    assert.equal((await host.modern('tools/call', { name: 'echo', arguments: { text: 'still' } })).result.structuredContent.text, 'still');
    const prompts = async () => (await host.modern('prompts/list')).result?.prompts.map((p) => p.name);
    await eventually('again\'s prompt listed', async () => (await prompts())?.includes('again_greeting'));

    // With no upstream left, the methods only upstreams offer are gone; they
    // come back with the first upstream a re-read adds.
    const rereadWith = (upstreams) => {
      yaml[at] = `upstreams: ${JSON.stringify(upstreams)}`;
      writeFileSync(host.config.file, yaml.join('\n'));
      host.child.kill('SIGHUP');
    };
    rereadWith([]);
    await eventually('again gone', async () => !(await listed()).includes('again_grow'));
    // The refused entry is no longer configured: nothing is reported as not loaded.
    assert.deepEqual((await status()).not_loaded, []);
    assert.equal((await host.modern('prompts/list')).error?.code, -32601);
    rereadWith([{ name: 'back', command: [NODE, CHANGING, 'modern'] }]);
    await eventually('back\'s prompt listed', async () => (await prompts())?.includes('back_greeting'));
    const got = await host.modern('prompts/get', { name: 'back_greeting' });
    assert.equal(got.result?.messages[0].content.text, 'hello', JSON.stringify(got));
  });
});

test('a tool\'s own exposure holds for an upstream whose tools are listed only after the start', async () => {
  const marker = (dir) => path.join(dir, 'may-start');
  await withHost({
    plugins: ['echo.so'],
    sections: {
      upstreams: (dir) => [{ name: 'late', command: ['/bin/sh', '-c', `test -e '${marker(dir)}' && exec '${NODE}' '${CHANGING}' modern`] }],
      domains: { late: { tools: { streams: { exposure: 'on_demand' } } } },
    },
  }, async (host) => {
    await host.stderrMatching(/upstream 'late' is not reachable yet/);
    writeFileSync(marker(host.config.dir), '');
    const listed = async () => names((await host.modern('tools/list')).result.tools);
    await eventually('late listed', async () => (await listed()).includes('late_grow'), 40000);
    // Before, the setting was resolved against the tools listed at the start (none of late's): streams was listed.
    const now = await listed();
    assert.ok(!now.includes('late_streams'), `on demand, as its domain says: ${now}`);
    assert.ok(now.includes('describe_tool'), 'the host tools that reveal it are listed');
  });
});

test('one gatehouse mounts another: server/discover finds 2026-07-28, and the inner families serve through the outer gate', async () => {
  const inner = writeConfig({ plugins: ['echo.so', 'conformance.so'] });
  try {
    await withHost(
      {
        plugins: [],
        sections: {
          upstreams: [{
            name: 'inner',
            command: [binaryPath(), 'serve', '--config', inner.file],
            env: { ASAN_OPTIONS: process.env.ASAN_OPTIONS ?? '', GATEHOUSE_LOG: 'warn' },
          }],
        },
      },
      async (host) => {
        await host.stderrMatching(/family 'inner' loaded: gatehouse .*an upstream speaking 2026-07-28/, 30000);
        const answer = await host.modern('tools/call', { name: 'inner_echo', arguments: { text: 'nested' } });
        assert.deepEqual(answer.result.structuredContent, { text: 'nested' });
        const failing = await host.modern('tools/call', { name: 'inner_fail', arguments: {} });
        assert.equal(failing.result.isError, true);

        // The inner host asks by InputRequiredResult: passed on, its requestState inside the outer's.
        const answers = {
          'elicitation/create': { action: 'accept', content: { name: 'Ann' } },
          'sampling/createMessage': AGENT_ANSWERS['sampling/createMessage'],
          'roots/list': AGENT_ANSWERS['roots/list'],
        };
        const three = await rounds(host, 'inner_test_input_required_result_multiple_inputs', {}, ALL_INPUTS, answers);
        assert.equal(three.answer.result?.isError, undefined, JSON.stringify(three.answer));
        assert.match(three.answer.result.content[0].text, /words from the agent's model.*Ann.*file:\/\/\/srv\/agent-root/);
        assert.deepEqual(three.asked.map((r) => r.method).sort(), ['elicitation/create', 'roots/list', 'sampling/createMessage']);
        const confirm = { action: 'accept', content: { ok: true } };
        const stated = await rounds(host, 'inner_test_input_required_result_request_state', {}, ALL_INPUTS, { 'elicitation/create': confirm });
        assert.match(stated.answer.result.content[0].text, /^state-ok/, JSON.stringify(stated.answer));

        // A 2025-11-25 agent is asked by requests of the outer host's, and the inner one finishes.
        const seen = [];
        await withRealClient(
          () => {
            const client = new ClientV1({ name: 'itest-nested-v1', version: '1.0.0' }, { capabilities: ALL_INPUTS });
            client.setRequestHandler(ElicitRequestSchema, async (r) => (seen.push(r), answers['elicitation/create']));
            client.setRequestHandler(CreateMessageRequestSchema, async (r) => (seen.push(r), answers['sampling/createMessage']));
            client.setRequestHandler(ListRootsRequestSchema, async (r) => (seen.push(r), answers['roots/list']));
            return client;
          },
          (p) => new StdioV1(p),
          host.config.file,
          async (client) => {
            const done = await client.callTool({ name: 'inner_test_input_required_result_multiple_inputs', arguments: {} });
            assert.equal(done.isError ?? false, false, JSON.stringify(done));
            assert.match(done.content[0].text, /words from the agent's model.*Ann.*file:\/\/\/srv\/agent-root/);
          },
        );
        assert.deepEqual(seen.map((r) => r.method).sort(), ['elicitation/create', 'roots/list', 'sampling/createMessage']);
      },
    );
  } finally {
    rmSync(inner.dir, { recursive: true, force: true });
  }
});

// server-everything's Streamable HTTP mode, resolved once it listens. (It
// says "listening on port" before its bind fails, and "already in use" just
// after.)
function startEverythingOverHttp() {
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  return onFreePort(async (port) => {
    const server = spawn(NODE, [EVERYTHING, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
    const started = { server, port, log: '' };
    server.stdout.on('data', (chunk) => (started.log += chunk));
    server.stderr.on('data', (chunk) => (started.log += chunk));
    for (let i = 0; i < 200 && !/listening on port/.test(started.log) && server.exitCode === null; i++) await sleep(50);
    await sleep(300);
    const taken = /already in use/.test(started.log);
    if (/listening on port/.test(started.log) && !taken && server.exitCode === null) return started;
    server.kill('SIGKILL');
    const message = `server-everything did not listen:\n${started.log.slice(-2000)}`;
    if (taken) throw new PortTaken(message);
    assert.fail(message);
  });
}

test('server-everything over Streamable HTTP: its session kept, its SSE answers and progress read, the host\'s own token sent', async () => {
  const everything = await startEverythingOverHttp();
  const { server, port } = everything;
  try {
    await withHost(
      {
        plugins: ['echo.so'],
        env: { EVERYTHING_TOKEN: 'host-own-secret' },
        sections: { upstreams: [{ name: 'everything', url: `http://127.0.0.1:${port}/mcp`, token_env: 'EVERYTHING_TOKEN' }] },
      },
      async (host) => {
        await host.stderrMatching(/family 'everything' loaded: .*an upstream speaking 2025-11-25/, 30000);
        const call = async (name, args, meta) => (await host.modern('tools/call', { name, arguments: args }, meta)).result;
        assert.match((await call('everything_echo', { message: 'over http' })).content[0].text, /over http/);
        const structured = await call('everything_get-structured-content', { location: 'Chicago' });
        assert.equal(typeof structured.structuredContent.temperature, 'number', JSON.stringify(structured));
        const from = host.messages.length;
        const long = await call('everything_trigger-long-running-operation', { duration: 1, steps: 3 }, { progressToken: 'h-1' });
        assert.equal(long.isError, undefined, JSON.stringify(long));
        assert.ok(host.notifications('notifications/progress', from).length >= 2, 'progress arrived over SSE');
        assert.match(everything.log, /Session initialized with ID/);
        assert.ok(!host.stderr.includes('host-own-secret'), 'the token is never logged');
      },
    );
  } finally {
    server.kill('SIGKILL');
  }
});

test('one gatehouse mounts another over Streamable HTTP in 2026-07-28, with the revision\'s headers', async () => {
  const inner = await HttpHost.start({ plugins: ['echo.so', 'headers.so'] });
  try {
    await withHost({ plugins: [], sections: { upstreams: [{ name: 'inner', url: inner.url }] } }, async (host) => {
      await host.stderrMatching(/family 'inner' loaded: gatehouse .*an upstream speaking 2026-07-28/, 30000);
      const answer = await host.modern('tools/call', { name: 'inner_echo', arguments: { text: 'across http' } });
      assert.deepEqual(answer.result.structuredContent, { text: 'across http' });
      // The inner host refuses a call whose x-mcp-header arguments do not
      // travel as Mcp-Param-* headers too: text a header cannot hold goes in Base64.
      const args = { region: 'zürich east', count: 3, dry_run: true, target: { zone: 'b' }, query: 'q' };
      const routed = await host.modern('tools/call', { name: 'inner_route', arguments: args });
      assert.deepEqual(routed.result?.structuredContent, args, JSON.stringify(routed));
      const fewer = await host.modern('tools/call', { name: 'inner_route', arguments: { query: 'only' } });
      assert.deepEqual(fewer.result?.structuredContent, { query: 'only' }, JSON.stringify(fewer));
      // Text that looks like the Base64 wrapper is wrapped itself: sent as
      // it is, the inner host would read "tenant-a" and refuse the mismatch.
      const lookalike = { region: '=?base64?dGVuYW50LWE=?=', query: 'q' };
      const literal = await host.modern('tools/call', { name: 'inner_route', arguments: lookalike });
      assert.deepEqual(literal.result?.structuredContent, lookalike, JSON.stringify(literal));
    });
  } finally {
    await inner.stop();
  }
});

test('over HTTP the host sends its own token from its file and the session id it was given, answers read as plain JSON', async () => {
  const upstream = await startScriptedUpstream({ name: 'plain', sessionId: 's-42' });
  const { seen } = upstream;
  try {
    await withHost(
      {
        plugins: [],
        sections: {
          upstreams: (dir) => {
            const tokenFile = path.join(dir, 'plain.token');
            writeFileSync(tokenFile, 'file-token-7\n');
            return [{ name: 'plain', url: upstream.url, token_file: tokenFile }];
          },
        },
      },
      async (host) => {
        await host.stderrMatching(/family 'plain' loaded: plain 1/, 30000);
        const answer = await host.modern('tools/call', { name: 'plain_hello', arguments: {} });
        assert.equal(answer.result.content[0].text, 'hello back');
        assert.ok(seen.length >= 4, JSON.stringify(seen));
        assert.ok(seen.every((r) => r.authorization === 'Bearer file-token-7'), JSON.stringify(seen));
        const call = seen.at(-1);
        assert.equal(call.session, 's-42', 'the session id of initialize rides on later requests');
        assert.ok(!host.stderr.includes('file-token-7'), 'the token is never logged');
      },
    );
    assert.equal(seen.at(-1).method, 'DELETE', 'the session is deleted when the host stops');
  } finally {
    upstream.close();
  }
});

test('an HTTP upstream that holds the DELETE of its session open does not hold the host: SIGTERM stops it within seconds', async () => {
  const held = [];
  const upstream = await startScriptedUpstream({ name: 'holding', onDelete: (_, req, res) => held.push(res) }); // never answered
  try {
    await withHost({ plugins: [], sections: { upstreams: [{ name: 'holding', url: upstream.url }] } },
      async (host) => {
        await host.stderrMatching(/family 'holding' loaded: holding 1/, 30000);
        assert.equal((await host.modern('tools/call', { name: 'holding_hello', arguments: {} })).result.content[0].text, 'hello back');
        const sent = Date.now();
        host.child.kill('SIGTERM');
        const { code } = await host.exit;
        assert.equal(code, 0);
        assert.ok(held.length >= 1, 'the host asked to delete its session');
        assert.ok(Date.now() - sent < 10000, `the host took ${Date.now() - sent} ms to stop`);
      });
  } finally {
    upstream.close();
  }
});

test('an HTTP upstream that floods requests and never takes the answers gets at most 64 answers at once, not a thread and a socket each', async () => {
  const pongs = [];
  const upstream = await startScriptedUpstream({
    name: 'flooding',
    tools: [{ name: 'flood', inputSchema: { type: 'object' } }],
    onNotification: (message, req, res) => message.method === undefined && pongs.push(res), // an answer: held, never taken
    onCall: (message, req, res) => {
      if (message.method !== 'tools/call') return false;
      // The call's answer stream: 500 pings, then the result.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < 500; i++) res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: `ping-${i}`, method: 'ping' })}\n\n`);
      res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: 'flooded' }] } })}\n\n`);
      return true;
    },
  });
  try {
    await withHost({ plugins: [], sections: { upstreams: [{ name: 'flooding', url: upstream.url }] } },
      async (host) => {
        await host.stderrMatching(/family 'flooding' loaded: flooding 1/, 30000);
        assert.equal((await host.modern('tools/call', { name: 'flooding_flood', arguments: {} })).result.content[0].text, 'flooded');
        await host.stderrMatching(/\[flooding\] sends requests faster than it takes their answers; with 64 answers waiting, the next are dropped/);
        await sleep(500);
        assert.ok(pongs.length <= 64, `${pongs.length} answers were posted at once`);
        assert.ok(pongs.length >= 1);
      });
  } finally {
    upstream.close();
  }
});

test('an HTTP upstream that keeps an answer stream coming holds no socket past the call: not after the host gives the call up, not after the answer, not for a notification', async () => {
  const opened = {}; // tool name -> when the host's socket for its call closed (ms since the call was sent)
  let sent = 0;
  const trickle = (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const timer = setInterval(() => res.write(': still here\n\n'), 100);
    res.on('close', () => clearInterval(timer));
  };
  const upstream = await startScriptedUpstream({
    name: 'trickling',
    tools: [{ name: 'never', inputSchema: { type: 'object' } }, { name: 'after', inputSchema: { type: 'object' } }],
    onCall: (message, req, res) => {
      const tool = message.params?.name;
      if (message.method !== 'tools/call') return false;
      req.socket.once('close', () => (opened[tool] = Date.now() - sent));
      trickle(res);
      if (tool === 'after')
        res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: 'answered' }] } })}\n\n`);
      return true;
    },
    // notifications/cancelled, answered with a stream that never ends
    onNotification: (message, req, res) => {
      if (message.method !== 'notifications/cancelled') return false;
      req.socket.once('close', () => (opened.cancelled = Date.now() - sent));
      trickle(res);
      return true;
    },
  });
  try {
    await withHost({
      plugins: [],
      sections: { upstreams: [{ name: 'trickling', url: upstream.url, tool_timeout_ms: 1000, connect_timeout_ms: 2000 }] },
    }, async (host) => {
      await host.stderrMatching(/family 'trickling' loaded: trickling 1/, 30000);
      sent = Date.now();
      const answer = await host.modern('tools/call', { name: 'trickling_after', arguments: {} });
      assert.equal(answer.result.content[0].text, 'answered');
      await eventually('the stream after the answer to be read no longer', () => opened.after !== undefined, 5000);
      assert.ok(opened.after < 3000, `the host read the stream on for ${opened.after} ms after the answer`);
      await host.stderrMatching(/\[trickling\] kept an answer stream open past its answer; the host stopped reading it/);

      sent = Date.now();
      const refused = await host.modern('tools/call', { name: 'trickling_never', arguments: {} });
      assert.equal(refused.result?.structuredContent?.code, 'TOOL_TIMEOUT', JSON.stringify(refused));
      assert.match(refused.result.content[0].text, /tool_timeout_ms of its upstreams entry/);
      await eventually('the given-up call\'s stream to be read no longer', () => opened.never !== undefined, 5000);
      assert.ok(opened.never < 4000, `the host held the given-up call's socket for ${opened.never} ms`);
      // The connection stays up: the next call is served on it, with no new session made.
      assert.equal((await host.modern('tools/call', { name: 'trickling_after', arguments: {} })).result.content[0].text, 'answered');
      assert.equal(upstream.seen.filter((r) => r.rpc === 'initialize').length, 1, 'one session, never made again');
      assert.doesNotMatch(host.stderr, /could not be reached/);
      // Its notifications/cancelled, answered by a stream that never ends, is read for connect_timeout_ms at most.
      await eventually('the answer to notifications/cancelled to be read no longer', () => opened.cancelled !== undefined, 8000);
      assert.ok(opened.cancelled < 6000, `the host read the answer to its notification for ${opened.cancelled} ms`);
      await host.stderrMatching(/\[trickling\] answered a message of the host's for over 2000 ms; the host stopped reading it/);
    });
  } finally {
    upstream.close();
  }
});

test('an upstream removed by SIGHUP while its server holds a re-listing unanswered leaves at once: the re-read goes on to the next upstream', async () => {
  let listings = 0;
  const slow = await startScriptedUpstream({
    name: 'slowlist',
    // Its own stream says the tools changed; the listing that follows is never answered.
    onGet: (_, req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      setTimeout(() => res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })}\n\n`), 200);
      return true;
    },
    onCall: (message) => message.method === 'tools/list' && ++listings > 1, // held from the second on
  });
  const quick = await startScriptedUpstream({ name: 'quick' });
  try {
    await withHost({ plugins: [], sections: { upstreams: [{ name: 'slowlist', url: slow.url, connect_timeout_ms: 30000 }] } },
      async (host) => {
        await host.stderrMatching(/family 'slowlist' loaded: slowlist 1/, 30000);
        await eventually('the re-listing asked for', () => listings >= 2);
        const yaml = readFileSync(host.config.file, 'utf8').replace(/\nupstreams: .*\n?/, '\n');
        writeFileSync(host.config.file, `${yaml}\nupstreams: ${JSON.stringify([{ name: 'quick', url: quick.url }])}\n`);
        const sent = Date.now();
        host.child.kill('SIGHUP');
        await host.stderrMatching(/upstream 'quick' joins \(1 tool\(s\)\)/, 20000);
        assert.ok(Date.now() - sent < 8000, `the re-read took ${Date.now() - sent} ms past a listing held open`);
        assert.match(host.stderr, /upstream 'slowlist' is no longer configured: it leaves/);
        assert.doesNotMatch(host.stderr, /'slowlist' said its lists changed, but did not list them/);
      });
  } finally {
    slow.close();
    quick.close();
  }
});

test('a SIGHUP while the host is still starting is not lost: the re-read runs once it serves', async () => {
  // Its server/discover is answered (as unknown) only after 2 s: the host's start waits that long for it.
  let discovering = 0;
  const slow = await startScriptedUpstream({
    name: 'slowstart',
    onCall: (message, req, res) => {
      if (message.method !== 'server/discover') return false;
      discovering++;
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'no' } })), 2000);
      return true;
    },
  });
  const quick = await startScriptedUpstream({ name: 'quick' });
  try {
    await withHost({ plugins: ['echo.so'], sections: { upstreams: [{ name: 'slowstart', url: slow.url, connect_timeout_ms: 10000 }] } }, async (host) => {
      // The host is loading its families, its stop and reload signals already its own.
      await eventually('the start asking the slow upstream', () => discovering >= 1, 20000);
      assert.doesNotMatch(host.stderr, /serving MCP over stdio/, 'still starting');
      const yaml = readFileSync(host.config.file, 'utf8').replace(/\nupstreams: .*\n?/, '\n');
      writeFileSync(host.config.file, `${yaml}\nupstreams: ${JSON.stringify([{ name: 'slowstart', url: slow.url, connect_timeout_ms: 10000 }, { name: 'quick', url: quick.url }])}\n`);
      host.child.kill('SIGHUP');
      await host.stderrMatching(/the host is still starting: the configuration is re-read once it serves/, 10000);
      await host.stderrMatching(/upstream 'quick' joins \(1 tool\(s\)\)/, 20000);
      assert.ok(host.stderr.indexOf('serving MCP over stdio') < host.stderr.lastIndexOf("upstream 'quick' joins"));
      const tools = (await host.modern('tools/list')).result.tools.map((t) => t.name);
      assert.ok(tools.includes('quick_hello'), String(tools));
    });
  } finally {
    slow.close();
    quick.close();
  }
});

// A host serving over stdio whose SIGHUP re-read waits on an added upstream
// that never answers; `stop` stops it, and it must stop at once: the
// re-read is abandoned, not waited out.
async function stopsWhileReReadWaits(stop) {
  await withHost({ plugins: ['echo.so'] }, async (host) => {
    await host.stderrMatching(/serving MCP over stdio/);
    const yaml = readFileSync(host.config.file, 'utf8');
    // Started, then silent: its server/discover is never answered within the 30 s it is given.
    const silent = { name: 'silent', command: ['/bin/sh', '-c', 'exec sleep 60'], connect_timeout_ms: 30000 };
    writeFileSync(host.config.file, `${yaml}\nupstreams: ${JSON.stringify([silent])}\n`);
    host.child.kill('SIGHUP');
    await host.stderrMatching(/SIGHUP received/);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const sent = Date.now();
    stop(host);
    const { code } = await host.exit;
    assert.equal(code, 0);
    assert.ok(Date.now() - sent < 8000, `the host took ${Date.now() - sent} ms to stop`);
    assert.match(host.stderr, /upstream 'silent' .*is not served: the host is stopping/);
  });
}

test('SIGTERM while a SIGHUP re-read waits on an added upstream that never answers: the host stops at once', () =>
  stopsWhileReReadWaits((host) => host.child.kill('SIGTERM')));

// Over stdio alone, stdin's end is a stop as a signal is.
test('stdin closing while a SIGHUP re-read waits on an added upstream that never answers: the host stops at once', () =>
  stopsWhileReReadWaits((host) => host.child.stdin.end()));

test('SIGHUP lists upstreams under the gate the host started with: a session section taken out waits for the restart, as the log says', async () => {
  const talk = await startScriptedUpstream({
    name: 'talk',
    tools: [{ name: 'hello', inputSchema: { type: 'object' } }, { name: 'bye', inputSchema: { type: 'object' } }],
  });
  try {
    await withHost(
      {
        gate: true,
        plugins: [path.resolve(path.dirname(binaryPath()), '../lib/gatehouse/plugins/session.so')],
        sections: {
          session: { backend: 'memory', pinned: { store: 'shop', user: 'ann' } },
          upstreams: [{ name: 'talk', url: talk.url }],
        },
      },
      async (host) => {
        const listed = async () => (await host.modern('tools/list')).result.tools.filter((t) => t.name.startsWith('talk_'));
        const before = await listed();
        assert.deepEqual(before.map((t) => t.name).sort(), ['talk_bye', 'talk_hello']);
        assert.ok(before.find((t) => t.name === 'talk_hello').inputSchema.required.includes('session'));
        // The edit: no session section, and the upstream without its tool bye.
        const yaml = readFileSync(host.config.file, 'utf8').replace(/\nsession: .*\n?/, '\n').replace(/\nupstreams: .*\n?/, '\n');
        assert.doesNotMatch(yaml, /session:/);
        writeFileSync(host.config.file, `${yaml}\nupstreams: ${JSON.stringify([{ name: 'talk', url: talk.url, deny: ['bye'] }])}\n`);
        host.child.kill('SIGHUP');
        await host.stderrMatching(/what changed in session takes effect only when the host restarts/);
        await host.stderrMatching(/upstream 'talk' joins \(1 tool\(s\)\)/, 20000);
        const after = await listed();
        assert.deepEqual(after.map((t) => t.name), ['talk_hello'], 'the upstream as re-read');
        // The gate still asks for a session, so the tool still takes one.
        assert.ok(after[0].inputSchema.required?.includes('session'), JSON.stringify(after[0].inputSchema));
        const refused = (await host.modern('tools/call', { name: 'talk_hello', arguments: {} })).result;
        assert.equal(refused.structuredContent.code, 'NOT_CONNECTED');
      },
    );
  } finally {
    talk.close();
  }
});

test('over HTTP with oauth: the host finds the authorization server (also where only a 401 says), gets its own token by client credentials, renews it before it expires and when refused, and asks for more scope when a 403 wants it', async () => {
  const { startOAuthUpstream } = await import('../fixtures/upstream/oauth_upstream.mjs');
  const secret = 'client-secret-9f3';
  // Tokens live 4 s: the host renews one at 90 % of its life (client_credentials.cpp:
  // kRenewAhead, at most a tenth of it), 3.6 s after it got it. tok-1 must
  // still be the token of the first call, after the host's start, and tok-2
  // that of the third, 1.1 s after it was issued: 3.6 s leave room for a
  // loaded machine in both, where 2 s (renewal at 1.8 s) did not.
  const upstream = await startOAuthUpstream({ clientId: 'gatehouse', clientSecret: secret, lifetimeS: 4 });
  const hidden = await startOAuthUpstream({ clientId: 'gatehouse', clientSecret: secret, hiddenMetadata: true });
  try {
    await withHost(
      {
        plugins: [],
        sections: {
          upstreams: (dir) => {
            const secretFile = path.join(dir, 'reports.secret');
            writeFileSync(secretFile, `${secret}\n`);
            const wrongFile = path.join(dir, 'wrong.secret');
            writeFileSync(wrongFile, 'not-the-secret\n');
            return [
              { name: 'reports', url: upstream.url, oauth: { client_id: 'gatehouse', client_secret_file: secretFile, scope: 'reports:read' } },
              { name: 'denied', url: upstream.url, oauth: { client_id: 'gatehouse', client_secret_file: wrongFile } },
              { name: 'hidden', url: hidden.url, oauth: { client_id: 'gatehouse', client_secret_file: secretFile } },
            ];
          },
        },
      },
      async (host) => {
        await host.stderrMatching(/family 'reports' loaded: reports 2/, 30000);
        await host.stderrMatching(/upstream 'denied'.*its token endpoint http:\/\/127\.0\.0\.1:\d+\/as\/token answered HTTP 401: invalid_client \(client authentication failed\)/, 30000);
        const whoami = async () => (await host.modern('tools/call', { name: 'reports_whoami', arguments: {} })).result;
        const first = await whoami();
        assert.equal(first.content[0].text, 'tok-1', JSON.stringify(first));
        const asked = upstream.state.tokenRequests.find((r) => r.id === 'gatehouse' && r.form.scope);
        assert.deepEqual(asked.form, { grant_type: 'client_credentials', scope: 'reports:read', resource: upstream.url });
        assert.equal(asked.contentType, 'application/x-www-form-urlencoded');

        // Renewed shortly before it expires, not at the server's refusal: tok-1
        // was issued before the first call's answer, so 3.7 s after that
        // answer are past its renewal (3.6 s after its issue, 0.4 s before
        // its end): the call goes with tok-2, none with an expired token.
        await new Promise((resolve) => setTimeout(resolve, 3700));
        assert.equal((await whoami()).content[0].text, 'tok-2');
        assert.equal(upstream.state.refused, 0, 'no request went out with an expired token');

        // Refused (the server rotated its keys): a new token, and the call sent
        // again once. tok-2 is older than 1 s by then (a younger token refused
        // is not replaced, kYoungToken) and short of its renewal at 3.6 s.
        await new Promise((resolve) => setTimeout(resolve, 1100));
        upstream.revoke();
        assert.equal((await whoami()).content[0].text, 'tok-3');
        assert.equal(upstream.state.refused, 1);

        // 403 insufficient_scope naming a scope: a token for it as well, and the call sent again once.
        const admin = (await host.modern('tools/call', { name: 'reports_admin', arguments: {} })).result;
        assert.equal(admin.content?.[0].text, 'tok-4', JSON.stringify(admin));
        assert.equal(upstream.state.tokenRequests.at(-1).form.scope, 'reports:read reports:admin');

        // Its metadata where only the 401's WWW-Authenticate says: asked without a token first, then there.
        await host.stderrMatching(/family 'hidden' loaded: reports 2/, 30000);
        assert.equal((await host.modern('tools/call', { name: 'hidden_whoami', arguments: {} })).result.content[0].text, 'tok-1');
        assert.ok(hidden.state.metadataRequests.includes('/meta/reports'), JSON.stringify(hidden.state.metadataRequests));
        assert.equal(hidden.state.mcpRequests[0].token, '', 'the first request went without a token');

        for (const text of [secret, 'tok-1', 'tok-2', 'tok-3', 'tok-4'])
          assert.ok(!host.stderr.includes(text), `${text} is never logged`);
      },
    );
  } finally {
    await upstream.close();
    await hidden.close();
  }
});

test('over HTTP with oauth: the client secret goes to no authorization server a hostile upstream names on another origin, unless the operator lists it, and with a list to none but those listed; metadata for another resource is refused', async () => {
  const { startOAuthUpstream } = await import('../fixtures/upstream/oauth_upstream.mjs');
  const secret = 'client-secret-5c1';
  // The authorization server a hostile upstream names as its own: it records every token request.
  const elsewhere = await startOAuthUpstream({ clientId: 'gatehouse', clientSecret: secret });
  const naming = await startOAuthUpstream({ clientId: 'gatehouse', clientSecret: secret, authorizationServer: elsewhere.issuer });
  const misnamed = await startOAuthUpstream({ clientId: 'gatehouse', clientSecret: secret, resource: 'http://203.0.113.9/mcp' });
  // Names the authorization server on its own origin, which the operator's list leaves out.
  const unlisted = await startOAuthUpstream({ clientId: 'gatehouse', clientSecret: secret });
  try {
    await withHost(
      {
        plugins: [],
        sections: {
          upstreams: (dir) => {
            const secretFile = path.join(dir, 'client.secret');
            writeFileSync(secretFile, `${secret}\n`);
            const oauth = { client_id: 'gatehouse', client_secret_file: secretFile };
            return [
              { name: 'naming', url: naming.url, oauth },
              { name: 'misnamed', url: misnamed.url, oauth },
              { name: 'listed', url: naming.url, oauth: { ...oauth, client_id: 'listed-client', authorization_servers: [elsewhere.issuer] } },
              { name: 'pinned', url: unlisted.url, oauth: { ...oauth, authorization_servers: [elsewhere.issuer] } },
            ];
          },
        },
      },
      async (host) => {
        await host.stderrMatching(/upstream 'naming'.*names the authorization server http:\/\/127\.0\.0\.1:\d+\/as, not on its own origin; the host sends its client secret to no other unless listed/, 30000);
        await host.stderrMatching(/upstream 'pinned'.*names the authorization server http:\/\/127\.0\.0\.1:\d+\/as, not among oauth\.authorization_servers; with that list the host sends its client secret to no other, not even one on the upstream's own origin/, 30000);
        await host.stderrMatching(/upstream 'misnamed'.*its protected resource metadata is for http:\/\/203\.0\.113\.9\/mcp, not for http:\/\/127\.0\.0\.1:\d+\/mcp/, 30000);
        // Listed by the operator (under another client id here), the same server is asked.
        for (let i = 0; i < 100 && elsewhere.state.tokenRequests.length === 0; i++) await sleep(100);
        assert.ok(elsewhere.state.tokenRequests.length >= 1, 'the listed authorization server was asked');
        assert.ok(elsewhere.state.tokenRequests.every((r) => r.id === 'listed-client' && r.form.resource === naming.url),
          `only the family that lists it sent its credentials there: ${JSON.stringify(elsewhere.state.tokenRequests)}`);
        assert.equal(misnamed.state.tokenRequests.length, 0, 'nothing is asked on metadata for another resource');
        assert.equal(naming.state.tokenRequests.length, 0);
        assert.equal(unlisted.state.tokenRequests.length, 0, 'an own-origin server left out of the list is not asked');
        assert.ok(!host.stderr.includes(secret), 'the secret is never logged');
      },
    );
  } finally {
    await Promise.all([elsewhere.close(), naming.close(), misnamed.close(), unlisted.close()]);
  }
});

test('over https with oauth: the authorization server is checked against the upstream\'s CA file, as the upstream is', async () => {
  const { startOAuthUpstream } = await import('../fixtures/upstream/oauth_upstream.mjs');
  const certs = makeCertificates(mkdtempSync(path.join(tmpdir(), 'gatehouse-oauth-https-')));
  const secret = 'client-secret-tls';
  const upstream = await startOAuthUpstream({
    clientId: 'gatehouse', clientSecret: secret, tls: { key: readFileSync(certs.key), cert: readFileSync(certs.cert) },
  });
  try {
    await withHost(
      {
        plugins: [],
        sections: {
          upstreams: (dir) => {
            const secretFile = path.join(dir, 'tls.secret');
            writeFileSync(secretFile, `${secret}\n`);
            return [
              { name: 'private', url: upstream.url, tls: { ca_file: certs.ca }, oauth: { client_id: 'gatehouse', client_secret_file: secretFile } },
              // The upstream reached without its CA file: neither it nor its authorization server is trusted.
              { name: 'public', url: upstream.url, oauth: { client_id: 'gatehouse', client_secret_file: secretFile }, connect_timeout_ms: 2000 },
            ];
          },
        },
      },
      async (host) => {
        await host.stderrMatching(/family 'private' loaded: reports 2/, 30000);
        const whoami = (await host.modern('tools/call', { name: 'private_whoami', arguments: {} })).result;
        assert.equal(whoami.content?.[0].text, 'tok-1', JSON.stringify(whoami));
        assert.ok(upstream.state.metadataRequests.some((url) => url.startsWith('/.well-known/oauth-authorization-server')),
          'the authorization server\'s metadata was read over https');
        assert.equal(upstream.state.tokenRequests.length, 1);
        await host.stderrMatching(/upstream 'public'.*certificate/, 30000);
        assert.equal(upstream.state.tokenRequests.length, 1, 'no token was asked for past an untrusted certificate');
        assert.ok(!host.stderr.includes(secret), 'the secret is never logged');
      },
    );
  } finally {
    await upstream.close();
    rmSync(path.dirname(certs.ca), { recursive: true, force: true });
  }
});

test('notifications outside a request are heard: a 2026-07-28 upstream\'s subscriptions/listen and a 2025-11-25 upstream\'s GET stream over https, each opened again when it ends', async () => {
  const { startChangingHttpServer } = await import('../fixtures/upstream/changing_server.mjs');
  const certs = makeCertificates(mkdtempSync(path.join(tmpdir(), 'gatehouse-https-')));
  const web = await startChangingHttpServer({ tls: { key: readFileSync(certs.key), cert: readFileSync(certs.cert) } });
  try {
    await withHost(
      {
        plugins: [],
        sections: {
          upstreams: [
            { name: 'modern', command: [NODE, CHANGING, 'modern'] },
            { name: 'web', url: web.url, tls: { ca_file: certs.ca } },
            // The same server, checked against a CA that does not vouch for it.
            { name: 'untrusted', url: web.url, tls: { ca_file: certs.otherCa }, connect_timeout_ms: 2000 },
          ],
        },
      },
      async (host) => {
        await host.stderrMatching(/family 'modern' loaded: changing 1/, 30000);
        await host.stderrMatching(/family 'web' loaded: changing 1/, 30000);
        await host.stderrMatching(/upstream 'untrusted' is not reachable yet: .*certificate not trusted/, 30000);
        const call = async (name) => (await host.modern('tools/call', { name, arguments: {} })).result;
        const listens = async () => (await call('modern_streams')).structuredContent.streams;

        // 2026-07-28: one subscription, asking for what the server can change.
        assert.deepEqual(await eventually('the listen', async () => ((await listens()).length ? listens() : null)), [
          { toolsListChanged: true },
        ]);
        // The agent listens to the host; the tool the server adds joins the
        // registry, and the agent hears that the list changed.
        host.send({ jsonrpc: '2.0', id: 'agent-listen', method: 'subscriptions/listen', params: { _meta: modernMeta(), notifications: { toolsListChanged: true } } });
        await host.waitFor((m) => m.method === 'notifications/subscriptions/acknowledged');
        const heard = () => host.notifications('notifications/tools/list_changed').length;
        const before = heard();
        await call('modern_grow');
        await eventually('modern_extra served', async () => (await call('modern_extra'))?.content?.[0]?.text === 'extra here');
        await eventually('the agent told', () => heard() > before);
        const listed = (await host.modern('tools/list')).result.tools.map((t) => t.name);
        assert.ok(listed.includes('modern_extra'), listed.join(', '));
        // A subscription the server ends is opened again.
        await call('modern_end_stream');
        assert.equal((await eventually('a second listen', async () => ((await listens()).length >= 2 ? listens() : null))).length, 2);

        // 2025-11-25 over HTTP: the session's GET stream carries the change.
        await eventually('the GET stream', () => web.gets.length >= 1);
        assert.equal(web.gets[0], null, 'the first GET has no Last-Event-ID');
        await call('web_grow');
        await eventually('web_extra served', async () => (await call('web_extra'))?.content?.[0]?.text === 'extra here');
        // Calls one after another share a kept-alive connection (and its TLS session).
        const connected = web.connections();
        for (let i = 0; i < 8; i++) assert.ok((await call('web_streams')).structuredContent);
        assert.ok(web.connections() - connected <= 1, `${web.connections() - connected} new connections for 8 calls`);
        // One the server closed while it was idle breaks nothing: the call takes another, or connects anew.
        web.keepAlive(100);
        await call('web_streams');
        await new Promise((resolve) => setTimeout(resolve, 400));
        web.keepAlive(5000);
        assert.ok((await call('web_streams')).structuredContent);
        // One cut as the request arrives, unanswered: sent again, once, on a new connection.
        web.dropNext();
        const resent = await call('web_streams');
        assert.ok(Array.isArray(resent.structuredContent?.streams), JSON.stringify(resent));
        assert.doesNotMatch(host.stderr, /upstream 'web' .*stopped serving/);
        // Cut: opened again from the last event the host saw.
        await call('web_end_stream');
        await eventually('a second GET', () => web.gets.length >= 2);
        assert.equal(web.gets[1], 'ev-1');
        assert.doesNotMatch(host.stderr, /not a JSON-RPC message/);
      },
    );
  } finally {
    await web.close();
    rmSync(path.dirname(certs.ca), { recursive: true, force: true });
  }
});

// The opening of an inline stdio server that counts its starts in DIR:
// \`starts\` is 1 the first time the host starts it, 2 the next, and so on.
function countedStart(dir) {
  return `import readline from 'node:readline';
import { readFileSync, writeFileSync } from 'node:fs';
const counter = ${JSON.stringify(path.join(dir, 'starts'))};
let starts = 0;
try { starts = Number(readFileSync(counter, 'utf8')); } catch {}
writeFileSync(counter, String(++starts));`;
}

// The rest of an inline stdio server (its script imports readline): reads
// one message a line and answers each request by CASES, clauses of a switch
// on m.method that may call reply(result) and send(message); a method no
// clause takes is refused.
function answering(cases) {
  return `const send = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined || m.method === undefined) return;
  const reply = (result) => send({ jsonrpc: '2.0', id: m.id, result });
  switch (m.method) {
${cases}
    default: return send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no' } });
  }
});`;
}

// A server that serves once, ends soon after, and cannot be started again:
// the attempts after the quick end wait 100, 200, 400 ms…, each wait double
// the one before (the quick end's own wait counted), none skipped.
test('attempts after a quick end wait twice as long each time, none skipped', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gh-fading-'));
  const script = path.join(dir, 'fading_server.mjs');
  writeFileSync(script, `
${countedStart(dir)}
if (starts > 1) process.exit(5); // every later start fails before it answers
${answering(`
    case 'initialize':
      return reply({ protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'fading', version: '1' } });
    case 'tools/list':
      reply({ tools: [{ name: 'a', inputSchema: { type: 'object' } }] });
      setTimeout(() => process.exit(3), 300);
      return;`)}
`);
  try {
    await withHost({ plugins: ['echo.so'], sections: { upstreams: [{ name: 'fading', command: [NODE, script] }] } }, async (host) => {
      await host.stderrMatching(/upstream 'fading' \(.*\) stopped serving: .*; connecting again in 100 ms/);
      const waits = () => [...host.stderr.matchAll(/upstream 'fading' could not be reached again: .*; next attempt in (\d+) ms/g)].map((m) => Number(m[1]));
      await eventually('three failed attempts', () => waits().length >= 3, 20000);
      assert.deepEqual(waits().slice(0, 3), [200, 400, 800]);
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// A server that answers its listings and ends soon after, every time, and
// from its second start lists a prompt, a resource and a template twice. Each
// copy is left out (a family may not declare a name twice), the rest is
// served, the host lives on, and each quick end waits longer than the last
// before the next connection, as an unreachable server's attempts do.
test('an upstream that lists a name twice after a reconnection is served without it; one that keeps ending waits longer each time', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gh-relisting-'));
  const script = path.join(dir, 'relisting_server.mjs');
  writeFileSync(script, `
${countedStart(dir)}
const twice = starts > 1;
const prompt = { name: 'p', arguments: [] };
const resource = { uri: 'relist://a', name: 'a' };
const template = { uriTemplate: 'relist://t/{x}', name: 't' };
${answering(`
    case 'initialize':
      return reply({ protocolVersion: '2025-11-25', capabilities: { tools: {}, prompts: {}, resources: {} }, serverInfo: { name: 'relisting', version: '1' } });
    case 'tools/list': return reply({ tools: [{ name: 'a', inputSchema: { type: 'object' } }] });
    case 'prompts/list':
      reply({ prompts: twice ? [prompt, { ...prompt, description: 'again' }, { name: 'q' }] : [prompt] });
      return;
    case 'resources/list': return reply({ resources: twice ? [resource, resource] : [resource] });
    case 'resources/templates/list':
      reply({ resourceTemplates: twice ? [template, template] : [template] });
      setTimeout(() => process.exit(3), starts === 1 ? 1500 : 200); // listed: end soon after
      return;`)}
`);
  try {
    await withHost({ plugins: ['echo.so'], sections: { upstreams: [{ name: 'relisting', command: [NODE, script] }] } }, async (host) => {
      await host.initialize();
      const waits = () => [...host.stderr.matchAll(/upstream 'relisting' \(.*\) stopped serving: .*; connecting again in (\d+) ms/g)].map((m) => Number(m[1]));
      await eventually('four quick ends', () => waits().length >= 4, 20000);
      await host.stderrMatching(/upstream 'relisting' lists prompt 'p' more than once; every copy is left out/);
      await host.stderrMatching(/upstream 'relisting' lists resource URI 'relist:\/\/a' more than once; every copy is left out/);
      await host.stderrMatching(/upstream 'relisting' lists resource template 'relist:\/\/t\/\{x\}' more than once; every copy is left out/);
      const [first, second, third, fourth] = waits();
      assert.ok(first < second && second < third && third < fourth, `each wait longer than the last: ${waits()}`);
      // The host, and the other family, serve on.
      const echo = await host.modern('tools/call', { name: 'echo', arguments: { text: 'alive' } });
      assert.equal(echo.result.structuredContent.text, 'alive');
      await eventually('the second listing served, without the names listed twice', async () => {
        const prompts = (await host.modern('prompts/list')).result?.prompts ?? [];
        return prompts.some((p) => p.name === 'relisting_q') && !prompts.some((p) => p.name === 'relisting_p');
      }, 20000);
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// A 2025-11-25 server may answer a request on any of its streams: here on
// its GET stream, while the POST that asked stays open with a ping now and
// then. The call gets its answer, and the POST is let go (its thread and
// socket are not kept for as long as the server keeps it open).
test('an upstream answer that comes on another stream lets the POST that asked go', async () => {
  let getStream = null;
  const posts = []; // {id, closed}
  const upstream = await startScriptedUpstream({
    name: 'elsewhere',
    tools: [{ name: 'hello', inputSchema: { type: 'object' } }],
    onGet: (message, req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      getStream = res;
      return true;
    },
    onCall: (message, req, res) => {
      if (message.method !== 'tools/call') return false;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 's-elsewhere' });
      res.flushHeaders();
      const post = { id: message.id, closed: false };
      posts.push(post);
      const ping = setInterval(() => res.write(': ping\n\n'), 200);
      res.on('close', () => {
        post.closed = true;
        clearInterval(ping);
      });
      const answer = { jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: 'by the other stream' }] } };
      const send = () => (getStream ? getStream.write(`data: ${JSON.stringify(answer)}\n\n`) : setTimeout(send, 50));
      setTimeout(send, 100);
      return true;
    },
  });
  try {
    await withHost({ plugins: [], sections: { upstreams: [{ name: 'elsewhere', url: upstream.url }] } }, async (host) => {
      await host.stderrMatching(/family 'elsewhere' loaded/, 30000);
      for (let i = 0; i < 3; i++) {
        const call = await host.modern('tools/call', { name: 'elsewhere_hello', arguments: {} });
        assert.equal(call.result?.content?.[0]?.text, 'by the other stream', JSON.stringify(call));
      }
      await eventually('every POST let go', () => posts.length === 3 && posts.every((p) => p.closed), 5000);
    });
  } finally {
    getStream?.destroy();
    upstream.close();
  }
});

// A stdio server (2025-11-25) that lists only the resources and templates
// given, and reads each as its own name: whose read answered is plain.
function resourceServer(dir, name, { resources = [], templates = [] }) {
  const script = path.join(dir, `${name}.mjs`);
  writeFileSync(script, `
import readline from 'node:readline';
${answering(`
    case 'initialize':
      return reply({ protocolVersion: '2025-11-25', capabilities: { resources: {} }, serverInfo: { name: ${JSON.stringify(name)}, version: '1' } });
    case 'resources/list': return reply({ resources: ${JSON.stringify(resources.map((uri) => ({ uri, name: uri })))} });
    case 'resources/templates/list': return reply({ resourceTemplates: ${JSON.stringify(templates.map((t) => ({ uriTemplate: t, name: t })))} });
    case 'resources/read': return reply({ contents: [{ uri: m.params.uri, text: 'answered by ' + ${JSON.stringify(name)} }] });`)}
`);
  return { name, command: [NODE, script] };
}

// resources/read goes to the first family whose resource or template
// matches the URI: a family may not list a template that could match
// another's URIs, nor a URI another's template reads, or it would read (and
// answer for) what an agent asks of that other family.
test('a family whose resource template or URI would catch another family\'s reads is refused, naming both', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gh-overlap-'));
  try {
    const catchAll = resourceServer(dir, 'catchall', { templates: ['test://{+rest}'] });
    const shadow = resourceServer(dir, 'shadow', { resources: ['test://template/5/data'] });
    const own = resourceServer(dir, 'own', { resources: ['own://a'], templates: ['own://items/{id}'] });
    const config = writeConfig({ plugins: ['conformance.so'], sections: { upstreams: [catchAll, shadow, own] } });
    const report = pluginsJson(config.file);
    rmSync(config.dir, { recursive: true, force: true });
    assert.deepEqual(report.families.map((f) => f.family).sort(), ['conformance', 'own']);
    const reason = (family) => report.failures.find((f) => f.path === `upstream '${family}'`)?.reason ?? '';
    assert.match(reason('catchall'), /resource template 'test:\/\/\{\+rest\}' may match URIs family 'conformance' serves \('test:\/\/template\/\{id\}\/data'\)/);
    assert.match(reason('shadow'), /resource URI 'test:\/\/template\/5\/data' is read by family 'conformance' through its template 'test:\/\/template\/\{id\}\/data'/);
    await withHost({ plugins: ['conformance.so'], sections: { upstreams: [catchAll, shadow, own] } }, async (host) => {
      await host.stderrMatching(/family 'own' loaded/, 30000);
      const read = await host.modern('resources/read', { uri: 'test://template/5/data' });
      assert.doesNotMatch(JSON.stringify(read), /answered by/, 'the native family reads its own URIs');
      const mine = await host.modern('resources/read', { uri: 'own://items/7' });
      assert.equal(mine.result.contents[0].text, 'answered by own');
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('what the host\'s own HTTP transport refuses (a proxy\'s 503) reaches the agent as UPSTREAM_UNAVAILABLE, not as the server\'s answer', async () => {
  const upstream = await startScriptedUpstream({
    name: 'proxied',
    tools: [{ name: 'hello', inputSchema: { type: 'object' } }, { name: 'picky', inputSchema: { type: 'object' } }],
    onCall: (message, req, res) => {
      if (message.method !== 'tools/call') return false;
      if (message.params.name === 'picky') res.writeHead(400, { 'content-type': 'text/plain' }).end('no such thing');
      else res.writeHead(503, { 'content-type': 'text/plain' }).end('upstream connect error');
      return true;
    },
  });
  try {
    await withHost({ plugins: [], sections: { upstreams: [{ name: 'proxied', url: upstream.url }] } }, async (host) => {
      await host.stderrMatching(/family 'proxied' loaded: proxied 1/, 30000);
      const refused = await host.modern('tools/call', { name: 'proxied_hello', arguments: {} });
      assert.equal(refused.result?.isError, true, JSON.stringify(refused));
      assert.equal(refused.result.structuredContent?.code, 'UPSTREAM_UNAVAILABLE', JSON.stringify(refused));
      assert.equal(refused.result.structuredContent.next?.action, 'retry');
      assert.match(refused.result.content[0].text, /HTTP 503/);
      // Any other status is the server's own answer: a tool error, no retry.
      const answered = await host.modern('tools/call', { name: 'proxied_picky', arguments: {} });
      assert.equal(answered.result?.isError, true, JSON.stringify(answered));
      assert.equal(answered.result.structuredContent?.code, undefined, JSON.stringify(answered));
      assert.match(answered.result.content[0].text, /HTTP 400: no such thing/);
    });
  } finally {
    upstream.close();
  }
});

test('a server that asks again and again what the agent\'s client cannot answer is ended after 16 refusals, not waited on for good', async () => {
  let asks = 0;
  let stream;
  const ask = () => {
    asks++;
    stream.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: `ask-${asks}`, method: 'elicitation/create',
      params: { message: 'Your name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } } })}\n\n`);
  };
  const cancelled = [];
  const upstream = await startScriptedUpstream({
    name: 'nagging',
    onCall: (message, req, res) => {
      if (message.method !== 'tools/call') return false;
      stream = res;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      ask();
      return true;
    },
    onNotification: (message) => {
      if (message.method === 'notifications/cancelled') cancelled.push(message.params?.requestId);
      else if (message.method === undefined && asks < 200) setTimeout(ask, 1); // refused: ask again at once
      return false;
    },
  });
  try {
    await withHost({ plugins: [], sections: { upstreams: [{ name: 'nagging', url: upstream.url, tool_timeout_ms: 60000 }] } },
      async (host) => {
        await host.stderrMatching(/family 'nagging' loaded: nagging 1/, 30000);
        // No elicitation among the agent's capabilities: each ask is refused on its behalf.
        const ended = await host.modern('tools/call', { name: 'nagging_hello', arguments: {} });
        assert.equal(ended.result?.isError, true, JSON.stringify(ended));
        assert.match(ended.result.content[0].text, /asked 16 times .* for input the agent's client does not offer \(elicitation\/create\)/);
        assert.ok(asks >= 16 && asks <= 18, `the server asked ${asks} times`);
        await eventually('the server to hear the call cancelled', () => cancelled.length === 1, 5000);
      });
  } finally {
    stream?.end();
    upstream.close();
  }
});

test('a 2026-07-28 server that asks for input and keeps no requestState gets the agent\'s answers on the retry', async () => {
  const calls = [];
  const upstream = await startScriptedUpstream({
    name: 'stateless',
    onCall: (message, req, res) => {
      const answer = (result) => res.writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
      if (message.method === 'server/discover')
        return answer({ supportedVersions: [MODERN], capabilities: { tools: {} }, resultType: 'complete',
          _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'stateless', version: '1' } } });
      if (message.method === 'tools/list')
        return answer({ tools: [{ name: 'hello', inputSchema: { type: 'object' } }], resultType: 'complete' });
      if (message.method !== 'tools/call') return false;
      calls.push(message.params);
      const given = message.params.inputResponses?.name;
      if (!given)
        return answer({ resultType: 'input_required', inputRequests: { name: { method: 'elicitation/create',
          params: { mode: 'form', message: 'Your name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } } } } });
      return answer({ resultType: 'complete', content: [{ type: 'text', text: `hello ${given.content?.name}` }] });
    },
  });
  try {
    await withHost({ plugins: [], sections: { upstreams: [{ name: 'stateless', url: upstream.url }] } }, async (host) => {
      await host.stderrMatching(/family 'stateless' loaded: stateless 1/, 30000);
      const { answer, asked } = await rounds(host, 'stateless_hello', {}, { elicitation: {} },
        { 'elicitation/create': { action: 'accept', content: { name: 'Ada' } } });
      assert.equal(answer.result?.content?.[0]?.text, 'hello Ada', JSON.stringify(answer));
      assert.equal(asked.length, 1);
      assert.equal(calls.length, 2);
      assert.deepEqual(calls[1].inputResponses, { name: { action: 'accept', content: { name: 'Ada' } } });
      assert.equal(calls[1].requestState, undefined, 'the server kept no state, and is sent none');

      // A 2025-11-25 agent whose client refuses the ask: the round's state
      // holds no call open here, and dropping it is nothing.
      await host.initialize(undefined, { elicitation: {} });
      host.send({ jsonrpc: '2.0', id: 'legacy-1', method: 'tools/call', params: { name: 'stateless_hello', arguments: {} } });
      const ask = await host.waitFor((m) => m.method === 'elicitation/create');
      host.send({ jsonrpc: '2.0', id: ask.message.id, error: { code: -32603, message: 'declined here' } });
      assert.match(JSON.stringify((await host.response('legacy-1')).message), /declined here/);
      assert.equal((await host.request('ping')).result !== undefined, true, 'the host still answers');
    });
  } finally {
    upstream.close();
  }
});

test('over HTTP, a call that waits for the agent longer than the answer stream\'s read time still gets its answer on that stream', async () => {
  let held;
  const upstream = await startScriptedUpstream({
    name: 'patient',
    onCall: (message, req, res) => {
      if (message.method !== 'tools/call') return false;
      held = { res, id: message.id };
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: 'ask-1', method: 'elicitation/create',
        params: { message: 'Your name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } } })}\n\n`);
      return true;
    },
    onNotification: (message) => {
      if (message.method !== undefined || message.id !== 'ask-1') return false;
      // The person's answer: the call's result, on the stream the call opened.
      held.res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: held.id,
        result: { content: [{ type: 'text', text: `hello ${message.result?.content?.name}` }] } })}\n\n`);
      return false;
    },
  });
  try {
    // A stream is read 10 s past tool_timeout_ms when nothing waits for the agent.
    await withHost({ plugins: [], sections: { upstreams: [{ name: 'patient', url: upstream.url, tool_timeout_ms: 500 }] } },
      async (host) => {
        await host.stderrMatching(/family 'patient' loaded: patient 1/, 30000);
        const meta = { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } };
        const asked = await host.modern('tools/call', { name: 'patient_hello', arguments: {} }, meta);
        assert.equal(asked.result?.resultType, 'input_required', JSON.stringify(asked));
        const [key] = Object.keys(asked.result.inputRequests);
        await new Promise((r) => setTimeout(r, 11500)); // the person takes a while
        const answer = await host.modern('tools/call', {
          name: 'patient_hello', arguments: {},
          inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } }, requestState: asked.result.requestState,
        }, meta);
        assert.equal(answer.result?.content?.[0]?.text, 'hello Ada', JSON.stringify(answer));
      });
  } finally {
    held?.res.end();
    upstream.close();
  }
});

test('a 2025-11-25 agent whose client refuses what an upstream asked: the server\'s call is ended at once, not at the end of the input wait', async () => {
  const cancelled = [];
  let held;
  const upstream = await startScriptedUpstream({
    name: 'asking',
    onCall: (message, req, res) => {
      if (message.method !== 'tools/call') return false;
      held = res;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: 'ask-1', method: 'elicitation/create',
        params: { message: 'Your name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } } })}\n\n`);
      return true;
    },
    onNotification: (message) => {
      if (message.method === 'notifications/cancelled') cancelled.push(message.params?.requestId);
      return false;
    },
  });
  try {
    await withHost({ plugins: [], sections: { upstreams: [{ name: 'asking', url: upstream.url }] } }, async (host) => {
      await host.stderrMatching(/family 'asking' loaded: asking 1/, 30000);
      await host.initialize(undefined, { elicitation: {} });
      host.send({ jsonrpc: '2.0', id: 'call-1', method: 'tools/call', params: { name: 'asking_hello', arguments: {} } });
      const asked = await host.waitFor((m) => m.method === 'elicitation/create');
      host.send({ jsonrpc: '2.0', id: asked.message.id, error: { code: -32603, message: 'the person closed the window' } });
      const { message } = await host.response('call-1');
      assert.match(JSON.stringify(message), /the person closed the window/);
      await eventually('the server to hear its call cancelled', () => cancelled.length === 1, 5000);
    });
  } finally {
    held?.end();
    upstream.close();
  }
});
