// A real redis-server (Debian's) on a unix socket in a temp folder, for the
// tests of what several instances share. Stoppable and restartable on the
// same socket, so a test can take Redis away and bring it back.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import path from 'node:path';

const REDIS_SERVER = process.env.GATEHOUSE_REDIS_SERVER ?? 'redis-server';

export class Redis {
  static async start() {
    const redis = new Redis();
    await redis.restart();
    return redis;
  }

  constructor() {
    this.dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-itest-redis-'));
    this.socket = path.join(this.dir, 'redis.sock');
    this.url = `unix://${this.socket}`;
  }

  async restart() {
    this.child = spawn(REDIS_SERVER, ['--port', '0', '--unixsocket', this.socket, '--save', '', '--appendonly', 'no', '--dir', this.dir], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.exit = once(this.child, 'exit');
    const deadline = Date.now() + 10000;
    while (!existsSync(this.socket)) {
      if (Date.now() > deadline) throw new Error('redis-server did not open its socket');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async stop() {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    await this.exit;
    rmSync(this.socket, { force: true });
  }

  cli(...args) {
    return execFileSync('redis-cli', ['-s', this.socket, ...args], { encoding: 'utf8' }).trim();
  }

  async close() {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
