// rate_limits with session.backend: redis: two real hosts on one real
// redis-server draw from the same bucket per principal, and while that
// Redis is gone every call is refused with STATE_UNAVAILABLE, never let
// through, until it is back.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Host, binaryPath } from './lib/host.mjs';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// One redis-server of this file's own, on a unix socket in a fresh folder.
class RedisServer {
  constructor() {
    this.dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-redis-'));
    this.socket = path.join(this.dir, 'redis.sock');
  }

  async start() {
    this.child = spawn(
      'redis-server',
      ['--port', '0', '--unixsocket', this.socket, '--save', '', '--appendonly', 'no', '--dir', this.dir],
      { stdio: 'ignore' },
    );
    this.exit = once(this.child, 'exit');
    for (let i = 0; i < 500 && !existsSync(this.socket); ++i) await sleep(10);
    assert.ok(existsSync(this.socket), 'redis-server did not open its socket');
  }

  async stop() {
    if (!this.child) return;
    this.child.kill('SIGKILL');
    await this.exit;
    this.child = undefined;
    rmSync(this.socket, { force: true });
  }
}

const redis = new RedisServer();
before(() => redis.start());
after(async () => {
  await redis.stop();
  rmSync(redis.dir, { recursive: true, force: true });
});

const sessionPlugin = path.resolve(path.dirname(binaryPath()), '../lib/gatehouse/plugins/session.so');

let prefixes = 0;
function instance(rateLimits, prefix) {
  return new Host({
    plugins: ['echo.so', sessionPlugin],
    gate: true,
    rateLimits,
    sections: {
      session: {
        backend: 'redis',
        pinned: { store: 'shop', user: 'ann' },
        redis: { url: `unix://${redis.socket}`, key_prefix: prefix },
      },
    },
  });
}

async function closeAll(hosts) {
  for (const host of hosts) {
    const { code } = await host.close();
    assert.equal(code, 0, host.stderr.slice(-2000));
  }
}

const call = (host, name, args) => host.modern('tools/call', { name, arguments: args });

// A gate session of the one principal (the local user), in the shared Redis:
// its handle works on every instance.
async function connect(host) {
  const connected = await call(host, 'session_connect', { topic: 'rates' });
  assert.equal(connected.result.isError, undefined, JSON.stringify(connected.result));
  return connected.result.structuredContent.session;
}

test('two hosts on one Redis grant one principal the burst of a tool together, not each', async () => {
  const prefix = `shared-${++prefixes}:`;
  const limits = { per_tool: { echo: { calls_per_second: 0.001, burst: 3 } } };
  const hosts = [instance(limits, prefix), instance(limits, prefix)];
  try {
    const [a, b] = hosts;
    const session = await connect(a);
    for (const [host, text] of [
      [a, 'one'],
      [b, 'two'],
      [a, 'three'],
    ]) {
      const granted = await call(host, 'echo', { session, text });
      assert.equal(granted.result.isError, undefined, JSON.stringify(granted.result));
      assert.equal(granted.result.structuredContent.text, text);
    }
    for (const host of hosts) {
      const refused = await call(host, 'echo', { session, text: 'four' });
      assert.equal(refused.result.isError, true);
      assert.equal(refused.result.structuredContent.code, 'RATE_LIMITED');
      assert.equal(refused.result.structuredContent.next.limit, 'rate_limits.per_tool.echo');
      assert.ok(refused.result.structuredContent.next.retryAfterMs > 900000);
    }
  } finally {
    await closeAll(hosts);
  }
});

test('Redis gone: calls are refused with STATE_UNAVAILABLE and the error is logged; back: calls are counted again', async () => {
  const host = instance({ calls_per_second: 1000, burst: 1000 }, `down-${++prefixes}:`);
  try {
    const session = await connect(host);
    const before = await call(host, 'echo', { session, text: 'before' });
    assert.equal(before.result.structuredContent?.text, 'before', JSON.stringify(before.result));
    await redis.stop();
    // Refused by the rate limit, before the gate (whose sessions are in the same Redis).
    const refused = await call(host, 'echo', { session, text: 'while down' });
    assert.equal(refused.result.isError, true);
    assert.equal(refused.result.structuredContent.code, 'STATE_UNAVAILABLE');
    assert.match(refused.result.structuredContent.message, /rate limits/);
    assert.deepEqual(refused.result.structuredContent.next, { action: 'retry' });
    await host.stderrMatching(/rate_limits: the buckets cannot be read, so tool calls are refused.*redis\.sock/);

    await redis.start(); // empty: no script, no sessions
    let answer;
    for (let i = 0; i < 100; ++i) {
      answer = await call(host, 'session_connect', { topic: 'rates' });
      if (answer.result.structuredContent?.code !== 'STATE_UNAVAILABLE') break;
      await sleep(50); // the Redis clients pause after failures
    }
    assert.equal(answer.result.isError, undefined, JSON.stringify(answer.result));
    await host.stderrMatching(/rate_limits: the buckets answer again/);
    const after = await call(host, 'echo', { session: answer.result.structuredContent.session, text: 'after' });
    assert.equal(after.result.structuredContent?.text, 'after', JSON.stringify(after.result));
  } finally {
    await closeAll([host]);
  }
});
