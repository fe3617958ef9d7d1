// A real PostgreSQL server (Debian's) for one test file, started by
// scripts/postgres.sh in a temporary folder, reachable on a unix socket there.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SCRIPT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../scripts/postgres.sh');

export class Postgres {
  static async start() {
    const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-itest-pg-'));
    const { stdout } = await run('bash', [SCRIPT, 'start', dir], { timeout: 60000 });
    return new Postgres(dir, stdout.trim());
  }

  constructor(dir, url) {
    this.dir = dir;
    this.url = url; // postgresql://gatehouse:PASSWORD@/notes?host=DIR&port=5432
    this.password = /^postgresql:\/\/[^:]*:([^@]*)@/.exec(url)[1];
  }

  async stop() {
    await run('bash', [SCRIPT, 'stop', this.dir], { timeout: 60000 }).catch(() => {});
    rmSync(this.dir, { recursive: true, force: true });
  }
}
