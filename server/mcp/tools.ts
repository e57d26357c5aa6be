/**
 * The MCP tool layer: gymwire's operations as MCP tools, over any {@link GymwireLink}.
 *
 * Fixed tools: `list_envs`, `make_env`, `reset`, `step`, `render`, `close_env`,
 * `list_session_tools` and `call_session_tool`; their input schemas are the WebSocket protocol's
 * own zod request schemas (protocol/messages.ts) less `id` and `type`. Each env's own tools
 * (NAVSIM's `step_with_waypoints`, Bench2Drive's `drive`...) also appear as MCP tools of the same
 * name, taking `session_id` plus the tool's arguments, from the moment a session of that env is
 * made until the last one closes; the server then sends `notifications/tools/list_changed`.
 * `call_session_tool` reaches the same tools for hosts that do not refresh their tool list.
 *
 * Results carry reward, terminated, truncated and info as structured content (and the same JSON
 * as text), camera frames as PNG image content. Failures are tool errors (`isError: true`, as the
 * SDK's McpServer reports them) whose text starts with the gymwire error code, so the model can
 * read the message and correct itself; bad arguments say `Input validation error: ...`.
 *
 * @example
 * const mcp = new GymwireMcp(link);
 * await mcp.server.connect(new StdioServerTransport());
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import pino from 'pino';
import type { Logger } from 'pino';
import { z } from 'zod';

import { ProtocolError } from '../../protocol/errors.ts';
import type { ErrorCode } from '../../protocol/errors.ts';
import { GYMWIRE_VERSION } from '../../protocol/version.ts';
import {
  CloseRequestSchema,
  ExecuteRequestSchema,
  ListEnvsRequestSchema,
  ListToolsRequestSchema as GymListToolsRequestSchema,
  MakeRequestSchema,
  RenderRequestSchema,
  ResetRequestSchema,
  StepRequestSchema,
} from '../../protocol/messages.ts';
import type { MakeResult, ServerEvent, ToolDescription } from '../../protocol/messages.ts';
import { isPlainObject, spaceToString } from '../../protocol/spaces.ts';
import type { Space } from '../../protocol/spaces.ts';
import type { GymwireLink } from './link.ts';
import { actionJsonSchema, ActionFormatError, encodePng, fromJson, MAX_LIST_ELEMENTS, MAX_TOOL_LIST_ELEMENTS, toJson } from './values.ts';
import type { FoundImage, Json } from './values.ts';

const WIRE_ONLY = { id: true, type: true } as const;

/** Tool inputs: the wire request schemas without id and type (and with JSON-friendly seeds and actions). */
export const TOOL_INPUTS = {
  list_envs: ListEnvsRequestSchema.omit(WIRE_ONLY),
  make_env: MakeRequestSchema.omit(WIRE_ONLY).extend({
    env_id: MakeRequestSchema.shape.env_id.describe('an id from list_envs, e.g. gymwire/CartPole-v1'),
    kwargs: MakeRequestSchema.shape.kwargs.describe("the env's make kwargs (list_envs shows each env's kwargs_schema)"),
  }),
  reset: ResetRequestSchema.omit(WIRE_ONLY).extend({
    // The wire also takes msgpack bigints; JSON has only numbers.
    seed: z.number().int().nonnegative().nullable().optional().describe('non-negative integer seed: the same seed gives the same episode'),
    options: ResetRequestSchema.shape.options.describe('env-specific reset options (a scene index, a route...)'),
  }),
  step: StepRequestSchema.omit(WIRE_ONLY).extend({
    action: z
      .custom<unknown>((v) => v !== undefined, { message: 'action is required' })
      .describe('the action as JSON: an integer for Discrete, a (nested) array of numbers for Box, an object for Dict; make_env returns the action_schema'),
  }),
  render: RenderRequestSchema.pick({ session_id: true }),
  close_env: CloseRequestSchema.omit(WIRE_ONLY),
  list_session_tools: GymListToolsRequestSchema.omit(WIRE_ONLY),
  call_session_tool: ExecuteRequestSchema.omit(WIRE_ONLY).extend({
    tool: ExecuteRequestSchema.shape.tool.describe("the tool's name, from make_env or list_session_tools"),
    args: ExecuteRequestSchema.shape.args.describe("the tool's arguments"),
  }),
};
export type FixedToolName = keyof typeof TOOL_INPUTS;
const FIXED_NAMES = new Set<string>(Object.keys(TOOL_INPUTS));

const DESCRIPTIONS: Record<FixedToolName, string> = {
  list_envs: 'List the environments this gymwire server hosts: ids, descriptions, episode limits and make kwargs schemas.',
  make_env:
    "Make an environment session. Returns session_id, the observation and action spaces (action_schema: the JSON an action must be), and the env's own tools, which also become MCP tools taking session_id.",
  reset: 'Reset a session to the start of an episode. Returns the first observation and info; camera frames come as images.',
  step: 'Take one action in a session. Returns reward, terminated, truncated, info and the observation; reset again once terminated or truncated is true.',
  render: "Render a session's current frame as a PNG image (make the env with kwargs {render_mode: 'rgb_array'}).",
  close_env: 'Close a session and free it. Sessions also close when this MCP session ends or stays idle too long.',
  list_session_tools: "List a session's own tools (name, description, JSON Schema of the arguments).",
  call_session_tool: "Call one of a session's own tools by name with its arguments (the same as calling the MCP tool of that name).",
};

const SessionArg = { session_id: { type: 'string', minLength: 1, maxLength: 128, description: 'the session, from make_env' } } as const;

function inputJsonSchema(schema: z.ZodType): Tool['inputSchema'] {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete json.$schema;
  return json as Tool['inputSchema'];
}

interface SessionView {
  envId: string;
  actionSpace: Space;
  tools: string[];
  episodeReturn: number;
  episodeSteps: number;
}

/** An env tool published as an MCP tool; it may serve several sessions (and envs). */
interface EnvToolEntry {
  /** The env tool's own name (the MCP name may be prefixed when it clashes with a fixed tool). */
  tool: string;
  description: ToolDescription['function'];
  /** Sessions (and their env ids) that have the tool. */
  sessions: Map<string, string>;
  /** False once two envs publish different argument schemas under one name. */
  uniform: boolean;
}

/** A tool failure with a gymwire error code, reported as an MCP tool error. */
class ToolFailure extends Error {
  constructor(
    readonly code: ErrorCode | 'INPUT_VALIDATION',
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

const MAX_CLOSED_REMEMBERED = 1024;

export interface GymwireMcpOptions {
  logger?: Logger;
  /** The MCP server's name and version as the client sees them. */
  name?: string;
  version?: string;
}

/** One MCP server (one MCP session) bridged to one gymwire link. */
export class GymwireMcp {
  readonly server: Server;
  private readonly log: Logger;
  private readonly sessions = new Map<string, SessionView>();
  /** Why sessions went away, so a later call can say so instead of "unknown". */
  private readonly closedSessions = new Map<string, string>();
  private readonly envTools = new Map<string, EnvToolEntry>();
  private readonly fixedTools: Tool[];

  constructor(
    private readonly link: GymwireLink,
    opts: GymwireMcpOptions = {},
  ) {
    this.log = opts.logger ?? pino({ level: 'silent' });
    this.server = new Server(
      { name: opts.name ?? 'gymwire', version: opts.version ?? GYMWIRE_VERSION },
      {
        capabilities: { tools: { listChanged: true } },
        instructions:
          "gymwire environments as tools: list_envs, then make_env (returns session_id), reset, then step (or the env's own tools such as step_with_waypoints) until terminated or truncated; close_env when done.",
      },
    );
    this.fixedTools = (Object.keys(TOOL_INPUTS) as FixedToolName[]).map((name) => ({
      name,
      description: DESCRIPTIONS[name],
      inputSchema: inputJsonSchema(TOOL_INPUTS[name]),
    }));
    this.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...this.fixedTools, ...this.envToolList()] }));
    this.server.setRequestHandler(CallToolRequestSchema, (req) => this.call(req.params.name, req.params.arguments ?? {}));
  }

  /** Gymwire sessions this MCP session owns. */
  get sessionIds(): string[] {
    return [...this.sessions.keys()];
  }

  /** Feeds a server event from the link (a session closed by the reaper). */
  handleEvent(event: ServerEvent): void {
    if (event.event === 'session_closed' && event.session_id) this.forget(event.session_id, event.reason);
  }

  /** Closes every gymwire session this MCP session made (the link itself is the caller's). */
  async closeSessions(reason = 'the MCP session ended'): Promise<void> {
    const ids = this.sessionIds;
    await Promise.allSettled(ids.map((id) => this.link.request('close', { session_id: id })));
    for (const id of ids) this.forget(id, reason, false);
  }

  // -------------------------------------------------------------------------------------------

  private async call(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    try {
      if (FIXED_NAMES.has(name)) return await this.callFixed(name as FixedToolName, args);
      const entry = this.envTools.get(name);
      if (entry) {
        const { session_id: sessionId, ...toolArgs } = args;
        if (typeof sessionId !== 'string' || sessionId.length === 0) {
          throw new ToolFailure('INPUT_VALIDATION', `Input validation error: Invalid arguments for tool ${name}: session_id: a session id string is required`);
        }
        return await this.execute(sessionId, entry.tool, toolArgs);
      }
      throw new ToolFailure('INPUT_VALIDATION', `Tool ${name} not found; the tools are ${[...FIXED_NAMES, ...this.envTools.keys()].join(', ')}`);
    } catch (err) {
      return this.failure(err, name);
    }
  }

  private async callFixed(name: FixedToolName, raw: Record<string, unknown>): Promise<CallToolResult> {
    const parsed = TOOL_INPUTS[name].safeParse(raw);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
      const text = issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ');
      throw new ToolFailure('INPUT_VALIDATION', `Input validation error: Invalid arguments for tool ${name}: ${text}`, { issues });
    }
    const args = parsed.data as Record<string, unknown>;
    switch (name) {
      case 'list_envs': {
        const { envs } = await this.link.request('list_envs', {});
        return respond({ envs: toJson(envs) });
      }
      case 'make_env':
        return this.make(args.env_id as string, (args.kwargs as Record<string, unknown> | undefined) ?? {});
      case 'reset': {
        const id = this.known(args.session_id as string);
        const res = await this.link.request('reset', {
          session_id: id,
          seed: args.seed as number | null | undefined,
          options: args.options as Record<string, unknown> | null | undefined,
        });
        const view = this.sessions.get(id);
        if (view) {
          view.episodeReturn = 0;
          view.episodeSteps = 0;
        }
        return respondWithImages({ session_id: id, obs: res.obs, info: res.info });
      }
      case 'step': {
        const id = this.known(args.session_id as string);
        const view = this.sessions.get(id)!;
        let action: unknown;
        try {
          action = fromJson(view.actionSpace, args.action);
        } catch (err) {
          if (err instanceof ActionFormatError)
            throw new ToolFailure('ENV_ERR_INVALID_ACTION', `${err.message}; the action space is ${spaceToString(view.actionSpace)}`);
          throw err;
        }
        const res = await this.link.request('step', { session_id: id, action });
        view.episodeReturn += res.reward;
        view.episodeSteps += 1;
        return respondWithImages({
          session_id: id,
          reward: res.reward,
          terminated: res.terminated,
          truncated: res.truncated,
          episode_return: view.episodeReturn,
          episode_steps: view.episodeSteps,
          info: res.info,
          obs: res.obs,
        });
      }
      case 'render': {
        const id = this.known(args.session_id as string);
        const { frame } = await this.link.request('render', { session_id: id, format: 'png' });
        if (typeof frame === 'string') return respond({ session_id: id, frame });
        if (!(frame instanceof Uint8Array)) throw new ToolFailure('ENV_ERR_INTERNAL', 'render returned no PNG bytes');
        return {
          content: [{ type: 'image', data: Buffer.from(frame).toString('base64'), mimeType: 'image/png' }],
          structuredContent: { session_id: id, format: 'png', bytes: frame.byteLength },
        };
      }
      case 'close_env': {
        const id = args.session_id as string;
        if (!this.sessions.has(id)) {
          const reason = this.closedSessions.get(id);
          if (reason !== undefined) return respond({ session_id: id, closed: false, reason });
          this.known(id);
        }
        const res = await this.link.request('close', { session_id: id });
        this.forget(id, 'closed by close_env');
        return respond({ session_id: id, closed: res.closed });
      }
      case 'list_session_tools': {
        const id = this.known(args.session_id as string);
        const { tools } = await this.link.request('list_tools', { session_id: id });
        return respond({
          session_id: id,
          tools: tools.map((t) => ({ name: t.function.name, description: t.function.description, input_schema: t.function.parameters as Json })),
        });
      }
      case 'call_session_tool':
        return this.execute(this.known(args.session_id as string), args.tool as string, args.args as Record<string, unknown>);
    }
  }

  private async make(envId: string, kwargs: Record<string, unknown>): Promise<CallToolResult> {
    const made: MakeResult = await this.link.request('make', { env_id: envId, kwargs });
    const id = made.session_id;
    this.sessions.set(id, {
      envId: made.env_id,
      actionSpace: made.action_space,
      tools: made.tools.map((t) => t.function.name),
      episodeReturn: 0,
      episodeSteps: 0,
    });
    const added = this.publishEnvTools(id, made.env_id, made.tools);
    if (added) this.notifyToolsChanged();
    return respond({
      session_id: id,
      env_id: made.env_id,
      observation_space: spaceToString(made.observation_space),
      action_space: spaceToString(made.action_space),
      action_schema: actionJsonSchema(made.action_space) as Json,
      max_episode_steps: made.max_episode_steps,
      render_mode: made.render_mode,
      metadata: toJson(made.metadata),
      tools: made.tools.map((t) => ({ name: t.function.name, mcp_tool: this.mcpNameOf(t.function.name), description: t.function.description })),
    });
  }

  private async execute(sessionId: string, tool: string, args: Record<string, unknown>): Promise<CallToolResult> {
    const id = this.known(sessionId);
    const { result } = await this.link.request('execute', { session_id: id, tool, args });
    const out: Record<string, unknown> = { session_id: id, tool };
    // A tool that advances the episode reports like step does: lift its outcome to the top.
    if (isPlainObject(result)) {
      for (const key of ['reward', 'terminated', 'truncated', 'info'] as const) if (key in result) out[key] = result[key];
      const view = this.sessions.get(id);
      if (view && typeof result.reward === 'number') {
        view.episodeReturn += result.reward;
        view.episodeSteps += 1;
        out.episode_return = view.episodeReturn;
        out.episode_steps = view.episodeSteps;
      }
    }
    out.result = result;
    return respondWithImages(out, MAX_TOOL_LIST_ELEMENTS);
  }

  /** The session id, when this MCP session owns it; else a clear unknown-session failure. */
  private known(sessionId: string): string {
    if (this.sessions.has(sessionId)) return sessionId;
    const reason = this.closedSessions.get(sessionId);
    if (reason !== undefined)
      throw new ToolFailure('ENV_ERR_UNKNOWN_SESSION', `session ${sessionId} is closed (${reason}); make a new one with make_env`, { session_id: sessionId });
    const open = this.sessionIds;
    throw new ToolFailure(
      'ENV_ERR_UNKNOWN_SESSION',
      `no session ${JSON.stringify(sessionId)} in this MCP session; ${open.length ? `open sessions: ${open.join(', ')}` : 'make one with make_env'}`,
      { session_id: sessionId },
    );
  }

  private forget(sessionId: string, reason: string, notify = true): void {
    if (!this.sessions.delete(sessionId)) return;
    this.closedSessions.set(sessionId, reason);
    if (this.closedSessions.size > MAX_CLOSED_REMEMBERED) this.closedSessions.delete(this.closedSessions.keys().next().value!);
    let changed = false;
    for (const [name, entry] of this.envTools) {
      if (entry.sessions.delete(sessionId) && entry.sessions.size === 0) {
        this.envTools.delete(name);
        changed = true;
      }
    }
    if (changed && notify) this.notifyToolsChanged();
  }

  // -------------------------------------------------------------------------------------------
  // Env tools as MCP tools

  /** MCP tool names are the env tools' own names, unless one clashes with a fixed tool. */
  private mcpNameOf(tool: string): string {
    const clean = tool.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 60);
    return FIXED_NAMES.has(clean) ? `env_${clean}` : clean;
  }

  /** Publishes a new session's tools; true when the MCP tool list changed. */
  private publishEnvTools(sessionId: string, envId: string, tools: readonly ToolDescription[]): boolean {
    let changed = false;
    for (const t of tools) {
      const name = this.mcpNameOf(t.function.name);
      const entry = this.envTools.get(name);
      if (!entry) {
        this.envTools.set(name, { tool: t.function.name, description: t.function, sessions: new Map([[sessionId, envId]]), uniform: true });
        changed = true;
        continue;
      }
      if (entry.uniform && JSON.stringify(entry.description.parameters) !== JSON.stringify(t.function.parameters)) {
        entry.uniform = false;
        changed = true;
      }
      entry.sessions.set(sessionId, envId);
    }
    return changed;
  }

  private envToolList(): Tool[] {
    return [...this.envTools].map(([name, entry]) => {
      const envs = [...new Set(entry.sessions.values())];
      const params = entry.description.parameters as { properties?: Record<string, unknown>; required?: string[] };
      const inputSchema: Tool['inputSchema'] = entry.uniform
        ? {
            ...params,
            type: 'object',
            properties: { ...SessionArg, ...params.properties },
            required: ['session_id', ...(params.required ?? []).filter((r) => r !== 'session_id')],
          }
        : // Envs disagree on the arguments: the session's env checks them (list_session_tools shows each).
          { type: 'object', properties: { ...SessionArg }, required: ['session_id'], additionalProperties: true };
      return {
        name,
        description: `${entry.description.description} (tool of ${envs.join(', ')}; pass the session_id from make_env${entry.uniform ? '' : '; arguments differ per env: see list_session_tools'})`,
        inputSchema,
      };
    });
  }

  private notifyToolsChanged(): void {
    this.server.sendToolListChanged().catch((err: unknown) => this.log.debug({ err }, 'tools/list_changed not sent'));
  }

  private failure(err: unknown, tool: string): CallToolResult {
    let code: string;
    let message: string;
    let details: Record<string, unknown> = {};
    if (err instanceof ToolFailure) {
      ({ code, message, details } = err);
    } else if (err instanceof ProtocolError) {
      ({ code, message, details } = err);
      if (code === 'ENV_ERR_UNKNOWN_SESSION' && typeof details.session_id === 'string') this.forget(details.session_id, 'closed on the server');
    } else if (err instanceof Error && 'code' in err && typeof err.code === 'string') {
      // A local SDK error of the stdio bridge's client (not connected, timed out): keep its code.
      code = err.code;
      message = err.message;
    } else {
      code = 'ENV_ERR_INTERNAL';
      message = err instanceof Error ? err.message : String(err);
      this.log.warn({ err, tool }, 'MCP tool failed');
    }
    const text = code === 'INPUT_VALIDATION' ? message : `${code}: ${message}`;
    return { content: [{ type: 'text', text }], structuredContent: { error: { code, message, details: toJson(details) } }, isError: true };
  }
}

function respond(structured: Record<string, unknown>, images: { data: string; path: string }[] = []): CallToolResult {
  const json = toJson(structured) as Record<string, Json>;
  return {
    content: [
      { type: 'text', text: JSON.stringify(json) },
      ...images.map((img) => ({ type: 'image' as const, data: img.data, mimeType: 'image/png', _meta: { path: img.path } })),
    ],
    structuredContent: json,
  };
}

/** Like respond, with the camera frames found in the result attached as PNG images. */
async function respondWithImages(structured: Record<string, unknown>, listLimit = MAX_LIST_ELEMENTS): Promise<CallToolResult> {
  const found: FoundImage[] = [];
  const json = toJson(structured, found, '', 0, listLimit) as Record<string, Json>;
  const images = await Promise.all(found.map(async (f) => ({ path: f.path, data: (await encodePng(f.tensor)).toString('base64') })));
  return respond(json, images);
}
