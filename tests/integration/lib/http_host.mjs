// Starts the real gatehouse binary with the HTTP transport on a free loopback
// port and talks to it with fetch. Every JSON-RPC message in an answer (a
// JSON body or each SSE event) is checked against the schema of its
// revision; problems fail the test at stop().
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { once } from 'node:events';
import { binaryPath, writeConfig, modernMeta, LEGACY, MODERN } from './host.mjs';
import { checkResponse, checkNotification, checkServerRequest } from './spec.mjs';

export { LEGACY, MODERN, modernMeta };

const START_TIMEOUT_MS = 20000;

export class HttpHost {
  // options: those of writeConfig (plugins, limits, http, gate …), plus env;
  // config: a configuration already written ({dir, file}) to serve instead;
  // listen: HOST:PORT for --listen.
  static async start(options = {}) {
    const host = new HttpHost(options);
    await host.#listening();
    return host;
  }

  constructor(options) {
    this.config = options.config ?? writeConfig({ ...options, http: { listen: '127.0.0.1:0', ...(options.http ?? {}) } });
    const args = ['serve', '--config', this.config.file, '--transport', 'http'];
    if (options.listen) args.push('--listen', options.listen);
    this.child = spawn(binaryPath(), args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, GATEHOUSE_LOG: options.logLevel ?? 'info', ...(options.env ?? {}) },
    });
    this.stdout = '';
    this.stderr = '';
    this.problems = [];
    this.nextId = 1;
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (chunk) => (this.stdout += chunk));
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (chunk) => (this.stderr += chunk));
    this.exit = once(this.child, 'exit').then(([code, signal]) => ({ code, signal }));
  }

  async #listening() {
    const deadline = Date.now() + START_TIMEOUT_MS;
    let exited = false;
    this.exit.then(() => (exited = true));
    while (Date.now() < deadline && !exited) {
      const match = /serving MCP over HTTP at (http:\/\/[^\s"]+)/.exec(this.stderr);
      if (match) {
        this.url = match[1];
        this.origin = new URL(this.url).origin;
        return;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    this.child.kill('SIGKILL');
    throw new Error(`the host did not start listening; stderr:\n${this.stderr.slice(-2000)}`);
  }

  // The headers a 2026-07-28 client sends with `message`.
  static modernHeaders(message) {
    const headers = { 'MCP-Protocol-Version': MODERN, 'Mcp-Method': message.method };
    const p = message.params ?? {};
    if (message.method === 'tools/call' || message.method === 'prompts/get') headers['Mcp-Name'] = p.name;
    if (message.method === 'resources/read') headers['Mcp-Name'] = p.uri;
    if (['tasks/get', 'tasks/update', 'tasks/cancel'].includes(message.method)) headers['Mcp-Name'] = p.taskId;
    return headers;
  }

  // POSTs `body` (an object is JSON-encoded). Resolves with
  // { status, headers, contentType, messages, text }: messages are the
  // JSON-RPC messages of a JSON body or an SSE stream, each schema-checked
  // against `request` (the message this POST carried) when it is one.
  async post(body, { headers = {}, path, signal, request } = {}) {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    const response = await fetch(path ? this.origin + path : this.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
      body: text,
      signal,
    });
    return this.#read(response, request ?? (typeof body === 'object' ? body : undefined));
  }

  async #read(response, request) {
    const contentType = response.headers.get('content-type') ?? '';
    const text = await response.text();
    const messages = [];
    if (contentType.startsWith('application/json') && text) {
      messages.push(JSON.parse(text));
    } else if (contentType.startsWith('text/event-stream')) {
      for (const event of text.split('\n\n')) {
        const data = event
          .split('\n')
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).trimStart())
          .join('\n');
        if (data) messages.push(JSON.parse(data));
      }
    }
    for (const m of messages) this.#check(m, request);
    return { status: response.status, headers: response.headers, contentType, messages, text };
  }

  // Schema-checks a message read some other way (a raw socket), as post() does.
  check(message, request) {
    this.#check(message, request);
  }

  #check(message, request) {
    const problems =
      typeof message.method === 'string'
        ? Object.hasOwn(message, 'id')
          ? checkServerRequest(message)
          : checkNotification(message, request ? [revisionOf(request)] : undefined)
        : checkResponse(message, request && Object.hasOwn(message, 'id') ? request : undefined);
    for (const p of problems) this.problems.push(`${JSON.stringify(message).slice(0, 200)}: ${p}`);
  }

  // A 2026-07-28 request with its headers; resolves like post() plus
  // `answer`, the final response.
  async modern(method, params = {}, { headers = {}, meta = {}, signal } = {}) {
    const { _meta, ...rest } = params;
    const message = { jsonrpc: '2.0', id: this.nextId++, method, params: { ...rest, _meta: { ...modernMeta(meta), ...(_meta ?? {}) } } };
    const reply = await this.post(message, { headers: { ...HttpHost.modernHeaders(message), ...headers }, signal });
    reply.answer = reply.messages.find((m) => Object.hasOwn(m, 'id'));
    return reply;
  }

  // The 2025-11-25 handshake; resolves with { sessionId, result }.
  async initialize(capabilities = {}) {
    const message = {
      jsonrpc: '2.0',
      id: this.nextId++,
      method: 'initialize',
      params: { protocolVersion: LEGACY, capabilities, clientInfo: { name: 'gatehouse-itests', version: '1.0.0' } },
    };
    const reply = await this.post(message);
    const sessionId = reply.headers.get('mcp-session-id');
    if (reply.status !== 200 || !sessionId) throw new Error(`initialize failed: ${reply.status} ${reply.text}`);
    await this.post(
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { headers: { 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': LEGACY } },
    );
    return { sessionId, result: reply.messages[0].result };
  }

  // A request inside a 2025-11-25 session.
  async legacy(sessionId, method, params, { signal } = {}) {
    const message = { jsonrpc: '2.0', id: this.nextId++, method };
    if (params !== undefined) message.params = params;
    const reply = await this.post(message, {
      headers: { 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': LEGACY },
      signal,
    });
    reply.answer = reply.messages.find((m) => Object.hasOwn(m, 'id'));
    return reply;
  }

  // Resolves once stderr matches `pattern`.
  async stderrMatching(pattern, timeoutMs = START_TIMEOUT_MS) {
    const deadline = Date.now() + timeoutMs;
    while (!pattern.test(this.stderr)) {
      if (Date.now() > deadline) throw new Error(`stderr never matched ${pattern}; it ends:\n${this.stderr.slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  // Stops this host, keeping its configuration and data directory, and starts
  // the binary again on them and on the same address, as an operator's
  // restart does: a client keeps its URL. Resolves with the new host; this
  // one's exit is in `previousExit`.
  async restart(options = {}) {
    const previousExit = await this.stop({ keepFiles: true });
    const host = await HttpHost.start({ ...options, config: this.config, listen: new URL(this.url).host });
    host.previousExit = previousExit;
    return host;
  }

  // Stops the host with `signal` and resolves with its exit; throws when any
  // answer broke the schema or the host wrote to stdout. The configuration's
  // folder (with the data directory) is removed unless keepFiles.
  async stop({ signal = 'SIGTERM', timeoutMs = 20000, keepFiles = false } = {}) {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    let timer;
    const result = await Promise.race([
      this.exit,
      new Promise((resolve) => (timer = setTimeout(() => resolve(null), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (result === null) {
      this.child.kill('SIGKILL');
      await this.exit;
    }
    if (!keepFiles) rmSync(this.config.dir, { recursive: true, force: true });
    if (result === null) throw new Error(`the host did not exit within ${timeoutMs} ms of ${signal}`);
    if (this.stdout) throw new Error(`the HTTP host wrote to stdout: ${this.stdout.slice(0, 500)}`);
    if (this.problems.length)
      throw new Error(`the host sent ${this.problems.length} invalid message(s):\n  ${this.problems.join('\n  ')}`);
    return result;
  }
}

function revisionOf(request) {
  return request?.params?._meta?.['io.modelcontextprotocol/protocolVersion'] === MODERN ? MODERN : LEGACY;
}

// Starts a host, runs `body`, stops it with SIGTERM: the test fails when the
// host sent an invalid message or did not exit cleanly.
export async function withHttpHost(options, body) {
  if (typeof options === 'function') [options, body] = [{}, options];
  const host = await HttpHost.start(options);
  let failure;
  try {
    await body(host);
  } catch (e) {
    failure = e;
  }
  try {
    const result = await host.stop();
    if (!failure && result.code !== 0)
      throw new Error(`the host exited with code ${result.code} (signal ${result.signal}); stderr:\n${host.stderr.slice(-2000)}`);
  } catch (e) {
    failure ??= e;
  }
  if (failure) {
    if (!failure.message.includes('stderr')) failure.message += `\nhost stderr ends:\n${host.stderr.slice(-1500)}`;
    throw failure;
  }
}

// A family's page form as a browser holds it after GET: the form token's
// cookie (name=value) and the same token from the form's field.
export async function pageForm(url) {
  const shown = await fetch(url);
  if (shown.status !== 200) throw new Error(`GET ${url} answered ${shown.status}`);
  const cookie = shown.headers.get('set-cookie').split(';')[0];
  const csrf = /name="csrf" value="([^"]+)"/.exec(await shown.text())[1];
  return { cookie, csrf };
}
