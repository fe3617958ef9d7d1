// The peer for bench/run_stdio_bench.sh: the official TypeScript SDK v2 serving
// the same no-op tool as Gatehouse's `noop` (no input, an empty text result).
// serveStdio picks the era from the opening message, so one process answers
// both the 2026-07-28 stateless form and a 2025-11-25 initialize handshake.
import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';

serveStdio(() => {
    const server = new McpServer({ name: 'ts-noop', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.registerTool('noop', { description: 'Does nothing and returns an empty text.' }, async () => ({
        content: [{ type: 'text', text: '' }],
    }));
    return server;
});
