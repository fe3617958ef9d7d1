// Redis over TLS with the real binary: two gatehouse instances keep their
// sessions in one redis-server reached at a rediss:// URL (the OpenSSL
// module's tunnel under hiredis), so a session opened on one is served by
// the other; a certificate the host does not trust stops the start, saying so.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { Host, binaryPath } from './lib/host.mjs';
import { Redis } from './lib/redis.mjs';

const sessionPlugin = path.resolve(path.dirname(binaryPath()), '../lib/gatehouse/plugins/session.so');
let redis;

before(async () => {
  redis = await Redis.start({ tls: true });
});

after(async () => {
  await redis.close();
});

function hostOn(tls) {
  return new Host({
    gate: true,
    plugins: [sessionPlugin, 'gated.so'],
    sections: {
      session: {
        backend: 'redis',
        redis: { url: redis.tlsUrl, key_prefix: 'itest-tls:', tls },
        pinned: { store: 'shop', user: 'ann' },
      },
    },
  });
}

const call = async (host, name, args) => (await host.modern('tools/call', { name, arguments: args })).result;

test('two instances share their sessions through a Redis reached over TLS', async () => {
  const a = hostOn({ ca_file: redis.ca });
  const b = hostOn({ ca_file: redis.ca, server_name: 'localhost' });
  try {
    const session = (await call(a, 'session_connect', { topic: 'groceries' })).structuredContent.session;
    assert.ok(session, 'session_connect answered a handle');
    const served = await call(b, 'whoami', { session, text: 'hello' });
    assert.equal(served.isError, undefined, JSON.stringify(served));
    assert.equal(served.structuredContent.arguments.text, 'hello');
    // The state is in that Redis (seen here on its unix socket), under the prefix.
    assert.match(redis.cli('--scan', '--pattern', 'itest-tls:*'), /^itest-tls:/m);
  } finally {
    for (const host of [a, b]) {
      const result = await host.close();
      assert.equal(result.code, 0, host.stderr.slice(-2000));
    }
  }
});

test('a Redis whose certificate is not trusted, or not for the name, stops the start with the reason', async () => {
  for (const [tls, reason] of [
    [{ ca_file: redis.otherCa }, /certificate not trusted/],
    [{ ca_file: redis.ca, server_name: 'redis.example.com' }, /hostname mismatch/],
  ]) {
    const host = hostOn(tls);
    const { code } = await host.exit;
    await host.close();
    assert.equal(code, 1, host.stderr.slice(-2000));
    assert.match(host.stderr, reason);
    assert.match(host.stderr, new RegExp(`rediss://127\\.0\\.0\\.1:${redis.tlsPort}`));
  }
});
