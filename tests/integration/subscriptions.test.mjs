// subscriptions/listen (2026-07-28): acknowledged first, every message tagged
// with the subscription id, only what was asked for, fanned out to every
// open subscription, ended by cancel (stdio), by closing the stream (HTTP) or
// gracefully by the server on drain.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHost, modernMeta } from './lib/host.mjs';
import { HttpHost } from './lib/http_host.mjs';

const FIXTURE = { plugins: ['conformance.so'] };
const SUB = 'io.modelcontextprotocol/subscriptionId';

function listen(host, id, notifications) {
  host.send({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { _meta: modernMeta(), notifications } });
}

const tagged = (id, method) => (m) => m.method === method && m.params?._meta?.[SUB] === id;

test('stdio: acknowledged with the honored filter, then only the asked-for changes, tagged per subscription', () =>
  withHost(FIXTURE, async (host) => {
    listen(host, 'tools', { toolsListChanged: true });
    listen(host, 'watch', { resourceSubscriptions: ['test://watched-resource'], promptsListChanged: false });
    const ackTools = await host.waitFor(tagged('tools', 'notifications/subscriptions/acknowledged'));
    assert.deepEqual(ackTools.message.params.notifications, { toolsListChanged: true });
    const ackWatch = await host.waitFor(tagged('watch', 'notifications/subscriptions/acknowledged'));
    assert.deepEqual(ackWatch.message.params.notifications, { resourceSubscriptions: ['test://watched-resource'] });

    const from = host.messages.length;
    assert.equal((await host.modern('tools/call', { name: 'test_trigger_tool_change', arguments: {} })).error, undefined);
    assert.equal((await host.modern('tools/call', { name: 'test_touch_watched_resource', arguments: {} })).error, undefined);
    await host.modern('tools/call', { name: 'test_trigger_prompt_change', arguments: {} });
    await host.waitFor(tagged('tools', 'notifications/tools/list_changed'), { fromIndex: from });
    const updated = await host.waitFor(tagged('watch', 'notifications/resources/updated'), { fromIndex: from });
    assert.equal(updated.message.params.uri, 'test://watched-resource');
    await host.ping();

    const after = host.since(from).filter((m) => m.params?._meta?.[SUB] !== undefined);
    assert.deepEqual(
      after.map((m) => `${m.params._meta[SUB]} ${m.method}`).sort(),
      ['tools notifications/tools/list_changed', 'watch notifications/resources/updated'],
      'nobody got what they did not ask for (no prompts/list_changed at all)',
    );

    // notifications/cancelled ends one subscription; the other keeps receiving.
    host.notify('notifications/cancelled', { requestId: 'tools' });
    await host.ping();
    const later = host.messages.length;
    await host.modern('tools/call', { name: 'test_trigger_tool_change', arguments: {} });
    await host.modern('tools/call', { name: 'test_touch_watched_resource', arguments: {} });
    await host.waitFor(tagged('watch', 'notifications/resources/updated'), { fromIndex: later });
    await host.ping();
    assert.equal(host.since(later).filter(tagged('tools', 'notifications/tools/list_changed')).length, 0);
    assert.equal(host.since(0).filter((m) => m.id === 'tools').length, 0, 'a cancelled subscription gets no answer');
  }));

test('stdio: a malformed filter is refused with -32602 and nothing is acknowledged', () =>
  withHost(FIXTURE, async (host) => {
    for (const [id, notifications] of [
      ['a', undefined],
      ['b', { toolsListChanged: 'yes' }],
      ['c', { resourceSubscriptions: 'test://watched-resource' }],
      ['d', { resourceSubscriptions: [''] }],
    ]) {
      const params = { _meta: modernMeta() };
      if (notifications !== undefined) params.notifications = notifications;
      const answer = await host.request('subscriptions/listen', params, { id });
      assert.equal(answer.error.code, -32602, id);
    }
    assert.equal(host.since(0).filter((m) => m.method === 'notifications/subscriptions/acknowledged').length, 0);
  }));

test('stdio: a second listen under the id of one still open is refused; once cancelled the id is free again', () =>
  withHost(FIXTURE, async (host) => {
    listen(host, 'dup', { toolsListChanged: true });
    await host.waitFor(tagged('dup', 'notifications/subscriptions/acknowledged'));
    const second = await host.request('subscriptions/listen', { _meta: modernMeta(), notifications: { promptsListChanged: true } }, { id: 'dup' });
    assert.equal(second.error?.code, -32600, JSON.stringify(second));
    assert.match(second.error.message, /already in use/);
    await host.ping();
    assert.equal(host.since(0).filter(tagged('dup', 'notifications/subscriptions/acknowledged')).length, 1);
    // The first one still delivers.
    const from = host.messages.length;
    await host.modern('tools/call', { name: 'test_trigger_tool_change', arguments: {} });
    await host.waitFor(tagged('dup', 'notifications/tools/list_changed'), { fromIndex: from });

    host.notify('notifications/cancelled', { requestId: 'dup' });
    await host.ping();
    const again = host.messages.length;
    listen(host, 'dup', { toolsListChanged: true });
    await host.waitFor(tagged('dup', 'notifications/subscriptions/acknowledged'), { fromIndex: again });
  }));

test('HTTP: two listen streams both receive a change; SIGTERM ends each with its final result', async () => {
  const host = await HttpHost.start({ ...FIXTURE, http: { drain_timeout_ms: 5000 } });
  try {
    const open = (id) => {
      const message = { jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { _meta: modernMeta(), notifications: { toolsListChanged: true } } };
      return host.post(message, { headers: HttpHost.modernHeaders(message) });
    };
    const streams = [open(1), open(2)];
    // The streams open while the changes are made; repeated, so each stream
    // sees at least one after its acknowledgement.
    for (let i = 0; i < 10; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const r = await host.modern('tools/call', { name: 'test_trigger_tool_change', arguments: {} });
      assert.equal(r.status, 200);
    }
    host.child.kill('SIGTERM');
    const replies = await Promise.all(streams);
    for (const [i, reply] of replies.entries()) {
      const id = i + 1;
      assert.equal(reply.status, 200);
      assert.match(reply.contentType, /^text\/event-stream/);
      const kinds = reply.messages.map((m) => m.method ?? 'result');
      assert.equal(kinds[0], 'notifications/subscriptions/acknowledged', 'the acknowledgement comes first');
      assert.ok(kinds.includes('notifications/tools/list_changed'), `stream ${id} got the change`);
      assert.equal(kinds.at(-1), 'result', 'the server ended it with its final result');
      const final = reply.messages.at(-1);
      assert.equal(final.id, id);
      assert.equal(final.result._meta[SUB], id);
      for (const m of reply.messages) if (m.method) assert.equal(m.params._meta[SUB], id);
    }
    assert.deepEqual(await host.exit, { code: 0, signal: null });
  } finally {
    await host.stop();
  }
});

test('2025-11-25 over stdio: resources/subscribe delivers updates of that resource until resources/unsubscribe', () =>
  withHost(FIXTURE, async (host) => {
    await host.initialize();
    assert.deepEqual((await host.request('resources/subscribe', { uri: 'test://watched-resource' })).result, {});
    assert.deepEqual((await host.request('resources/subscribe', { uri: 'test://static-text' })).result, {});
    const from = host.messages.length;
    await host.request('tools/call', { name: 'test_touch_watched_resource', arguments: {} });
    const updated = await host.waitFor((m) => m.method === 'notifications/resources/updated', { fromIndex: from });
    assert.equal(updated.message.params.uri, 'test://watched-resource');
    await host.ping();
    assert.equal(host.notifications('notifications/resources/updated', from).length, 1, 'only the touched resource');

    assert.deepEqual((await host.request('resources/unsubscribe', { uri: 'test://watched-resource' })).result, {});
    const later = host.messages.length;
    await host.request('tools/call', { name: 'test_touch_watched_resource', arguments: {} });
    await host.ping();
    assert.equal(host.notifications('notifications/resources/updated', later).length, 0, 'none after unsubscribe');

    const bad = await host.request('resources/subscribe', { uri: '' });
    assert.equal(bad.error.code, -32602);
  }));

test('2025-11-25 over HTTP: a session subscribed to a resource gets its updates on the GET stream', async () => {
  const host = await HttpHost.start(FIXTURE);
  try {
    const { sessionId } = await host.initialize();
    const subscribed = await host.legacy(sessionId, 'resources/subscribe', { uri: 'test://watched-resource' });
    assert.deepEqual(subscribed.answer.result, {});
    const controller = new AbortController();
    const stream = await fetch(host.url, { headers: { 'Mcp-Session-Id': sessionId, Accept: 'text/event-stream' }, signal: controller.signal });
    assert.equal(stream.status, 200);
    const reader = stream.body.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const deadline = Date.now() + 15000;
    // Touch until the update shows on the stream (the GET may attach just after a touch).
    while (!text.includes('notifications/resources/updated') && Date.now() < deadline) {
      await host.legacy(sessionId, 'tools/call', { name: 'test_touch_watched_resource', arguments: {} });
      const chunk = await Promise.race([reader.read(), new Promise((r) => setTimeout(() => r(null), 300))]);
      if (chunk?.value) text += decoder.decode(chunk.value, { stream: true });
    }
    controller.abort();
    const event = text.split('\n').find((l) => l.startsWith('data:') && l.includes('resources/updated'));
    assert.ok(event, `an update arrived on the GET stream; it carried:\n${text.slice(0, 500)}`);
    assert.deepEqual(JSON.parse(event.slice(5)), {
      jsonrpc: '2.0',
      method: 'notifications/resources/updated',
      params: { uri: 'test://watched-resource' },
    });
  } finally {
    await host.stop();
  }
});
