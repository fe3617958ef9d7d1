// A 2025-11-25 MCP server over Streamable HTTP, written for one test: it
// answers initialize (with a session id) and tools/list with `tools`, 202 to
// a message without an id, 405 to the GET of a stream of its own and 200 to
// DELETE, unless the test's handlers answer first. Each handler gets the
// parsed message (null for GET and DELETE), the request and the response,
// and returns true when it has answered. Every request is recorded in `seen`
// ({method, authorization, session, rpc: the JSON-RPC method of a POST}).
import http from 'node:http';

export async function startScriptedUpstream({
  name,
  tools = [{ name: 'hello', inputSchema: { type: 'object' } }],
  sessionId = `s-${name}`,
  onCall, // any request with an id but initialize, before the defaults (tools/list, tools/call)
  onGet, // the GET of a stream of its own (default: 405, none)
  onDelete,
  onNotification, // a message without a method or without an id: a notification, or an answer of the host's
}) {
  const seen = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const heard = { method: req.method, authorization: req.headers.authorization, session: req.headers['mcp-session-id'] };
      seen.push(heard);
      if (req.method === 'DELETE') {
        if (!onDelete?.(null, req, res)) res.writeHead(200).end();
        return;
      }
      if (req.method === 'GET') {
        if (!onGet?.(null, req, res)) res.writeHead(405).end(); // no stream of its own
        return;
      }
      const message = JSON.parse(body);
      heard.rpc = message.method; // the JSON-RPC method, for what the host asked
      if (message.id === undefined || message.method === undefined) {
        if (!onNotification?.(message, req, res)) res.writeHead(202).end();
        return;
      }
      const answer = (result) => res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': sessionId })
        .end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
      if (message.method === 'initialize')
        return answer({ protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name, version: '1' } });
      if (onCall?.(message, req, res)) return;
      if (message.method === 'tools/list') return answer({ tools });
      if (message.method === 'tools/call') return answer({ content: [{ type: 'text', text: 'hello back' }] });
      res.writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'no' } }));
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/mcp`,
    seen,
    close() {
      server.closeAllConnections?.();
      server.close();
    },
  };
}
