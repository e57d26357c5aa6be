/**
 * The MCP benchmark's floors: what a call costs before gymwire does anything.
 *   tsx test/bench/mcp-floor-server.ts http    prints {"url": ..., "echo": ...} when listening
 *   tsx test/bench/mcp-floor-server.ts stdio
 * `http` serves, on one port, a bare MCP server from the same SDK (v2, `createMcpHandler`, both
 * revisions, a fresh server per request as gymwire does) with one tool that does nothing at /mcp,
 * and a plain HTTP JSON echo (the body back, no MCP at all) at /echo. `stdio` serves the no-op
 * tool through the SDK's `serveStdio`.
 */
import { createServer } from 'node:http';

import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, Server } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';

function noopServer(): Server {
  const server = new Server({ name: 'floor', version: '0.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler('tools/list', () => ({
    tools: [{ name: 'noop', description: 'does nothing', inputSchema: { type: 'object', properties: {} } }],
  }));
  server.setRequestHandler('tools/call', () => ({ content: [{ type: 'text', text: '{}' }], structuredContent: {} }));
  return server;
}

if (process.argv[2] === 'stdio') {
  serveStdio(noopServer);
} else {
  const mcp = toNodeHandler(createMcpHandler(noopServer));
  const http = createServer((req, res) => {
    if (req.url === '/echo') {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(Buffer.concat(chunks)));
      return;
    }
    void mcp(req, res);
  });
  http.listen(0, '127.0.0.1', () => {
    const { port } = http.address() as { port: number };
    process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}/mcp`, echo: `http://127.0.0.1:${port}/echo` })}\n`);
  });
}
