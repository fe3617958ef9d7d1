// Ports for the real servers the tests start (Prometheus, server-everything,
// Redis over TLS), which take a port number rather than binding port 0.
import { createServer } from 'node:net';
import { once } from 'node:events';

// A port of 127.0.0.1 free when asked for (bound to port 0, then closed).
export async function freePort() {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  server.close();
  await once(server, 'close');
  return port;
}

// Thrown by onFreePort's `start` when the server found its port taken.
export class PortTaken extends Error {}

// `start(port)` on a port found free, whose result it returns. Another
// process may take the port before the server binds it: `start` then throws
// PortTaken, and runs again on another port, five times at most.
export async function onFreePort(start) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(await freePort());
    } catch (error) {
      if (!(error instanceof PortTaken) || attempt >= 5) throw error;
    }
  }
}
