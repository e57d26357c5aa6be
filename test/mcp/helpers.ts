/**
 * Shared fixtures for the MCP tests: a server with /mcp mounted, a registry with a small camera
 * env that has tools, and official MCP clients over Streamable HTTP.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

import { defineTool, InvalidActionError } from '../../envs/core/env.ts';
import type { Env, ResetOptions, StepResult } from '../../envs/core/env.ts';
import { defaultRegistry } from '../../envs/index.ts';
import type { Limits } from '../../protocol/messages.ts';
import { Random } from '../../runtime/random.ts';
import { box, dict } from '../../protocol/spaces.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { startServer } from '../../server/index.ts';
import type { RunningServer } from '../../server/index.ts';
import { mountMcp } from '../../server/mcp/index.ts';
import type { McpEndpoint, McpHttpOptions } from '../../server/mcp/index.ts';

export const CAMERA_ENV = 'test/Camera-v0';

/** A tiny driving-like env: a camera frame in obs, a Box action, a `drive` tool that steps. */
class CameraEnv implements Env {
  readonly observationSpace = dict({
    camera: box({ low: 0, high: 255, shape: [16, 24, 3], dtype: 'uint8' }),
    speed: box({ low: 0, high: 100, shape: [1], dtype: 'float32' }),
  });
  readonly actionSpace = box({ low: -1, high: 1, shape: [2], dtype: 'float32' });
  readonly metadata = { render_modes: ['rgb_array'] };
  readonly renderMode = 'rgb_array';
  private readonly rng = new Random();
  private speed = 0;
  private t = 0;
  readonly tools = [
    defineTool({
      name: 'drive',
      description: 'Drive one tick with a throttle in [0, 1].',
      inputSchema: z.object({ throttle: z.number().min(0).max(1) }).strict(),
      handler: async ({ throttle }, ctx) => {
        const r = await ctx.wrapped.step(Tensor.from('float32', [2], [throttle, 0]));
        return { reward: r.reward, terminated: r.terminated, truncated: r.truncated, info: r.info };
      },
    }),
    defineTool({
      name: 'get_speed',
      description: 'The current speed.',
      inputSchema: z.object({}).strict(),
      handler: (_a, ctx) => ({ speed: (ctx.env as CameraEnv).speed }),
    }),
  ];

  private frame(): Tensor {
    const data = new Uint8Array(16 * 24 * 3);
    for (let i = 0; i < data.length; i++) data[i] = (i * 7 + this.t * 13) % 256;
    return Tensor.from('uint8', [16, 24, 3], data);
  }

  private obs() {
    return { camera: this.frame(), speed: Tensor.from('float32', [1], [this.speed]) };
  }

  reset(opts: ResetOptions = {}) {
    if (opts.seed != null) this.rng.seed(opts.seed);
    this.speed = this.rng.uniform(0, 1);
    this.t = 0;
    return { obs: this.obs(), info: { start_speed: this.speed } };
  }

  step(action: Tensor): StepResult {
    if (!(action instanceof Tensor) || action.size !== 2) throw new InvalidActionError('action must be a float32 tensor of shape [2]');
    this.speed = Math.max(0, this.speed + action.at(0));
    this.t += 1;
    return { obs: this.obs(), reward: this.speed, terminated: this.t >= 5, truncated: false, info: { t: this.t } };
  }

  render(): Tensor {
    return this.frame();
  }
}

export function testRegistry() {
  const registry = defaultRegistry();
  registry.register({
    id: CAMERA_ENV,
    description: 'camera + tools test env',
    entryPoint: () => new CameraEnv(),
    kwargsSchema: z.object({}).strict(),
    maxEpisodeSteps: 50,
    tags: ['test'],
  });
  return registry;
}

export interface McpTestServer {
  server: RunningServer;
  endpoint: McpEndpoint;
  /** http://127.0.0.1:PORT/mcp */
  mcpUrl: string;
}

export async function startMcpServer(opts: { token?: string; mcp?: McpHttpOptions; limits?: Partial<Limits> } = {}): Promise<McpTestServer> {
  let endpoint: McpEndpoint | null = null;
  const server = await startServer({
    port: 0,
    registry: testRegistry(),
    token: opts.token ?? null,
    limits: opts.limits,
    mountRoutes: (routes, core) => {
      endpoint = mountMcp(routes, core, opts.mcp);
    },
  });
  return { server, endpoint: endpoint!, mcpUrl: `http://127.0.0.1:${server.port}/mcp` };
}

export async function httpClient(mcpUrl: string, token?: string): Promise<Client> {
  const client = new Client({ name: 'gymwire-test', version: '0.0.0' });
  const transport = new StreamableHTTPClientTransport(
    new URL(mcpUrl),
    token !== undefined ? { requestInit: { headers: { Authorization: `Bearer ${token}` } } } : {},
  );
  await client.connect(transport);
  return client;
}

/** Calls a tool and returns its structured content (failing the test on a tool error). */
export async function callOk(client: Client, name: string, args: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const res = (await client.callTool({ name, arguments: args })) as CallToolResult;
  if (res.isError) throw new Error(`${name} failed: ${JSON.stringify(res.content)}`);
  return res.structuredContent as Record<string, unknown>;
}

/** Calls a tool that must fail and returns its error text. */
export async function callErr(client: Client, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const res = (await client.callTool({ name, arguments: args })) as CallToolResult;
  if (!res.isError) throw new Error(`${name} should have failed: ${JSON.stringify(res.structuredContent)}`);
  const first = res.content[0];
  return first && first.type === 'text' ? first.text : '';
}
