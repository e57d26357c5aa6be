/**
 * The transport-agnostic session core: it owns the sessions, the clients and the connections, and
 * composes the request path (server/request/: parsing at the boundary, the handshake, dispatch,
 * replies and the reply cache, errors), the idle reaper, metrics and graceful shutdown.
 * Transports feed it frames; it never knows which library carries them.
 *
 * @example
 * const core = new ServerCore({ registry: defaultRegistry(), logger: pino() });
 * await new WsTransport().listen(core, { host: '127.0.0.1', port: 0 });
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

import pino from 'pino';
import type { Logger } from 'pino';

import type { Env } from '../envs/core/env.ts';
import { defaultRegistry } from '../envs/index.ts';
import type { Registry } from '../envs/core/registry.ts';
import { BusyPoller } from '../runtime/busy-poll.ts';
import { describeThrown } from '../runtime/channel.ts';
import type { BusyPollSetting } from '../runtime/busy-poll.ts';
import { encode } from '../protocol/codec.ts';
import { ProtocolError } from '../protocol/errors.ts';
import { CLOSE_CODES } from '../protocol/close-codes.ts';
import type { Limits, ServerEvent } from '../protocol/messages.ts';
import type { Tensor } from '../protocol/tensor.ts';
import { Admission } from './admission.ts';
import type { AdmissionLimits } from './admission.ts';
import { boundDepartedReplies, MemoryBudget } from './budgets.ts';
import type { ClientState } from './client-state.ts';
import { Connection } from './connection.ts';
import { DEFAULT_ENV_CALL_TIMEOUT_MS } from './env-guard.ts';
import { FramePool } from './frame-pool.ts';
import type { FramePoolOptions } from './frame-pool.ts';
import { OriginPolicy } from './origin.ts';
import { DEFAULT_OUTBOUND_LIMITS } from './outbound.ts';
import type { OutboundLimits } from './outbound.ts';
import type { OriginPolicyOptions } from './origin.ts';
import { ServerMetrics } from './metrics.ts';
import { handleFrame } from './request/handle-request.ts';
import { refuse } from './request/reply.ts';
import type { Session } from './session.ts';
import type { TransportConnection } from './transport.ts';
import type { SessionHistory } from './viewer/history.ts';

export { Connection } from './connection.ts';
export { SERVER_NAME, SERVER_VERSION } from './request/handshake.ts';

export interface SessionSummary {
  session_id: string;
  env_id: string;
  client: string;
  created_at_ms: number;
  last_active_ms: number;
  steps: number;
  episodes: number;
  episode_return: number;
  last_reward: number;
}

type RenderFrameOf = Tensor | string;

/** How long close waits for a session's call in progress by default (ms). */
export const DEFAULT_CLOSE_WAIT_MS = 5_000;

export const DEFAULT_LIMITS: Limits = {
  max_frame_bytes: 64 * 1024 * 1024,
  max_sessions_per_client: 1024,
  max_sessions: 8192,
  max_pending_per_session: 256,
  // Sane for a 24 GiB machine: room for ~70 default Bench2Drive camera sessions, and headroom for Node itself.
  max_memory_bytes_per_client: 8 * 1024 ** 3,
  max_memory_bytes: 16 * 1024 ** 3,
  idle_timeout_ms: 10 * 60 * 1000,
  resume_grace_ms: 60 * 1000,
  heartbeat_ms: 15 * 1000,
};

export interface ServerCoreOptions {
  registry?: Registry;
  logger?: Logger;
  /** When set, hello must carry this token. */
  token?: string | null;
  limits?: Partial<Limits>;
  /** Wrap every env with the passive checker (obs checked against the space on every step). */
  checkEnvs?: boolean;
  /** How often the reaper looks for idle sessions and expired clients. */
  reapIntervalMs?: number;
  /** Keep polling the sockets after each answer instead of sleeping (see BusyPoller): 'auto', 0 (off, the default here) or µs. */
  busyPollUs?: BusyPollSetting;
  /** Connection caps and the hello deadline (server/admission.ts). */
  admission?: Partial<AdmissionLimits>;
  /** Browser origins and Host names served (server/origin.ts); Host is checked by default only without a token. */
  origins?: OriginPolicyOptions;
  /** Bytes the reply caches of disconnected clients may hold together (default 256 MiB); those that left first lose theirs. */
  maxDepartedReplyBytes?: number;
  /** Bounds on the frame pool's idle memory. */
  framePool?: FramePoolOptions;
  /**
   * How long one call into an env may take (ms; default 5 min; 0: no limit) before its request fails
   * with ENV_ERR_ENV_FAILURE (`details.timed_out`) and its session is lost (server/env-guard.ts).
   * Python workers and env threads keep their own deadline instead.
   */
  envCallTimeoutMs?: number;
  /** How long `close` waits for the session's call in progress (ms; default 5 s) before it answers anyway; the env closes once that call ends. */
  closeWaitMs?: number;
  /** The bound on answers waiting to be written to one connection (server/outbound.ts). */
  outbound?: Partial<OutboundLimits>;
}

const tokenDigest = (token: string): Buffer => createHash('sha256').update(token).digest();

export class ServerCore {
  readonly registry: Registry;
  readonly log: Logger;
  readonly limits: Limits;
  readonly metrics = new ServerMetrics();
  /** Reused memory for large answers; see FramePool. */
  readonly frames: FramePool;
  /** Connection caps and hello deadlines; transports ask it before they accept an upgrade. */
  readonly admission: Admission;
  /** Which Origin and Host headers the WebSocket upgrade and every HTTP route serve. */
  readonly origins: OriginPolicy;
  /** What sessions hold, as their envs estimate it, against the memory limits. */
  readonly memory: MemoryBudget;
  /** The bound on answers waiting to be written to one connection. */
  readonly outbound: OutboundLimits;
  private readonly maxDepartedReplyBytes: number;
  /** Null when busyPollUs is 0 (or unset). */
  readonly poller: BusyPoller | null;
  /** The server's token as a SHA-256 digest (null: no token), compared by authorizes(). */
  private readonly tokenDigest: Buffer | null;
  /** @internal Whether make wraps envs with the passive checker. */
  readonly checkEnvs: boolean;
  /** @internal Open sessions by id (the request handlers in server/request/ read and fill it). */
  readonly sessions = new Map<string, Session>();
  /** @internal Clients by id, connected or within their resume grace. */
  readonly clients = new Map<string, ClientState>();
  /** @internal The same clients by resume token. */
  readonly clientsByToken = new Map<string, ClientState>();
  private readonly connections = new Set<Connection>();
  private reaper: NodeJS.Timeout | null = null;
  private shuttingDown = false;
  /** @internal Requests whose handler is still running asynchronously (env work in flight); counted by the request path. */
  inFlight = 0;
  /** @internal The deadline of one env call (server/env-guard.ts). */
  readonly envCallTimeoutMs: number;
  /** @internal How long close waits for a call in progress. */
  readonly closeWaitMs: number;
  /** @internal Viewers listening (server/viewer/events.ts): only then do steps record actions and observations for them. */
  viewers = 0;

  /** /metrics: the server's own and those the env families expose (Registry.exposeMetrics). */
  async metricsText(): Promise<string> {
    const [own, families] = await Promise.all([this.metrics.registry.metrics(), this.registry.metricsText()]);
    return families === '' ? own : `${own}\n${families}`;
  }

  constructor(opts: ServerCoreOptions = {}) {
    this.registry = opts.registry ?? defaultRegistry();
    this.log = opts.logger ?? pino({ level: 'silent' });
    this.limits = { ...DEFAULT_LIMITS, ...opts.limits };
    this.tokenDigest = opts.token === undefined || opts.token === null ? null : tokenDigest(opts.token);
    this.checkEnvs = opts.checkEnvs ?? false;
    this.envCallTimeoutMs = opts.envCallTimeoutMs ?? DEFAULT_ENV_CALL_TIMEOUT_MS;
    this.closeWaitMs = opts.closeWaitMs ?? DEFAULT_CLOSE_WAIT_MS;
    this.admission = new Admission(opts.admission);
    this.outbound = { ...DEFAULT_OUTBOUND_LIMITS, ...opts.outbound };
    // With a token, every route that reveals or changes sessions asks for it: any Host may be served.
    this.origins = new OriginPolicy({ checkHost: this.tokenDigest === null, ...opts.origins });
    this.frames = new FramePool(opts.framePool);
    this.memory = new MemoryBudget({ perClient: this.limits.max_memory_bytes_per_client, total: this.limits.max_memory_bytes });
    this.maxDepartedReplyBytes = opts.maxDepartedReplyBytes ?? 256 * 1024 * 1024;
    this.poller = BusyPoller.create(opts.busyPollUs ?? 0);
    if (this.poller) this.metrics.watchPoller(this.poller);
    const interval =
      opts.reapIntervalMs ?? Math.max(50, Math.min(5000, Math.floor(Math.min(this.limits.idle_timeout_ms || 5000, this.limits.resume_grace_ms || 5000) / 4)));
    this.reaper = setInterval(() => this.reap(), interval);
    this.reaper.unref();
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /**
   * Whether `token` opens this server: any token when it has none, else only its own (compared in
   * constant time). HTTP routes that show session data (the viewer's API) use it too.
   */
  authorizes(token: string | undefined | null): boolean {
    if (this.tokenDigest === null) return true;
    // Digests have one length whatever the token's, as timingSafeEqual needs.
    return typeof token === 'string' && timingSafeEqual(tokenDigest(token), this.tokenDigest);
  }

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Called by a transport for each accepted connection. */
  accept(transport: TransportConnection): Connection {
    const id = `c_${randomBytes(6).toString('base64url')}`;
    const conn = new Connection(id, transport, this.log.child({ conn: id, remote: transport.remoteAddress }), this);
    this.connections.add(conn);
    this.metrics.connections.set(this.connections.size);
    conn.log.debug('connection opened');
    if (this.shuttingDown) {
      conn.sendError(null, new ProtocolError('ENV_ERR_SHUTTING_DOWN', 'the server is shutting down'));
      transport.close(1001, 'shutting down');
      return conn;
    }
    const pass = this.admission.enter(transport.remoteIp ?? transport.remoteAddress, () => {
      if (conn.closed || conn.client) return;
      const ms = this.admission.limits.helloTimeoutMs;
      conn.log.info({ hello_timeout_ms: ms }, 'no hello in time; closing');
      refuse(this, conn, null, new ProtocolError('ENV_ERR_HANDSHAKE_REQUIRED', `no hello within ${ms} ms of connecting`));
      transport.close(1008, 'no hello in time');
      // A peer that ignores the close handshake too loses the socket at once, not after the library's own timeout.
      setTimeout(() => conn.closed || transport.terminate(), 1000).unref();
    });
    if ('refused' in pass) {
      // Upgrades that raced past the transport's check: the WebSocket exists, so close it (1013: try again later).
      conn.log.info({ reason: pass.reason }, 'connection refused');
      transport.close(CLOSE_CODES.TRY_AGAIN_LATER, pass.reason.slice(0, 120));
      return conn;
    }
    conn.admission = pass;
    return conn;
  }

  // -------------------------------------------------------------------------------------------
  // Frames

  /** Called by a connection for each frame it receives (server/request/handle-request.ts). */
  handleFrame(conn: Connection, frame: Uint8Array): void {
    handleFrame(this, conn, frame);
  }

  /** True while a request's env work runs asynchronously (the answers of others may be sent meanwhile). */
  get working(): boolean {
    return this.inFlight > 0;
  }

  // -------------------------------------------------------------------------------------------
  // Disconnects and reaping

  /** Called by a connection when its transport closed: its client keeps its sessions for resume_grace_ms. */
  handleDisconnect(conn: Connection): void {
    this.connections.delete(conn);
    conn.admission?.leave();
    this.metrics.connections.set(this.connections.size);
    const client = conn.client;
    conn.log.debug('connection closed');
    if (!client || client.connection !== conn) return;
    client.connection = null;
    client.detachedAt = Date.now();
    if (this.limits.resume_grace_ms <= 0) this.dropClient(client, 'client disconnected');
    else this.boundDepartedReplies();
  }

  private boundDepartedReplies(): void {
    const emptied = boundDepartedReplies(this.clients.values(), this.maxDepartedReplyBytes);
    if (emptied > 0)
      this.log.info(
        { clients: emptied, max_bytes: this.maxDepartedReplyBytes },
        'departed clients hold too many answers; emptied the reply caches of those that left first',
      );
  }

  private dropClient(client: ClientState, reason: string): void {
    for (const id of [...client.sessions]) {
      const s = this.sessions.get(id);
      if (s) void this.closeSession(s, reason);
    }
    this.clients.delete(client.id);
    this.clientsByToken.delete(client.resumeToken);
    client.forgetAll();
  }

  private reap(): void {
    const now = Date.now();
    if (this.limits.idle_timeout_ms > 0) {
      for (const s of this.sessions.values()) {
        if (s.lock.pending === 0 && now - s.lastActive > this.limits.idle_timeout_ms)
          void this.closeSession(s, `idle for more than ${this.limits.idle_timeout_ms} ms`);
      }
    }
    for (const client of this.clients.values()) {
      if (client.connection === null && client.detachedAt !== null && now - client.detachedAt > this.limits.resume_grace_ms) {
        this.log.info({ client: client.id, sessions: client.sessions.size }, 'client did not resume; reaping its sessions');
        this.dropClient(client, 'client disconnected and did not resume');
      }
    }
    // Answers still running at a drop land in departed caches later.
    this.boundDepartedReplies();
    this.frames.trim(now);
  }

  // -------------------------------------------------------------------------------------------
  /** @internal Closes a session: frees its budget, tells its client unless `notify` is false, closes its env (after `callEnded`, when a call is still in progress). */
  async closeSession(s: Session, reason: string, notify = true, callEnded?: Promise<void>): Promise<void> {
    if (s.closed) return;
    s.closed = true;
    this.sessions.delete(s.id);
    this.memory.release(s.id);
    this.metrics.openSessions.dec({ env_id: s.envId });
    const client = this.clients.get(s.ownerId);
    client?.sessions.delete(s.id);
    s.log.debug({ reason }, 'session closed');
    if (notify && client?.connection) {
      const event: ServerEvent = { type: 'event', event: 'session_closed', session_id: s.id, reason };
      client.connection.send(encode(event));
    }
    try {
      if (callEnded) await callEnded;
      await s.env.close?.();
    } catch (err) {
      s.log.warn({ err: describeThrown(err) }, 'env close failed');
    }
  }

  // -------------------------------------------------------------------------------------------
  // Observation (the viewer, admin tools): read-only views of live sessions

  /** A snapshot of every open session. */
  listSessions(): SessionSummary[] {
    return [...this.sessions.values()].map((s) => ({
      session_id: s.id,
      env_id: s.envId,
      client: this.clients.get(s.ownerId)?.name ?? 'unknown',
      created_at_ms: s.createdAt,
      last_active_ms: s.lastActive,
      steps: s.stats.steps,
      episodes: s.stats.episodes,
      episode_return: s.stats.episodeReturn,
      last_reward: s.stats.lastReward,
    }));
  }

  /** The session's latest observation and info (references; do not mutate), or null when unknown. */
  peek(sessionId: string): { envId: string; obs: unknown; info: Record<string, unknown> | null; env: Env; history: SessionHistory } | null {
    const s = this.sessions.get(sessionId);
    if (!s) return null;
    return { envId: s.envId, obs: s.stats.lastObs, info: s.stats.lastInfo, env: s.env, history: s.history };
  }

  /** Renders a session's current frame under its lock (between steps), or null when it cannot render. */
  async renderSession(sessionId: string): Promise<RenderFrameOf | null> {
    const s = this.sessions.get(sessionId);
    if (!s || !s.env.render) return null;
    await s.lock.acquire();
    try {
      if (s.closed) return null;
      return (await s.env.render()) ?? null;
    } catch {
      return null;
    } finally {
      s.lock.release();
    }
  }

  // -------------------------------------------------------------------------------------------
  // Shutdown

  /**
   * Stops taking requests, answers those in flight, sends every connection the `shutdown` event and
   * a 1001 close behind its queued answers, and waits for the peers to read them; all within
   * `timeoutMs` (the drain time), after which connections still open are dropped. Then closes every
   * session.
   */
  async shutdown(timeoutMs = 10_000): Promise<void> {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    const deadline = Date.now() + timeoutMs;
    const waitUntil = async (done: () => boolean) => {
      while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    };
    this.poller?.stop();
    if (this.reaper) clearInterval(this.reaper);
    await waitUntil(() => this.inFlight === 0);
    // Let the last answers reach the sockets before the event and the close frame queue behind them.
    await new Promise((r) => setImmediate(r));
    const event = encode({ type: 'event', event: 'shutdown', reason: 'the server is shutting down' } satisfies ServerEvent);
    for (const conn of this.connections) {
      conn.send(event);
      conn.transport.close(1001, 'server shutting down');
    }
    // A slow reader still has answers queued ahead of the close frame: it answers the close once it
    // has read them all, which is when its connection ends.
    await waitUntil(() => this.connections.size === 0);
    for (const conn of [...this.connections]) {
      conn.log.warn({ drain_ms: timeoutMs }, 'peer did not read its answers within the drain time; dropping the connection');
      conn.transport.terminate();
    }
    await Promise.all([...this.sessions.values()].map((s) => this.closeSession(s, 'server shutting down', false)));
    this.log.info('server shut down');
  }
}
