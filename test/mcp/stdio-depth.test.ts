import { PassThrough } from 'node:stream';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { runMcpBridge } from '../../bin/commands/mcp.ts';
import { startServer } from '../../server/index.ts';
import type { RunningServer } from '../../server/index.ts';
import { testRegistry } from './helpers.ts';

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({ port: 0, registry: testRegistry() });
});
afterAll(async () => {
  await server.close();
});

describe('the stdio MCP bridge refuses over-deep JSON like /mcp', () => {
  it('answers a message nested 5,000 deep with -32600 and keeps serving the next one', async () => {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const lines: Record<string, unknown>[] = [];
    let partial = '';
    stdout.on('data', (d: Buffer) => {
      const parts = (partial + d.toString()).split('\n');
      partial = parts.pop()!;
      for (const line of parts) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
    });
    let ready!: () => void;
    const up = new Promise<void>((r) => (ready = r));
    const done = runMcpBridge({ url: server.url, stdin, stdout, onReady: ready });
    await up;
    const deep = `${'['.repeat(5_000)}${']'.repeat(5_000)}`;
    stdin.write(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_envs","arguments":{"x":${deep}}}}\n`);
    const init = {
      jsonrpc: '2.0',
      id: 8,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'depth-test', version: '0' } },
    };
    stdin.write(`${JSON.stringify(init)}\n`);
    await expect.poll(() => lines.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    expect(lines[0]).toMatchObject({ id: 7, error: { code: -32600, message: expect.stringMatching(/deeper than 512 levels/) } });
    expect(lines[1]).toMatchObject({ id: 8, result: { serverInfo: expect.any(Object) } });
    stdin.end();
    await done;
    expect(server.core.sessionCount).toBe(0);
  });
});
