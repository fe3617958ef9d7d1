// Recall timed over stdio on a database filled beforehand (recall_bench
// fills it in-process, which is much faster than a million remember calls
// through the host): one gatehouse serving only the memory family, one
// request in flight, the queries recall_bench wrote, 20 of them first as a
// warm-up.
//
//   node recall_stdio.mjs --gatehouse BIN --plugins DIR --database FILE|postgresql://... --queries FILE
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith('--') ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []),
);
if (!args.gatehouse || !args.plugins || !args.database || !args.queries) {
  console.error('usage: node recall_stdio.mjs --gatehouse BIN --plugins DIR --database FILE|URL --queries FILE');
  process.exit(2);
}
const queries = fs.readFileSync(args.queries, 'utf8').split('\n').filter(Boolean);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-recall-stdio-'));
const database = args.database.includes('://') ? args.database : path.resolve(args.database);
const config = path.join(dir, 'gatehouse.yaml');
fs.writeFileSync(
  config,
  [
    `plugin_dir: ${JSON.stringify(path.resolve(args.plugins))}`,
    `data_dir: ${JSON.stringify(dir)}`,
    'log_level: warn',
    'gate: false',
    'plugins: [memory.so]',
    'domains:',
    '  memory:',
    '    settings:',
    `      database: ${JSON.stringify(database)}`,
  ].join('\n') + '\n',
);
const child = spawn(path.resolve(args.gatehouse), ['serve', '--config', config], {
  env: { ...process.env, GATEHOUSE_PRINCIPAL: 'bench' },
  stdio: ['pipe', 'pipe', 'inherit'],
});
let buffer = '';
const waiting = new Map();
child.stdout.on('data', (chunk) => {
  buffer += chunk;
  let nl;
  while ((nl = buffer.indexOf('\n')) >= 0) {
    const msg = JSON.parse(buffer.slice(0, nl));
    buffer = buffer.slice(nl + 1);
    waiting.get(msg.id)?.(msg);
    waiting.delete(msg.id);
  }
});
let id = 0;
const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const recall = (query) =>
  new Promise((resolve) => {
    const n = ++id;
    waiting.set(n, resolve);
    child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: n, method: 'tools/call', params: { name: 'recall', arguments: { query }, _meta: META } }) + '\n');
  });
for (const q of queries.slice(0, 20)) await recall(q);
const times = [];
let returned = 0;
for (const q of queries) {
  const t = process.hrtime.bigint();
  const answer = await recall(q);
  times.push(Number(process.hrtime.bigint() - t) / 1e6);
  if (answer.error || answer.result.isError) throw new Error(JSON.stringify(answer));
  returned += answer.result.structuredContent.notes.length;
}
child.stdin.end();
await new Promise((r) => child.on('exit', r));
fs.rmSync(dir, { recursive: true });
times.sort((a, b) => a - b);
const at = (p) => times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))];
console.log(`${times.length} recalls over stdio: p50 ${at(50).toFixed(3)} ms, p99 ${at(99).toFixed(3)} ms; ${returned} notes returned`);
