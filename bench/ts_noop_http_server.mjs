// The peer for bench/run_http_bench.sh: the official TypeScript SDK v2 serving
// the same no-op tool as Gatehouse's `noop` over stateless Streamable HTTP
// (createMcpHandler on plain node:http, as the SDK documents it).
// Usage: node ts_noop_http_server.mjs PORT
import http from 'node:http';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';

const handler = createMcpHandler(() => {
    const server = new McpServer({ name: 'ts-noop', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.registerTool('noop', { description: 'Does nothing and returns an empty text.' }, async () => ({
        content: [{ type: 'text', text: '' }],
    }));
    return server;
});
const port = Number(process.argv[2] ?? 8766);
http.createServer(toNodeHandler(handler)).listen(port, '127.0.0.1', () => {
    process.stderr.write(`ts-noop listening on http://127.0.0.1:${port}/mcp\n`);
});
