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
    const server = new Postgres(dir);
    try {
      const { stdout } = await run('bash', [SCRIPT, 'start', dir], { timeout: 60000 });
      server.url = stdout.trim(); // postgresql://gatehouse:PASSWORD@/notes?host=DIR&port=5432
      server.password = /^postgresql:\/\/[^:]*:([^@]*)@/.exec(server.url)[1];
    } catch (e) {
      await server.stop(); // nothing of it outlives a failed start
      throw e;
    }
    return server;
  }

  constructor(dir) {
    this.dir = dir;
  }

  async stop() {
    await run('bash', [SCRIPT, 'stop', this.dir], { timeout: 60000 }).catch(() => {});
    rmSync(this.dir, { recursive: true, force: true });
  }
}
