// Requests overlap: a slow tool call does not hold up cheap requests or other
// calls, answers come back in completion order, cancellation frees the
// worker, and a non-reentrant plugin is never entered twice at once.
// Every assertion is about order or counts, never about durations.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHost, modernMeta } from './lib/host.mjs';

function toolCall(id, name, args, meta) {
  const params = { name, arguments: args };
  if (meta) params._meta = meta;
  return { jsonrpc: '2.0', id, method: 'tools/call', params };
}

test('a slow call does not block ping, tools/list or another call', () =>
  withHost(async (host) => {
    await host.initialize();
    host.send(toolCall('slow', 'slow', { ms: 1500 }));
    host.send({ jsonrpc: '2.0', id: 'ping', method: 'ping' });
    host.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    host.send(toolCall('echo', 'echo', { text: 'quick' }));
    host.send({ jsonrpc: '2.0', id: 'modern-list', method: 'tools/list', params: { _meta: modernMeta() } });

    const slow = await host.response('slow');
    assert.equal(slow.message.result.content[0].text, 'slept');
    for (const id of ['ping', 'list', 'echo', 'modern-list']) {
      const other = await host.response(id);
      assert.ok(other.index < slow.index, `${id} was answered before the slow call`);
    }
  }));

test('a quick tool that turns slow does not hold stdin', () =>
  // After a run of quick calls the reader runs the tool's next call itself
  // (transport/stdio_transport.cpp); this one sleeps, so the reading must
  // pass to another worker and the requests behind it are still answered
  // first. Without that hand-over they would wait the whole two seconds.
  withHost(async (host) => {
    for (let i = 0; i < 24; i++) {
      const quick = await host.modern('tools/call', { name: 'slow', arguments: { ms: 0 } });
      assert.equal(quick.result.content[0].text, 'slept');
    }
    host.send(toolCall('turned-slow', 'slow', { ms: 2000 }, modernMeta()));
    host.send({ jsonrpc: '2.0', id: 'ping', method: 'ping', params: { _meta: modernMeta() } });
    host.send(toolCall('echo', 'echo', { text: 'behind it' }, modernMeta()));
    host.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list', params: { _meta: modernMeta() } });

    const slow = await host.response('turned-slow');
    assert.equal(slow.message.result.content[0].text, 'slept');
    for (const id of ['ping', 'echo', 'list']) {
      const other = await host.response(id);
      assert.ok(other.index < slow.index, `${id} was answered before the call that turned slow`);
    }
  }));

test('answers come back in completion order, not request order', () =>
  withHost(async (host) => {
    host.send(toolCall('first', 'slow', { ms: 800 }, modernMeta()));
    host.send(toolCall('second', 'echo', { text: 'b' }, modernMeta()));
    const first = await host.response('first');
    const second = await host.response('second');
    assert.ok(second.index < first.index, 'the later, quicker request was answered first');
    assert.equal(second.message.result.structuredContent.text, 'b');
  }));

test('notifications/cancelled stops the plugin and the call gets no answer (2026-07-28)', () =>
  // With a single worker, the echo below can only run once the cancelled
  // slow call has returned from the plugin: its answer proves the plugin
  // stopped. Without working cancellation the slow call would hold the
  // worker for a minute and the test would time out.
  withHost({ limits: { workers: 1 } }, async (host) => {
    host.send(toolCall('long', 'slow', { ms: 60000 }, modernMeta()));
    host.notify('notifications/cancelled', { requestId: 'long', reason: 'no longer needed' });
    const echo = await host.modern('tools/call', { name: 'echo', arguments: { text: 'after cancel' } });
    assert.equal(echo.result.structuredContent.text, 'after cancel');
    // A second round proves the worker is free for good, not by luck.
    const again = await host.modern('tools/call', { name: 'echo', arguments: { text: 'again' } });
    assert.equal(again.result.structuredContent.text, 'again');
    assert.equal(host.messages.some((m) => m.message.id === 'long'), false, 'the cancelled call got no answer');
  }));

test('a call cancelled while it waits for a worker never reaches the plugin', () =>
  // One worker, held by a slow call; `progress` queues behind it and is
  // cancelled there. Had it run, its plugin log ("[echo] step 1") would be on
  // stderr before the crash detail the later `crash` call logs.
  withHost({ limits: { workers: 1 } }, async (host) => {
    host.send(toolCall('holder', 'slow', { ms: 60000 }, modernMeta()));
    host.send(toolCall('queued', 'progress', { steps: 1 }, modernMeta()));
    host.notify('notifications/cancelled', { requestId: 'queued' });
    host.notify('notifications/cancelled', { requestId: 'holder' });
    const crash = await host.modern('tools/call', { name: 'crash', arguments: {} });
    assert.equal(crash.result.isError, true);
    await host.stderrMatching(/\/secret\/path/);
    assert.doesNotMatch(host.stderr, /\[echo\] step 1/, 'the cancelled call ran in the plugin');
    assert.equal(host.messages.some((m) => ['holder', 'queued'].includes(m.message.id)), false);
  }));

test('cancelling an unknown or finished request changes nothing', () =>
  withHost(async (host) => {
    const done = await host.modern('tools/call', { name: 'echo', arguments: { text: 'x' } });
    assert.ok(done.result);
    const from = host.messages.length;
    host.notify('notifications/cancelled', { requestId: done.id });
    host.notify('notifications/cancelled', { requestId: 'never-sent' });
    host.notify('notifications/cancelled', {});
    host.notify('notifications/cancelled');
    await host.ping();
    assert.equal(host.messages.length, from + 1, 'only the ping was answered');
  }));

test('the host exits promptly on end of input while a call is cancelled', () =>
  withHost({ limits: { workers: 1 } }, async (host) => {
    host.send(toolCall('long', 'slow', { ms: 60000 }, modernMeta()));
    host.notify('notifications/cancelled', { requestId: 'long' });
    await host.ping();
    // close() (run by withHost) fails the test if the host does not exit.
  }));

// stdin is waited on in a blocking read, which a stop interrupts: the client
// holding stdin open must not keep the host from stopping.
for (const [when, busy] of [
  ['idle', false],
  ['with a call in flight', true],
]) {
  test(`SIGTERM stops a stdio host whose client holds stdin open, ${when}`, async () => {
    const { Host } = await import('./lib/host.mjs');
    const host = new Host();
    try {
      await host.initialize();
      await host.ping();
      if (busy) host.send(toolCall('long', 'slow', { ms: 60000 }));
      await host.ping();
      host.child.kill('SIGTERM');
      // A hang guard, not a timing: a read nothing interrupts never returns.
      let timer;
      const exited = await Promise.race([
        host.exit,
        new Promise((resolve) => {
          timer = setTimeout(() => resolve(null), 20000);
        }),
      ]);
      clearTimeout(timer);
      assert.notEqual(exited, null, 'the host exited after SIGTERM while stdin stayed open');
      assert.equal(exited.code, 0, `the host exited cleanly; stderr:\n${host.stderr.slice(-2000)}`);
    } finally {
      await host.close();
    }
  });
}

test('a non-reentrant plugin runs one call at a time while others run in parallel', () =>
  withHost(async (host) => {
    const ids = ['o1', 'o2', 'o3', 'o4'];
    for (const id of ids) host.send(toolCall(id, 'overlap', { ms: 200 }, modernMeta()));
    host.send(toolCall('e1', 'echo', { text: 'parallel 1' }, modernMeta()));
    host.send(toolCall('e2', 'echo', { text: 'parallel 2' }, modernMeta()));

    const overlaps = await Promise.all(ids.map((id) => host.response(id)));
    for (const o of overlaps) assert.equal(o.message.result.structuredContent.max_concurrent, 1);
    const lastOverlap = Math.max(...overlaps.map((o) => o.index));
    for (const id of ['e1', 'e2']) {
      const echo = await host.response(id);
      assert.ok(echo.index < lastOverlap, `${id} did not wait for the serialized plugin`);
    }
  }));
