import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { startServer } from '../../server/index.ts';
import type { RunningServer } from '../../server/index.ts';
import { CAMERA_ENV, callErr, callOk, testRegistry } from './helpers.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** `node bin/gymwire.js mcp` once the CLI registers the command; until then the same command through registerMcp. */
const ENTRY = readFileSync(`${ROOT}bin/cli.ts`, 'utf8').includes('registerMcp') ? 'bin/gymwire.js' : 'test/mcp/fixtures/mcp-cli.js';

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({ port: 0, registry: testRegistry(), token: 'sekret' });
});
afterAll(async () => {
  await server.close();
});

function bridge(token: string | null): { client: Client; transport: StdioClientTransport; stderr: () => string } {
  const args = [ENTRY, 'mcp', '--url', server.url, ...(token !== null ? ['--token', token] : [])];
  // One process instead of a re-run with a larger heap: a faster start on a loaded machine.
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', GYMWIRE_NO_REEXEC: '1' };
  const transport = new StdioClientTransport({ command: process.execPath, args, cwd: ROOT, env, stderr: 'pipe' });
  let err = '';
  transport.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  return { client: new Client({ name: 'gymwire-stdio-test', version: '0' }), transport, stderr: () => err };
}

describe('MCP over stdio (gymwire mcp --url)', () => {
  it('lists tools, plays a CartPole episode, reports bad arguments and unknown sessions, then closes its sessions', async () => {
    const { client, transport, stderr } = bridge('sekret');
    await client.connect(transport);
    try {
      // A person starting the bridge sees it connect and come up (on stderr: stdout is MCP's).
      await vi.waitFor(() => expect(stderr()).toMatch(/gymwire mcp: connecting to ws:.*\n.*gymwire mcp: connected; serving MCP on stdio/s), {
        timeout: 10_000,
        interval: 20,
      });
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).slice(0, 8)).toEqual([
        'list_envs',
        'make_env',
        'reset',
        'step',
        'render',
        'close_env',
        'list_session_tools',
        'call_session_tool',
      ]);
      expect(tools.map((t) => t.name)).toContain('Bench2Drive-v0__drive_for');

      const id = (await callOk(client, 'make_env', { env_id: 'gymwire/CartPole-v1' })).session_id as string;
      expect(server.core.sessionCount).toBe(1);
      await callOk(client, 'reset', { session_id: id, seed: 3 });
      let last: Record<string, unknown> = {};
      let steps = 0;
      // Always pushing right tips the pole within a few dozen steps.
      while (steps < 500 && !last.terminated && !last.truncated) {
        last = await callOk(client, 'step', { session_id: id, action: 1 });
        steps++;
      }
      expect(last.terminated).toBe(true);
      expect(last.episode_return).toBe(steps);

      expect(await callErr(client, 'step', { session_id: id })).toMatch(/^Input validation error: Invalid arguments for tool step: action: /);
      expect(await callErr(client, 'reset', { session_id: id, seed: 'x' })).toMatch(/^Input validation error: .*seed: Invalid input/);
      expect(await callErr(client, 'step', { session_id: 's_missing', action: 1 })).toMatch(/^ENV_ERR_UNKNOWN_SESSION: no session "s_missing"/);
      await callOk(client, 'close_env', { session_id: id });
      expect(await callErr(client, 'step', { session_id: id, action: 1 })).toMatch(/^ENV_ERR_UNKNOWN_SESSION: session .* is closed/);

      // Env tools are MCP tools over stdio too.
      const cam = (await callOk(client, 'make_env', { env_id: CAMERA_ENV })).session_id as string;
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('test_Camera-v0__drive');
      await callOk(client, 'reset', { session_id: cam, seed: 0 });
      expect(await callOk(client, 'test_Camera-v0__drive', { session_id: cam, throttle: 1 })).toMatchObject({ tool: 'drive', terminated: false });
      expect(server.core.sessionCount).toBe(1);
    } finally {
      await client.close();
    }
    // The bridge closes what it made when its MCP client goes away.
    await vi.waitFor(() => expect(server.core.sessionCount).toBe(0), { timeout: 5000, interval: 20 });
  }, 60_000);

  it('speaks 2026-07-28 to the SDK v2 client: server/discover, no initialize', async () => {
    const args = [ENTRY, 'mcp', '--url', server.url, '--token', 'sekret'];
    const transport = new StdioV2({
      command: process.execPath,
      args,
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', GYMWIRE_NO_REEXEC: '1' },
      stderr: 'pipe',
    });
    const client = new ClientV2({ name: 'gymwire-stdio-v2', version: '0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(transport);
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('Bench2Drive-v0__drive_for');
      const made = await client.callTool({ name: 'make_env', arguments: { env_id: 'gymwire/CartPole-v1' } });
      const id = (made.structuredContent as { session_id: string }).session_id;
      await client.callTool({ name: 'reset', arguments: { session_id: id, seed: 0 } });
      const stepped = await client.callTool({ name: 'step', arguments: { session_id: id, action: 0 } });
      expect(stepped.structuredContent).toMatchObject({ session_id: id, reward: 1, episode_steps: 1 });
    } finally {
      await client.close();
    }
    await vi.waitFor(() => expect(server.core.sessionCount).toBe(0), { timeout: 5000, interval: 20 });
  }, 60_000);

  it('enforces the auth token: the bridge exits with the refusal when the token is missing or wrong', async () => {
    for (const token of [null, 'wrong']) {
      const { client, transport, stderr } = bridge(token);
      await expect(client.connect(transport)).rejects.toThrow();
      await vi.waitFor(() => expect(stderr()).toMatch(token === null ? /needs an auth token/ : /auth token is wrong/), { timeout: 5000, interval: 20 });
      await client.close().catch(() => {});
    }
  }, 60_000);
});
