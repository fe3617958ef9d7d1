// The local cluster of scripts/cluster.sh (Redis, N gatehouse instances,
// nginx round-robin in front) on the binary under test, in a temporary data
// folder, for one test file. Every answer through nginx carries the
// Gatehouse-Instance header of the instance that gave it; recordingFetch
// keeps it for each request a client makes.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { binaryPath, pluginDir, modernMeta, MODERN } from './host.mjs';
import { HttpHost } from './http_host.mjs';
import { checkResponse, checkNotification } from './spec.mjs';

const run = promisify(execFile);
const SCRIPT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../scripts/cluster.sh');
const SHIPPED = ['session.so', 'memory.so', 'sessions.so'];

export class Cluster {
  // testPlugins: file names in GATEHOUSE_TEST_PLUGINS served beside the
  // shipped families (license-free, under their family names).
  // rateLimits: the rate_limits section, in YAML flow style.
  // memoryDatabase: the memory family's database URL (PostgreSQL), shared by
  // every instance.
  static async up({ instances = 3, testPlugins = [], testFamilies = [], rateLimits, memoryDatabase } = {}) {
    const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-itest-cluster-'));
    const cluster = new Cluster(dir, {
      GATEHOUSE_BIN: binaryPath(),
      GATEHOUSE_CLUSTER_PLUGINS: [...SHIPPED, ...testPlugins.map((p) => path.join(pluginDir(), p))].join(' '),
      GATEHOUSE_CLUSTER_FREE_FAMILIES: ['session', 'sessions', 'memory', ...testFamilies].join(' '),
      ...(rateLimits ? { GATEHOUSE_CLUSTER_RATE_LIMITS: rateLimits } : {}),
      ...(memoryDatabase ? { GATEHOUSE_CLUSTER_MEMORY_DATABASE: memoryDatabase } : {}),
    });
    try {
      const { stdout } = await cluster.script('up', String(instances));
      cluster.url = stdout.trim().split('\n').at(-1);
    } catch (e) {
      cluster.count = instances;
      cluster.#killLeftovers();
      rmSync(dir, { recursive: true, force: true });
      throw e;
    }
    cluster.origin = new URL(cluster.url).origin;
    cluster.count = instances;
    return cluster;
  }

  constructor(dir, env) {
    this.dir = dir;
    this.env = { ...process.env, ...env, GATEHOUSE_CLUSTER_DIR: dir };
    this.problems = [];
  }

  // Runs scripts/cluster.sh with these arguments; its stderr joins the error.
  async script(...args) {
    try {
      return await run('bash', [SCRIPT, ...args], { env: this.env, timeout: 120000 });
    } catch (e) {
      e.message += `\ncluster.sh ${args.join(' ')} stderr:\n${e.stderr ?? ''}`;
      throw e;
    }
  }

  // Instance k (1-based): its name, its own URL (past nginx) and files.
  instance(k) {
    const port = readFileSync(path.join(this.dir, `gh-${k}`, 'port'), 'utf8').trim();
    const url = `http://127.0.0.1:${port}/mcp`;
    return { name: `gh-${k}`, url, origin: new URL(url).origin, yaml: path.join(this.dir, `gh-${k}`, 'gatehouse.yaml') };
  }

  kill(k) {
    return this.script('kill', String(k));
  }
  start(k) {
    return this.script('start', String(k));
  }
  reload(k) {
    return this.script('reload', String(k));
  }

  // The YAML of instance k with server.name and http.instance_name changed,
  // in a folder of its own (data_dir in it): the configuration of an
  // instance that shares everything with the cluster but its name. Returns
  // { dir, file } for HttpHost.start({ config }).
  configNamed(k, serverName, instanceName) {
    const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-itest-renamed-'));
    const text = readFileSync(this.instance(k).yaml, 'utf8')
      .replace(/^( {2}name: ).*$/m, `$1${JSON.stringify(serverName)}`)
      .replace(/^( {2}instance_name: ).*$/m, `$1${instanceName}`)
      .replace(/^data_dir: .*$/m, `data_dir: ${JSON.stringify(path.join(dir, 'data'))}`);
    const file = path.join(dir, 'gatehouse.yaml');
    writeFileSync(file, text, { mode: 0o600 });
    return { dir, file };
  }

  // A 2026-07-28 request POSTed to `url` (default: nginx); resolves with
  // { status, instance, answer, messages }, every message schema-checked.
  async modern(method, params = {}, { url = this.url, meta = {} } = {}) {
    const { _meta, ...rest } = params;
    const message = {
      jsonrpc: '2.0',
      id: Math.floor(Math.random() * 1e9),
      method,
      params: { ...rest, _meta: { ...modernMeta(meta), ...(_meta ?? {}) } },
    };
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        ...HttpHost.modernHeaders(message),
      },
      body: JSON.stringify(message),
    });
    const messages = parseBody(response.headers.get('content-type') ?? '', await response.text());
    for (const m of messages) {
      const problems = Object.hasOwn(m, 'id') ? checkResponse(m, message) : checkNotification(m, [MODERN]);
      for (const p of problems) this.problems.push(`${JSON.stringify(m).slice(0, 200)}: ${p}`);
    }
    return {
      status: response.status,
      instance: response.headers.get('gatehouse-instance'),
      answer: messages.find((m) => Object.hasOwn(m, 'id')),
      messages,
    };
  }

  // Stops everything and removes the data folder; throws when an instance's
  // log holds a sanitizer report or an answer here broke the schema.
  async down() {
    try {
      await this.script('down');
      const reports = [];
      for (let k = 1; k <= this.count; ++k) {
        const log = readFileSync(path.join(this.dir, `gh-${k}`, 'gatehouse.log'), 'utf8');
        if (/ERROR: (Address|Leak|UndefinedBehavior)Sanitizer|runtime error:/.test(log)) reports.push(`gh-${k}:\n${log.slice(-3000)}`);
      }
      if (reports.length) throw new Error(`sanitizer reports in the instances' logs:\n${reports.join('\n')}`);
      if (this.problems.length) throw new Error(`invalid messages:\n  ${this.problems.join('\n  ')}`);
    } finally {
      this.#killLeftovers();
      rmSync(this.dir, { recursive: true, force: true });
    }
  }

  // Whatever `down` left running (it failed half-way), by the pids the
  // script recorded, so nothing outlives the test file: SIGKILL, but SIGTERM
  // for nginx's master, which then ends its workers.
  #killLeftovers() {
    const pidFiles = [['nginx/nginx.pid', 'SIGTERM'], ['redis/redis.pid', 'SIGKILL']];
    for (let k = 1; k <= (this.count ?? 0); ++k) pidFiles.push([`gh-${k}/gatehouse.pid`, 'SIGKILL']);
    for (const [file, signal] of pidFiles) {
      try {
        process.kill(Number(readFileSync(path.join(this.dir, file), 'utf8')), signal);
      } catch {
        // no pid file, or the process is gone
      }
    }
  }
}

function parseBody(contentType, text) {
  if (contentType.startsWith('application/json') && text) return [JSON.parse(text)];
  if (!contentType.startsWith('text/event-stream')) return [];
  return text
    .split('\n\n')
    .map((event) =>
      event
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trimStart())
        .join('\n'),
    )
    .filter(Boolean)
    .map((data) => JSON.parse(data));
}

// A fetch for a client transport that notes, for every request, what it
// asked and which instance answered: { method, name, arguments, instance,
// status } pushed onto `seen` when the answer's headers arrive.
export function recordingFetch(seen) {
  return async (url, init = {}) => {
    const response = await fetch(url, init);
    let body;
    try {
      body = typeof init.body === 'string' ? JSON.parse(init.body) : undefined;
    } catch {
      body = undefined;
    }
    seen.push({
      method: body?.method ?? init.method,
      name: body?.params?.name,
      arguments: body?.params?.arguments,
      instance: response.headers.get('gatehouse-instance'),
      status: response.status,
    });
    return response;
  };
}

// Reads the SSE body of `response` as it comes, calling onMessage with each
// JSON-RPC message (keep-alive comments skipped), until the stream ends or
// is cut; returns at once.
export function eachSseMessage(response, onMessage) {
  (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body) {
        buffer += decoder.decode(chunk, { stream: true });
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const [m] = parseBody('text/event-stream', buffer.slice(0, end + 2));
          buffer = buffer.slice(end + 2);
          if (m) onMessage(m);
        }
      }
    } catch {
      // the stream was cut (closed, aborted, or its session ended): nothing more comes
    }
  })();
}

// A subscriptions/listen stream opened on `url`; resolves once the
// acknowledgement arrived. waitFor(predicate) resolves with the first later
// message that matches; close() ends the stream. `meta`: more of the
// request's _meta (the client's capabilities); `headers`: more HTTP headers
// (Authorization).
export async function openListen(url, notifications, { meta = {}, headers = {} } = {}) {
  const controller = new AbortController();
  const message = {
    jsonrpc: '2.0',
    id: 'cluster-listen',
    method: 'subscriptions/listen',
    params: { _meta: modernMeta(meta), notifications },
  };
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...HttpHost.modernHeaders(message),
      ...headers,
    },
    body: JSON.stringify(message),
    signal: controller.signal,
  });
  if (response.status !== 200) throw new Error(`listen answered ${response.status}: ${await response.text()}`);
  const stream = { messages: [], problems: [], instance: response.headers.get('gatehouse-instance') };
  let waiters = [];
  const settle = () => {
    waiters = waiters.filter((w) => {
      const found = stream.messages.slice(w.from).find(w.predicate);
      if (found) w.resolve(found);
      return !found;
    });
  };
  eachSseMessage(response, (m) => {
    stream.problems.push(...(Object.hasOwn(m, 'id') ? checkResponse(m, message) : checkNotification(m, [MODERN])));
    stream.messages.push(m);
    settle();
  });
  stream.waitFor = (predicate, { from = 0, timeoutMs = 15000 } = {}) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the listen stream got no matching message in ${timeoutMs} ms; it got ${JSON.stringify(stream.messages)}`)), timeoutMs);
      waiters.push({ predicate, from, resolve: (m) => (clearTimeout(timer), resolve(m)) });
      settle();
    });
  stream.close = () => controller.abort();
  await stream.waitFor((m) => m.method === 'notifications/subscriptions/acknowledged');
  return stream;
}
