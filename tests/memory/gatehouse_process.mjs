// Drives a real `gatehouse serve` over stdio with newline-delimited JSON-RPC
// (revision 2026-07-28): one process per instance, answers matched by id.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const binary = process.env.GATEHOUSE_BIN;
export const pluginDir = process.env.GATEHOUSE_PLUGIN_DIR;
const REVISION = '2026-07-28';

// GATEHOUSE_TEST_ISOLATION=process serves each family from a process of its
// own, so the same stories prove the two modes alike.
const ownProcess = process.env.GATEHOUSE_TEST_ISOLATION === 'process';
const pluginsLine = (files) =>
  `plugins: ${JSON.stringify(ownProcess ? files.map((file) => ({ path: file, isolation: 'process' })) : files)}`;

// A folder with a configuration that serves only the memory family;
// `sections` are further top-level YAML lines (transports, http, auth).
export function makeHome(settings = {}, sections = []) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-memory-it-'));
  const lines = [
    `plugin_dir: ${JSON.stringify(pluginDir)}`,
    `data_dir: ${JSON.stringify(path.join(dir, 'data'))}`,
    'log_level: warn',
    'strict: true',
    'gate: false', // the plugin alone; the gate has its own tests
    pluginsLine(['memory.so']),
    'domains:',
    '  memory:',
    '    settings:',
    ...Object.entries(settings).map(([k, v]) => `      ${k}: ${JSON.stringify(v)}`),
  ];
  if (Object.keys(settings).length === 0) lines.splice(lines.length - 3, 3);
  lines.push(...sections);
  const config = path.join(dir, 'gatehouse.yaml');
  fs.writeFileSync(config, lines.join('\n') + '\n');
  return { dir, config, database: path.join(dir, 'data', 'memory', 'memory.db') };
}

// A folder with the session family and the memory family behind the gate.
// The store comes from a program state file, so a test can switch it
// (setProgram); grants and the store password are set up as for a real shop.
export function makeSessionHome({ store = 'shop-a', user = 'ann' } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-memory-gate-'));
  const program = path.join(dir, 'program.json');
  const credentials = path.join(dir, 'credentials');
  fs.writeFileSync(credentials, 'not-a-real-password\n', { mode: 0o600 });
  const lines = [
    `plugin_dir: ${JSON.stringify(pluginDir)}`,
    `data_dir: ${JSON.stringify(path.join(dir, 'data'))}`,
    'log_level: warn',
    'strict: true',
    pluginsLine(['session.so', 'memory.so']),
    'session:',
    '  backend: memory',
    `  program_state_file: ${JSON.stringify(program)}`,
    `  credentials_file: ${JSON.stringify(credentials)}`,
    '  grants:',
    '    shop-a: {ann: [memory.read, memory.write]}',
    '    shop-b: {ann: [memory.read, memory.write]}',
    '  rules: Work only on what the person asked for.',
  ];
  const config = path.join(dir, 'gatehouse.yaml');
  fs.writeFileSync(config, lines.join('\n') + '\n');
  const home = {
    dir,
    config,
    database: path.join(dir, 'data', 'memory', 'memory.db'),
    setProgram(store, user) {
      fs.writeFileSync(program, JSON.stringify({ running: true, store, user, updated: new Date().toISOString() }));
    },
  };
  home.setProgram(store, user);
  return home;
}

const running = new Set();

// Kills every host still running (after a failed test).
export function stopAll() {
  for (const host of running) host.child.kill('SIGKILL');
}

export class Gatehouse {
  constructor(home, principal, env = {}) {
    this.child = spawn(binary, ['serve', '--config', home.config], {
      env: { ...process.env, GATEHOUSE_PRINCIPAL: principal, GATEHOUSE_LOG: 'warn', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.nextId = 1;
    this.waiting = new Map();
    this.untagged = []; // answers without an id (parse errors)
    this.stderr = '';
    running.add(this);
    this.exited = new Promise((resolve) =>
      this.child.on('exit', (code, signal) => {
        running.delete(this);
        resolve({ code, signal });
      }),
    );
    this.child.stderr.on('data', (d) => (this.stderr += d));
    this.child.stdin.on('error', () => {}); // EPIPE after a deliberate kill
    let buffer = '';
    this.child.stdout.on('data', (chunk) => {
      buffer += chunk;
      let nl;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (!line.trim()) continue;
        const msg = JSON.parse(line);
        // Answers to lines the host could not read carry no usable id (JSON-RPC
        // asks for id: null; this host currently leaves it out).
        if ((msg.id === undefined || msg.id === null) && msg.error) {
          this.untagged.push(msg);
          continue;
        }
        if (msg.id === undefined) continue; // notifications
        const w = this.waiting.get(msg.id);
        if (w) {
          this.waiting.delete(msg.id);
          w(msg);
        }
      }
    });
    this.child.on('exit', () => {
      for (const [, w] of this.waiting) w({ error: { code: 'exited', message: this.stderr } });
      this.waiting.clear();
    });
  }

  request(method, params = {}) {
    const id = this.nextId++;
    const message = {
      jsonrpc: '2.0',
      id,
      method,
      params: {
        ...params,
        _meta: { 'io.modelcontextprotocol/protocolVersion': REVISION, 'io.modelcontextprotocol/clientCapabilities': {} },
      },
    };
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.child.stdin.write(JSON.stringify(message) + '\n');
    });
  }

  writeRaw(bytes) {
    this.child.stdin.write(bytes);
  }

  // The CallToolResult of one tool call (a protocol error throws).
  async call(name, args) {
    const msg = await this.request('tools/call', { name, arguments: args });
    if (msg.error) throw new Error(`${name}: JSON-RPC error ${JSON.stringify(msg.error)}`);
    return msg.result;
  }

  async stop() {
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10000);
    await this.exited;
    clearTimeout(timer);
  }
}

export const text = (result) => result.content.map((c) => c.text).join('\n');

// The refusal code of a gate refusal, or undefined for any other result.
export const refusalCode = (result) => (result.isError ? result.structuredContent?.code : undefined);

// Opens a session and returns session_connect's answer.
export async function connect(host, topic) {
  const r = await host.call('session_connect', { topic });
  if (r.isError) throw new Error(`session_connect: ${text(r)}`);
  return r.structuredContent;
}
