/**
 * The MCP tool layer: gymwire's operations as MCP tools, over any {@link GymwireLink}.
 *
 * The tool list (catalog.ts) is the same for every connection and does not change as sessions
 * open and close: the fixed tools (`list_envs`, `make_env`, `reset`, `step`, `render`,
 * `close_env`, `list_session_tools`, `call_session_tool`) and every registered env's own tools as
 * `<env>__<tool>` taking `session_id`. Only an env whose tools are known once a session exists
 * (a hosted Python env) adds its tools at its first make, announced by `tools/list_changed`;
 * `call_session_tool` reaches them too. Input schemas pass OpenAI's and Anthropic's strict modes.
 *
 * Results are lean: one copy of each value, numbers to 5 significant digits, large arrays
 * summarised, camera frames as PNG image content with a text line naming each; structured content
 * matches each tool's `outputSchema`. Failures are tool errors (`isError: true`) whose text starts
 * with the gymwire error code, so the model can read the message and correct itself; bad
 * arguments say `Input validation error: ...`.
 *
 * @example
 * const mcp = new GymwireMcp(link);
 * await mcp.server.connect(new StdioServerTransport());
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import pino from 'pino';
import type { Logger } from 'pino';

import { ProtocolError } from '../../protocol/errors.ts';
import type { ErrorCode } from '../../protocol/errors.ts';
import { GYMWIRE_VERSION } from '../../protocol/version.ts';
import type { MakeResult, ServerEvent } from '../../protocol/messages.ts';
import { isPlainObject, spaceToString } from '../../protocol/spaces.ts';
import type { Space } from '../../protocol/spaces.ts';
import { envToolEntry, FIXED_NAMES, TOOL_INPUTS, ToolCatalog } from './catalog.ts';
import type { FixedToolName } from './catalog.ts';
import type { GymwireLink } from './link.ts';
import { StrictArgumentError } from './strict-schema.ts';
import { actionJsonSchema, ActionFormatError, encodePng, fromJson, toJson } from './values.ts';
import type { FoundImage, Json } from './values.ts';

export { TOOL_INPUTS };
export type { FixedToolName };

interface SessionView {
  envId: string;
  actionSpace: Space;
  tools: string[];
  episodeReturn: number;
  episodeSteps: number;
}

/** A tool failure with a gymwire error code, reported as an MCP tool error. */
class ToolFailure extends Error {
  constructor(
    readonly code: ErrorCode | 'INPUT_VALIDATION',
    message: string,
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
  /** Built from the server's listing on first use; the registry does not change while it runs. */
  private catalogPromise: Promise<ToolCatalog> | null = null;

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
          "gymwire environments as tools: list_envs, then make_env (returns session_id), reset, then step (or the env's own tools <env>__<tool>, such as NavsimEnv-v1__step_with_waypoints or Bench2Drive-v0__follow_waypoints_for) until terminated or truncated; close_env when done.",
      },
    );
    this.server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: (await this.catalog()).tools() }));
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
    for (const id of ids) this.forget(id, reason);
  }

  // -------------------------------------------------------------------------------------------

  private catalog(): Promise<ToolCatalog> {
    this.catalogPromise ??= this.link.request('list_envs', {}).then(
      ({ envs }) => new ToolCatalog(envs),
      (err: unknown) => {
        this.catalogPromise = null; // a refused or lost link: the next call tries again
        throw err;
      },
    );
    return this.catalogPromise;
  }

  private async call(name: string, raw: Record<string, unknown>): Promise<CallToolResult> {
    try {
      const catalog = await this.catalog();
      if (FIXED_NAMES.has(name)) return await this.callFixed(catalog, name as FixedToolName, raw);
      const entry = catalog.envTool(name);
      if (!entry) throw new ToolFailure('INPUT_VALIDATION', `Tool ${name} not found; the tools are ${catalog.names().join(', ')}`);
      const { session_id: sessionId, ...args } = decodeArgs(name, () => entry.strict.decode(raw));
      if (typeof sessionId !== 'string' || sessionId.length === 0)
        throw new ToolFailure('INPUT_VALIDATION', `Input validation error: Invalid arguments for tool ${name}: session_id: a session id string is required`);
      const view = this.sessions.get(this.known(sessionId));
      if (view && view.envId !== entry.envId) {
        const own = catalog.envToolNameOf(view.envId, entry.tool);
        throw new ToolFailure(
          'INPUT_VALIDATION',
          `Input validation error: ${name} is a tool of ${entry.envId} sessions; session ${sessionId} is a ${view.envId} session${own ? `: call ${own}` : ` without a tool ${entry.tool}`}`,
        );
      }
      return await this.execute(sessionId, entry.tool, args);
    } catch (err) {
      return this.failure(err, name);
    }
  }

  private async callFixed(catalog: ToolCatalog, name: FixedToolName, raw: Record<string, unknown>): Promise<CallToolResult> {
    const decoded = decodeArgs(name, () => catalog.fixedTool(name).strict.decode(raw));
    const parsed = TOOL_INPUTS[name].safeParse(decoded);
    if (!parsed.success) {
      const text = parsed.error.issues.map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`).join('; ');
      throw new ToolFailure('INPUT_VALIDATION', `Input validation error: Invalid arguments for tool ${name}: ${text}`);
    }
    const args = parsed.data as Record<string, unknown>;
    switch (name) {
      case 'list_envs': {
        const { envs } = await this.link.request('list_envs', {});
        // Each env's tools are listed by name: their schemas are the MCP tools' own.
        return respond({
          envs: envs.map((e) => ({
            id: e.id,
            description: e.description,
            max_episode_steps: e.max_episode_steps,
            tags: e.tags,
            kwargs_schema: toJson(e.kwargs_schema),
            tools: e.tools ? e.tools.map((t) => catalog.envToolNameOf(e.id, t.function.name) ?? t.function.name) : null,
          })),
        });
      }
      case 'make_env':
        return this.make(catalog, args.env_id as string, (args.kwargs as Record<string, unknown> | undefined) ?? {});
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
          content: [
            { type: 'text', text: `Frame of session ${id} (PNG, ${frame.byteLength} bytes) follows as an image.` },
            { type: 'image', data: Buffer.from(frame).toString('base64'), mimeType: 'image/png' },
          ],
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
        return this.execute(this.known(args.session_id as string), args.tool as string, (args.args as Record<string, unknown> | undefined) ?? {});
    }
  }

  private async make(catalog: ToolCatalog, envId: string, kwargs: Record<string, unknown>): Promise<CallToolResult> {
    const made: MakeResult = await this.link.request('make', { env_id: envId, kwargs });
    const id = made.session_id;
    this.sessions.set(id, {
      envId: made.env_id,
      actionSpace: made.action_space,
      tools: made.tools.map((t) => t.function.name),
      episodeReturn: 0,
      episodeSteps: 0,
    });
    // Tools the listing did not know (a hosted env's): published now, announced to the host.
    let added = false;
    for (const t of made.tools) if (catalog.add(envToolEntry(made.env_id, t.function))) added = true;
    if (added) this.server.sendToolListChanged().catch((err: unknown) => this.log.debug({ err }, 'tools/list_changed not sent'));
    return respond({
      session_id: id,
      env_id: made.env_id,
      observation_space: spaceToString(made.observation_space),
      action_space: spaceToString(made.action_space),
      action_schema: actionJsonSchema(made.action_space) as Json,
      max_episode_steps: made.max_episode_steps,
      render_mode: made.render_mode,
      metadata: toJson(made.metadata),
      tools: made.tools.map((t) => ({
        name: t.function.name,
        mcp_tool: catalog.envToolNameOf(made.env_id, t.function.name) ?? undefined,
        description: t.function.description,
      })),
    });
  }

  private async execute(sessionId: string, tool: string, args: Record<string, unknown>): Promise<CallToolResult> {
    const id = this.known(sessionId);
    const { result } = await this.link.request('execute', { session_id: id, tool, args });
    const out: Record<string, unknown> = { session_id: id, tool };
    let rest: unknown = result;
    // A tool that advances the episode reports like step does: its outcome lifted to the top, once.
    if (isPlainObject(result)) {
      const own: Record<string, unknown> = { ...result };
      for (const key of ['reward', 'terminated', 'truncated', 'info'] as const) {
        if (key in own) {
          out[key] = own[key];
          delete own[key];
        }
      }
      const view = this.sessions.get(id);
      if (view && typeof result.reward === 'number') {
        view.episodeReturn += result.reward;
        view.episodeSteps += typeof result.ticks === 'number' ? result.ticks : 1;
        out.episode_return = view.episodeReturn;
        out.episode_steps = view.episodeSteps;
      }
      rest = own;
    }
    out.result = rest;
    return respondWithImages(out);
  }

  /** The session id, when this MCP session owns it; else a clear unknown-session failure. */
  private known(sessionId: string): string {
    if (this.sessions.has(sessionId)) return sessionId;
    const reason = this.closedSessions.get(sessionId);
    if (reason !== undefined) throw new ToolFailure('ENV_ERR_UNKNOWN_SESSION', `session ${sessionId} is closed (${reason}); make a new one with make_env`);
    const open = this.sessionIds;
    throw new ToolFailure(
      'ENV_ERR_UNKNOWN_SESSION',
      `no session ${JSON.stringify(sessionId)} in this MCP session; ${open.length ? `open sessions: ${open.join(', ')}` : 'make one with make_env'}`,
    );
  }

  private forget(sessionId: string, reason: string): void {
    if (!this.sessions.delete(sessionId)) return;
    this.closedSessions.set(sessionId, reason);
    if (this.closedSessions.size > MAX_CLOSED_REMEMBERED) this.closedSessions.delete(this.closedSessions.keys().next().value!);
  }

  private failure(err: unknown, tool: string): CallToolResult {
    let code: string;
    let message: string;
    if (err instanceof ToolFailure) {
      ({ code, message } = err);
    } else if (err instanceof ProtocolError) {
      ({ code, message } = err);
      const sessionId = err.details.session_id;
      if (code === 'ENV_ERR_UNKNOWN_SESSION' && typeof sessionId === 'string') this.forget(sessionId, 'closed on the server');
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
    // Text only: a tool's outputSchema describes its results, and an error is not one.
    return { content: [{ type: 'text', text }], isError: true };
  }
}

function decodeArgs(tool: string, decode: () => Record<string, unknown>): Record<string, unknown> {
  try {
    return decode();
  } catch (err) {
    if (err instanceof StrictArgumentError)
      throw new ToolFailure('INPUT_VALIDATION', `Input validation error: Invalid arguments for tool ${tool}: ${err.message}`);
    throw err;
  }
}

function respond(structured: Record<string, unknown>, images: { data: string; path: string; note: string }[] = []): CallToolResult {
  const json = toJson(structured) as Record<string, Json>;
  return {
    content: [
      { type: 'text', text: JSON.stringify(json) },
      // Each image with a line of text first, for hosts that drop images or show them apart.
      ...images.flatMap((img, i) => [
        { type: 'text' as const, text: `Image ${i + 1}: ${img.note}` },
        { type: 'image' as const, data: img.data, mimeType: 'image/png', _meta: { path: img.path } },
      ]),
    ],
    structuredContent: json,
  };
}

/** Like respond, with the camera frames found in the result attached as PNG images. */
async function respondWithImages(structured: Record<string, unknown>): Promise<CallToolResult> {
  const found: FoundImage[] = [];
  const json = toJson(structured, found) as Record<string, Json>;
  const images = await Promise.all(
    found.map(async (f) => ({
      path: f.path,
      note: `${f.path || 'frame'}, ${f.tensor.shape[1]}x${f.tensor.shape[0]} RGB${f.tensor.shape[2] === 4 ? 'A' : ''}`,
      data: (await encodePng(f.tensor)).toString('base64'),
    })),
  );
  return respond(json, images);
}
