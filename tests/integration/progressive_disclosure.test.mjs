// Progressive disclosure: a domain with `exposure: on_demand` stays out of
// tools/list; list_domains, load_domain and describe_tool reveal it;
// call_tool takes exactly the path of a direct tools/call (the same
// NOT_GRANTED); SIGHUP re-reads the exposure and tells subscription listeners
// and 2025-11-25 sessions that the list changed; `gatehouse docs` writes the
// reference page of each domain.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { execFileSync } from 'node:child_process';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyHttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { HttpHost } from './lib/http_host.mjs';
import { CheckedTransport } from './lib/checked_transport.mjs';
import { binaryPath, MODERN, modernMeta, withHost, eventually } from './lib/host.mjs';
import { recordingFetch } from './lib/cluster.mjs';

const pluginPath = (name) => path.resolve(path.dirname(binaryPath()), `../lib/gatehouse/plugins/${name}`);
const SESSIONS_TOOLS = ['create_session', 'exchange_session_approval_code', 'get_active_bot', 'get_session_status'];
const META_TOOLS = ['call_tool', 'describe_tool', 'list_domains', 'load_domain'];

// Resolves like `promise`, or rejects after `ms`: a notification that never
// comes fails the test at once instead of at the ctest timeout.
function within(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const options = (exposure) => ({
  gate: true,
  plugins: [pluginPath('session.so'), pluginPath('sessions.so')],
  sections: {
    domains: { sessions: { exposure, settings: { bots: [{ slug: 'shop-bot', name: 'Shop Bot' }] } } },
    // ann holds no grant for the sessions family.
    session: { backend: 'memory', pinned: { store: 'shop', user: 'ann' }, grants: { shop: { ann: ['memory.read'] } } },
  },
});

test('on demand: hidden from tools/list, revealed by the meta tools, and call_tool meets the same gate', async () => {
  const host = await HttpHost.start(options('on_demand'));
  const transport = new CheckedTransport(new StreamableHTTPClientTransport(new URL(host.url)));
  const client = new Client({ name: 'itest-disclosure', version: '2.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
  try {
    await client.connect(transport);
    const names = (await client.listTools()).tools.map((t) => t.name);
    for (const name of SESSIONS_TOOLS) assert.ok(!names.includes(name), `${name} is not listed`);
    for (const name of [...META_TOOLS, 'session_connect']) assert.ok(names.includes(name), `${name} is listed`);

    const domains = (await client.callTool({ name: 'list_domains', arguments: {} })).structuredContent.domains;
    assert.deepEqual(
      domains.map((d) => [d.domain, d.exposure, d.tools]).sort(),
      [['session', 'listed', 4], ['sessions', 'on_demand', 4]].sort((a, b) => a[0].localeCompare(b[0])),
    );

    const loaded = (await client.callTool({ name: 'load_domain', arguments: { domain: 'sessions' } })).structuredContent;
    assert.deepEqual(loaded.tools.map((t) => t.name).sort(), SESSIONS_TOOLS);
    assert.ok(loaded.tools.every((t) => t.inputSchema.properties.session), 'the published schemas carry the session handle');
    assert.equal((await client.callTool({ name: 'load_domain', arguments: { domain: 'nope' } })).isError, true);

    const described = (await client.callTool({ name: 'describe_tool', arguments: { name: 'create_session' } })).structuredContent;
    assert.equal(described.name, 'create_session');
    assert.equal(described.domain, 'sessions');
    assert.equal(described.scope, 'sessions');
    assert.deepEqual(described.required_scopes, ['sessions']);
    assert.equal(described.risk, 'write');
    assert.equal(described.platform_version, '1.0.0');
    assert.equal(described.inputSchema.additionalProperties, false);
    assert.deepEqual(described.inputSchema.properties.type.enum, ['LOGIN', 'LINK', 'OPEN_BILLING', 'PAY_PRODUCT', 'OPEN_SUPPORT']);
    assert.equal(described.outputSchema, null, 'published without an outputSchema');
    const status = (await client.callTool({ name: 'describe_tool', arguments: { name: 'get_session_status' } })).structuredContent;
    assert.deepEqual(status.outputSchema.required, ['session_id', 'state', 'user']);

    const session = (await client.callTool({ name: 'session_connect', arguments: { topic: 'bots' } })).structuredContent.session;
    const direct = await client.callTool({ name: 'get_active_bot', arguments: { session } });
    assert.equal(direct.structuredContent.code, 'NOT_GRANTED');
    const forwarded = await client.callTool({ name: 'call_tool', arguments: { name: 'get_active_bot', arguments: { session } } });
    assert.deepEqual(forwarded, direct, 'call_tool answers exactly what a direct call answers');
    const noSession = await client.callTool({ name: 'call_tool', arguments: { name: 'get_active_bot', arguments: {} } });
    assert.deepEqual(noSession, await client.callTool({ name: 'get_active_bot', arguments: {} }));
    assert.equal(noSession.structuredContent.code, 'NOT_CONNECTED');
    const badArguments = await client.callTool({ name: 'call_tool', arguments: { name: 'session_connect', arguments: { topic: 7 } } });
    assert.deepEqual(badArguments, await client.callTool({ name: 'session_connect', arguments: { topic: 7 } }));
    const unknown = await client.callTool({ name: 'call_tool', arguments: { name: 'no_such_tool', arguments: {} } });
    assert.equal(unknown.isError, true);
    assert.match(unknown.content[0].text, /Unknown tool: 'no_such_tool'/);
  } finally {
    await client.close().catch(() => {});
    assert.equal((await host.stop()).code, 0);
  }
  assert.deepEqual(transport.problems, []);
});

test('SIGHUP re-reads the exposure: tools/list changes, listeners and 2025-11-25 sessions are told', async () => {
  const host = await HttpHost.start(options('on_demand'));
  const legacy = new LegacyClient({ name: 'itest-disclosure-legacy', version: '1.0.0' });
  try {
    let told;
    const toldLegacy = new Promise((resolve) => (told = resolve));
    legacy.setNotificationHandler(ToolListChangedNotificationSchema, () => told());
    // Every request the 2025-11-25 transport makes, with its answer's status.
    const legacySeen = [];
    await legacy.connect(new LegacyHttpTransport(new URL(host.url), { fetch: recordingFetch(legacySeen) }));
    assert.ok(!(await legacy.listTools()).tools.some((t) => t.name === 'create_session'));

    // A 2026-07-28 listener on subscriptions/listen.
    const controller = new AbortController();
    const listen = await fetch(host.url, {
      method: 'POST',
      signal: controller.signal,
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': MODERN, 'Mcp-Method': 'subscriptions/listen' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'sub', method: 'subscriptions/listen', params: { _meta: modernMeta(), notifications: { toolsListChanged: true } } }),
    });
    const reader = listen.body.getReader();
    let streamed = '';
    const streamSays = async (pattern) => {
      while (!pattern.test(streamed)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the stream ended without ${pattern}: ${streamed}`);
        streamed += new TextDecoder().decode(value);
      }
    };
    await streamSays(/notifications\/subscriptions\/acknowledged/);
    // The 2025-11-25 GET stream opens behind connect(): the session is told
    // on it, so it must be open (answered 200) before the SIGHUP.
    await eventually('the 2025-11-25 GET stream', () => legacySeen.some((r) => r.method === 'GET' && r.status === 200));

    const yaml = readFileSync(host.config.file, 'utf8');
    writeFileSync(host.config.file, yaml.replace('"exposure":"on_demand"', '"exposure":"listed"'));
    host.child.kill('SIGHUP');
    await within(streamSays(/notifications\/tools\/list_changed/), 15000, 'tools/list_changed on the listen stream');
    await within(toldLegacy, 15000, 'tools/list_changed for the 2025-11-25 session');
    const names = (await legacy.listTools()).tools.map((t) => t.name);
    for (const name of SESSIONS_TOOLS) assert.ok(names.includes(name), `${name} is listed now`);
    for (const name of META_TOOLS) assert.ok(!names.includes(name), 'no domain is on demand: no meta tools');
    assert.doesNotMatch(host.stderr, /takes effect only when the host restarts/, 'exposure is applied: nothing to report');

    // Written another way (block style, keys in another order), with domain
    // and tool entries that only set exposure: still nothing to report.
    const domainsLine = yaml.split('\n').find((line) => line.startsWith('domains:'));
    const { sessions } = JSON.parse(domainsLine.slice('domains:'.length));
    const rewritten = yaml.replace(domainsLine, [
      'domains:',
      '  session:',
      '    exposure: listed',
      '  sessions:',
      '    tools:',
      '      create_session: {exposure: listed}',
      `    settings: ${JSON.stringify(sessions.settings)}`,
      '    exposure: listed',
    ].join('\n'));
    writeFileSync(host.config.file, rewritten + '---\n');
    const reread = host.stderr.length;
    host.child.kill('SIGHUP');
    for (let i = 0; i < 100 && !host.stderr.slice(reread).includes('re-reading the configuration'); i++)
      await new Promise((r) => setTimeout(r, 50));
    assert.match(host.stderr.slice(reread), /re-reading the configuration/);
    await new Promise((r) => setTimeout(r, 500)); // the re-read itself
    assert.doesNotMatch(host.stderr.slice(reread), /takes effect only when the host restarts|not re-read/, host.stderr.slice(reread));

    // What a re-read cannot apply is named in the log.
    writeFileSync(host.config.file, yaml.replace('"exposure":"on_demand"', '"exposure":"listed"') + 'server: {"name": "renamed"}\n');
    host.child.kill('SIGHUP');
    await host.stderrMatching(/the configuration was re-read, but what changed in server takes effect only when the host restarts/);

    // A broken edit is logged and changes nothing.
    writeFileSync(host.config.file, yaml.replace('"exposure":"on_demand"', '"exposure":"sometimes"'));
    host.child.kill('SIGHUP');
    await host.stderrMatching(/the configuration was not re-read: .*exposure must be listed or on_demand/);
    assert.ok((await legacy.listTools()).tools.some((t) => t.name === 'create_session'));
    controller.abort();
  } finally {
    await legacy.close().catch(() => {});
    assert.equal((await host.stop()).code, 0);
  }
});

test('gatehouse docs writes one reference page per domain with full schemas', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-docs-'));
  const configFile = path.join(dir, 'gatehouse.yaml');
  writeFileSync(
    configFile,
    `plugins: [${JSON.stringify(pluginPath('session.so'))}, ${JSON.stringify(pluginPath('sessions.so'))}]\n` +
      `data_dir: ${JSON.stringify(path.join(dir, 'data'))}\n`,
  );
  const out = path.join(dir, 'reference');
  const printed = execFileSync(binaryPath(), ['docs', '--config', configFile, '--out', out], { encoding: 'utf8' });
  assert.match(printed, /sessions\.md/);
  const page = readFileSync(path.join(out, 'sessions.md'), 'utf8');
  assert.match(page, /^# The `sessions` domain/);
  for (const name of SESSIONS_TOOLS) assert.match(page, new RegExp(`## ${name}\\n`));
  assert.match(page, /"additionalProperties": false/);
  assert.match(page, /"platform_version": "1.0.0"/);
  assert.ok(readFileSync(path.join(out, 'session.md'), 'utf8').includes('session_connect'));
});

// domains.<family>.tools.<tool>.exposure: one tool's own word over its domain's.
test("a tool's own exposure wins over its domain's, both ways", () =>
  withHost(
    {
      plugins: ['echo.so', 'ledger.so'],
      sections: {
        domains: {
          echo: { tools: { slow: { exposure: 'on_demand' } } },
          ledger: { exposure: 'on_demand', tools: { ledger_balance: { exposure: 'listed' } } },
        },
      },
    },
    async (host) => {
      const names = (await host.modern('tools/list')).result.tools.map((t) => t.name);
      assert.ok(names.includes('echo'), 'the rest of a listed domain stays listed');
      assert.ok(!names.includes('slow'), 'a tool on demand is not listed');
      assert.ok(names.includes('ledger_balance'), 'a listed tool of an on-demand domain is listed');
      assert.ok(!names.includes('ledger_refund') && !names.includes('ledger_close'));
      for (const name of META_TOOLS) assert.ok(names.includes(name), `${name} is offered while a tool is on demand`);
      const loaded = (await host.modern('tools/call', { name: 'load_domain', arguments: { domain: 'echo' } })).result;
      assert.ok(loaded.structuredContent.tools.some((t) => t.name === 'slow'), 'load_domain reveals it');
      const direct = (await host.modern('tools/call', { name: 'ledger_close', arguments: {} })).result;
      assert.equal(direct.content[0].text, 'closed', 'a tool on demand is still called by name');

      // SIGHUP re-reads a tool's exposure too; a 2025-11-25 session on stdio is told.
      await host.initialize();
      const from = host.messages.length;
      const yaml = readFileSync(host.config.file, 'utf8');
      assert.ok(yaml.includes('{"slow":{"exposure":"on_demand"}}'));
      writeFileSync(host.config.file, yaml.replace('{"slow":{"exposure":"on_demand"}}', '{"slow":{"exposure":"listed"}}'));
      host.child.kill('SIGHUP');
      await host.waitFor((m) => m.method === 'notifications/tools/list_changed', { fromIndex: from, what: 'tools/list_changed' });
      assert.ok((await host.modern('tools/list')).result.tools.some((t) => t.name === 'slow'), 'now listed');
    },
  ));
