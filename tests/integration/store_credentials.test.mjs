// The store password reaches only the families the operator allowed it, from
// the program's saved logins, the credentials file or (stdio only) the
// environment, and never leaves the host in an answer, a refusal, a log line
// or a conversation file. Driven with the official v2 client over stdio, and
// over Streamable HTTP for the environment rule; the "signin" fixture family
// signs in with the credentials and leaks them every way it can.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { chmodSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { CheckedTransport } from './lib/checked_transport.mjs';
import { HttpHost } from './lib/http_host.mjs';
import { binaryPath, writeConfig, MODERN } from './lib/host.mjs';

const sessionPlugin = () => path.resolve(path.dirname(binaryPath()), '../lib/gatehouse/plugins/session.so');

// Three sources, three passwords of different lengths: the answer's length
// says which source was used, without the password leaving the host.
const SAVED = 'saved-by-the-program-Zq8!';
const FILED = 'from-the-file-7#k';
const ENVIRONMENT = 'env-Pw-3x';

const code = (result) => result.structuredContent?.code ?? (result.isError ? result.content?.[0]?.text : undefined);

// Every byte of every file under dir.
function allFileBytes(dir) {
  let all = '';
  let entries = [];
  try {
    entries = readdirSync(dir);
  } catch {
    return all;
  }
  for (const name of entries) {
    const p = path.join(dir, name);
    all += statSync(p).isDirectory() ? allFileBytes(p) : readFileSync(p, 'latin1');
  }
  return all;
}

// The session section for `sources` ('settings', 'file'), each file owner-only.
function sessionSection(sources) {
  return (dir) => {
    const section = { backend: 'sqlite', pinned: { store: 'corner-shop', user: 'ann' } };
    if (sources.includes('settings')) {
      section.program_settings_file = path.join(dir, 'program-settings.json');
      writeFileSync(
        section.program_settings_file,
        JSON.stringify({ saved_logins: [{ store: 'corner-shop', user: 'ann', password: SAVED }] }),
        { mode: 0o600 },
      );
    }
    if (sources.includes('file')) {
      section.credentials_file = path.join(dir, 'store-password');
      writeFileSync(section.credentials_file, FILED + '\n', { mode: 0o600 });
    }
    return section;
  };
}

// Starts the real binary over stdio with the v2 client; `body(call, scene)`.
async function withSignin({ grant = true, sources = [], env = {} }, body) {
  const config = writeConfig({
    gate: true,
    plugins: [sessionPlugin(), grant ? { path: 'signin.so', store_credentials: true } : 'signin.so'],
    sections: { session: sessionSection(sources) },
  });
  const transport = new CheckedTransport(
    new StdioClientTransport({
      command: binaryPath(),
      args: ['serve', '--config', config.file],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', GATEHOUSE_LOG: 'info', ...env },
      stderr: 'pipe',
    }),
  );
  let stderr = '';
  transport.stderr?.on('data', (chunk) => (stderr += chunk));
  const client = new Client({ name: 'itest-store-credentials', version: '2.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
  const call = (name, args = {}) => client.callTool({ name, arguments: args });
  const scene = {
    dir: config.dir,
    stderr: () => stderr,
    received: () => JSON.stringify(transport.received),
    // The host's stderr arrives on its own pipe, after or before the answer.
    async stderrMatching(pattern) {
      for (const deadline = Date.now() + 10000; !pattern.test(stderr) && Date.now() < deadline; )
        await new Promise((r) => setTimeout(r, 20));
      assert.match(stderr, pattern);
    },
  };
  try {
    await client.connect(transport);
    await body(call, scene);
  } catch (e) {
    e.message += `\nhost stderr:\n${stderr.slice(-2000)}`;
    throw e;
  } finally {
    await client.close();
  }
  try {
    assert.deepEqual(transport.problems, [], 'every message the host sent fits the schema');
    for (const secret of [SAVED, FILED, ENVIRONMENT]) {
      assert.ok(!scene.received().includes(secret), 'no answer or refusal carries a password');
      assert.ok(!stderr.includes(secret), 'no log line carries a password');
      assert.ok(!allFileBytes(path.join(config.dir, 'data')).includes(secret), 'no conversation file does');
    }
  } finally {
    rmSync(config.dir, { recursive: true, force: true });
  }
}

async function connect(call) {
  const connected = await call('session_connect', { topic: 'orders' });
  assert.equal(connected.isError ?? false, false, JSON.stringify(connected));
  return connected.structuredContent.session;
}

function signedIn(result, length) {
  assert.equal(result.isError ?? false, false, JSON.stringify(result));
  assert.equal(result.structuredContent.signed_in, 'ann@corner-shop');
  assert.equal(result.structuredContent.password_length, length);
  assert.equal(result.content.find((c) => c.type === 'text' && c.text.startsWith('signed in')).text, 'signed in as ann@corner-shop');
}

test('a family the operator has not allowed gets CREDENTIALS_NOT_ALLOWED', () =>
  withSignin({ grant: false, sources: ['settings', 'file'] }, async (call) => {
    const session = await connect(call);
    const refused = await call('sign_in', { session });
    assert.equal(refused.isError, true);
    assert.match(code(refused), /^CREDENTIALS_NOT_ALLOWED: /);
    // Nothing to leak, and nothing withheld: the family never had it.
    assert.match(code(await call('leak_text', { session })), /^CREDENTIALS_NOT_ALLOWED: /);
  }));

test('the program\'s saved login comes first; every leak is withheld, the log masked', () =>
  withSignin({ sources: ['settings', 'file'] }, async (call, scene) => {
    assert.equal(code(await call('sign_in')), 'NOT_CONNECTED', 'a tool without a session is refused as usual');
    const session = await connect(call);
    signedIn(await call('sign_in', { session }), SAVED.length);

    for (const leak of ['leak_text', 'leak_structured', 'leak_error']) {
      const withheld = await call(leak, { session });
      assert.equal(withheld.isError, true, leak);
      assert.equal(code(withheld), 'SECRET_IN_RESULT', leak);
      assert.equal(withheld.structuredContent.next.family, 'signin');
      await scene.stderrMatching(new RegExp(`tool '${leak}' \\(signin\\) answered with the store password`));
    }

    const logged = await call('leak_log', { session });
    assert.equal(logged.isError ?? false, false);
    assert.equal(logged.content[0].text, 'signed in as ann@corner-shop');
    await scene.stderrMatching(/\[signin\] signing in to corner-shop with password \*\*\*/);

    // Saved logins are read afresh: the program forgetting it falls back to the file.
    writeFileSync(path.join(scene.dir, 'program-settings.json'), JSON.stringify({ saved_logins: [] }));
    signedIn(await call('sign_in', { session }), FILED.length);
    // The answer check still knows the file's password.
    assert.equal(code(await call('leak_structured', { session })), 'SECRET_IN_RESULT');
  }));

test('the credentials file signs in; opened to others it is refused by name, never by content', () =>
  withSignin({ sources: ['file'] }, async (call, scene) => {
    const session = await connect(call);
    signedIn(await call('sign_in', { session }), FILED.length);
    chmodSync(path.join(scene.dir, 'store-password'), 0o644);
    const refused = await call('sign_in', { session });
    assert.match(code(refused), /^CREDENTIALS_REFUSED: /);
    await scene.stderrMatching(/the credentials file \S*store-password is open to group or others/);
  }));

test('a program settings file open to others is refused', () =>
  withSignin({ sources: ['settings'] }, async (call, scene) => {
    const session = await connect(call);
    signedIn(await call('sign_in', { session }), SAVED.length);
    chmodSync(path.join(scene.dir, 'program-settings.json'), 0o644);
    assert.match(code(await call('sign_in', { session })), /^CREDENTIALS_REFUSED: /);
    await scene.stderrMatching(/the program settings file \S*program-settings\.json is open to group or others/);
  }));

test('over stdio alone the environment password signs in, and is screened like the others', () =>
  withSignin({ env: { GATEHOUSE_STORE_PASSWORD: ENVIRONMENT } }, async (call) => {
    const session = await connect(call);
    signedIn(await call('sign_in', { session }), ENVIRONMENT.length);
    assert.equal(code(await call('leak_text', { session })), 'SECRET_IN_RESULT');
  }));

test('a host serving HTTP never hands out the environment password', async () => {
  const host = await HttpHost.start({
    gate: true,
    plugins: [sessionPlugin(), { path: 'signin.so', store_credentials: true }],
    sections: { session: sessionSection([]) },
    env: { GATEHOUSE_STORE_PASSWORD: ENVIRONMENT },
  });
  const transport = new CheckedTransport(new StreamableHTTPClientTransport(new URL(host.url)));
  const client = new Client({ name: 'itest-store-credentials-http', version: '2.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
  const call = (name, args = {}) => client.callTool({ name, arguments: args });
  try {
    await client.connect(transport);
    const session = await connect(call);
    const refused = await call('sign_in', { session });
    assert.match(code(refused), /^CREDENTIALS_UNAVAILABLE: /);
    assert.equal((await call('session_init')).structuredContent.password_available, false);
  } finally {
    await client.close();
    await host.stop();
  }
  assert.deepEqual(transport.problems, []);
  assert.ok(!JSON.stringify(transport.received).includes(ENVIRONMENT));
  assert.ok(!host.stderr.includes(ENVIRONMENT));
});
