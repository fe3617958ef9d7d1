// Streamable HTTP: one endpoint, both revisions, every refusal with its
// status code, SSE ordering, cancellation by closing, and the drain on SIGTERM.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { HttpHost, withHttpHost, modernMeta, MODERN, LEGACY } from './lib/http_host.mjs';
import { eventually } from './lib/host.mjs';
import { sha256Hex } from './lib/authorization_server.mjs';

const ECHO = ['echo.so', 'headers.so'];

function modernMessage(method, params = {}, id = 1) {
  return { jsonrpc: '2.0', id, method, params: { ...params, _meta: modernMeta() } };
}

test('2026-07-28: tools/list and tools/call answer as JSON, schema-valid', () =>
  withHttpHost({ plugins: ECHO }, async (host) => {
    const list = await host.modern('tools/list');
    assert.equal(list.status, 200);
    assert.match(list.contentType, /^application\/json/);
    assert.ok(list.answer.result.tools.some((t) => t.name === 'echo'));
    assert.equal(list.headers.get('mcp-session-id'), null, 'no session ids in the stateless revision');

    const call = await host.modern('tools/call', { name: 'echo', arguments: { text: 'over http' } });
    assert.equal(call.status, 200);
    assert.deepEqual(call.answer.result.structuredContent, { text: 'over http' });
    assert.equal(call.answer.result.resultType, 'complete');
  }));

test('2026-07-28: missing or mismatched metadata headers are HeaderMismatch (-32020) with 400', () =>
  withHttpHost({ plugins: ECHO }, async (host) => {
    const message = modernMessage('tools/call', { name: 'echo', arguments: { text: 'x' } });
    const good = HttpHost.modernHeaders(message);
    const cases = [
      [{ ...good, 'MCP-Protocol-Version': undefined }, /MCP-Protocol-Version header is missing/],
      [{ ...good, 'MCP-Protocol-Version': LEGACY }, /MCP-Protocol-Version header value '2025-11-25' does not match/],
      [{ ...good, 'Mcp-Method': undefined }, /Mcp-Method header is missing/],
      [{ ...good, 'Mcp-Method': 'tools/list' }, /Mcp-Method header value 'tools\/list' does not match body value 'tools\/call'/],
      [{ ...good, 'Mcp-Name': undefined }, /Mcp-Name header is missing/],
      [{ ...good, 'Mcp-Name': 'noop' }, /Mcp-Name header value 'noop' does not match body value 'echo'/],
      [{ ...good, 'Mcp-Name': '=?base64?not base64?=' }, /broken Base64/],
    ];
    for (const [headers, pattern] of cases) {
      for (const k of Object.keys(headers)) if (headers[k] === undefined) delete headers[k];
      const reply = await host.post(message, { headers });
      assert.equal(reply.status, 400, JSON.stringify(headers));
      assert.equal(reply.messages[0].error.code, -32020);
      assert.equal(reply.messages[0].id, 1, 'the error answers the request id');
      assert.match(reply.messages[0].error.message, pattern);
    }
    // The Base64 form of the right name passes.
    const encoded = `=?base64?${Buffer.from('echo').toString('base64')}?=`;
    const ok = await host.post(message, { headers: { ...good, 'Mcp-Name': encoded } });
    assert.equal(ok.status, 200);
    assert.equal(ok.messages[0].result.structuredContent.text, 'x');
  }));

test('2026-07-28: x-mcp-header arguments must travel as Mcp-Param-* headers, decoded and compared', () =>
  withHttpHost({ plugins: ECHO }, async (host) => {
    const args = { region: 'Hello, 世界', count: 42, dry_run: true, target: { zone: 'b' }, query: 'q' };
    const message = modernMessage('tools/call', { name: 'route', arguments: args });
    const good = {
      ...HttpHost.modernHeaders(message),
      'Mcp-Param-Region': `=?base64?${Buffer.from('Hello, 世界').toString('base64')}?=`,
      'Mcp-Param-Count': '42.0',
      'Mcp-Param-Dry-Run': 'true',
      'Mcp-Param-Zone': 'b',
    };
    const ok = await host.post(message, { headers: good });
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(ok.messages[0].result.structuredContent, args);

    const cases = [
      [{ 'Mcp-Param-Region': undefined }, /Mcp-Param-Region header is missing/],
      [{ 'Mcp-Param-Count': '41' }, /Mcp-Param-Count header value '41' does not match body value 42/],
      [{ 'Mcp-Param-Dry-Run': 'false' }, /Mcp-Param-Dry-Run header value 'false'/],
      [{ 'Mcp-Param-Zone': 'a' }, /Mcp-Param-Zone header value 'a'/],
    ];
    for (const [change, pattern] of cases) {
      const headers = { ...good, ...change };
      for (const k of Object.keys(headers)) if (headers[k] === undefined) delete headers[k];
      const reply = await host.post(message, { headers });
      assert.equal(reply.status, 400);
      assert.equal(reply.messages[0].error.code, -32020);
      assert.match(reply.messages[0].error.message, pattern);
    }
    // An argument left out needs no header, and a header without its argument is refused.
    const partial = modernMessage('tools/call', { name: 'route', arguments: { query: 'q' } });
    assert.equal((await host.post(partial, { headers: HttpHost.modernHeaders(partial) })).status, 200);
    const stray = await host.post(partial, { headers: { ...HttpHost.modernHeaders(partial), 'Mcp-Param-Zone': 'b' } });
    assert.equal(stray.status, 400);
    assert.match(stray.messages[0].error.message, /Mcp-Param-Zone header is set but the argument it mirrors is not/);
  }));

test('2026-07-28: unknown method is 404 -32601, unsupported version 400 -32022', () =>
  withHttpHost({ plugins: ECHO }, async (host) => {
    const unknown = await host.modern('no/such/method');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.answer.error.code, -32601);

    const message = modernMessage('tools/list');
    message.params._meta['io.modelcontextprotocol/protocolVersion'] = '2099-01-01';
    const reply = await host.post(message, { headers: { ...HttpHost.modernHeaders(message), 'MCP-Protocol-Version': '2099-01-01' } });
    assert.equal(reply.status, 400);
    assert.equal(reply.messages[0].error.code, -32022);
    assert.deepEqual(reply.messages[0].error.data.supported, [MODERN, LEGACY]);
  }));

test('Origin, Host, Content-Type, Accept, body size and methods are refused with their status codes', () =>
  withHttpHost(
    { plugins: ECHO, limits: { max_message_bytes: 4096 }, http: { allowed_origins: ['https://app.example.com'] } },
    async (host) => {
      const message = modernMessage('tools/list');
      const headers = HttpHost.modernHeaders(message);

      const evil = await host.post(message, { headers: { ...headers, Origin: 'https://evil.example.net' } });
      assert.equal(evil.status, 403);
      assert.match(evil.messages[0].error.message, /Origin 'https:\/\/evil.example.net' may not call this server/);
      assert.equal((await host.post(message, { headers: { ...headers, Origin: 'https://app.example.com' } })).status, 200);
      assert.equal((await host.post(message, { headers: { ...headers, Origin: host.origin } })).status, 200);
      assert.equal((await host.post(message, { headers: { ...headers, Origin: 'null' } })).status, 403);

      // fetch will not forge Host, so a raw request does (DNS rebinding).
      const rebound = await rawRequest(host, `POST /mcp HTTP/1.1\r\nHost: attacker.example:80\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`);
      assert.match(rebound, /^HTTP\/1.1 403 /);
      assert.match(rebound, /Host header 'attacker.example:80' is not one this server answers to/);

      const plain = await fetch(host.url, { method: 'POST', headers: { 'Content-Type': 'text/plain', ...headers }, body: JSON.stringify(message) });
      assert.equal(plain.status, 415);
      await plain.text();
      const accept = await host.post(message, { headers: { ...headers, Accept: 'text/html' } });
      assert.equal(accept.status, 406);

      const big = modernMessage('tools/call', { name: 'echo', arguments: { text: 'x'.repeat(8000) } });
      const tooBig = await host.post(big, { headers: HttpHost.modernHeaders(big) });
      assert.equal(tooBig.status, 413);
      assert.match(tooBig.messages[0].error.message, /larger than 4096 bytes/);

      const parse = await host.post('{"jsonrpc": "2.0", "id": 1, "method": ', { headers });
      assert.equal(parse.status, 400);
      assert.equal(parse.messages[0].error.code, -32700);
      assert.equal(Object.hasOwn(parse.messages[0], 'id'), false);

      for (const method of ['GET', 'DELETE']) {
        const r = await fetch(host.url, { method });
        assert.equal(r.status, 405, `${method} without a session`);
        await r.text();
      }
      const put = await fetch(host.url, { method: 'PUT', body: '{}' });
      assert.equal(put.status, 405);
      await put.text();
      const elsewhere = await host.post(message, { headers, path: '/other' });
      assert.equal(elsewhere.status, 404);

      // A notification is accepted with 202 and no body.
      const note = await host.post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { headers: { 'MCP-Protocol-Version': MODERN, 'Mcp-Method': 'notifications/initialized' } });
      assert.equal(note.status, 202);
      assert.equal(note.text, '');

      // After all of that, the host still serves.
      assert.equal((await host.modern('tools/list')).status, 200);
    },
  ));

test('/health answers without the MCP checks', () =>
  withHttpHost({ plugins: ECHO }, async (host) => {
    const r = await fetch(host.origin + '/health');
    assert.equal(r.status, 200);
    assert.deepEqual(await r.json(), { status: 'ok' });
  }));

// The transport reads a final answer for the status and Retry-After it
// travels with. A tool error's structuredContent is the plugin's (or an
// upstream server's) to shape: a numeric `code`, a `code` that is an object,
// an isError that is not a boolean, each answers as any result does.
test('a tool error whose structuredContent code is not text is answered, and the host serves on', () =>
  withHttpHost({ plugins: ['rawjson.so'] }, async (host) => {
    const shapes = [
      { content: [{ type: 'text', text: 'not found' }], isError: true, structuredContent: { code: 404 } },
      { content: [{ type: 'text', text: 'odd' }], isError: true, structuredContent: { code: { nested: true } } },
      { content: [{ type: 'text', text: 'odd' }], isError: true, structuredContent: { code: 'RATE_LIMITED', next: 5 } },
    ];
    for (const result of shapes) {
      const call = await host.modern('tools/call', { name: 'rawjson_mirror', arguments: result });
      assert.equal(call.status, 200, JSON.stringify(call.answer));
      assert.equal(call.answer.result.isError, true, JSON.stringify(call.answer));
      assert.deepEqual(call.answer.result.structuredContent, result.structuredContent);
    }
    const { sessionId } = await host.initialize();
    const legacy = await host.legacy(sessionId, 'tools/call', { name: 'rawjson_mirror', arguments: shapes[0] });
    assert.equal(legacy.status, 200);
    assert.equal(legacy.answer.result.structuredContent.code, 404);
    const health = await fetch(host.origin + '/health');
    assert.equal(health.status, 200);
  }));

test('2025-11-25 on the same endpoint: initialize mints Mcp-Session-Id, DELETE ends it and its GET stream, unknown is 404', () =>
  withHttpHost({ plugins: ECHO }, async (host) => {
    const { sessionId, result } = await host.initialize();
    assert.match(sessionId, /^[0-9a-f]{32}$/);
    assert.equal(result.protocolVersion, LEGACY);

    const call = await host.legacy(sessionId, 'tools/call', { name: 'echo', arguments: { text: 'legacy' } });
    assert.equal(call.status, 200);
    assert.deepEqual(call.answer.result.structuredContent, { text: 'legacy' });
    assert.equal(call.answer.result.resultType, undefined, 'no 2026-07-28 fields in a 2025-11-25 answer');

    // Without initialize, a 2025-11-25 request has no session.
    const orphan = await host.post({ jsonrpc: '2.0', id: 5, method: 'tools/list' }, { headers: { 'MCP-Protocol-Version': LEGACY } });
    assert.equal(orphan.status, 400);
    assert.match(orphan.messages[0].error.message, /needs an Mcp-Session-Id header: call initialize first/);

    const unknown = await host.legacy('0123456789abcdef0123456789abcdef', 'tools/list');
    assert.equal(unknown.status, 404);

    // The GET stream of the session opens as SSE.
    const controller = new AbortController();
    const stream = await fetch(host.url, { headers: { 'Mcp-Session-Id': sessionId, Accept: 'text/event-stream' }, signal: controller.signal });
    assert.equal(stream.status, 200);
    assert.match(stream.headers.get('content-type'), /^text\/event-stream/);
    controller.abort();

    // DELETE ends the session and closes its open GET stream with it.
    const open = await fetch(host.url, { headers: { 'Mcp-Session-Id': sessionId, Accept: 'text/event-stream' } });
    assert.equal(open.status, 200);
    const drained = (async () => {
      for await (const _ of open.body); // ends when the server ends the stream
      return 'ended';
    })();
    const end = await fetch(host.url, { method: 'DELETE', headers: { 'Mcp-Session-Id': sessionId } });
    assert.equal(end.status, 204);
    const timeout = new Promise((resolve) => setTimeout(() => resolve('still open'), 5000).unref());
    assert.equal(await Promise.race([drained, timeout]), 'ended', 'the GET stream ends with its session');
    const after = await host.legacy(sessionId, 'tools/list');
    assert.equal(after.status, 404, 'an ended session is gone');
    const again = await fetch(host.url, { method: 'DELETE', headers: { 'Mcp-Session-Id': sessionId } });
    assert.equal(again.status, 404);
  }));

test('2025-11-25: DELETE ends every GET stream of the session and gives their slots back', () =>
  withHttpHost({ plugins: ECHO, http: { max_streams_per_principal: 3 } }, async (host) => {
    const openStreams = async (sessionId) => {
      const streams = [];
      for (let i = 0; i < 3; i++) {
        const stream = await fetch(host.url, { headers: { 'Mcp-Session-Id': sessionId, Accept: 'text/event-stream' } });
        assert.equal(stream.status, 200, `stream ${i + 1}`);
        streams.push(stream);
      }
      return streams;
    };
    const { sessionId } = await host.initialize();
    const streams = await openStreams(sessionId);
    const ended = streams.map(async (stream) => {
      for await (const _ of stream.body); // ends when the server ends the stream
      return 'ended';
    });
    const end = await fetch(host.url, { method: 'DELETE', headers: { 'Mcp-Session-Id': sessionId } });
    assert.equal(end.status, 204);
    const timeout = new Promise((resolve) => setTimeout(() => resolve('still open'), 5000).unref());
    for (const stream of ended) assert.equal(await Promise.race([stream, timeout]), 'ended', 'every GET stream ends with its session');
    // The slots they held are free: a new session opens as many again.
    const next = await host.initialize();
    for (const stream of await openStreams(next.sessionId)) await stream.body.cancel();
  }));

test('2025-11-25: one principal cannot fill the session table; a full table makes room for a newcomer', async () => {
  const keys = { ann: randomBytes(24).toString('base64url'), bob: randomBytes(24).toString('base64url'), cy: randomBytes(24).toString('base64url') };
  const host = await HttpHost.start({
    plugins: ECHO,
    http: { max_legacy_sessions: 4, max_legacy_sessions_per_principal: 2 },
    sections: { auth: { mode: 'api_keys', api_keys: Object.entries(keys).map(([subject, key]) => ({ sha256: sha256Hex(key), subject })) } },
  });
  const as = (who) => ({ Authorization: `Bearer ${keys[who]}` });
  const initialize = (who) =>
    host.post(
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: who, version: '1' } } },
      { headers: as(who) },
    );
  const alive = async (who, sid) =>
    (await host.post({ jsonrpc: '2.0', id: 2, method: 'ping' }, { headers: { ...as(who), 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': LEGACY } })).status === 200;
  try {
    const ann = [];
    for (let i = 0; i < 2; i++) ann.push((await initialize('ann')).headers.get('mcp-session-id'));
    const third = await initialize('ann');
    assert.equal(third.status, 429, third.text);
    assert.match(third.messages[0].error.message, /http\.max_legacy_sessions_per_principal/);
    assert.ok(third.headers.get('retry-after'));
    for (const sid of ann) assert.ok(await alive('ann', sid), 'refusing the third ends none of the first two');

    const bob = [];
    for (let i = 0; i < 2; i++) bob.push((await initialize('bob')).headers.get('mcp-session-id'));
    await alive('bob', bob[1]);
    // The table is full: a newcomer gets in, and the least recently used
    // session of a largest holder makes room.
    const cy = await initialize('cy');
    assert.equal(cy.status, 200, cy.text);
    const states = [await alive('ann', ann[0]), await alive('ann', ann[1]), await alive('bob', bob[0]), await alive('bob', bob[1])];
    assert.deepEqual(states, [false, true, true, true], 'ann\'s oldest session made room');
    assert.ok(await alive('cy', cy.headers.get('mcp-session-id')));
  } finally {
    await host.stop();
  }
});

test('SSE: progress and log notifications arrive in order before the result, which ends the stream', () =>
  withHttpHost({ plugins: ECHO }, async (host) => {
    const reply = await host.modern(
      'tools/call',
      { name: 'progress', arguments: { steps: 3 }, _meta: { progressToken: 'p1' } },
      { meta: { 'io.modelcontextprotocol/logLevel': 'info' } },
    );
    assert.equal(reply.status, 200);
    assert.match(reply.contentType, /^text\/event-stream/);
    assert.equal(reply.headers.get('x-accel-buffering'), 'no');
    const kinds = reply.messages.map((m) => m.method ?? 'result');
    assert.deepEqual(kinds, [
      'notifications/message', 'notifications/progress',
      'notifications/message', 'notifications/progress',
      'notifications/message', 'notifications/progress',
      'result',
    ]);
    const progress = reply.messages.filter((m) => m.method === 'notifications/progress').map((m) => m.params.progress);
    assert.deepEqual(progress, [1, 2, 3]);
    assert.equal(reply.messages.at(-1).id, reply.answer.id);

    // Without a progress token or log level, the same call is plain JSON.
    const plain = await host.modern('tools/call', { name: 'progress', arguments: { steps: 3 } });
    assert.match(plain.contentType, /^application\/json/);
  }));

test('closing the response stream cancels the request', () =>
  withHttpHost({ plugins: ECHO, limits: { max_in_flight: 1 }, logLevel: 'debug' }, async (host) => {
    let controller, pending;
    const startSlow = () => {
      controller = new AbortController();
      pending = host.modern('tools/call', { name: 'slow', arguments: { ms: 30000 } }, { signal: controller.signal });
      pending.catch(() => {});
    };
    startSlow();
    // The call holds the only in-flight slot …
    let busy;
    for (let i = 0; i < 200; i++) {
      busy = await host.modern('tools/call', { name: 'echo', arguments: { text: 'b' } });
      if (busy.answer.error) break;
      // On a busy machine an echo can reach the slot first, and the slow
      // call is refused: it is started again.
      const settled = await Promise.race([
        pending.then(() => true, () => true),
        new Promise((r) => setTimeout(() => r(false), 10)),
      ]);
      if (settled) startSlow();
    }
    assert.match(busy.answer.error.message, /1 requests in flight/);
    controller.abort();
    // … until closing its stream cancels it and frees the slot.
    const started = Date.now();
    for (;;) {
      const r = await host.modern('tools/call', { name: 'echo', arguments: { text: 'free' } });
      if (!r.answer.error) break;
      assert.ok(Date.now() - started < 10000, 'the slot is freed well before the slow call would end');
      await new Promise((r) => setTimeout(r, 20));
    }
  }));

// A 2026-07-28 call of `slow` sent with a progress token, its SSE answer
// read as it comes. `started` resolves at the tool's first progress
// notification, which it sends once inside the plugin (so the call is in
// flight), and rejects when the stream ends first or none comes in 20 s;
// `done` resolves like host.modern() once the stream ends.
function slowCallInFlight(host, ms) {
  const message = {
    jsonrpc: '2.0',
    id: host.nextId++,
    method: 'tools/call',
    params: { name: 'slow', arguments: { ms }, _meta: modernMeta({ progressToken: 'in-flight' }) },
  };
  let onProgress;
  const progressed = new Promise((resolve) => (onProgress = resolve));
  const done = (async () => {
    const response = await fetch(host.url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        ...HttpHost.modernHeaders(message),
      },
      body: JSON.stringify(message),
    });
    const contentType = response.headers.get('content-type') ?? '';
    assert.match(contentType, /^text\/event-stream/, 'a call with a progress token is answered as SSE');
    const messages = [];
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of response.body) {
      buffer += decoder.decode(chunk, { stream: true });
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const data = buffer
          .slice(0, end)
          .split('\n')
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).trimStart())
          .join('\n');
        buffer = buffer.slice(end + 2);
        if (!data) continue;
        const m = JSON.parse(data);
        host.check(m, message);
        messages.push(m);
        if (m.method === 'notifications/progress') onProgress();
      }
    }
    return { status: response.status, contentType, messages, answer: messages.find((m) => Object.hasOwn(m, 'id')) };
  })();
  let timer;
  const started = Promise.race([
    progressed,
    done.then(
      () => Promise.reject(new Error('the call ended before its first progress')),
      (e) => Promise.reject(new Error(`the call failed before its first progress: ${e.message}`)),
    ),
    new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('no progress from the call in 20 s')), 20000))),
  ]).finally(() => clearTimeout(timer));
  done.catch(() => {}); // awaited by the test, or reported through `started`
  return { started, done };
}

test('SIGTERM drains: the request in flight is answered, new ones are refused, the host exits 0', async () => {
  const host = await HttpHost.start({ plugins: ECHO, http: { drain_timeout_ms: 15000 } });
  const inFlight = slowCallInFlight(host, 1500);
  // Wait until the call is running inside the plugin, then stop.
  await inFlight.started;
  host.child.kill('SIGTERM');
  await host.stderrMatching(/draining/);
  const refused = await fetch(host.url, { method: 'POST', body: '{}' }).then((r) => r.status, () => 'refused');
  assert.ok(refused === 'refused' || refused === 503, `a new request is refused (${refused})`);
  const answer = await inFlight.done;
  assert.equal(answer.status, 200);
  assert.equal(answer.answer.result.content[0].text, 'slept');
  // No second signal: that one would mean "stop now".
  assert.deepEqual(await host.exit, { code: 0, signal: null });
  await host.stop();
});

test('SIGTERM drains: answers still being written to a slow reader go out whole before the host exits', async () => {
  const host = await HttpHost.start({
    plugins: ECHO, http: { drain_timeout_ms: 15000 }, limits: { max_string_bytes: 1048576, max_message_bytes: 2097152 },
  });
  const text = 'z'.repeat(1000000);
  const { port } = new URL(host.url);
  const socket = net.connect(Number(port), '127.0.0.1');
  await new Promise((r) => socket.once('connect', r));
  const answers = answersOf(socket);
  // Four pipelined calls of some 2 MB answers each, more than the sockets
  // take unread. The client stops reading once the first answer begins to
  // come; then the stop, and the client reads on a second later.
  const answering = new Promise((r) => socket.once('data', () => r(socket.pause())));
  for (let i = 0; i < 4; ++i) {
    const message = modernMessage('tools/call', { name: 'echo', arguments: { text } }, i + 1);
    socket.write(rawPost(host, message, { headers: HttpHost.modernHeaders(message) }));
  }
  await answering;
  await new Promise((r) => setTimeout(r, 300));
  host.child.kill('SIGTERM');
  await host.stderrMatching(/draining/);
  await new Promise((r) => setTimeout(r, 1000));
  socket.resume();
  await eventually('the close', () => answers.closed(), 15000);
  // The drain ends what had not begun; what was answered comes whole.
  assert.ok(answers.responses.length >= 1, `the first answer came: ${answers.seen()}; host stderr ends:\n${host.stderr.slice(-1500)}`);
  for (const r of answers.responses) assert.equal(JSON.parse(r.body).result.structuredContent.text, text);
  assert.equal(answers.leftover(), 0, `no answer cut off (${answers.leftover()} bytes of one after ${answers.responses.length})`);
  assert.deepEqual(await host.exit, { code: 0, signal: null });
  socket.destroy();
  await host.stop();
});

test('the drain timeout cancels what is still running and the host exits', async () => {
  const host = await HttpHost.start({ plugins: ECHO, http: { drain_timeout_ms: 200 } });
  const call = slowCallInFlight(host, 30000);
  const inFlight = call.done.catch((e) => e);
  // Stop once the call is running inside the plugin.
  await call.started;
  const started = Date.now();
  const result = await host.stop({ timeoutMs: 10000 });
  assert.equal(result.code, 0);
  assert.ok(Date.now() - started < 8000, 'exited soon after the drain timeout');
  assert.ok((await inFlight) instanceof Error, 'the cut-off request got no answer');
});

test('with every stream slot taken, notifications are dropped and the answer still arrives as JSON', () =>
  withHttpHost({ plugins: ECHO, http: { max_streams: 1 } }, async (host) => {
    const { sessionId } = await host.initialize();
    const controller = new AbortController();
    const stream = await fetch(host.url, { headers: { 'Mcp-Session-Id': sessionId }, signal: controller.signal });
    assert.equal(stream.status, 200);
    const second = await fetch(host.url, { headers: { 'Mcp-Session-Id': sessionId } });
    assert.equal(second.status, 503, 'no second stream past max_streams');
    await second.text();
    const reply = await host.modern('tools/call', { name: 'progress', arguments: { steps: 2 }, _meta: { progressToken: 7 } });
    assert.match(reply.contentType, /^application\/json/);
    assert.equal(reply.answer.result.isError ?? false, false);
    controller.abort();
  }));

test('an idle keep-alive connection is closed after idle_timeout_ms, a stalled request after request_timeout_ms', () =>
  withHttpHost({ plugins: ECHO, http: { idle_timeout_ms: 300, request_timeout_ms: 300 } }, async (host) => {
    const { port } = new URL(host.url);
    for (const partial of ['', 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n']) {
      // Taken before connecting: the host cannot start the connection's
      // request time before the connection exists, so a whole 300 ms lies
      // between this and the close.
      const started = Date.now();
      const socket = net.connect(Number(port), '127.0.0.1');
      const closed = new Promise((r) => socket.once('close', r));
      await new Promise((r) => socket.once('connect', r));
      if (partial) socket.write(partial);
      await closed;
      const waited = Date.now() - started;
      assert.ok(waited >= 300 && waited < 5000, `closed after ${waited} ms`);
    }
  }));

test('each request on a keep-alive connection starts its idle time anew; a quiet one still closes on time', () =>
  withHttpHost({ plugins: ECHO, http: { idle_timeout_ms: 600, request_timeout_ms: 400 } }, async (host) => {
    const { port } = new URL(host.url);
    const socket = net.connect(Number(port), '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    let closedAt = 0;
    socket.once('close', () => (closedAt = Date.now()));
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (d) => (text += d));
    const answers = () => text.split('HTTP/1.1 200').length - 1;
    // Five requests, each sent 200 ms after the answer before it: 1 s of
    // pauses alone, well past one idle time from the first, each pause far
    // within one from the last answer (room for a slow timer on a busy machine).
    let sentAt = 0;
    for (let i = 1; i <= 5; i++) {
      const message = modernMessage('tools/call', { name: 'echo', arguments: { text: `n${i}` } }, i);
      sentAt = Date.now();
      socket.write(rawPost(host, message, { headers: HttpHost.modernHeaders(message) }));
      const until = Date.now() + 5000;
      while (answers() < i && !closedAt && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
      assert.equal(closedAt, 0, `the connection closed before answer ${i}`);
      assert.equal(answers(), i, text.slice(-300));
      if (i < 5) {
        await new Promise((r) => setTimeout(r, 200));
        assert.equal(closedAt, 0, `closed ${i} idle spells of 200 ms in, under the 600 ms idle time`);
      }
    }
    await new Promise((r, reject) => {
      if (closedAt) return r();
      const t = setTimeout(() => reject(new Error('not closed 5 s after its last request')), 5000);
      socket.once('close', () => (clearTimeout(t), r()));
    });
    // The host can start its idle time only after it read the last request,
    // which is after sentAt: a full idle time passes from sentAt to the close.
    const quiet = closedAt - sentAt;
    assert.ok(quiet >= 600 && quiet < 3000, `closed ${quiet} ms after its last request was sent`);
  }));

function rawRequest(host, text) {
  const { port } = new URL(host.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1', () => socket.write(text));
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (d) => (data += d));
    socket.on('end', () => resolve(data));
    socket.on('error', reject);
  });
}

test('over HTTP, a caller with too many requests in flight gets 429 with Retry-After; a rate-limited call says when to retry', () =>
  withHttpHost(
    { plugins: ECHO, limits: { max_in_flight_per_principal: 1 }, rateLimits: { calls_per_second: 0.01, burst: 3 } },
    async (host) => {
      const controller = new AbortController();
      const slow = host.modern('tools/call', { name: 'slow', arguments: { ms: 20000 } }, { signal: controller.signal });
      let slowAnswer;
      slow.then((answer) => (slowAnswer = answer), () => {});
      let busy;
      for (let i = 0; i < 200; i++) {
        busy = await host.modern('tools/call', { name: 'echo', arguments: { text: 'x' } });
        if (busy.status === 429) break;
        // With several I/O threads the first echo may be read before the slow
        // call and hold the caller's one place: then the slow call is the one refused.
        if (slowAnswer?.status === 429) {
          busy = slowAnswer;
          break;
        }
        await new Promise((r) => setTimeout(r, 10));
      }
      assert.equal(busy.status, 429);
      assert.equal(busy.headers.get('retry-after'), '1');
      assert.equal(busy.answer.error.data.code, 'TOO_MANY_IN_FLIGHT');
      controller.abort();

      // The bucket held 3: the slow call and the refused ones spent it (refusals by the in-flight
      // cap happen before the bucket), so keep calling until the limiter says no.
      let limited;
      for (let i = 0; i < 10; i++) {
        limited = await host.modern('tools/call', { name: 'echo', arguments: { text: 'y' } });
        if (limited.answer.result?.structuredContent?.code === 'RATE_LIMITED') break;
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(limited.status, 200, 'a tool result the agent reads');
      assert.equal(limited.answer.result.structuredContent.code, 'RATE_LIMITED');
      const ms = limited.answer.result.structuredContent.next.retryAfterMs;
      assert.equal(limited.headers.get('retry-after'), String(Math.ceil(ms / 1000)));
    },
  ));

test('a caller holding max_streams_per_principal streams gets 429 for another; the server keeps serving it', () =>
  withHttpHost({ plugins: ['conformance.so'], http: { max_streams: 10, max_streams_per_principal: 1 } }, async (host) => {
    const controller = new AbortController();
    const listen = { jsonrpc: '2.0', id: 1, method: 'subscriptions/listen', params: { _meta: modernMeta(), notifications: { toolsListChanged: true } } };
    const first = fetch(host.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...HttpHost.modernHeaders(listen) },
      body: JSON.stringify(listen),
      signal: controller.signal,
    });
    const opened = await first;
    assert.equal(opened.status, 200);
    const second = await host.post({ ...listen, id: 2 }, { headers: HttpHost.modernHeaders(listen) });
    assert.equal(second.status, 429);
    assert.equal(second.headers.get('retry-after'), '5');
    assert.match(second.messages[0].error.message, /http\.max_streams_per_principal/);
    // Plain requests are still answered.
    const call = await host.modern('tools/call', { name: 'test_simple_text', arguments: {} });
    assert.equal(call.status, 200);
    controller.abort();
    // Once the first stream is closed, its slot is free again.
    let again;
    for (let i = 0; i < 100; i++) {
      const probe = new AbortController();
      again = await fetch(host.url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...HttpHost.modernHeaders(listen) },
        body: JSON.stringify({ ...listen, id: 3 + i }),
        signal: probe.signal,
      });
      const status = again.status;
      probe.abort();
      if (status === 200) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(again.status, 200);
  }));

// ------------------------------------------------------------ raw framing

// The responses in `text`, in order: { status, headers (lower-case names),
// body } for each, Content-Length or chunked bodies; `rest` is what follows
// the last whole one.
function parseResponses(text) {
  const responses = [];
  let at = 0;
  for (;;) {
    const end = text.indexOf('\r\n\r\n', at);
    if (end < 0) break;
    const [statusLine, ...lines] = text.slice(at, end).split('\r\n');
    const headers = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    let bodyAt = end + 4;
    let body = '';
    if (headers['transfer-encoding'] === 'chunked') {
      let complete = false;
      for (;;) {
        const lineEnd = text.indexOf('\r\n', bodyAt);
        if (lineEnd < 0) break;
        const size = parseInt(text.slice(bodyAt, lineEnd), 16);
        if (text.length < lineEnd + 2 + size + 2) break;
        body += text.slice(lineEnd + 2, lineEnd + 2 + size);
        bodyAt = lineEnd + 2 + size + 2;
        if (size === 0) {
          complete = true;
          break;
        }
      }
      if (!complete) break;
    } else {
      const length = Number(headers['content-length'] ?? 0);
      if (text.length < bodyAt + length) break;
      body = text.slice(bodyAt, bodyAt + length);
      bodyAt += length;
    }
    responses.push({ status: Number(statusLine.split(' ')[1]), headers, body });
    at = bodyAt;
  }
  return { responses, rest: text.slice(at) };
}

// Writes `chunks` on a fresh connection and resolves once the host has
// closed it, or once `until(responses)` holds: { text, responses, closed }.
function rawExchange(host, chunks, { until } = {}) {
  const { port } = new URL(host.url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let text = '';
    let done = false;
    const finish = (closed) => {
      if (done) return;
      done = true;
      socket.destroy();
      resolve({ text, responses: parseResponses(text).responses, closed });
    };
    socket.setEncoding('latin1');
    socket.on('connect', () => {
      for (const c of [].concat(chunks)) socket.write(c);
    });
    socket.on('data', (d) => {
      text += d;
      if (until && until(parseResponses(text).responses)) finish(false);
    });
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true));
  });
}

// Writes `head`, then `piece` over and over (waiting for the socket to
// drain) until the host answers, closes, or `limit` bytes went out. Resolves
// once the connection is closed: { text, sent }.
function flood(host, head, piece, limit) {
  const { port } = new URL(host.url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let text = '';
    let sent = 0;
    let stopped = false;
    const pump = () => {
      while (!stopped && sent < limit) {
        sent += piece.length;
        if (!socket.write(piece)) {
          socket.once('drain', pump);
          return;
        }
      }
    };
    socket.setEncoding('latin1');
    socket.on('connect', () => {
      socket.write(head);
      pump();
    });
    socket.on('data', (d) => {
      text += d;
      stopped = true;
    });
    socket.on('end', () => {
      stopped = true;
      socket.end();
    });
    socket.on('error', () => (stopped = true));
    socket.on('close', () => resolve({ text, sent }));
  });
}

function peakRssKiB(host) {
  return Number(/^VmHWM:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${host.child.pid}/status`, 'utf8'))[1]);
}

function rawPost(host, message, { headers = {}, extra = '' } = {}) {
  const body = typeof message === 'string' ? message : JSON.stringify(message);
  const lines = [
    'POST /mcp HTTP/1.1',
    'Host: 127.0.0.1',
    'Content-Type: application/json',
    'Accept: application/json, text/event-stream',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    `Content-Length: ${Buffer.byteLength(body)}`,
  ];
  return `${lines.join('\r\n')}\r\n${extra}\r\n${body}`;
}

const CHUNKED_HEAD = (message) =>
  ['POST /mcp HTTP/1.1', 'Host: 127.0.0.1', 'Content-Type: application/json', 'Accept: application/json, text/event-stream',
    ...Object.entries(HttpHost.modernHeaders(message)).map(([k, v]) => `${k}: ${v}`), 'Transfer-Encoding: chunked', '', ''].join('\r\n');

test('chunk extensions and trailers count against the 16 KiB header bound: 431 and close, memory flat, on several connections', () =>
  withHttpHost({ plugins: ECHO }, async (host) => {
    const message = modernMessage('tools/list');
    await host.modern('tools/list'); // the host is up and warm
    const before = peakRssKiB(host);

    // A chunk line whose extension never ends, and a trailer section that
    // never ends, each on two connections at once.
    const endlessExtension = flood(host, CHUNKED_HEAD(message) + '10;name=', Buffer.alloc(64 * 1024, 'x'), 48 * 1024 * 1024);
    const endlessExtension2 = flood(host, CHUNKED_HEAD(message) + '10;name=', Buffer.alloc(64 * 1024, 'x'), 48 * 1024 * 1024);
    const trailerLine = Buffer.from(`X-Pad: ${'y'.repeat(1000)}\r\n`);
    const endlessTrailer = flood(host, CHUNKED_HEAD(message) + '2\r\n{}\r\n0\r\n', trailerLine, 48 * 1024 * 1024);
    const endlessTrailer2 = flood(host, CHUNKED_HEAD(message) + '2\r\n{}\r\n0\r\n', trailerLine, 48 * 1024 * 1024);
    for (const { text } of await Promise.all([endlessExtension, endlessExtension2, endlessTrailer, endlessTrailer2])) {
      const [answer] = parseResponses(text).responses;
      assert.ok(answer, `an answer before the close: ${JSON.stringify(text.slice(0, 200))}`);
      assert.equal(answer.status, 431);
      assert.equal(answer.headers.connection, 'close');
      assert.match(answer.body, /chunk extensions and trailer fields together are larger than 16384 bytes/);
    }
    const grownKiB = peakRssKiB(host) - before;
    assert.ok(grownKiB < 16 * 1024, `peak RSS grew by ${grownKiB} KiB while four connections sent endless framing`);

    // Many chunks, each extension small, add up past the bound too.
    const json = JSON.stringify(message);
    let body = '';
    for (const ch of json) body += `1;e=${'z'.repeat(1000)}\r\n${ch}\r\n`;
    const many = await rawExchange(host, CHUNKED_HEAD(message) + body + '0\r\n\r\n', { until: (r) => r.length === 1 });
    assert.equal(many.responses[0]?.status, 431, many.text.slice(0, 200));
    assert.equal(many.responses[0].headers.connection, 'close');

    // Small extensions and trailers are fine; trailers are dropped, never
    // read as headers (an Origin there would have been refused with 403).
    const fine = await rawExchange(
      host,
      CHUNKED_HEAD(message) + `${json.length.toString(16)};ext=1\r\n${json}\r\n0;last\r\nOrigin: https://evil.example.net\r\nX-Note: t\r\n\r\n`,
      { until: (r) => r.length === 1 },
    );
    assert.equal(fine.responses[0]?.status, 200, fine.text.slice(0, 300));
    const answer = JSON.parse(fine.responses[0].body);
    host.check(answer, message);
    assert.ok(answer.result.tools.some((t) => t.name === 'echo'));
  }));

test('pipelined requests on one keep-alive connection are all answered, in order, without more bytes', () =>
  // A request left waiting in the buffer would only end with the idle close.
  withHttpHost({ plugins: ECHO, http: { idle_timeout_ms: 3000 } }, async (host) => {
    const call = modernMessage('tools/call', { name: 'slow', arguments: { ms: 100 } }, 1);
    const echo = modernMessage('tools/call', { name: 'echo', arguments: { text: 'second' } }, 2);
    const list = modernMessage('tools/list', {}, 3);
    const bytes = [call, echo, list].map((m) => rawPost(host, m, { headers: HttpHost.modernHeaders(m) })).join('');
    const { responses, closed } = await rawExchange(host, bytes, { until: (r) => r.length === 3 });
    assert.equal(closed, false, 'the connection stays open');
    assert.deepEqual(responses.map((r) => r.status), [200, 200, 200]);
    const answers = responses.map((r) => JSON.parse(r.body));
    answers.forEach((a, i) => host.check(a, [call, echo, list][i]));
    assert.deepEqual(answers.map((a) => a.id), [1, 2, 3]);
    assert.equal(answers[0].result.content[0].text, 'slept');
    assert.equal(answers[1].result.structuredContent.text, 'second');
  }));

// A raw connection to the host, with what it has answered so far: the
// text, and the count of responses in it.
async function openAnswered(host) {
  const { port } = new URL(host.url);
  const socket = net.connect(Number(port), '127.0.0.1');
  await new Promise((r) => socket.once('connect', r));
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (d) => (text += d));
  return { socket, text: () => text, answers: () => text.split('HTTP/1.1 ').length - 1 };
}

// Answers read off `socket` as they come, each by its Content-Length:
// { responses: [{status, head, body}], closed() }.
function answersOf(socket) {
  const responses = [];
  let held = Buffer.alloc(0);
  let closed = false;
  let bytes = 0;
  let error;
  socket.on('close', () => (closed = true));
  socket.on('error', (e) => (error = e));
  socket.on('data', (chunk) => {
    bytes += chunk.length;
    held = Buffer.concat([held, chunk]);
    for (;;) {
      const end = held.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = held.subarray(0, end).toString('latin1');
      const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
      if (held.length < end + 4 + length) return;
      responses.push({ status: Number(head.split(' ')[1]), head, body: held.subarray(end + 4, end + 4 + length).toString() });
      held = held.subarray(end + 4 + length);
    }
  });
  // leftover(): bytes after the last whole answer (a cut-off one's).
  // seen(): what arrived, for a failure's message.
  const seen = () =>
    `${bytes} bytes, ${responses.length} whole answer(s) (${responses.map((r) => r.status)}), ${held.length} after them, ` +
    `socket error ${error?.code ?? 'none'}`;
  return { responses, closed: () => closed, leftover: () => held.length, seen };
}

// Pipelines `count` echo calls of some 2 MB answers each (`close` on the
// last: Connection: close), reads nothing for `pauseMs`, then reads on.
async function pipelineLargeAnswers(host, { count, pauseMs, close = false }) {
  const text = 'x'.repeat(1000000);
  const { port } = new URL(host.url);
  const socket = net.connect(Number(port), '127.0.0.1');
  await new Promise((r) => socket.once('connect', r));
  const answers = answersOf(socket);
  socket.pause();
  for (let i = 0; i < count; ++i) {
    const message = modernMessage('tools/call', { name: 'echo', arguments: { text: `${i} ${text}` } }, i + 1);
    const headers = { ...HttpHost.modernHeaders(message), ...(close && i === count - 1 ? { Connection: 'close' } : {}) };
    socket.write(rawPost(host, message, { headers }));
  }
  await new Promise((r) => setTimeout(r, pauseMs));
  socket.resume();
  await eventually(`${count} answers`, () => answers.responses.length === count || answers.closed(), 60000);
  return { socket, text, ...answers };
}

const LARGE = { max_string_bytes: 1048576, max_message_bytes: 2097152 };

test('a client that pipelines requests with large answers and reads them late gets every answer, one after another', () =>
  // Sixteen answers of some 2 MB, unread for 1.5 s: twice the 16 MiB a
  // connection may have waiting to be written, were they all made at once.
  // The next pipelined request is parsed only once the answers before it
  // have gone out (to 64 KiB), so the bound is never met.
  withHttpHost({ plugins: ECHO, limits: LARGE, http: { request_timeout_ms: 60000 } }, async (host) => {
    const count = 16;
    const { socket, text, responses, closed } = await pipelineLargeAnswers(host, { count, pauseMs: 1500 });
    assert.equal(closed(), false, `the connection stays open (${responses.length} answers)`);
    socket.destroy();
    assert.deepEqual(responses.map((r) => r.status), Array(count).fill(200));
    responses.forEach((r, i) => assert.equal(JSON.parse(r.body).result.structuredContent.text, `${i} ${text}`));
    assert.doesNotMatch(host.stderr, /stopped reading its stream/);
  }));

test('a closing connection lingers from the end of its last answer: a client that reads late gets every answer whole', () =>
  // Four answers of some 2 MB, the last request with Connection: close, and
  // 3 s before the client reads: past the 2 s linger, which counts from the
  // half-close once the answers are written, not from the last one's queueing.
  withHttpHost({ plugins: ECHO, limits: LARGE }, async (host) => {
    const count = 4;
    const { text, responses, closed } = await pipelineLargeAnswers(host, { count, pauseMs: 3000, close: true });
    assert.deepEqual(responses.map((r) => r.status), Array(count).fill(200));
    responses.forEach((r, i) => assert.equal(JSON.parse(r.body).result.structuredContent.text, `${i} ${text}`));
    await eventually('the close after the last answer', () => closed(), 10000);
  }));

test('a lingering connection waits for its answer to leave the kernel: bytes the client sends on cannot turn its close into a reset that loses it', () =>
  // One answer of some 2 MB and Connection: close, then 3 MB more from the
  // client (more than the linger reads), and 4 s before it reads: past the
  // 2 s linger. A close with the client's bytes unread is a reset, and a
  // reset throws away what the kernel had not yet sent.
  withHttpHost({ plugins: ECHO, limits: LARGE }, async (host) => {
    const text = 'y'.repeat(1000000);
    const { port } = new URL(host.url);
    const socket = net.connect(Number(port), '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    const answers = answersOf(socket);
    socket.pause();
    const message = modernMessage('tools/call', { name: 'echo', arguments: { text } }, 1);
    socket.write(rawPost(host, message, { headers: { ...HttpHost.modernHeaders(message), Connection: 'close' } }));
    socket.write(Buffer.alloc(3 << 20, 'z'));
    await new Promise((r) => setTimeout(r, 4000));
    socket.resume();
    await eventually('the answer or the close', () => answers.responses.length === 1 || answers.closed(), 20000);
    assert.equal(answers.responses.length, 1, `the answer came whole: ${answers.seen()}`);
    assert.equal(JSON.parse(answers.responses[0].body).result.structuredContent.text, text);
    socket.destroy();
  }));

test('a client that expects 100-continue is told to go on before it sends its body, then answered', () =>
  withHttpHost({ plugins: ECHO }, async (host) => {
    const message = modernMessage('tools/call', { name: 'echo', arguments: { text: 'after the leave' } }, 1);
    const bytes = rawPost(host, message, { headers: { ...HttpHost.modernHeaders(message), Expect: '100-continue' } });
    const head = bytes.indexOf('\r\n\r\n') + 4;
    const { socket, text } = await openAnswered(host);
    socket.write(bytes.slice(0, head));
    // curl waits 1 s for it before it sends the body anyway.
    await eventually('the leave to go on', () => text().startsWith('HTTP/1.1 100 Continue\r\n\r\n'), 800);
    socket.write(bytes.slice(head));
    await eventually('the answer', () => text().includes('after the leave'), 5000);
    assert.match(text().slice('HTTP/1.1 100 Continue\r\n\r\n'.length), /^HTTP\/1\.1 200 /);
    socket.destroy();
  }));

test('a request sent after a pipelined pair is read as itself, not as bytes the pair left in the buffer', () =>
  // The pair is answered from the buffer while the connection waits to
  // read: the third request must land where it is parsed from. Once with a
  // small pair, once with a pair of exactly the buffer's 16 KiB (a read that
  // fills its room).
  withHttpHost({ plugins: ECHO }, async (host) => {
    const post = (id, words) => {
      const message = modernMessage('tools/call', { name: 'echo', arguments: { text: words } }, id);
      return rawPost(host, message, { headers: HttpHost.modernHeaders(message) });
    };
    for (const pairBytes of [0, 16 * 1024]) {
      const { socket, text, answers } = await openAnswered(host);
      // Padded until it is exactly that long (Content-Length grows with it).
      const padded = (pad) => post(1, 'first of the pair') + post(2, 'second of the pair' + 'x'.repeat(pad));
      let pad = 0;
      while (pairBytes && padded(pad).length !== pairBytes) pad += pairBytes - padded(pad).length;
      const pair = padded(pad);
      socket.write(pair);
      await eventually('the pair answered', () => answers() === 2, 5000);
      await new Promise((r) => setTimeout(r, 50));
      socket.write(post(3, 'sent on its own'));
      await eventually(`the third answered (a pair of ${pair.length} bytes)`, () => answers() === 3, 5000);
      const third = text().slice(text().lastIndexOf('HTTP/1.1 '));
      assert.match(third, /^HTTP\/1\.1 200/, third);
      assert.match(third, /"id":3/, third);
      assert.match(third, /sent on its own/, third);
      socket.destroy();
    }
  }));

test('a request whose parts come apart, a pause between each, is read whole; so is the next on the connection', () =>
  // After a read that empties the socket the connection waits for it to be
  // readable again before it reads: each part below arrives into such a wait.
  withHttpHost({ plugins: ECHO }, async (host) => {
    const { socket, text, answers } = await openAnswered(host);
    const pause = () => new Promise((r) => setTimeout(r, 60));
    for (let i = 1; i <= 2; i++) {
      const message = modernMessage('tools/call', { name: 'echo', arguments: { text: `apart ${i}` } }, i);
      const bytes = rawPost(host, message, { headers: HttpHost.modernHeaders(message) });
      const head = bytes.indexOf('\r\n\r\n') + 4;
      for (const part of [bytes.slice(0, 20), bytes.slice(20, head), bytes.slice(head, head + 10), bytes.slice(head + 10)]) {
        await pause();
        socket.write(part);
      }
      await eventually(`answer ${i}`, () => answers() === i && text().includes(`apart ${i}`), 5000);
    }
    socket.destroy();
  }));

test('connections that never send a request give their places back within request_timeout_ms', () =>
  withHttpHost({ plugins: ECHO, http: { max_connections: 4, request_timeout_ms: 1000 } }, async (host) => {
    const { port } = new URL(host.url);
    const silent = [];
    for (let i = 0; i < 4; i++)
      silent.push(await new Promise((resolve) => {
        const socket = net.connect(Number(port), '127.0.0.1', () => resolve(socket));
        socket.closedAt = null;
        socket.on('close', () => (socket.closedAt = Date.now()));
        socket.on('error', () => {});
      }));
    const opened = Date.now();
    // Every place is held: a new connection is refused at once.
    assert.equal((await fetch(host.origin + '/health')).status, 503);
    // Not for the idle timeout (120 s): for the time one request may take.
    await eventually('the silent connections closed', () => silent.every((s) => s.closedAt !== null), 5000);
    for (const s of silent) assert.ok(s.closedAt - opened < 3000, `closed after ${s.closedAt - opened} ms`);
    assert.equal((await fetch(host.origin + '/health')).status, 200);
  }));

test('HEAD is answered with no body, so the next answer on the connection is read as itself', () =>
  withHttpHost({ plugins: ECHO }, async (host) => {
    const get = 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
    for (const target of ['/health', '/mcp', '/nowhere']) {
      const { text, responses } = await rawExchange(host, `HEAD ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n` + get, {
        until: (r) => r.length === 2,
      });
      assert.equal(responses.length, 2, text);
      assert.equal(responses[0].status, 405, text);
      assert.equal(responses[0].headers['content-length'], '0', text);
      assert.equal(responses[0].body, '', text);
      assert.match(responses[0].headers.allow, /GET/);
      // The bytes right after the first header block are the second status line.
      assert.match(text.slice(text.indexOf('\r\n\r\n') + 4), /^HTTP\/1\.1 200 /, text);
      assert.deepEqual(JSON.parse(responses[1].body), { status: 'ok' });
    }
  }));

test('framing the host cannot read reliably is refused and the connection closed: no smuggled request runs', () =>
  withHttpHost({ plugins: ECHO }, async (host) => {
    const smuggled = 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
    const head = (te, version = '1.1') =>
      `POST /mcp HTTP/${version}\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: ${te}\r\n\r\n`;
    const cases = [
      [head('chunked, identity') + `${smuggled.length.toString(16)}\r\n${smuggled}\r\n0\r\n\r\n`, 400, /does not end the body with chunked/],
      [head('identity') + smuggled, 400, /does not end the body with chunked/],
      [head('chunked, chunked') + `2\r\n{}\r\n0\r\n\r\n` + smuggled, 400, /does not end the body with chunked/],
      [head('gzip, chunked') + `2\r\n{}\r\n0\r\n\r\n` + smuggled, 501, /coding this server does not decode/],
      [head('chunked', '1.0') + `2\r\n{}\r\n0\r\n\r\n` + smuggled, 400, /HTTP\/1.0 has no Transfer-Encoding/],
      [`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}` + smuggled, 400, /Malformed HTTP request/],
    ];
    for (const [bytes, status, pattern] of cases) {
      const { text, responses, closed } = await rawExchange(host, bytes);
      assert.equal(closed, true, `closed after ${JSON.stringify(bytes.slice(0, 90))}`);
      assert.equal(responses.length, 1, `one answer, not the smuggled request's too: ${text}`);
      assert.equal(responses[0].status, status, text);
      assert.match(responses[0].body, pattern);
      assert.equal(responses[0].headers.connection, 'close');
    }

    // Content-Type is the media type itself, with parameters or none.
    const message = modernMessage('tools/list');
    const headers = HttpHost.modernHeaders(message);
    for (const type of ['application/jsonl', 'application/json-seq', 'text/application/json', 'application/json2; x=1']) {
      const r = await host.post(message, { headers: { ...headers, 'Content-Type': type } });
      assert.equal(r.status, 415, type);
    }
    for (const type of ['application/json; charset=utf-8', 'Application/JSON', 'application/json ;charset=UTF-8']) {
      const r = await host.post(message, { headers: { ...headers, 'Content-Type': type } });
      assert.equal(r.status, 200, type);
    }
  }));

test('a header the host reads once, sent twice, is refused naming it', () =>
  withHttpHost({ plugins: ECHO }, async (host) => {
    const message = modernMessage('tools/call', { name: 'echo', arguments: { text: 'x' } });
    const headers = HttpHost.modernHeaders(message);
    const twice = [
      ['Host', 'Host: 127.0.0.1'],
      ['Origin', `Origin: ${host.origin}\r\nOrigin: https://evil.example.net`],
      ['Mcp-Method', 'Mcp-Method: tools/list'],
      ['Mcp-Name', 'mcp-name: noop'],
      ['MCP-Protocol-Version', `MCP-Protocol-Version: ${LEGACY}`],
      ['Authorization', 'Authorization: Bearer a\r\nAuthorization: Bearer b'],
      ['Content-Type', 'Content-Type: application/json'],
      ['Mcp-Session-Id', 'Mcp-Session-Id: a\r\nMcp-Session-Id: b'],
      ['Mcp-Param-Zone', 'Mcp-Param-Zone: a\r\nmcp-param-zone: b'],
    ];
    for (const [name, extra] of twice) {
      const { responses } = await rawExchange(host, rawPost(host, message, { headers, extra: extra + '\r\n' }), { until: (r) => r.length === 1 });
      assert.equal(responses[0]?.status, 400, name);
      const answer = JSON.parse(responses[0].body);
      host.check(answer);
      assert.equal(answer.error.code, -32600);
      assert.equal(answer.error.message, `The request carries the ${name} header more than once; send it once.`);
    }
    // Once each, the same request is served.
    const { responses } = await rawExchange(host, rawPost(host, message, { headers }), { until: (r) => r.length === 1 });
    assert.equal(responses[0].status, 200);
  }));

test('Mcp-Session-Id is ignored on a 2026-07-28 request; a 2025-11-25 session refuses another MCP-Protocol-Version', () =>
  withHttpHost({ plugins: ECHO }, async (host) => {
    const stale = await host.modern('tools/list', {}, { headers: { 'Mcp-Session-Id': '0123456789abcdef0123456789abcdef' } });
    assert.equal(stale.status, 200);
    assert.ok(stale.answer.result.tools.length > 0);
    assert.equal(stale.headers.get('mcp-session-id'), null, 'no session id echoed');

    const { sessionId } = await host.initialize();
    const live = await host.modern('tools/call', { name: 'echo', arguments: { text: 'm' } }, { headers: { 'Mcp-Session-Id': sessionId } });
    assert.equal(live.status, 200);
    assert.equal(live.answer.result.resultType, 'complete', 'served as 2026-07-28, not inside the session');

    for (const version of ['2024-01-01', 'not-a-version', MODERN]) {
      const reply = await host.post(
        { jsonrpc: '2.0', id: 40, method: 'tools/list' },
        { headers: { 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': version } },
      );
      assert.equal(reply.status, 400, version);
      assert.equal(reply.messages[0].id, 40);
      assert.match(reply.messages[0].error.message, new RegExp(`MCP-Protocol-Version '${version}' is not supported in a 2025-11-25 session`));
      const get = await fetch(host.url, { headers: { 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': version } });
      assert.equal(get.status, 400);
      await get.text();
    }
    // Its GET stream is SSE only.
    const jsonGet = await fetch(host.url, { headers: { 'Mcp-Session-Id': sessionId, Accept: 'application/json' } });
    assert.equal(jsonGet.status, 406);
    assert.match((await jsonGet.json()).error.message, /GET opens an SSE stream: Accept must allow text\/event-stream/);
    // Its own version, or none, is served.
    assert.equal((await host.legacy(sessionId, 'tools/list')).status, 200);
    const bare = await host.post({ jsonrpc: '2.0', id: 41, method: 'tools/list' }, { headers: { 'Mcp-Session-Id': sessionId } });
    assert.equal(bare.status, 200);
  }));

test('Accept decides between JSON and SSE; neither is 406 naming what is accepted', () =>
  withHttpHost({ plugins: ECHO }, async (host) => {
    const call = (accept, { _meta, ...params } = { name: 'echo', arguments: { text: 'a' } }) => {
      const message = modernMessage('tools/call', params, 9);
      Object.assign(message.params._meta, _meta ?? {});
      return host.post(message, { headers: { ...HttpHost.modernHeaders(message), Accept: accept } });
    };
    const sseOnly = await call('text/event-stream');
    assert.equal(sseOnly.status, 200);
    assert.match(sseOnly.contentType, /^text\/event-stream/);
    assert.equal(sseOnly.messages.length, 1);
    assert.equal(sseOnly.messages[0].result.structuredContent.text, 'a');

    // JSON only: the notifications are dropped, the result comes as JSON.
    const jsonOnly = await call('application/json', { name: 'progress', arguments: { steps: 2 }, _meta: { progressToken: 'p' } });
    assert.match(jsonOnly.contentType, /^application\/json/);
    assert.equal(jsonOnly.messages.length, 1);
    assert.equal(jsonOnly.messages[0].id, 9);

    for (const accept of ['text/event-stream, application/json;q=0', 'text/*', 'application/json;q=0.5, text/event-stream']) {
      assert.match((await call(accept)).contentType, /^(text\/event-stream|application\/json)/, accept);
    }
    assert.match((await call('text/*, application/json;q=0')).contentType, /^text\/event-stream/);
    assert.match((await call('application/*')).contentType, /^application\/json/);

    for (const accept of ['text/html', 'application/json;q=0, text/event-stream;q=0', 'application/jsonx, text/event-streams']) {
      const refused = await call(accept);
      assert.equal(refused.status, 406, accept);
      assert.equal(
        refused.messages[0].error.message,
        `Accept must allow application/json or text/event-stream (this endpoint answers with one of them), not '${accept}'.`,
      );
    }

    // A subscription is nothing but its stream.
    const listen = { jsonrpc: '2.0', id: 12, method: 'subscriptions/listen', params: { _meta: modernMeta(), notifications: { toolsListChanged: true } } };
    const noStream = await host.post(listen, { headers: { ...HttpHost.modernHeaders(listen), Accept: 'application/json' } });
    assert.equal(noStream.status, 406);
    assert.match(noStream.messages[0].error.message, /Accept must allow text\/event-stream/);
  }));

test('a POST that is neither request, notification nor response is -32600 with 400, not 202', () =>
  withHttpHost({ plugins: ECHO }, async (host) => {
    for (const body of ['{}', '{"jsonrpc":"2.0"}', '{"jsonrpc":"2.0","id":3}', '{"jsonrpc":"2.0","method":7}']) {
      const reply = await host.post(body, { headers: { 'MCP-Protocol-Version': MODERN } });
      assert.equal(reply.status, 400, body);
      assert.equal(reply.messages.length, 1, body);
      assert.equal(reply.messages[0].error.code, -32600, body);
    }
    const note = await host.post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { headers: { 'MCP-Protocol-Version': MODERN } });
    assert.equal(note.status, 202);
  }));
