// What the host keeps is its own user's alone: the data folder it makes is
// 0700, the state and notes databases it makes are 0600 (with their -wal and
// -shm files), whatever the umask; and a host without HOME, XDG_DATA_HOME
// or GATEHOUSE_DATA_DIR refuses a fallback data folder under the shared temp
// folder that another user made.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { withHost, binaryPath } from './lib/host.mjs';

function everything(dir) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    found.push(full);
    if (entry.isDirectory()) found.push(...everything(full));
  }
  return found;
}

test("the embedded default's data folder and databases are readable by their user alone", () =>
  withHost({ embedded: true }, async (host) => {
    const reply = await host.modern('tools/list');
    assert.ok(reply.result?.tools?.length, JSON.stringify(reply));
    const data = path.join(host.config.dir, 'data');
    assert.equal(statSync(data).mode & 0o777, 0o700, `${data}`);
    const databases = everything(data).filter((f) => /\.(sqlite3|db)(-wal|-shm)?$/.test(f));
    assert.ok(databases.some((f) => /memory/.test(f)), `no notes database under ${data}: ${databases.join(', ')}`);
    for (const file of databases) {
      const mode = statSync(file).mode & 0o777;
      assert.equal(mode & 0o077, 0, `${file} has mode ${mode.toString(8)}`);
    }
  }));

test('a fallback data folder under the temp folder that another user made is refused, with the reason', (t) => {
  if (process.getuid?.() !== 0) return t.skip('needs root to make a folder of another user');
  const tmp = mkdtempSync(path.join(tmpdir(), 'gatehouse-fallback-'));
  try {
    const planted = path.join(tmp, 'gatehouse');
    mkdirSync(planted, { mode: 0o777 });
    chownSync(planted, 65534, 65534);
    const env = { ...process.env, TMPDIR: tmp };
    for (const name of ['HOME', 'XDG_DATA_HOME', 'GATEHOUSE_DATA_DIR']) delete env[name];
    const run = spawnSync(binaryPath(), ['serve'], { env, input: '', encoding: 'utf8', timeout: 30000 });
    assert.equal(run.status, 1, `exit ${run.status}; stderr: ${run.stderr}`);
    assert.match(run.stderr, /data folder .*gatehouse.* not this user's own folder/);
    // Every verb that starts the families refuses it too (they write below it).
    const listed = spawnSync(binaryPath(), ['plugins'], { env, encoding: 'utf8', timeout: 30000 });
    assert.equal(listed.status, 1, `exit ${listed.status}; stderr: ${listed.stderr}`);
    assert.match(listed.stderr, /not this user's own folder/);
    assert.deepEqual(readdirSync(planted), [], 'the host wrote into the planted folder');
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});
