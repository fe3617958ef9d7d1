// stdout belongs to the protocol: with logging turned all the way up and a
// plugin that fails to load, stdout still carries only JSON-RPC lines (the
// harness fails on anything else) and the logs are found on stderr.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { withHost } from './lib/host.mjs';

test('with debug logs and a broken plugin, stdout carries only JSON-RPC', async () => {
  const scratch = mkdtempSync(path.join(tmpdir(), 'gatehouse-itest-broken-'));
  const broken = path.join(scratch, 'broken.so');
  writeFileSync(broken, 'this is not a shared library\n');
  try {
    await withHost({ plugins: ['echo.so', 'serial.so', broken], logLevel: 'debug', env: { GATEHOUSE_LOG: 'trace' } }, async (host) => {
      await host.initialize();
      await host.request('logging/setLevel', { level: 'debug' });
      await host.request('tools/call', { name: 'progress', arguments: { steps: 3 }, _meta: { progressToken: 't' } });
      await host.request('tools/call', { name: 'crash', arguments: {} });
      await host.request('tools/call', { name: 'bad_output', arguments: {} });
      host.write('not json');
      host.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/unknown' }));
      const list = await host.request('tools/list');
      assert.ok(list.result.tools.some((t) => t.name === 'echo'), 'the other plugins are served');

      await host.stderrMatching(/serving MCP over stdio/);
      await host.stderrMatching(/broken\.so/); // the load failure names the file
      await host.stderrMatching(/\[echo\] step 1/); // plugin logs go to stderr too
      await host.stderrMatching(/\/secret\/path/); // the crash detail is logged
      assert.equal(
        host.messages.some((m) => JSON.stringify(m.message).includes('secret')),
        false,
        'even with MCP logging at debug, the crash detail never reaches the client',
      );
    });
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});

test('every stdout line of a session is one JSON-RPC message', () =>
  withHost(async (host) => {
    await host.initialize();
    for (let i = 0; i < 20; i++) host.send({ jsonrpc: '2.0', id: `e${i}`, method: 'tools/call', params: { name: 'echo', arguments: { text: `line\nbreak ${i} \u2028 "quoted"` } } });
    for (let i = 0; i < 20; i++) {
      const answer = await host.response(`e${i}`);
      assert.equal(answer.message.result.structuredContent.text, `line\nbreak ${i} \u2028 "quoted"`);
    }
  }));
