// The official TypeScript clients over Streamable HTTP against the real
// binary: the v1 SDK with the 2025-11-25 session, the v2 client on
// 2026-07-28 (pinned and in auto mode). Every message they receive is
// schema-checked on the way in.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { HttpHost } from './lib/http_host.mjs';
import { CheckedTransport } from './lib/checked_transport.mjs';
import { LEGACY, MODERN } from './lib/host.mjs';

async function withHttpClient(makeClient, makeTransport, body) {
  const host = await HttpHost.start({ plugins: ['echo.so', 'headers.so'] });
  const transport = new CheckedTransport(makeTransport(new URL(host.url)));
  const client = makeClient();
  let failure;
  try {
    await client.connect(transport);
    await body(client, transport, host);
  } catch (e) {
    failure = e;
  } finally {
    await client.close().catch(() => {});
  }
  const result = await host.stop();
  if (failure) {
    failure.message += `\nhost stderr:\n${host.stderr.slice(-2000)}`;
    throw failure;
  }
  assert.equal(result.code, 0);
  assert.deepEqual(transport.problems, [], 'every message the host sent fits the schema');
}

test('@modelcontextprotocol/sdk 1.x over HTTP: session, list tools, call echo with progress', () =>
  withHttpClient(
    () => new ClientV1({ name: 'itest-sdk-v1-http', version: '1.0.0' }),
    (url) => new HttpV1(url),
    async (client, transport) => {
      assert.equal(client.getServerVersion().name, 'gatehouse');
      assert.ok(transport.inner.sessionId, 'the host minted an Mcp-Session-Id');
      const init = transport.received.find((m) => m.id === transport.sent[0].id);
      assert.equal(init.result.protocolVersion, LEGACY);

      const { tools } = await client.listTools();
      assert.ok(tools.some((t) => t.name === 'echo'));
      const result = await client.callTool({ name: 'echo', arguments: { text: 'hello over http' } });
      assert.deepEqual(result.structuredContent, { text: 'hello over http' });

      const steps = [];
      const progress = await client.callTool(
        { name: 'progress', arguments: { steps: 3 } },
        undefined,
        { onprogress: (p) => steps.push(p.progress) },
      );
      assert.equal(progress.content[0].text, 'done');
      assert.deepEqual(steps, [1, 2, 3]);
      await transport.inner.terminateSession();
    },
  ));

test('@modelcontextprotocol/client 2.x over HTTP pinned to 2026-07-28: list tools, call echo and an x-mcp-header tool', () =>
  withHttpClient(
    () => new ClientV2({ name: 'itest-client-v2-http', version: '2.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } }),
    (url) => new HttpV2(url),
    async (client, transport) => {
      const { tools } = await client.listTools();
      assert.ok(tools.some((t) => t.name === 'echo'));
      assert.ok(tools.some((t) => t.name === 'route'), 'the x-mcp-header tool is valid to the client');

      const result = await client.callTool({ name: 'echo', arguments: { text: 'hello from client v2 over http' } });
      assert.deepEqual(result.structuredContent, { text: 'hello from client v2 over http' });
      // The client mirrors the annotated arguments into Mcp-Param-* headers and the host checks them.
      const routed = await client.callTool({ name: 'route', arguments: { region: 'eu-west', count: 3, query: 'q' } });
      assert.equal(routed.isError ?? false, false, JSON.stringify(routed));
      assert.deepEqual(routed.structuredContent, { region: 'eu-west', count: 3, query: 'q' });

      const requests = transport.sent.filter((m) => typeof m.method === 'string' && Object.hasOwn(m, 'id'));
      for (const r of requests) assert.notEqual(r.method, 'initialize');
    },
  ));

test('@modelcontextprotocol/client 2.x over HTTP in auto mode detects the modern era', () =>
  withHttpClient(
    () => new ClientV2({ name: 'itest-client-v2-http-auto', version: '2.0.0' }, { versionNegotiation: { mode: 'auto' } }),
    (url) => new HttpV2(url),
    async (client, transport) => {
      assert.equal(transport.sent[0].method, 'server/discover');
      assert.ok(!transport.sent.some((m) => m.method === 'initialize'));
      const result = await client.callTool({ name: 'echo', arguments: { text: 'auto' } });
      assert.equal(result.structuredContent.text, 'auto');
    },
  ));
