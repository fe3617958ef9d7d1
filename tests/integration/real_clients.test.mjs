// The official TypeScript clients talk to the real binary: the v1 SDK with
// the 2025-11-25 handshake, the v2 client pinned to 2026-07-28. Every message
// they receive is schema-checked on the way in.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { binaryPath, writeConfig, LEGACY, MODERN } from './lib/host.mjs';
import { CheckedTransport } from './lib/checked_transport.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));

function serverParameters(configFile) {
  return {
    command: binaryPath(),
    args: ['serve', '--config', configFile],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', GATEHOUSE_LOG: 'warn' },
    stderr: 'pipe',
  };
}

// Runs `body` with a connected client, then closes it and checks every
// message the host sent.
async function withClient(makeClient, makeTransport, body, configOptions = {}) {
  const config = writeConfig(configOptions);
  const transport = new CheckedTransport(makeTransport(serverParameters(config.file)));
  let stderr = '';
  transport.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  const client = makeClient();
  try {
    await client.connect(transport);
    await body(client, transport);
  } catch (e) {
    e.message += `\nhost stderr:\n${stderr.slice(-2000)}`;
    throw e;
  } finally {
    await client.close();
    rmSync(config.dir, { recursive: true, force: true });
  }
  assert.deepEqual(transport.problems, [], 'every message the host sent fits the schema');
  assert.ok(transport.received.length > 0);
}

test('@modelcontextprotocol/sdk 1.x: initialize, list tools, call echo (2025-11-25)', () =>
  withClient(
    () => new ClientV1({ name: 'itest-sdk-v1', version: '1.0.0' }),
    (params) => new StdioV1(params),
    async (client, transport) => {
      assert.equal(transport.sent[0].method, 'initialize');
      assert.equal(client.getServerVersion().name, 'gatehouse');
      assert.ok(client.getServerCapabilities().tools);

      const { tools } = await client.listTools();
      const echo = tools.find((t) => t.name === 'echo');
      assert.ok(echo, 'echo is listed');
      assert.equal(echo.description, 'Returns the text it is given.');

      const result = await client.callTool({ name: 'echo', arguments: { text: 'hello from sdk v1' } });
      assert.equal(result.isError ?? false, false);
      assert.deepEqual(result.structuredContent, { text: 'hello from sdk v1' });
      assert.equal(result.content[0].text, 'hello from sdk v1');

      const failing = await client.callTool({ name: 'fail', arguments: {} });
      assert.equal(failing.isError, true);

      const init = transport.received.find((m) => m.id === transport.sent[0].id);
      assert.equal(init.result.protocolVersion, LEGACY);
    },
  ));

test('@modelcontextprotocol/client 2.x pinned to 2026-07-28: list tools, call echo', () =>
  withClient(
    () => new ClientV2({ name: 'itest-client-v2', version: '2.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } }),
    (params) => new StdioV2(params),
    async (client, transport) => {
      const { tools } = await client.listTools();
      assert.ok(tools.some((t) => t.name === 'echo'), 'echo is listed');

      const result = await client.callTool({ name: 'echo', arguments: { text: 'hello from client v2' } });
      assert.equal(result.isError ?? false, false);
      assert.deepEqual(result.structuredContent, { text: 'hello from client v2' });

      // The client really spoke 2026-07-28: no initialize, _meta on every request.
      const requests = transport.sent.filter((m) => typeof m.method === 'string' && Object.hasOwn(m, 'id'));
      assert.ok(requests.length >= 2);
      for (const r of requests) {
        assert.notEqual(r.method, 'initialize');
        assert.equal(r.params._meta['io.modelcontextprotocol/protocolVersion'], MODERN, r.method);
      }
      const answers = transport.received.filter((m) => Object.hasOwn(m, 'result'));
      for (const a of answers) assert.equal(a.result.resultType, 'complete');
    },
  ));

test('@modelcontextprotocol/client 2.x in auto mode detects the modern era', () =>
  withClient(
    () => new ClientV2({ name: 'itest-client-v2-auto', version: '2.0.0' }, { versionNegotiation: { mode: 'auto' } }),
    (params) => new StdioV2(params),
    async (client, transport) => {
      assert.equal(transport.sent[0].method, 'server/discover', 'auto mode probes first');
      assert.ok(!transport.sent.some((m) => m.method === 'initialize'), 'and stays modern');
      const result = await client.callTool({ name: 'echo', arguments: { text: 'auto' } });
      assert.equal(result.structuredContent.text, 'auto');
    },
  ));

// A refusal of a tool with an outputSchema (echo, with the gate on and no
// sessions configured: NOT_CONNECTED) reaches both clients whole. The 1.x
// client checks structuredContent against the listed outputSchema even when
// isError is set, so the published schema names the refusal shape too.
async function refusalReachesClient(client) {
  const { tools } = await client.listTools();
  const echo = tools.find((t) => t.name === 'echo');
  assert.equal(echo.outputSchema.type, 'object');
  assert.equal(echo.outputSchema.anyOf.length, 2);
  assert.deepEqual(echo.outputSchema.anyOf[0].required, ['text'], 'the tool\'s own result is the first branch');
  assert.deepEqual(echo.outputSchema.anyOf[1].required, ['code', 'message', 'next']);

  const refused = await client.callTool({ name: 'echo', arguments: { text: 'hello' } });
  assert.equal(refused.isError, true);
  assert.equal(refused.structuredContent.code, 'NOT_CONNECTED');
  assert.match(refused.structuredContent.message, /no session configuration/);
  assert.equal(typeof refused.structuredContent.next, 'object');
  assert.match(refused.content[0].text, /^NOT_CONNECTED: /);
}

test('@modelcontextprotocol/sdk 1.x sees a gate refusal of a tool with an outputSchema after listTools (2025-11-25)', () =>
  withClient(
    () => new ClientV1({ name: 'itest-sdk-v1', version: '1.0.0' }),
    (params) => new StdioV1(params),
    refusalReachesClient,
    { gate: true },
  ));

test('@modelcontextprotocol/client 2.x sees the same refusal (2026-07-28)', () =>
  withClient(
    () => new ClientV2({ name: 'itest-client-v2', version: '2.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } }),
    (params) => new StdioV2(params),
    refusalReachesClient,
    { gate: true },
  ));

// The MCP Inspector's command line (the v1 Inspector, on the 1.x SDK) lists
// the tools before every call, so it checks a refusal's structuredContent
// against the published outputSchema as desktop agents do.
test('the MCP Inspector CLI sees a gate refusal whole (tools/call after its own listTools)', async () => {
  const config = writeConfig({ gate: true });
  const cli = path.join(HERE, 'node_modules', '@modelcontextprotocol', 'inspector-cli', 'build');
  try {
    const run = spawnSync(
      process.execPath,
      [path.join(cli, 'index.js'), binaryPath(), 'serve', '--config', config.file,
        '--method', 'tools/call', '--tool-name', 'echo', '--tool-arg', 'text=hello'],
      // The CLI finds its own package.json relative to the working folder.
      { cwd: cli, encoding: 'utf8', timeout: 60_000, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', GATEHOUSE_LOG: 'warn' } },
    );
    assert.equal(run.status, 0, `the Inspector CLI failed:\n${run.stdout}\n${run.stderr}`);
    const answer = JSON.parse(run.stdout);
    assert.equal(answer.isError, true);
    assert.equal(answer.structuredContent.code, 'NOT_CONNECTED');
    assert.equal(typeof answer.structuredContent.next, 'object');
    assert.match(answer.content[0].text, /^NOT_CONNECTED: /);
  } finally {
    rmSync(config.dir, { recursive: true, force: true });
  }
});

// Resources, templates, prompts and completion through both official
// clients, against the conformance fixture family.
const CONFORMANCE = { plugins: ['conformance.so', 'echo.so'] };

async function readListAndGet(client) {
  const { resources } = await client.listResources();
  assert.ok(resources.some((r) => r.uri === 'test://static-text'));
  const { resourceTemplates } = await client.listResourceTemplates();
  assert.equal(resourceTemplates[0].uriTemplate, 'test://template/{id}/data');

  const text = await client.readResource({ uri: 'test://static-text' });
  assert.equal(text.contents[0].text, 'This is the content of the static text resource.');
  const templated = await client.readResource({ uri: 'test://template/42/data' });
  assert.equal(JSON.parse(templated.contents[0].text).id, '42');
  await assert.rejects(client.readResource({ uri: 'test://missing' }), /not found/i);

  const { prompts } = await client.listPrompts();
  assert.ok(prompts.some((p) => p.name === 'test_prompt_with_arguments'));
  const prompt = await client.getPrompt({
    name: 'test_prompt_with_arguments',
    arguments: { arg1: 'one', arg2: 'two' },
  });
  assert.equal(prompt.messages[0].content.text, "Prompt with arguments: arg1='one', arg2='two'");

  const completion = await client.complete({
    ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
    argument: { name: 'arg1', value: 'pa' },
  });
  assert.deepEqual(completion.completion.values, ['paris', 'park', 'party']);
}

test('@modelcontextprotocol/sdk 1.x: resources, prompts and completion (2025-11-25)', () =>
  withClient(
    () => new ClientV1({ name: 'itest-sdk-v1', version: '1.0.0' }),
    (params) => new StdioV1(params),
    async (client) => {
      const caps = client.getServerCapabilities();
      assert.ok(caps.resources && caps.prompts && caps.completions);
      await readListAndGet(client);
    },
    CONFORMANCE,
  ));

test('@modelcontextprotocol/client 2.x pinned to 2026-07-28: resources, prompts and completion', () =>
  withClient(
    () => new ClientV2({ name: 'itest-client-v2', version: '2.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } }),
    (params) => new StdioV2(params),
    async (client, transport) => {
      await readListAndGet(client);
      const read = transport.received.find((m) => m.result?.contents?.[0]?.uri === 'test://static-text');
      assert.deepEqual([read.result.ttlMs, read.result.cacheScope], [0, 'private']);
    },
    CONFORMANCE,
  ));
