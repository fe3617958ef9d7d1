// A real redis-server (Debian's) on a unix socket in a temp folder, for the
// tests of what several instances share. Stoppable and restartable on the
// same socket, so a test can take Redis away and bring it back. With
// { tls: true } it also serves TLS on a port of 127.0.0.1 (tlsUrl), with a CA
// and a server certificate for 127.0.0.1 made by the openssl command (ca),
// and a second CA that vouches for nothing here (otherCa).
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { makeCertificates } from './certificates.mjs';
import { once } from 'node:events';
import { createConnection } from 'node:net';
import { onFreePort, PortTaken } from './ports.mjs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const REDIS_SERVER = process.env.GATEHOUSE_REDIS_SERVER ?? 'redis-server';

// Whether the unix socket at `socketPath` takes a connection now.
function accepts(socketPath) {
  return new Promise((resolve) => {
    const probe = createConnection(socketPath);
    probe.once('connect', () => (probe.destroy(), resolve(true)));
    probe.once('error', () => resolve(false));
  });
}

export class Redis {
  static async start({ tls = false } = {}) {
    const redis = new Redis();
    if (!tls) {
      await redis.restart();
      return redis;
    }
    const certs = makeCertificates(redis.dir);
    redis.ca = certs.ca;
    redis.otherCa = certs.otherCa;
    return onFreePort(async (port) => {
      redis.tlsPort = port;
      redis.tlsUrl = `rediss://127.0.0.1:${port}`;
      redis.tlsArgs = ['--bind', '127.0.0.1', '--tls-port', String(port), '--tls-cert-file', certs.cert,
        '--tls-key-file', certs.key, '--tls-ca-cert-file', certs.ca, '--tls-auth-clients', 'no'];
      try {
        await redis.restart();
      } catch (error) {
        throw /already in use/i.test(redis.log) ? new PortTaken(error.message) : error;
      }
      return redis;
    });
  }

  constructor() {
    this.dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-itest-redis-'));
    this.socket = path.join(this.dir, 'redis.sock');
    this.url = `unix://${this.socket}`;
    this.tlsArgs = [];
  }

  async restart() {
    const args = ['--port', '0', '--unixsocket', this.socket, '--save', '', '--appendonly', 'no', '--dir', this.dir, ...this.tlsArgs];
    this.child = spawn(REDIS_SERVER, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.log = '';
    this.child.stdout.on('data', (chunk) => (this.log += chunk));
    this.child.stderr.on('data', (chunk) => (this.log += chunk));
    this.exit = once(this.child, 'exit');
    // The socket file appears at bind(), before Redis listens on it: up is
    // when a connection is taken.
    const deadline = Date.now() + 10000;
    while (!(existsSync(this.socket) && (await accepts(this.socket)))) {
      if (this.child.exitCode !== null || this.child.signalCode !== null)
        throw new Error(`redis-server ended before it listened:\n${this.log.slice(-2000)}`);
      if (Date.now() > deadline) throw new Error(`redis-server did not open its socket:\n${this.log.slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async stop() {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGCONT'); // a paused Redis would not act on SIGTERM
      this.child.kill('SIGTERM');
    }
    await this.exit;
    rmSync(this.socket, { force: true });
  }

  // Freezes Redis (SIGSTOP): connections stay open and commands wait, as
  // with a Redis that is alive but too slow to answer. resume() thaws it.
  pause() {
    this.child.kill('SIGSTOP');
  }

  resume() {
    this.child.kill('SIGCONT');
  }

  cli(...args) {
    return execFileSync('redis-cli', ['-s', this.socket, ...args], { encoding: 'utf8' }).trim();
  }

  async close() {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
