/**
 * The MCP benchmark's floor: a bare MCP server from the same SDK with one tool that does nothing,
 * served the way gymwire serves /mcp (Streamable HTTP, a transport per MCP session, JSON responses)
 * or on stdio. What a tool call costs before gymwire does anything.
 *   tsx test/bench/mcp-floor-server.ts http    prints {"url": ...} when listening
 *   tsx test/bench/mcp-floor-server.ts stdio
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

function noopServer(): Server {
  const server = new Server({ name: 'floor', version: '0.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [{ name: 'noop', description: 'does nothing', inputSchema: { type: 'object', properties: {} } }],
  }));
  server.setRequestHandler(CallToolRequestSchema, () => ({ content: [{ type: 'text', text: '{}' }], structuredContent: {} }));
  return server;
}

if (process.argv[2] === 'stdio') {
  await noopServer().connect(new StdioServerTransport());
} else {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown) : undefined;
      const id = req.headers['mcp-session-id'];
      let transport = typeof id === 'string' ? transports.get(id) : undefined;
      if (!transport) {
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          enableJsonResponse: true,
          onsessioninitialized: (sid) => void transports.set(sid, transport!),
        });
        void noopServer().connect(transport);
      }
      void transport.handleRequest(req, res, body);
    });
  });
  http.listen(0, '127.0.0.1', () => {
    const address = http.address() as { port: number };
    process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${address.port}/mcp` })}\n`);
  });
}
