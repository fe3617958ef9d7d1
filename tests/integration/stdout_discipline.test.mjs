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

// Runs a Python `script` given the host binary and a configuration serving
// the echo family (sys.argv[1], sys.argv[2]): a parent that sets up the
// host's pipes as Node cannot.
async function runPythonBesideEchoHost(script) {
  const { spawnSync } = await import('node:child_process');
  const { writeConfig, binaryPath } = await import('./lib/host.mjs');
  const { file } = writeConfig({ plugins: ['echo.so'] });
  return spawnSync('python3', ['-c', script, binaryPath(), file], { encoding: 'utf8', timeout: 60000 });
}

// A parent that made its end of the stdout pipe non-blocking shares that
// with the host (one open file): a full pipe is EAGAIN, which the host took
// for a client gone and stopped answering altogether.
test('a non-blocking stdout that fills up is waited on, and every answer arrives', async () => {
  const run = await runPythonBesideEchoHost(`
import os, select, subprocess, sys, threading, time, json
r, w = os.pipe()
os.set_blocking(w, False)
host = subprocess.Popen([sys.argv[1], 'serve', '--config', sys.argv[2]], stdin=subprocess.PIPE, stdout=w, stderr=subprocess.DEVNULL)
os.close(w)
meta = {'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}}
calls = 400
# Written on a thread of its own: a host waiting for room on stdout reads
# no more requests, so a writer on this thread could wait for it for ever.
def feed():
    for i in range(calls):
        host.stdin.write((json.dumps({'jsonrpc': '2.0', 'id': i, 'method': 'tools/call', 'params': {'name': 'echo', 'arguments': {'text': 'x' * 1000}, '_meta': meta}}) + '\\n').encode())
    host.stdin.flush()
feeding = threading.Thread(target=feed)
feeding.start()
time.sleep(1.5)  # nobody reads: the pipe fills, the host's writes meet EAGAIN
data = b''
deadline = time.time() + 20
while data.count(b'\\n') < calls and time.time() < deadline:
    if not select.select([r], [], [], 1)[0]: continue
    chunk = os.read(r, 1 << 16)
    if not chunk: break
    data += chunk
feeding.join(timeout=20)
host.stdin.close()
host.wait(timeout=20)
print(data.count(b'\\n'))
`);
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stdout.trim(), '400', 'answers arrived');
});

// The same for stdin: a parent that made its end of the stdin pipe
// non-blocking shares that with the host. A read that finds nothing yet
// answers EAGAIN, which the host must wait on, not take for a broken stdin.
test('a non-blocking stdin is waited on between requests, and every request is answered', async () => {
  const run = await runPythonBesideEchoHost(`
import os, subprocess, sys, time, json
r, w = os.pipe()
os.set_blocking(r, False)
host = subprocess.Popen([sys.argv[1], 'serve', '--config', sys.argv[2]], stdin=r, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
os.close(r)
meta = {'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}}
answered = 0
for i in range(5):
    time.sleep(0.3)  # the host reads nothing meanwhile: EAGAIN
    os.write(w, (json.dumps({'jsonrpc': '2.0', 'id': i, 'method': 'tools/call', 'params': {'name': 'echo', 'arguments': {'text': str(i)}, '_meta': meta}}) + '\\n').encode())
    line = host.stdout.readline()
    if line and json.loads(line).get('id') == i: answered += 1
os.close(w)
host.wait(timeout=20)
print(answered, host.returncode)
`);
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stdout.trim(), '5 0', 'every request answered, and the host ended cleanly at the end of input');
});
