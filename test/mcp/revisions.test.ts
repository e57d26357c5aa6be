/**
 * /mcp in both protocol revisions with the official TypeScript clients: the SDK v2 client
 * (`@modelcontextprotocol/client`) on 2026-07-28 (server/discover, stateless requests) and on
 * 2025-11-25 (initialize), and the SDK 1.x client (2025-11-25). Each sees every env's tools without
 * a list_changed, makes a session, steps it, calls an env tool and gets an image with its text
 * block; a session made in one revision is used from the other, since sessions belong to the caller.
 */
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import type { Tool } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';

import { CAMERA_ENV, startMcpServer } from './helpers.ts';
import type { McpTestServer } from './helpers.ts';

const CARTPOLE = 'gymwire/CartPole-v1';
const TOKEN = 'sekret';
const UP_FRONT = ['list_envs', 'make_env', 'step', 'NavsimEnv-v1__step_with_waypoints', 'Bench2Drive-v0__drive', 'Bench2Drive-v0__follow_waypoints_for'];

interface Block {
  type: string;
  text?: string;
  mimeType?: string;
}
interface AnyResult {
  isError?: boolean;
  content: Block[];
  structuredContent?: Record<string, unknown>;
}
/** What the tests need of either SDK's client. */
interface AnyClient {
  listTools(): Promise<{ tools: { name: string }[] }>;
  callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<unknown>;
  close(): Promise<void>;
}

const headers = { Authorization: `Bearer ${TOKEN}` };
const CLIENTS: {
  label: string;
  revision: string;
  connect(url: string, onToolsChanged?: (tools: Tool[]) => void): Promise<{ client: AnyClient; version: string | undefined }>;
}[] = [
  {
    label: 'SDK v2 client, 2026-07-28',
    revision: '2026-07-28',
    async connect(url, onToolsChanged) {
      const client = new ClientV2(
        { name: 'gymwire-test', version: '0' },
        {
          versionNegotiation: { mode: 'auto' },
          ...(onToolsChanged ? { listChanged: { tools: { onChanged: (_err: Error | null, tools: Tool[] | null) => tools && onToolsChanged(tools) } } } : {}),
        },
      );
      await client.connect(new HttpV2(new URL(url), { requestInit: { headers } }));
      return { client: client as unknown as AnyClient, version: client.getNegotiatedProtocolVersion() };
    },
  },
  {
    label: 'SDK v2 client, 2025-11-25',
    revision: '2025-11-25',
    async connect(url) {
      const client = new ClientV2({ name: 'gymwire-test', version: '0' });
      await client.connect(new HttpV2(new URL(url), { requestInit: { headers } }));
      return { client: client as unknown as AnyClient, version: client.getNegotiatedProtocolVersion() };
    },
  },
  {
    label: 'SDK 1.x client, 2025-11-25',
    revision: '2025-11-25',
    async connect(url) {
      const transport = new HttpV1(new URL(url), { requestInit: { headers } });
      const client = new ClientV1({ name: 'gymwire-test', version: '0' });
      await client.connect(transport);
      return { client: client as unknown as AnyClient, version: transport.protocolVersion };
    },
  },
];

let t: McpTestServer | null = null;
const open: AnyClient[] = [];
afterEach(async () => {
  await Promise.allSettled(open.splice(0).map((c) => c.close()));
  await t?.server.close();
  t = null;
});

async function ok(c: AnyClient, name: string, args: Record<string, unknown> = {}): Promise<AnyResult & { structuredContent: Record<string, unknown> }> {
  const res = (await c.callTool({ name, arguments: args })) as AnyResult;
  if (res.isError) throw new Error(`${name} failed: ${JSON.stringify(res.content)}`);
  return res as AnyResult & { structuredContent: Record<string, unknown> };
}

describe.each(CLIENTS)('MCP with the $label', ({ revision, connect }) => {
  it('sees every env tool up front, makes, steps, calls an env tool and gets images with their text', async () => {
    t = await startMcpServer({ token: TOKEN });
    const { client: c, version } = await connect(t.mcpUrl);
    open.push(c);
    expect(version).toBe(revision);
    const names = (await c.listTools()).tools.map((x) => x.name);
    expect(names).toEqual(expect.arrayContaining(UP_FRONT));

    const id = (await ok(c, 'make_env', { env_id: CAMERA_ENV })).structuredContent.session_id as string;
    const reset = await ok(c, 'reset', { session_id: id, seed: 1 });
    const at = reset.content.findIndex((b) => b.type === 'image');
    expect(reset.content[at]).toMatchObject({ type: 'image', mimeType: 'image/png' });
    expect(reset.content[at - 1]).toEqual({ type: 'text', text: 'Image 1: obs.camera, 24x16 RGB' });
    expect((await ok(c, 'step', { session_id: id, action: [0.2, 0] })).structuredContent).toMatchObject({ episode_steps: 1, truncated: false });
    expect((await ok(c, 'test_Camera-v0__drive', { session_id: id, throttle: 0.5 })).structuredContent).toMatchObject({
      tool: 'drive',
      info: { t: 2 },
      episode_steps: 2,
    });
    const rendered = await ok(c, 'render', { session_id: id });
    expect(rendered.content.map((b) => b.type)).toEqual(['text', 'image']);
    expect(rendered.content[0]!.text).toMatch(new RegExp(`^Frame of session ${id} \\(PNG, \\d+ bytes\\)`));
    expect(await ok(c, 'close_env', { session_id: id })).toMatchObject({ structuredContent: { closed: true } });
    expect(t.server.core.sessionCount).toBe(0);
  });

  it('uses a session made through a client of the other revision, and after its own client is gone', async () => {
    t = await startMcpServer({ token: TOKEN });
    const other = CLIENTS.find((x) => x.revision !== revision)!;
    const maker = (await other.connect(t.mcpUrl)).client;
    const id = (await ok(maker, 'make_env', { env_id: CARTPOLE })).structuredContent.session_id as string;
    await ok(maker, 'reset', { session_id: id, seed: 0 });
    await maker.close();
    const { client: c } = await connect(t.mcpUrl);
    open.push(c);
    expect((await ok(c, 'step', { session_id: id, action: 1 })).structuredContent).toMatchObject({ session_id: id, reward: 1, episode_steps: 1 });
    expect(t.endpoint.callerCount).toBe(1);
  });
});

describe('MCP 2026-07-28 notifications', () => {
  it("announces an env's tools known only once a session exists on the client's subscriptions/listen stream", async () => {
    t = await startMcpServer({ token: TOKEN });
    const seen: string[][] = [];
    const { client: c, version } = await CLIENTS[0]!.connect(t.mcpUrl, (tools) => seen.push(tools.map((x) => x.name)));
    open.push(c);
    expect(version).toBe('2026-07-28');
    expect((await c.listTools()).tools.map((x) => x.name)).not.toContain('test_Camera-v0__drive');
    await ok(c, 'make_env', { env_id: CAMERA_ENV });
    await expect.poll(() => seen.at(-1) ?? [], { timeout: 10_000 }).toContain('test_Camera-v0__drive');
  });
});
