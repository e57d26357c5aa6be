import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import sharp from 'sharp';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { originAllowed } from '../../server/mcp/http.ts';
import { CAMERA_ENV, callErr, callOk, httpClient, startMcpServer, testRegistry } from './helpers.ts';
import { jsonRpcAnswer, rawPost } from './raw-http.ts';
import type { McpTestServer } from './helpers.ts';

const FIXED = ['list_envs', 'make_env', 'reset', 'step', 'render', 'close_env', 'list_session_tools', 'call_session_tool'];
const CARTPOLE = 'gymwire/CartPole-v1';
const NAVSIM = 'gymwire/NavsimEnv-v1';
/** Another caller on the same machine: Linux routes all of 127/8 to loopback. */
const OTHER_CALLER = '127.0.0.2';

let t: McpTestServer | null = null;
const clients: Client[] = [];
afterEach(async () => {
  await Promise.allSettled(clients.splice(0).map((c) => c.close()));
  await t?.server.close();
  t = null;
});

async function setup(opts: Parameters<typeof startMcpServer>[0] = {}, token?: string): Promise<Client> {
  t = await startMcpServer(opts);
  const c = await httpClient(t.mcpUrl, token);
  clients.push(c);
  return c;
}

describe('MCP over Streamable HTTP', () => {
  it("lists the fixed tools and every env's own tools up front, before any session exists", async () => {
    const c = await setup();
    const { tools } = await c.listTools();
    const names = tools.map((x) => x.name);
    expect(names.slice(0, FIXED.length)).toEqual(FIXED);
    expect(names).toEqual(
      expect.arrayContaining([
        'NavsimEnv-v1__step_with_waypoints',
        'NavsimEnv-v2__get_route_info',
        'Bench2Drive-v0__drive',
        'Bench2Drive-v0__follow_waypoints_for',
      ]),
    );
    // Each env's tool keeps its own description, even where two envs share a tool name.
    const routeInfo = (name: string) => tools.find((x) => x.name === name)!.description!;
    expect(routeInfo('Bench2Drive-v0__get_route_info')).toMatch(/scenario type/);
    expect(routeInfo('NavsimEnv-v1__get_route_info')).toMatch(/roadblock ids/);
    const make = tools.find((x) => x.name === 'make_env')!;
    expect(make.inputSchema.required).toEqual(['env_id', 'kwargs']);
    expect(make.inputSchema.properties?.env_id).toMatchObject({ type: 'string', enum: expect.arrayContaining([CARTPOLE, NAVSIM]) });
    expect(make.inputSchema.properties?.kwargs).toMatchObject({ type: ['string', 'null'] });
    expect(make.inputSchema.additionalProperties).toBe(false);
    expect(make.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false });
    expect(make.outputSchema).toMatchObject({ type: 'object', required: expect.arrayContaining(['session_id', 'action_space']) });
    const step = tools.find((x) => x.name === 'step')!;
    expect(step.inputSchema.required).toEqual(['session_id', 'action']);
    expect(JSON.stringify(step.inputSchema)).not.toContain('ack');
    const { envs } = await callOk(c, 'list_envs');
    expect((envs as { id: string }[]).map((e) => e.id)).toContain(CARTPOLE);
    expect((envs as { id: string; tools: string[] | null }[]).find((e) => e.id === NAVSIM)!.tools).toContain('NavsimEnv-v1__step_with_waypoints');
  });

  it('plays a full CartPole episode through make_env, reset, step and close_env', async () => {
    const c = await setup();
    const made = await callOk(c, 'make_env', { env_id: CARTPOLE });
    expect(made).toMatchObject({
      env_id: CARTPOLE,
      action_space: 'Discrete(2)',
      action_schema: { type: 'integer', minimum: 0, maximum: 1 },
      max_episode_steps: 500,
    });
    const id = made.session_id as string;
    const first = await callOk(c, 'reset', { session_id: id, seed: 7 });
    expect(first.obs).toMatchObject({ dtype: 'float32', shape: [4] });
    let total = 0;
    let last: Record<string, unknown> = {};
    for (let i = 0; i < 500; i++) {
      // Push the cart the way the pole leans: a long episode, ended by the pole or the 500-step limit.
      const [, , angle, velocity] = (last.obs as { values: number[] } | undefined)?.values ?? (first.obs as { values: number[] }).values;
      last = await callOk(c, 'step', { session_id: id, action: angle! + 0.5 * velocity! > 0 ? 1 : 0 });
      total += last.reward as number;
      if (last.terminated || last.truncated) break;
    }
    expect(last.terminated || last.truncated).toBe(true);
    expect(last.episode_return).toBe(total);
    expect(last.episode_steps).toBe(total);
    expect(total).toBeGreaterThan(100);
    expect(await callErr(c, 'step', { session_id: id, action: 0 })).toMatch(/^ENV_ERR_RESET_NEEDED: /);
    // The same seed gives the same first observation.
    expect((await callOk(c, 'reset', { session_id: id, seed: 7 })).obs).toEqual(first.obs);
    expect(await callOk(c, 'close_env', { session_id: id })).toEqual({ session_id: id, closed: true });
    expect(t!.server.core.sessionCount).toBe(0);
  });

  it("publishes an env's tools known only once a session exists at its first make, and attaches camera frames as PNG", async () => {
    // 2025-11-25 is served statelessly: no stream carries list_changed (revisions.test.ts checks it on 2026-07-28).
    const c = await setup();
    const before = (await c.listTools()).tools.map((x) => x.name);
    expect(before).not.toContain('test_Camera-v0__drive');
    const made = await callOk(c, 'make_env', { env_id: CAMERA_ENV });
    const id = made.session_id as string;
    expect(made.tools).toEqual([
      { name: 'drive', mcp_tool: 'test_Camera-v0__drive', description: 'Drive one tick with a throttle in [0, 1].' },
      { name: 'get_speed', mcp_tool: 'test_Camera-v0__get_speed', description: 'The current speed.' },
    ]);
    const { tools } = await c.listTools();
    const drive = tools.find((x) => x.name === 'test_Camera-v0__drive')!;
    expect(drive.inputSchema.required).toEqual(['session_id', 'throttle']);
    expect(drive.inputSchema.properties?.throttle).toMatchObject({ type: 'number', description: 'at least 0, at most 1' });
    expect(tools.find((x) => x.name === 'test_Camera-v0__get_speed')!.annotations).toMatchObject({ readOnlyHint: true });

    const reset = (await c.callTool({ name: 'reset', arguments: { session_id: id, seed: 1 } })) as CallToolResult;
    const at = reset.content.findIndex((x) => x.type === 'image');
    expect(reset.content[at]).toMatchObject({ type: 'image', mimeType: 'image/png' });
    // A line of text names every image, for hosts that drop images.
    expect(reset.content[at - 1]).toMatchObject({ type: 'text', text: 'Image 1: obs.camera, 24x16 RGB' });
    const meta = await sharp(Buffer.from((reset.content[at] as { data: string }).data, 'base64')).metadata();
    expect([meta.format, meta.width, meta.height, meta.channels]).toEqual(['png', 24, 16, 3]);
    expect((reset.structuredContent as { obs: { camera: unknown } }).obs.camera).toMatchObject({ dtype: 'uint8', shape: [16, 24, 3] });

    const driven = await callOk(c, 'test_Camera-v0__drive', { session_id: id, throttle: 0.5 });
    expect(driven).toMatchObject({ tool: 'drive', terminated: false, truncated: false, info: { t: 1 }, episode_steps: 1 });
    // One copy of each value: the outcome is lifted out of the tool's result, not repeated in it.
    expect(driven.result).toEqual({});
    const viaGeneric = await callOk(c, 'call_session_tool', { session_id: id, tool: 'get_speed', args: '{}' });
    expect((viaGeneric.result as { speed: number }).speed).toBeGreaterThan(0.5);
    const listed = await callOk(c, 'list_session_tools', { session_id: id });
    expect((listed.tools as { name: string }[]).map((x) => x.name)).toEqual(['drive', 'get_speed']);

    const stepped = (await c.callTool({ name: 'step', arguments: { session_id: id, action: [0.1, 0] } })) as CallToolResult;
    expect(stepped.isError).toBeFalsy();
    expect(stepped.content.filter((x) => x.type === 'image')).toHaveLength(1);

    const rendered = (await c.callTool({ name: 'render', arguments: { session_id: id } })) as CallToolResult;
    expect(rendered.content.map((x) => x.type)).toEqual(['text', 'image']);
    expect(rendered.content[1]).toMatchObject({ type: 'image', mimeType: 'image/png' });

    // Closing sessions leaves the list as it is: hosts and prompt caches see one list.
    await callOk(c, 'close_env', { session_id: id });
    expect((await c.listTools()).tools.map((x) => x.name)).toEqual(tools.map((x) => x.name));
  });

  it('keeps the tool list unchanged as sessions open and close, and refuses a tool of another env', async () => {
    const c = await setup();
    const names = async () => (await c.listTools()).tools.map((x) => x.name);
    const first = await names();
    const nav = (await callOk(c, 'make_env', { env_id: NAVSIM })).session_id as string;
    const b2d = (await callOk(c, 'make_env', { env_id: 'gymwire/Bench2Drive-v0' })).session_id as string;
    expect(await names()).toEqual(first);
    await callOk(c, 'reset', { session_id: b2d, seed: 0 });
    expect(await callErr(c, 'NavsimEnv-v1__get_route_info', { session_id: b2d })).toMatch(
      /^Input validation error: NavsimEnv-v1__get_route_info is a tool of gymwire\/NavsimEnv-v1 sessions; .* call Bench2Drive-v0__get_route_info/,
    );
    await callOk(c, 'close_env', { session_id: nav });
    await callOk(c, 'close_env', { session_id: b2d });
    expect(await callErr(c, 'Bench2Drive-v0__drive', { session_id: b2d, throttle: 0, steer: 0, brake: 0 })).toMatch(
      /^ENV_ERR_UNKNOWN_SESSION: session .* is closed/,
    );
    expect(await names()).toEqual(first);
  });

  it('ends MCP sessions and their gymwire sessions when the server shuts down', async () => {
    const c = await setup();
    await callOk(c, 'make_env', { env_id: CARTPOLE });
    await t!.server.close(2000);
    expect(t!.endpoint.sessionCount).toBe(0);
    expect(t!.server.core.sessionCount).toBe(0);
    await expect(c.callTool({ name: 'list_envs', arguments: {} })).rejects.toThrow();
  });

  it('answers bad tool arguments with an MCP tool error carrying the validation message', async () => {
    const c = await setup();
    expect(await callErr(c, 'step', { session_id: 5 })).toMatch(
      /^Input validation error: Invalid arguments for tool step: session_id: Invalid input: expected string, received number; action: /,
    );
    expect(await callErr(c, 'make_env', { env_id: CARTPOLE, colour: 'red' })).toMatch(/^Input validation error: .*Unrecognized key: "colour"/);
    expect(await callErr(c, 'reset', { session_id: 'x', seed: -1 })).toMatch(/^Input validation error: .*seed: Too small/);
    expect(await callErr(c, 'make_env', { env_id: 'gymwire/Nope-v0' })).toMatch(/^ENV_ERR_UNKNOWN_ENV: /);
    expect(await callErr(c, 'make_env', { env_id: CARTPOLE, kwargs: { render_mode: 'human' } })).toMatch(/^ENV_ERR_INVALID_KWARGS: /);
    const cart = (await callOk(c, 'make_env', { env_id: CARTPOLE })).session_id as string;
    await callOk(c, 'reset', { session_id: cart, seed: 0 });
    expect(await callErr(c, 'step', { session_id: cart, action: 2 })).toBe('ENV_ERR_INVALID_ACTION: action is not in the action space: 2 is outside [0, 1]');
    const cam = (await callOk(c, 'make_env', { env_id: CAMERA_ENV })).session_id as string;
    await callOk(c, 'reset', { session_id: cam, seed: 0 });
    expect(await callErr(c, 'step', { session_id: cam, action: [1, 2, 3] })).toMatch(/^ENV_ERR_INVALID_ACTION: action needs 2 numbers for shape \[2\], got 3/);
    expect(await callErr(c, 'test_Camera-v0__drive', { session_id: cam, throttle: 5 })).toMatch(/^ENV_ERR_INVALID_TOOL_ARGS: .*throttle: Too big/);
    expect(await callErr(c, 'test_Camera-v0__drive', { throttle: 0.5 })).toMatch(/^Input validation error: .*session_id/);
    expect(await callErr(c, 'make_env', { env_id: CARTPOLE, kwargs: '{not json' })).toMatch(/^Input validation error: .*kwargs must be JSON text/);
    expect(await callErr(c, 'call_session_tool', { session_id: cam, tool: 'fly' })).toMatch(/^ENV_ERR_UNKNOWN_TOOL: /);
    expect(await callErr(c, 'teleport', {})).toMatch(/Tool teleport not found/);
    const res = (await c.callTool({ name: 'step', arguments: { session_id: cart, action: 9 } })) as CallToolResult;
    expect(res.isError).toBe(true);
    expect(res.structuredContent).toBeUndefined();
  });

  it('answers an unknown or closed session clearly', async () => {
    const c = await setup();
    expect(await callErr(c, 'step', { session_id: 's_nope', action: 0 })).toBe(
      'ENV_ERR_UNKNOWN_SESSION: no session "s_nope" of this caller; make one with make_env',
    );
    const id = (await callOk(c, 'make_env', { env_id: CARTPOLE })).session_id as string;
    expect(await callErr(c, 'reset', { session_id: 's_nope' })).toMatch(`open sessions: ${id}`);
    await callOk(c, 'close_env', { session_id: id });
    expect(await callErr(c, 'reset', { session_id: id })).toBe(
      `ENV_ERR_UNKNOWN_SESSION: session ${id} is closed (closed by close_env); make a new one with make_env`,
    );
    expect(await callOk(c, 'close_env', { session_id: id })).toMatchObject({ closed: false });
    // Another caller (another address) cannot reach this caller's sessions.
    const mine = (await callOk(c, 'make_env', { env_id: CARTPOLE })).session_id as string;
    const answer = await rawPost(t!.mcpUrl, {
      localAddress: OTHER_CALLER,
      headers: { 'mcp-protocol-version': '2025-11-25' },
      json: { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'reset', arguments: { session_id: mine } } },
    });
    expect(answer.status).toBe(200);
    expect(jsonRpcAnswer(answer.body)).toMatchObject({
      result: { isError: true, content: [{ text: expect.stringMatching(/^ENV_ERR_UNKNOWN_SESSION: no session/) }] },
    });
    expect(await callOk(c, 'reset', { session_id: mine, seed: 0 })).toMatchObject({ session_id: mine });
  });

  it('keeps env sessions with their caller: a new MCP client steps a session another made, and ending a client closes nothing', async () => {
    t = await startMcpServer();
    const transport = new StreamableHTTPClientTransport(new URL(t.mcpUrl));
    const first = new Client({ name: 'first', version: '0' });
    await first.connect(transport);
    // 2025-11-25 is served statelessly: no Mcp-Session-Id, so nothing can expire under the client.
    expect(transport.sessionId).toBeUndefined();
    const id = (await callOk(first, 'make_env', { env_id: CARTPOLE })).session_id as string;
    await callOk(first, 'reset', { session_id: id, seed: 0 });
    await transport.terminateSession();
    await first.close();
    expect(t.server.core.sessionCount).toBe(1);
    const second = await httpClient(t.mcpUrl);
    clients.push(second);
    expect(await callOk(second, 'step', { session_id: id, action: 1 })).toMatchObject({ session_id: id, reward: 1, episode_steps: 1 });
    expect(t.endpoint.sessionCount).toBe(1);
    expect(t.endpoint.callerCount).toBe(1);
    await callOk(second, 'close_env', { session_id: id });
    expect(t.endpoint.sessionCount).toBe(0);
  });

  it('releases an idle caller (its sessions close) without the 1.x client ever failing, and reports sessions the core reaped as closed', async () => {
    const c = await setup({ mcp: { idleTimeoutMs: 300 } });
    const id = (await callOk(c, 'make_env', { env_id: CARTPOLE })).session_id as string;
    await vi.waitFor(() => expect([t!.endpoint.callerCount, t!.server.core.sessionCount]).toEqual([0, 0]), { timeout: 3000, interval: 20 });
    // The same client goes on: a new gymwire connection for the caller, and the session reported closed.
    expect((await callOk(c, 'list_envs')).envs).toBeInstanceOf(Array);
    expect(await callErr(c, 'reset', { session_id: id })).toMatch(
      new RegExp(`^ENV_ERR_UNKNOWN_SESSION: session ${id} is closed \\(idle for more than 300 ms\\)`),
    );
    await t!.server.close();

    // The core's own idle reaper (the WebSocket limit) closes idle gymwire sessions of a live caller.
    const c2 = await setup({ limits: { idle_timeout_ms: 200 }, mcp: { idleTimeoutMs: 0 } });
    const id2 = (await callOk(c2, 'make_env', { env_id: CARTPOLE })).session_id as string;
    await vi.waitFor(() => expect(t!.server.core.sessionCount).toBe(0), { timeout: 3000, interval: 20 });
    expect(await callErr(c2, 'reset', { session_id: id2 })).toMatch(new RegExp(`^ENV_ERR_UNKNOWN_SESSION: session ${id2} is closed \\(.*idle`));
    expect(t!.endpoint.sessionCount).toBe(0);
  });

  it('applies the core limits to MCP sessions', async () => {
    const c = await setup({ limits: { max_sessions_per_client: 2 } });
    await callOk(c, 'make_env', { env_id: CARTPOLE });
    await callOk(c, 'make_env', { env_id: CARTPOLE });
    expect(await callErr(c, 'make_env', { env_id: CARTPOLE })).toMatch(/^ENV_ERR_TOO_MANY_SESSIONS: /);
  });

  it.skipIf(!testRegistry().ids().includes(NAVSIM))('scores a NAVSIM scene through get_route_info and step_with_waypoints', async () => {
    const c = await setup();
    const id = (await callOk(c, 'make_env', { env_id: NAVSIM })).session_id as string;
    await callOk(c, 'reset', { session_id: id, seed: 2 });
    expect(await callOk(c, 'NavsimEnv-v1__get_route_info', { session_id: id })).toMatchObject({ tool: 'get_route_info', result: expect.any(Object) });
    const straight = Array.from({ length: 8 }, (_, i) => [(i + 1) * 2, 0, 0]);
    const res = await callOk(c, 'NavsimEnv-v1__step_with_waypoints', { session_id: id, waypoints: straight, interval: null });
    expect(res).toMatchObject({
      terminated: true,
      truncated: false,
      episode_steps: 1,
      info: { nc: expect.any(Number), dac: expect.any(Number), ep: expect.any(Number) },
    });
    expect(res.reward).toBeGreaterThanOrEqual(0);
    expect(res.reward).toBeLessThanOrEqual(1);
    expect(await callErr(c, 'NavsimEnv-v1__step_with_waypoints', { session_id: id, waypoints: [[1, 2]] })).toMatch(/^ENV_ERR_INVALID_TOOL_ARGS: /);
  });

  it('enforces the auth token: HTTP 401 without it or with a wrong one', async () => {
    t = await startMcpServer({ token: 'sekret' });
    await expect(httpClient(t.mcpUrl)).rejects.toMatchObject({ code: 401, message: expect.stringMatching(/needs an auth token/) });
    await expect(httpClient(t.mcpUrl, 'wrong')).rejects.toMatchObject({ code: 401, message: expect.stringMatching(/auth token is wrong/) });
    expect(t.server.core.connectionCount).toBe(0);
    const c = await httpClient(t.mcpUrl, 'sekret');
    clients.push(c);
    expect((await callOk(c, 'list_envs')).envs).toBeInstanceOf(Array);
    // A session's later requests must carry the token it was opened with.
    const sid = (c.transport as StreamableHTTPClientTransport).sessionId!;
    const res = await fetch(t.mcpUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sid,
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/list' }),
    });
    expect(res.status).toBe(401);
    // RFC 9728: the challenge names the resource metadata, which anyone may read.
    const metadataUrl = `${new URL(t.mcpUrl).origin}/.well-known/oauth-protected-resource/mcp`;
    expect(res.headers.get('www-authenticate')).toBe(`Bearer realm="gymwire", resource_metadata="${metadataUrl}"`);
    const metadata = await fetch(metadataUrl);
    expect(metadata.status).toBe(200);
    expect(await metadata.json()).toEqual({
      resource: t.mcpUrl,
      resource_name: 'gymwire MCP',
      bearer_methods_supported: ['header'],
      authorization_servers: [],
    });
  });

  it('refuses browser origins that are not loopback or allowed (DNS-rebinding protection)', async () => {
    t = await startMcpServer({ mcp: { allowedOrigins: ['https://lab.example'] } });
    const initialize = (origin?: string) =>
      fetch(t!.mcpUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(origin ? { origin } : {}) },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '0' } },
        }),
      });
    const refused = await initialize('http://attacker.example:8765');
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/--allow-origin http:\/\/attacker.example:8765/);
    expect(t.server.core.connectionCount).toBe(0);
    for (const origin of [undefined, 'http://localhost:5173', 'http://127.0.0.1:9', 'https://lab.example']) {
      expect((await initialize(origin)).status, String(origin)).toBe(200);
    }
    expect(originAllowed('not a url')).toBe(false);
  });
});
