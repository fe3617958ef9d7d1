// Starts the real gatehouse binary over stdio and talks newline-delimited
// JSON-RPC to it. Every line the host writes is checked on arrival: it must
// be JSON-RPC and fit the schema of its protocol revision (lib/spec.mjs).
// A request whose own answer is invalid fails at once; any other problem
// fails the test at close().
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { checkLine, revisionOfRequest, LEGACY, MODERN, REVISIONS } from './spec.mjs';

export { LEGACY, MODERN };

const DEFAULT_TIMEOUT_MS = 20000;

export function binaryPath() {
  const bin = process.env.GATEHOUSE_BIN;
  if (!bin) throw new Error('GATEHOUSE_BIN is not set: point it at <build>/bin/gatehouse');
  return bin;
}

export function pluginDir() {
  const dir = process.env.GATEHOUSE_TEST_PLUGINS;
  if (!dir) throw new Error('GATEHOUSE_TEST_PLUGINS is not set: point it at <build>/tests/plugins');
  return dir;
}

// The _meta every 2026-07-28 request carries.
// Polls `probe` until it gives something truthy, and returns that.
export async function eventually(what, probe, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export function modernMeta(extra = {}) {
  return {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'gatehouse-itests', version: '1.0.0' },
    ...extra,
  };
}

// JSON is YAML, and quoting every value keeps paths with odd characters safe.
const yamlValue = (value) => JSON.stringify(value);

// GATEHOUSE_TEST_ISOLATION=process serves every family a test lists from a
// process of its own (unless the test chose), so a suite proves the two
// modes alike.
function isolated(entry) {
  if (process.env.GATEHOUSE_TEST_ISOLATION !== 'process') return entry;
  const written = typeof entry === 'string' ? { path: entry } : entry;
  return written.isolation ? written : { ...written, isolation: 'process' };
}

// Writes a config into its own temporary folder; returns { dir, file }.
export function writeConfig({
  plugins = ['echo.so', 'serial.so'],
  limits = {},
  rateLimits,
  logLevel = 'info',
  gate = false,
  http = undefined,
  // Top-level sections written as given ({session: {...}, domains: {...}}),
  // each a function of the config's own folder when it needs paths in it.
  sections = {},
} = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-itest-'));
  const lines = [
    `plugin_dir: ${yamlValue(pluginDir())}`,
    `data_dir: ${yamlValue(path.join(dir, 'data'))}`,
    `log_level: ${logLevel}`,
  ];
  // Most tests exercise the protocol and the plugins, not the gate; those
  // that want the host's default (gate on, no sessions) pass gate: true.
  if (!gate) lines.push('gate: false');
  lines.push(`plugins: ${yamlValue(plugins.map(isolated))}`);
  const limitEntries = Object.entries(limits);
  if (limitEntries.length) {
    lines.push('limits:');
    for (const [k, v] of limitEntries) lines.push(`  ${k}: ${yamlValue(v)}`);
  }
  if (rateLimits) lines.push(`rate_limits: ${JSON.stringify(rateLimits)}`);
  if (http) lines.push(`http: ${yamlValue(http)}`);
  for (const [key, value] of Object.entries(sections))
    lines.push(`${key}: ${yamlValue(typeof value === 'function' ? value(dir) : value)}`);
  const file = path.join(dir, 'gatehouse.yaml');
  writeFileSync(file, lines.join('\n') + '\n');
  return { dir, file };
}

// Tool names as `gatehouse plugins --json` reports them for a config.
export function listedToolNames(configFile) {
  const out = execFileSync(binaryPath(), ['plugins', '--config', configFile, '--json'], { encoding: 'utf8' });
  return JSON.parse(out).families.flatMap((f) => f.tools.map((t) => t.name));
}

export class Host {
  // options.embedded: serve with no --config, on the default compiled into
  // the binary, as on a fresh install (its data under this host's temp folder).
  // options.binary: the gatehouse binary to run instead of GATEHOUSE_BIN;
  // options.launcher: [program, ...args] that runs it (and must exec it, so
  // host.pid stays the host's).
  constructor(options = {}) {
    this.config = writeConfig(options);
    const args = options.embedded ? ['serve'] : ['serve', '--config', this.config.file];
    const fresh = options.embedded ? { GATEHOUSE_DATA_DIR: path.join(this.config.dir, 'data') } : {};
    const [program, ...programArgs] = [...(options.launcher ?? []), options.binary ?? binaryPath(), ...args];
    this.child = spawn(program, programArgs, {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, GATEHOUSE_LOG: options.logLevel ?? 'info', ...fresh, ...(options.env ?? {}) },
    });
    this.pid = this.child.pid;
    this.messages = []; // { index, message, problems } for every stdout message, in arrival order
    this.problems = []; // framing or schema problems, reported at close()
    this.stderr = '';
    this.requests = new Map(); // JSON id text -> request sent
    this.waiters = new Map(); // JSON id text -> { resolve, reject }
    this.messageWaiters = [];
    this.nextId = 1;
    this.exited = false;
    this.exit = once(this.child, 'exit').then(([code, signal]) => {
      this.exited = true;
      return { code, signal };
    });
    this.child.stdin.on('error', () => {}); // EPIPE after the host exits shows up as its exit
    this.child.stderr.setEncoding('utf8');
    this.stderrWaiters = [];
    this.child.stderr.on('data', (chunk) => {
      this.stderr += chunk;
      this.stderrWaiters = this.stderrWaiters.filter((w) => !(w.pattern.test(this.stderr) && (w.resolve(), true)));
    });
    let pending = Buffer.alloc(0);
    this.child.stdout.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      let nl;
      while ((nl = pending.indexOf(10)) >= 0) {
        const line = pending.subarray(0, nl).toString('utf8');
        pending = pending.subarray(nl + 1);
        this.#onLine(line);
      }
    });
    this.child.stdout.on('end', () => {
      if (pending.length) this.problems.push(`stdout ended inside a line: ${pending.toString('utf8').slice(0, 200)}`);
    });
  }

  // The revisions a notification may belong to: those of the requests still open.
  #openRevisions() {
    const open = new Set();
    for (const key of this.waiters.keys()) {
      const request = this.requests.get(key);
      if (request) open.add(revisionOfRequest(request));
    }
    return open.size ? [...open] : REVISIONS;
  }

  // A subscription's notifications belong to the revision of the
  // subscriptions/listen request that opened it (its id is the tag).
  #notificationRevisions(line) {
    if (line.includes('"io.modelcontextprotocol/subscriptionId"')) {
      try {
        const id = JSON.parse(line).params?._meta?.['io.modelcontextprotocol/subscriptionId'];
        const request = this.requests.get(JSON.stringify(id));
        if (request) return [revisionOfRequest(request)];
      } catch {
        // not JSON: checkLine reports it
      }
    }
    return this.#openRevisions();
  }

  #onLine(line) {
    const { message, problems } = checkLine(line, this.requests, this.#notificationRevisions(line));
    if (problems.length) this.problems.push(...problems.map((p) => `${p}\n    in: ${line.slice(0, 300)}`));
    if (message === undefined) return;
    const entry = { index: this.messages.length, message, problems, line };
    this.messages.push(entry);
    if (Object.hasOwn(message, 'id') && !Object.hasOwn(message, 'method')) {
      const key = JSON.stringify(message.id);
      const waiter = this.waiters.get(key);
      if (waiter) {
        this.waiters.delete(key);
        if (problems.length) waiter.reject(new Error(`invalid answer to ${key}:\n  ${problems.join('\n  ')}`));
        else waiter.resolve(entry);
      }
    }
    this.messageWaiters = this.messageWaiters.filter((w) => {
      if (!w.predicate(message)) return true;
      w.resolve(entry);
      return false;
    });
  }

  // Writes raw bytes (a string or Buffer); a newline follows unless `newline: false`.
  write(data, { newline = true } = {}) {
    this.child.stdin.write(data);
    if (newline) this.child.stdin.write('\n');
  }

  // Writes a large payload honouring back-pressure, so the test itself does
  // not queue it all in memory twice.
  async writeLarge(buffer, chunkSize = 1 << 20) {
    for (let offset = 0; offset < buffer.length; offset += chunkSize) {
      if (!this.child.stdin.write(buffer.subarray(offset, offset + chunkSize))) await once(this.child.stdin, 'drain');
    }
  }

  // Sends one message object; requests with a usable id are remembered so
  // their answers can be validated and awaited.
  send(message) {
    if (
      message &&
      typeof message === 'object' &&
      Object.hasOwn(message, 'id') &&
      (typeof message.id === 'string' || Number.isInteger(message.id))
    )
      this.requests.set(JSON.stringify(message.id), message);
    this.write(JSON.stringify(message));
  }

  // Remembers a request written as raw text, so its answer validates.
  expectRequest(request) {
    this.requests.set(JSON.stringify(request.id), request);
  }

  // Resolves with { index, message, line } when the answer to `id` arrives.
  response(id, timeoutMs = DEFAULT_TIMEOUT_MS) {
    const key = JSON.stringify(id);
    const arrived = this.messages.find(
      (m) => !Object.hasOwn(m.message, 'method') && JSON.stringify(m.message.id) === key,
    );
    if (arrived)
      return arrived.problems.length
        ? Promise.reject(new Error(`invalid answer to ${key}:\n  ${arrived.problems.join('\n  ')}`))
        : Promise.resolve(arrived);
    return this.#withTimeout(
      new Promise((resolve, reject) => this.waiters.set(key, { resolve, reject })),
      timeoutMs,
      `the answer to id ${key}`,
      () => this.waiters.delete(key),
    );
  }

  // Resolves with the first message at or after `fromIndex` that satisfies
  // `predicate`, whether it already arrived or arrives later.
  waitFor(predicate, { fromIndex = 0, timeoutMs = DEFAULT_TIMEOUT_MS, what = 'a matching message' } = {}) {
    const arrived = this.messages.slice(fromIndex).find((m) => predicate(m.message));
    if (arrived) return Promise.resolve(arrived);
    let waiter;
    return this.#withTimeout(
      new Promise((resolve) => {
        waiter = { predicate, resolve };
        this.messageWaiters.push(waiter);
      }),
      timeoutMs,
      what,
      () => (this.messageWaiters = this.messageWaiters.filter((w) => w !== waiter)),
    );
  }

  #withTimeout(promise, timeoutMs, what, cleanup) {
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out waiting for ${what}; host stderr ends:\n${this.stderr.slice(-2000)}`));
      }, timeoutMs);
    });
    const exited = this.exit.then(({ code, signal }) => {
      throw new Error(
        `the host exited (code ${code}, signal ${signal}) before ${what}; stderr ends:\n${this.stderr.slice(-2000)}`,
      );
    });
    exited.catch(() => {}); // only an error when it wins the race
    return Promise.race([promise, timeout, exited]).finally(() => {
      clearTimeout(timer);
      cleanup();
    });
  }

  // Resolves once stderr matches `pattern`. stderr and stdout are separate
  // pipes, so a log line written before an answer may still arrive after it.
  stderrMatching(pattern, timeoutMs = DEFAULT_TIMEOUT_MS) {
    if (pattern.test(this.stderr)) return Promise.resolve();
    let waiter;
    return this.#withTimeout(
      new Promise((resolve) => {
        waiter = { pattern, resolve };
        this.stderrWaiters.push(waiter);
      }),
      timeoutMs,
      `stderr to match ${pattern}`,
      () => (this.stderrWaiters = this.stderrWaiters.filter((w) => w !== waiter)),
    );
  }

  // Sends a request and resolves with its JSON-RPC answer (the message).
  async request(method, params, { id = this.nextId++ } = {}) {
    const message = { jsonrpc: '2.0', id, method };
    if (params !== undefined) message.params = params;
    this.send(message);
    return (await this.response(id)).message;
  }

  // A 2026-07-28 request: _meta carries the revision and client capabilities.
  modern(method, params = {}, metaExtra = {}) {
    const { _meta, ...rest } = params;
    return this.request(method, { ...rest, _meta: { ...modernMeta(metaExtra), ...(_meta ?? {}) } });
  }

  notify(method, params) {
    const message = { jsonrpc: '2.0', method };
    if (params !== undefined) message.params = params;
    this.write(JSON.stringify(message));
  }

  // The 2025-11-25 handshake; resolves with the InitializeResult.
  async initialize(protocolVersion = LEGACY, capabilities = {}) {
    const answer = await this.request('initialize', {
      protocolVersion,
      capabilities,
      clientInfo: { name: 'gatehouse-itests', version: '1.0.0' },
    });
    if (answer.error) throw new Error(`initialize failed: ${JSON.stringify(answer.error)}`);
    this.notify('notifications/initialized');
    return answer.result;
  }

  // A ping without _meta: answered before and after initialize.
  ping() {
    return this.request('ping');
  }

  // The messages that arrived at or after index `from`.
  since(from) {
    return this.messages.slice(from).map((m) => m.message);
  }

  notifications(method, from = 0) {
    return this.since(from).filter((m) => m.method === method);
  }

  // Peak resident memory of the host in KiB (VmHWM from /proc).
  peakRssKiB() {
    const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
    const match = /^VmHWM:\s+(\d+)\s+kB/m.exec(status);
    if (!match) throw new Error('no VmHWM in /proc status');
    return Number(match[1]);
  }

  // Closes stdin, waits for the host to exit, removes the temp folder and
  // throws when any line the host wrote broke the framing or the schema.
  async close({ timeoutMs = DEFAULT_TIMEOUT_MS } = {}) {
    if (!this.exited) this.child.stdin.end();
    let timer;
    const result = await Promise.race([
      this.exit,
      new Promise((resolve) => {
        timer = setTimeout(() => resolve(null), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    if (result === null) {
      this.child.kill('SIGKILL');
      await this.exit;
    }
    rmSync(this.config.dir, { recursive: true, force: true });
    if (result === null) throw new Error(`the host did not exit within ${timeoutMs} ms after stdin closed`);
    if (this.problems.length)
      throw new Error(`the host wrote ${this.problems.length} invalid line(s):\n  ${this.problems.join('\n  ')}`);
    return result;
  }
}

// Starts a host for one test, runs `body`, then closes it: the test fails
// when the host wrote any invalid line or did not exit cleanly.
export async function withHost(options, body) {
  if (typeof options === 'function') [options, body] = [{}, options];
  const host = new Host(options);
  let failure;
  try {
    await body(host);
  } catch (e) {
    failure = e;
  }
  try {
    const result = await host.close();
    if (!failure && result.code !== 0)
      throw new Error(
        `the host exited with code ${result.code} (signal ${result.signal}); stderr:\n${host.stderr.slice(-2000)}`,
      );
  } catch (e) {
    if (!failure) failure = e;
  }
  if (failure) throw failure;
}
