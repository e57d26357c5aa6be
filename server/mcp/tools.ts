/**
 * The MCP tool layer: gymwire's operations as MCP tools, over any {@link GymwireLink}.
 *
 * One GymwireMcp belongs to one owner of env sessions (over HTTP a caller: its token and address;
 * over stdio the bridge's one connection), never to an MCP session: {@link GymwireMcp.createServer}
 * makes a fresh MCP `Server` for every HTTP request or stdio connection, in either protocol
 * revision (2025-11-25 with `initialize`, 2026-07-28 with `server/discover` and stateless
 * requests), and each of them reaches the same env sessions.
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
 * serveStdio(() => mcp.createServer());
 */
import { Server } from '@modelcontextprotocol/server';
import type { CallToolResult } from '@modelcontextprotocol/server';
import pino from 'pino';
import type { Logger } from 'pino';

import { ProtocolError } from '../../protocol/errors.ts';
import type { ErrorCode } from '../../protocol/errors.ts';
import { GYMWIRE_VERSION } from '../../protocol/version.ts';
import type { MakeResult, ServerEvent } from '../../protocol/messages.ts';
import { isPlainObject, spaceToString } from '../../protocol/spaces.ts';
import type { Space } from '../../protocol/spaces.ts';
import { CatalogCache, envToolEntry, FIXED_NAMES, TOOL_INPUTS } from './catalog.ts';
import type { FixedToolName, ToolCatalog } from './catalog.ts';
import type { GymwireLink } from './link.ts';
import { StrictArgumentError } from './strict-schema.ts';
import { actionJsonSchema, ActionFormatError, encodePng, fromJson, toJson } from './values.ts';
import type { FoundImage, Json } from './values.ts';

export { TOOL_INPUTS };
export type { FixedToolName };

/** An env session this owner made; `caller`, `busy` and `lastActive` are what the caps weigh. */
export interface SessionView {
  readonly id: string;
  readonly caller: string;
  /** Tool calls on it in progress; a busy session is never evicted. */
  busy: number;
  lastActive: number;
  envId: string;
  actionSpace: Space;
  tools: string[];
  episodeReturn: number;
  episodeSteps: number;
}

/** A tool failure with a gymwire error code, reported as an MCP tool error. */
export class ToolFailure extends Error {
  constructor(
    readonly code: ErrorCode | 'INPUT_VALIDATION',
    message: string,
  ) {
    super(message);
  }
}

const MAX_CLOSED_REMEMBERED = 1024;

/** Why sessions went away, so a later call can say so instead of "unknown"; may outlive an owner. */
export interface ClosedSessions {
  get(sessionId: string): string | undefined;
  set(sessionId: string, reason: string): void;
}

/** A bounded map of closed-session reasons (the oldest forgotten first). */
export class ClosedSessionLog implements ClosedSessions {
  private readonly reasons = new Map<string, string>();
  constructor(private readonly max = MAX_CLOSED_REMEMBERED) {}
  get(sessionId: string): string | undefined {
    return this.reasons.get(sessionId);
  }
  set(sessionId: string, reason: string): void {
    this.reasons.delete(sessionId);
    this.reasons.set(sessionId, reason);
    if (this.reasons.size > this.max) this.reasons.delete(this.reasons.keys().next().value!);
  }
}

/** What an owner's container (the HTTP endpoint's caps) learns of its env sessions. */
export interface SessionHooks {
  /**
   * Before a make: makes room for one more session of this owner (closing others if the caps say
   * so) or throws a {@link ToolFailure}. Returns a release for the room reserved while the make runs.
   */
  reserve?(): Promise<() => void> | (() => void);
  opened?(view: SessionView): void;
  closed?(view: SessionView): void;
}

export interface GymwireMcpOptions {
  logger?: Logger;
  /** The MCP server's name and version as the client sees them. */
  name?: string;
  version?: string;
  /** Who owns the sessions, for the caps (default 'local'). */
  caller?: string;
  /** The tool catalog; an endpoint shares one between its owners. */
  catalog?: CatalogCache;
  /** Where closed-session reasons are kept; an endpoint shares one so they outlive an owner. */
  closed?: ClosedSessions;
  hooks?: SessionHooks;
  /** Called when a make published tools the listing did not have (announce tools/list_changed). */
  onToolsAdded?: () => void;
}

const INSTRUCTIONS =
  "gymwire environments as tools: list_envs, then make_env (returns session_id), reset, then step (or the env's own tools <env>__<tool>, such as NavsimEnv-v1__step_with_waypoints or Bench2Drive-v0__follow_waypoints_for) until terminated or truncated; close_env when done. Sessions belong to the caller, not to the MCP connection: a session id keeps working across reconnects until close_env or an idle timeout.";

/** The env sessions of one owner, bridged to one gymwire link, served to any number of MCP servers. */
export class GymwireMcp {
  readonly caller: string;
  private readonly log: Logger;
  private readonly sessions = new Map<string, SessionView>();
  private readonly closedSessions: ClosedSessions;
  private readonly catalogCache: CatalogCache;
  private readonly hooks: SessionHooks;

  constructor(
    private readonly link: GymwireLink,
    private readonly opts: GymwireMcpOptions = {},
  ) {
    this.log = opts.logger ?? pino({ level: 'silent' });
    this.caller = opts.caller ?? 'local';
    this.closedSessions = opts.closed ?? new ClosedSessionLog();
    this.catalogCache = opts.catalog ?? new CatalogCache();
    this.hooks = opts.hooks ?? {};
  }

  /**
   * A fresh MCP server over this owner's sessions: one per HTTP request (either revision) or per
   * stdio connection. Cheap: two handlers on the SDK's low-level Server.
   */
  createServer(): Server {
    const server = new Server(
      { name: this.opts.name ?? 'gymwire', version: this.opts.version ?? GYMWIRE_VERSION },
      { capabilities: { tools: { listChanged: true } }, instructions: INSTRUCTIONS },
    );
    server.setRequestHandler('tools/list', async () => ({ tools: (await this.catalog()).tools() }));
    server.setRequestHandler('tools/call', (req) => this.call(req.params.name, req.params.arguments ?? {}));
    return server;
  }

  /** Gymwire sessions this owner holds. */
  get sessionIds(): string[] {
    return [...this.sessions.keys()];
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  /** Closes one session (made room for another by the caps); later calls on it say `reason`. */
  async closeSession(sessionId: string, reason: string): Promise<void> {
    if (!this.sessions.has(sessionId)) return;
    this.forget(sessionId, reason);
    await this.link.request('close', { session_id: sessionId }).catch((err: unknown) => this.log.debug({ err, session_id: sessionId }, 'close failed'));
  }

  /** Feeds a server event from the link (a session closed by the reaper). */
  handleEvent(event: ServerEvent): void {
    if (event.event === 'session_closed' && event.session_id) this.forget(event.session_id, event.reason);
  }

  /** Closes every gymwire session this owner made (the link itself is the caller's). */
  async closeSessions(reason = 'the MCP session ended'): Promise<void> {
    const ids = this.sessionIds;
    for (const id of ids) this.forget(id, reason);
    await Promise.allSettled(ids.map((id) => this.link.request('close', { session_id: id })));
  }

  // -------------------------------------------------------------------------------------------

  private catalog(): Promise<ToolCatalog> {
    return this.catalogCache.get(this.link);
  }

  private async call(name: string, raw: Record<string, unknown>): Promise<CallToolResult> {
    // The session a call names is busy while it runs: the caps never evict it mid-call.
    const view = typeof raw.session_id === 'string' ? this.sessions.get(raw.session_id) : undefined;
    if (view) {
      view.busy++;
      view.lastActive = Date.now();
    }
    try {
      return await this.dispatch(name, raw);
    } finally {
      if (view) {
        view.busy--;
        view.lastActive = Date.now();
      }
    }
  }

  private async dispatch(name: string, raw: Record<string, unknown>): Promise<CallToolResult> {
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
    const release = (await this.hooks.reserve?.()) ?? (() => {});
    let made: MakeResult;
    try {
      made = await this.link.request('make', { env_id: envId, kwargs });
    } finally {
      release();
    }
    const id = made.session_id;
    const view: SessionView = {
      id,
      caller: this.caller,
      busy: 0,
      lastActive: Date.now(),
      envId: made.env_id,
      actionSpace: made.action_space,
      tools: made.tools.map((t) => t.function.name),
      episodeReturn: 0,
      episodeSteps: 0,
    };
    this.sessions.set(id, view);
    this.hooks.opened?.(view);
    // Tools the listing did not know (a hosted env's): published now, announced to the host.
    let added = false;
    for (const t of made.tools) if (catalog.add(envToolEntry(made.env_id, t.function))) added = true;
    if (added) this.opts.onToolsAdded?.();
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
      `no session ${JSON.stringify(sessionId)} of this caller; ${open.length ? `open sessions: ${open.join(', ')}` : 'make one with make_env'}`,
    );
  }

  private forget(sessionId: string, reason: string): void {
    const view = this.sessions.get(sessionId);
    if (!view) return;
    this.sessions.delete(sessionId);
    this.closedSessions.set(sessionId, reason);
    this.hooks.closed?.(view);
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
