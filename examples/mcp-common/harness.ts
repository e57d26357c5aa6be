/**
 * What both MCP examples share: a gymwire server on port 0 with MCP mounted at /mcp, an official
 * MCP TypeScript client connected to it over Streamable HTTP, and a tool call that fails loudly.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

import { startServer } from '../../server/index.ts';
import type { RunningServer } from '../../server/index.ts';
import { mountMcp } from '../../server/mcp/index.ts';

export interface Harness {
  server: RunningServer;
  client: Client;
  /** Calls a tool; a tool error becomes an exception with the server's message. */
  call(name: string, args?: Record<string, unknown>): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

export async function startHarness(name: string): Promise<Harness> {
  const server = await startServer({ port: 0, mountRoutes: (routes, core) => void mountMcp(routes, core) });
  const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${server.port}/mcp`));
  const client = new Client({ name, version: '0.1.0' });
  await client.connect(transport);
  return {
    server,
    client,
    async call(tool, args = {}) {
      const res = (await client.callTool({ name: tool, arguments: args })) as CallToolResult;
      if (res.isError) throw new Error(`${tool}: ${res.content.map((c) => (c.type === 'text' ? c.text : c.type)).join(' ')}`);
      return res.structuredContent as Record<string, unknown>;
    },
    async close() {
      await transport.terminateSession().catch(() => {});
      await client.close();
      await server.close();
    },
  };
}

/** Runs an example's main, printing the failure and exiting non-zero when it throws. */
export function run(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(`FAILED: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
