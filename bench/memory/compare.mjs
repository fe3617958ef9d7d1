// Benchmark: the Gatehouse memory family against @modelcontextprotocol/server-memory,
// both driven over stdio by this one client, one request in flight at a time
// (what an agent does), on the same generated notes.
//
//   node compare.mjs --gatehouse <build>/bin/gatehouse --plugins <build>/lib/gatehouse/plugins
//                    [--notes 10000] [--big 100000] [--queries 300] [--peer none]
//                    [--database postgresql://...]
//
// --database points Gatehouse's memory family at a PostgreSQL database (an
// empty one: scripts/postgres.sh start DIR prints a URL) instead of its
// SQLite file.
// --peer none measures Gatehouse alone (server-memory's side takes most of
// an hour at the default sizes).
//
// Measured: time to store N notes one call each; p50/p99 of a one-word
// recall (search_nodes) at N and at BIG notes. server-memory rewrites its
// whole JSONL file on every write, so storing BIG notes through it one by one
// would take hours: for the BIG recall its file is written directly (the same
// lines it writes itself), and Gatehouse's extra notes are stored with many
// calls in flight. Only the recalls are timed at BIG.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith('--') ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []),
);
const gatehouseBin = args.gatehouse && path.resolve(args.gatehouse);
const pluginDir = args.plugins && path.resolve(args.plugins);
const N = Number(args.notes ?? 10000);
const BIG = Number(args.big ?? 100000);
const QUERIES = Number(args.queries ?? 300);
const PEER = args.peer !== 'none';
const DATABASE = args.database;
if (!gatehouseBin || !pluginDir) {
  console.error('usage: node compare.mjs --gatehouse BIN --plugins DIR [--notes N] [--big N] [--queries Q]');
  process.exit(2);
}

// Deterministic notes: words from a 5000-word vocabulary (Latin and Cyrillic),
// 8-16 words a note, so one word is in ~0.2% of the notes.
let seed = 42;
const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
const latin = 'abcdefghijklmnopqrstuvwxyz';
const cyrillic = 'абвгдежзиклмнопрстуфхцчшэюя';
const vocabulary = Array.from({ length: 5000 }, (_, i) => {
  const alphabet = i % 2 ? cyrillic : latin;
  let w = '';
  for (let k = 0; k < 4 + (i % 5); k++) w += alphabet[Math.floor(random() * alphabet.length)];
  // A suffix of letters keeps the words apart; no digit, so every word is stemmed.
  for (let rest = i; rest > 0; rest = Math.floor(rest / 26)) w += alphabet[rest % 26];
  return w;
});
const note = (i) => {
  const words = [];
  const n = 8 + Math.floor(random() * 9);
  for (let k = 0; k < n; k++) words.push(vocabulary[Math.floor(random() * vocabulary.length)]);
  return { text: words.join(' '), tag: `tag${i % 50}` };
};
const queries = Array.from({ length: QUERIES }, () => vocabulary[Math.floor(random() * vocabulary.length)]);

class StdioClient {
  constructor(command, argv, env) {
    this.child = spawn(command, argv, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'inherit'] });
    this.next = 1;
    this.waiting = new Map();
    let buffer = '';
    this.child.stdout.on('data', (chunk) => {
      buffer += chunk;
      let nl;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (!line.trim()) continue;
        const msg = JSON.parse(line);
        const w = this.waiting.get(msg.id);
        if (w) {
          this.waiting.delete(msg.id);
          w(msg);
        }
      }
    });
  }
  request(method, params) {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, (m) => (m.error ? reject(new Error(JSON.stringify(m.error))) : resolve(m.result)));
      this.child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
    });
  }
  notify(method, params) {
    this.child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method, params }) + '\n');
  }
  async stop() {
    this.child.stdin.end();
    await new Promise((r) => this.child.on('exit', r));
  }
}

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

function startGatehouse(dir) {
  fs.mkdirSync(dir, { recursive: true });
  const config = path.join(dir, 'gatehouse.yaml');
  fs.writeFileSync(
    config,
    [
      `plugin_dir: ${JSON.stringify(pluginDir)}`,
      `data_dir: ${JSON.stringify(path.join(dir, 'data'))}`,
      'log_level: warn',
      'strict: true',
      'gate: false',
      'plugins: [memory.so]',
      ...(DATABASE ? ['domains:', '  memory:', '    settings:', `      database: ${JSON.stringify(DATABASE)}`] : []),
    ].join('\n') + '\n',
  );
  const c = new StdioClient(gatehouseBin, ['serve', '--config', config], { GATEHOUSE_PRINCIPAL: 'bench' });
  return {
    client: c,
    store: (n) => c.request('tools/call', { name: 'remember', arguments: { text: n.text, tags: [n.tag] }, _meta: META }),
    recall: (q) => c.request('tools/call', { name: 'recall', arguments: { query: q }, _meta: META }),
    ready: async () => {},
  };
}

function startServerMemory(file) {
  const bin = path.join(here, 'node_modules/@modelcontextprotocol/server-memory/dist/index.js');
  const c = new StdioClient(process.execPath, [bin], { MEMORY_FILE_PATH: file });
  return {
    client: c,
    store: (n, i) =>
      c.request('tools/call', {
        name: 'create_entities',
        arguments: { entities: [{ name: `note-${i}`, entityType: n.tag, observations: [n.text] }] },
      }),
    recall: (q) => c.request('tools/call', { name: 'search_nodes', arguments: { query: q } }),
    ready: async () => {
      await c.request('initialize', {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'bench', version: '1' },
      });
      c.notify('notifications/initialized', {});
    },
  };
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
async function timeRecalls(server) {
  for (const q of queries.slice(0, 20)) await server.recall(q); // warm-up
  const times = [];
  let hits = 0;
  for (const q of queries) {
    const t = process.hrtime.bigint();
    const r = await server.recall(q);
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
    const sc = r.structuredContent;
    hits += sc?.notes?.length ?? sc?.entities?.length ?? 0;
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99), hits };
}

async function storeSequentially(server, from, to) {
  const t = process.hrtime.bigint();
  for (let i = from; i < to; i++) {
    const r = await server.store(notes[i], i);
    if (r.isError) throw new Error(JSON.stringify(r.content));
  }
  return Number(process.hrtime.bigint() - t) / 1e6;
}

const notes = Array.from({ length: BIG }, (_, i) => note(i));
const results = {};
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-memory-bench-'));

{
  // Gatehouse
  const g = startGatehouse(path.join(work, 'gatehouse'));
  await g.ready();
  const storeMs = await storeSequentially(g, 0, N);
  const small = await timeRecalls(g);
  // Grow to BIG with up to 64 calls in flight (not timed).
  let next = N;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < BIG) {
        const i = next++;
        await g.store(notes[i], i);
      }
    }),
  );
  const big = await timeRecalls(g);
  await g.client.stop();
  const dbBytes = DATABASE ? NaN : fs.statSync(path.join(work, 'gatehouse/data/memory/memory.db')).size;
  results.gatehouse = { storeMs, small, big, dbBytes };
}
if (PEER) {
  // server-memory
  const file = path.join(work, 'server-memory.jsonl');
  let s = startServerMemory(file);
  await s.ready();
  const storeMs = await storeSequentially(s, 0, N);
  const small = await timeRecalls(s);
  await s.client.stop();
  const lines = notes.map((n, i) => JSON.stringify({ type: 'entity', name: `note-${i}`, entityType: n.tag, observations: [n.text] }));
  fs.writeFileSync(file, lines.join('\n'));
  s = startServerMemory(file);
  await s.ready();
  const big = await timeRecalls(s);
  await s.client.stop();
  results.serverMemory = { storeMs, small, big, fileBytes: fs.statSync(file).size };
}
fs.rmSync(work, { recursive: true });

const f = (x) => (Number.isFinite(x) ? x.toFixed(2) : '-');
const g = results.gatehouse;
const m = results.serverMemory ?? { storeMs: NaN, small: {}, big: {}, fileBytes: NaN };
console.log(`notes stored: ${N}; recall queries: ${QUERIES} one-word queries; big set: ${BIG} notes`);
console.log('| measure | gatehouse memory | server-memory | ratio |');
console.log('|---|---:|---:|---:|');
console.log(`| store ${N} notes, one call each | ${f(g.storeMs / 1000)} s | ${f(m.storeMs / 1000)} s | ${f(m.storeMs / g.storeMs)}x |`);
console.log(`| recall p50 at ${N} | ${f(g.small.p50)} ms | ${f(m.small.p50)} ms | ${f(m.small.p50 / g.small.p50)}x |`);
console.log(`| recall p99 at ${N} | ${f(g.small.p99)} ms | ${f(m.small.p99)} ms | ${f(m.small.p99 / g.small.p99)}x |`);
console.log(`| recall p50 at ${BIG} | ${f(g.big.p50)} ms | ${f(m.big.p50)} ms | ${f(m.big.p50 / g.big.p50)}x |`);
console.log(`| recall p99 at ${BIG} | ${f(g.big.p99)} ms | ${f(m.big.p99)} ms | ${f(m.big.p99 / g.big.p99)}x |`);
console.log(`| notes returned over all queries at ${BIG} | ${g.big.hits} (limit 10 each) | ${m.big.hits ?? '-'} (all matches) | |`);
console.log(`| file size at ${BIG} | ${(g.dbBytes / 1048576).toFixed(1)} MiB | ${(m.fileBytes / 1048576).toFixed(1)} MiB | |`);
