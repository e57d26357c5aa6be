/**
 * The transport-agnostic session core: handshake, validation at the boundary, per-session
 * ordering, limits, the reply cache that makes retried requests exactly-once, the idle reaper,
 * metrics and graceful shutdown. Transports feed it frames; it never knows which library carries
 * them.
 *
 * @example
 * const core = new ServerCore({ registry: defaultRegistry(), logger: pino() });
 * await new WsTransport().listen(core, { host: '127.0.0.1', port: 0 });
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

import pino from 'pino';
import type { Logger } from 'pino';
import sharp from 'sharp';
import type { z } from 'zod';

import { InvalidActionError, InvalidOptionsError, InvalidStateError } from '../envs/core/env.ts';
import type { Env, EnvTool, ResetResult as ResetOutcome, StepResult as StepOutcome } from '../envs/core/env.ts';
import { defaultRegistry } from '../envs/index.ts';
import { InvalidKwargsError, UnknownEnvError } from '../envs/core/registry.ts';
import type { Registry } from '../envs/core/registry.ts';
import { after, EnvContractError, ResetNeededError, TimeLimit, unwrap, Wrapper } from '../envs/core/wrappers.ts';
import { BusyPoller } from '../protocol/busy-poll.ts';
import type { BusyPollSetting } from '../protocol/busy-poll.ts';
import { decodeUntrusted, encode } from '../protocol/codec.ts';
import { previewValue, ProtocolError } from '../protocol/errors.ts';
import { FrameScanError, frameRequestId } from '../protocol/frame-scan.ts';
import type { ErrorCode } from '../protocol/errors.ts';
import { AUTORESET_MODES, PROTOCOL_VERSION, REQUEST_SCHEMAS, SUPPORTED_PROTOCOL_VERSIONS } from '../protocol/messages.ts';
import type { Limits, RequestOf, RequestType, ResultOf, ServerEvent } from '../protocol/messages.ts';
import { contains, isPlainObject, spaceBytes, stackTensors } from '../protocol/spaces.ts';
import { Tensor, TensorFormatError } from '../protocol/tensor.ts';
import { GYMWIRE_VERSION } from '../protocol/version.ts';
import { Admission, PRE_HELLO_MAX_FRAME_BYTES } from './admission.ts';
import type { AdmissionLimits, AdmissionPass } from './admission.ts';
import { boundDepartedReplies, MemoryBudget } from './budgets.ts';
import { FramePool } from './frame-pool.ts';
import type { FramePoolOptions } from './frame-pool.ts';
import { OriginPolicy } from './origin.ts';
import type { OriginPolicyOptions } from './origin.ts';
import { ServerMetrics } from './metrics.ts';
import { Session } from './session.ts';
import { toolDescriptions } from './tools.ts';
import type { ConnectionHandler, TransportConnection } from './transport.ts';

export const SERVER_NAME = 'gymwire';

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
export const SERVER_VERSION = GYMWIRE_VERSION;

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
}

/**
 * Replies kept per client for requests retried after a reconnect. Enough for every request in flight
 * at a drop in practice; a retried request whose answer was evicted is refused
 * (ENV_ERR_REPLY_EXPIRED), never applied twice. Kept small: retained image replies cost GC time.
 */
const REPLY_CACHE_ENTRIES = 1024;
const REPLY_CACHE_BYTES = 16 * 1024 * 1024;

/** Ops whose retry after a reconnect must not act twice. */
const CACHED_OPS: ReadonlySet<RequestType> = new Set(['make', 'reset', 'step', 'reset_batch', 'step_batch', 'execute', 'set_state', 'close']);

interface CachedReply {
  /** The request's type: a later request that reuses the id for another type is refused, not answered from here. */
  type: RequestType;
  bytes: Uint8Array | Promise<Uint8Array>;
  size: number;
}

/** A client identity that outlives its connections, so sessions can be resumed after a drop. */
class ClientState {
  readonly sessions = new Set<string>();
  readonly replies = new Map<number, CachedReply>();
  replyBytes = 0;
  /** The highest request id seen from this client; ids below it were all received (one ordered stream at a time). */
  highestId = -1;
  /** The client's latest ack: it has every answer up to here, so ids at or below it are never retried. */
  acked = -1;
  connection: Connection | null = null;
  detachedAt: number | null = null;
  /** Sessions being made right now: counted against the limits before they exist. */
  reserved = 0;
  /** The size of this client's last answer per batched op: large ones are encoded into pooled memory. */
  readonly batchReplyBytes = { step_batch: 0, reset_batch: 0 };

  constructor(
    readonly id: string,
    readonly resumeToken: string,
    readonly name: string,
    private readonly frames: FramePool,
  ) {}

  remember(id: number, type: RequestType, bytes: Uint8Array | Promise<Uint8Array>): void {
    const entry: CachedReply = { type, bytes, size: 0 };
    this.replies.set(id, entry);
    const account = (b: Uint8Array) => {
      if (this.replies.get(id) !== entry) return;
      this.frames.retain(b);
      entry.bytes = b;
      entry.size = b.byteLength;
      this.replyBytes += b.byteLength;
      this.evict();
    };
    if (bytes instanceof Uint8Array) account(bytes);
    else void bytes.then(account, () => {});
    this.evict();
  }

  /** Drops answers the client confirmed it received (every id up to `ack`). */
  forgetUpTo(ack: number): void {
    this.acked = Math.max(this.acked, ack);
    for (const [id, entry] of this.replies) {
      if (id > ack) break;
      this.drop(id, entry);
    }
  }

  /** Empties the cache (the client is gone for good). */
  forgetAll(): void {
    for (const [id, entry] of this.replies) this.drop(id, entry);
  }

  private drop(id: number, entry: CachedReply): void {
    this.replyBytes -= entry.size;
    this.replies.delete(id);
    // size is set once the answer exists: only then does the cache hold a reference to it.
    if (entry.size > 0 && entry.bytes instanceof Uint8Array) this.frames.release(entry.bytes);
  }

  private evict(): void {
    while (this.replies.size > REPLY_CACHE_ENTRIES || this.replyBytes > REPLY_CACHE_BYTES) {
      const oldest = this.replies.keys().next();
      if (oldest.done) break;
      this.drop(oldest.value, this.replies.get(oldest.value)!);
    }
  }
}

const tokenDigest = (token: string): Buffer => createHash('sha256').update(token).digest();

/** The wire error for a frame that cannot be decoded (or that decoding would make too costly). */
function decodeError(err: unknown, size: number): ProtocolError {
  if (err instanceof TensorFormatError) return new ProtocolError('ENV_ERR_BAD_TENSOR', `bad tensor: ${err.message}`);
  if (err instanceof FrameScanError && err.problem === 'too_costly') return new ProtocolError('ENV_ERR_FRAME_TOO_LARGE', err.message, { size });
  return new ProtocolError('ENV_ERR_BAD_FRAME', `frame is not a msgpack message: ${err instanceof Error ? err.message : String(err)}`);
}

/** One transport connection. */
export class Connection implements ConnectionHandler {
  client: ClientState | null = null;
  closed = false;
  /** Its place in the connection counts (null: not counted, as when it was refused). */
  admission: AdmissionPass | null = null;

  constructor(
    readonly id: string,
    readonly transport: TransportConnection,
    readonly log: Logger,
    private readonly core: ServerCore,
  ) {}

  onFrame(frame: Uint8Array): void {
    this.core.poller?.arrived();
    try {
      this.core.handleFrame(this, frame);
    } catch (err) {
      // A bug on the synchronous path must cost one answer, not the process (and every session on it).
      this.log.error({ err }, 'frame handling failed');
      this.sendError(
        frameRequestId(frame),
        new ProtocolError('ENV_ERR_INTERNAL', `the server failed to handle this frame: ${err instanceof Error ? err.message : String(err)}`),
      );
    }
  }

  onClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.core.handleDisconnect(this);
  }

  send(bytes: Uint8Array): void {
    if (this.closed) return;
    // Poll for the next request only when no env work is still running: with some in flight (a
    // world model's batch in its worker thread) the loop wakes for its result anyway, and spinning
    // would take time from a worker that shares this core.
    if (!this.core.working) this.core.poller?.touch();
    const frames = this.core.frames;
    if (!frames.isPooled(bytes)) {
      this.transport.send(bytes);
      return;
    }
    frames.retain(bytes);
    this.transport.send(bytes, () => frames.release(bytes));
  }

  sendError(id: number | null, err: ProtocolError): void {
    this.send(encode({ id, type: 'error', error: err.toWire() }));
  }
}

type Handler<T extends RequestType> = (conn: Connection, client: ClientState, req: RequestOf<T>) => ResultOf<T> | Promise<ResultOf<T>>;

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
  private readonly maxDepartedReplyBytes: number;
  /** Null when busyPollUs is 0 (or unset). */
  readonly poller: BusyPoller | null;
  /** The server's token as a SHA-256 digest (null: no token), compared by authorizes(). */
  private readonly tokenDigest: Buffer | null;
  private readonly checkEnvs: boolean;
  private readonly sessions = new Map<string, Session>();
  private readonly clients = new Map<string, ClientState>();
  private readonly clientsByToken = new Map<string, ClientState>();
  private readonly connections = new Set<Connection>();
  private reaper: NodeJS.Timeout | null = null;
  private shuttingDown = false;
  /** Requests whose handler is still running asynchronously (env work in flight). */
  private inFlight = 0;
  private readonly handlers: { [T in RequestType]: Handler<T> };

  constructor(opts: ServerCoreOptions = {}) {
    this.registry = opts.registry ?? defaultRegistry();
    this.log = opts.logger ?? pino({ level: 'silent' });
    this.limits = { ...DEFAULT_LIMITS, ...opts.limits };
    this.tokenDigest = opts.token === undefined || opts.token === null ? null : tokenDigest(opts.token);
    this.checkEnvs = opts.checkEnvs ?? false;
    this.admission = new Admission(opts.admission);
    // With a token, every route that reveals or changes sessions asks for it: any Host may be served.
    this.origins = new OriginPolicy({ checkHost: this.tokenDigest === null, ...opts.origins });
    this.frames = new FramePool(opts.framePool);
    this.memory = new MemoryBudget({ perClient: this.limits.max_memory_bytes_per_client, total: this.limits.max_memory_bytes });
    this.maxDepartedReplyBytes = opts.maxDepartedReplyBytes ?? 256 * 1024 * 1024;
    this.poller = BusyPoller.create(opts.busyPollUs ?? 0);
    if (this.poller) this.metrics.watchPoller(this.poller);
    this.handlers = {
      hello: () => {
        throw new ProtocolError('ENV_ERR_INVALID_MESSAGE', 'hello was already received on this connection');
      },
      list_envs: () => ({ envs: this.registry.list() }),
      make: (conn, client, req) => this.make(conn, client, req),
      reset: (_c, client, req) => this.reset(client, req),
      step: (_c, client, req) => this.step(client, req),
      reset_batch: (_c, client, req) => this.resetBatch(client, req),
      step_batch: (_c, client, req) => this.stepBatch(client, req),
      render: (_c, client, req) => this.render(client, req),
      list_tools: (_c, client, req) => this.withSession(client, req.session_id, (s) => ({ tools: toolDescriptions(s.env.tools ?? []) })),
      execute: (_c, client, req) => this.execute(client, req),
      get_state: (_c, client, req) => this.getState(client, req),
      set_state: (_c, client, req) => this.setState(client, req),
      close: (_c, client, req) => this.closeRequest(client, req),
      // No payload, no payload field: an absent value has no msgpack encoding (msgpackr would send ext 0).
      ping: (_c, _client, req) => (req.payload === undefined ? { server_time_ms: Date.now() } : { payload: req.payload, server_time_ms: Date.now() }),
    };
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
      this.fail(conn, null, new ProtocolError('ENV_ERR_HANDSHAKE_REQUIRED', `no hello within ${ms} ms of connecting`));
      transport.close(1008, 'no hello in time');
      // A peer that ignores the close handshake too loses the socket at once, not after the library's own timeout.
      setTimeout(() => conn.closed || transport.terminate(), 1000).unref();
    });
    if ('refused' in pass) {
      // Upgrades that raced past the transport's check: the WebSocket exists, so close it (1013: try again later).
      conn.log.info({ reason: pass.reason }, 'connection refused');
      transport.close(1013, pass.reason.slice(0, 120));
      return conn;
    }
    conn.admission = pass;
    return conn;
  }

  // -------------------------------------------------------------------------------------------
  // Frames

  handleFrame(conn: Connection, frame: Uint8Array): void {
    // Nothing from a peer that has not said hello is decoded beyond the size a hello needs.
    const greeted = conn.client !== null;
    const maxBytes = greeted ? this.limits.max_frame_bytes : Math.min(PRE_HELLO_MAX_FRAME_BYTES, this.limits.max_frame_bytes);
    if (frame.byteLength > maxBytes) {
      // Refused without decoding; the id comes from a bounded scan so the client can match the
      // refusal to its request instead of waiting for a timeout.
      const limit = greeted ? `max_frame_bytes ${maxBytes}` : `the ${maxBytes} bytes allowed before hello`;
      this.fail(
        conn,
        frameRequestId(frame),
        new ProtocolError('ENV_ERR_FRAME_TOO_LARGE', `frame of ${frame.byteLength} bytes exceeds ${limit}`, {
          max_frame_bytes: maxBytes,
          size: frame.byteLength,
        }),
      );
      if (!greeted) conn.transport.close(1008, 'frame too large before hello');
      return;
    }
    let msg: unknown;
    try {
      msg = decodeUntrusted(frame);
    } catch (err) {
      return this.fail(conn, frameRequestId(frame), decodeError(err, frame.byteLength));
    }
    if (!isPlainObject(msg)) return this.fail(conn, null, new ProtocolError('ENV_ERR_INVALID_MESSAGE', 'a message must be a msgpack map with id and type'));
    const id = typeof msg.id === 'number' && Number.isInteger(msg.id) && msg.id >= 0 ? msg.id : null;
    const type = msg.type;
    if (typeof type !== 'string' || !Object.hasOwn(REQUEST_SCHEMAS, type)) {
      return this.fail(
        conn,
        id,
        new ProtocolError('ENV_ERR_UNKNOWN_TYPE', `unknown message type ${previewValue(type)}`, { known: Object.keys(REQUEST_SCHEMAS) }),
      );
    }
    let req: RequestOf<RequestType>;
    if ((type === 'step' && isWellFormedStep(msg)) || (type === 'step_batch' && isWellFormedStepBatch(msg))) {
      req = msg as RequestOf<'step' | 'step_batch'>;
    } else {
      const parsed = (REQUEST_SCHEMAS[type as RequestType] as z.ZodType).safeParse(msg);
      if (!parsed.success) {
        const issues = parsed.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
        return this.fail(
          conn,
          id,
          new ProtocolError('ENV_ERR_INVALID_MESSAGE', `invalid ${type}: ${issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ')}`, { issues }),
        );
      }
      req = parsed.data as RequestOf<RequestType>;
    }
    this.metrics.requestCell(type).n++;
    if (req.type === 'hello') return this.hello(conn, req);
    const client = conn.client;
    if (!client) return this.fail(conn, req.id, new ProtocolError('ENV_ERR_HANDSHAKE_REQUIRED', 'the first message on a connection must be hello'));
    if (this.shuttingDown)
      return this.fail(conn, req.id, new ProtocolError('ENV_ERR_SHUTTING_DOWN', 'the server is shutting down and accepts no new requests'));

    const cacheable = CACHED_OPS.has(req.type);
    if (cacheable) {
      const cached = client.replies.get(req.id);
      if (cached && cached.type !== req.type) {
        return this.fail(
          conn,
          req.id,
          new ProtocolError(
            'ENV_ERR_INVALID_MESSAGE',
            `request id ${req.id} was already used by a ${cached.type} request; ids must be unique per client (a retry resends the same request)`,
            { id: req.id, used_by: cached.type },
          ),
        );
      }
      if (cached) {
        // A retry after a reconnect: answer with what the first attempt produced, never act twice.
        if (cached.bytes instanceof Uint8Array) client.connection?.send(cached.bytes);
        // Still running: answer once it is done, from the cache, which holds the answer's memory.
        else
          void cached.bytes.then(() => {
            const done = client.replies.get(req.id)?.bytes;
            if (done instanceof Uint8Array) client.connection?.send(done);
          });
        return;
      }
      if (req.id <= client.acked) {
        return this.fail(
          conn,
          req.id,
          new ProtocolError(
            'ENV_ERR_INVALID_MESSAGE',
            `request id ${req.id} is at or below your ack ${client.acked}: those ids are done; use a new id above every id you sent`,
            { id: req.id, ack: client.acked },
          ),
        );
      }
      if (req.id <= client.highestId) {
        return this.fail(
          conn,
          req.id,
          new ProtocolError(
            'ENV_ERR_REPLY_EXPIRED',
            `request id ${req.id} (${req.type}) is below the highest id ${client.highestId} this client sent and no answer is held for it: either it already ran and its answer was evicted (more than ${REPLY_CACHE_ENTRIES} answers or ${REPLY_CACHE_BYTES / 2 ** 20} MiB unacknowledged), or the id was never used (ids must increase); it was not run`,
            { id: req.id, type: req.type, highest_id: client.highestId },
          ),
        );
      }
    }
    client.highestId = Math.max(client.highestId, req.id);
    if (req.ack !== undefined) client.forgetUpTo(req.ack);
    const bytes = this.run(conn, client, req);
    if (cacheable) client.remember(req.id, req.type, bytes);
    // The client may have reconnected while this ran: answer on its current connection. Then let
    // go of this request's hold on the answer (the socket write and the reply cache hold their own).
    if (bytes instanceof Uint8Array) {
      (client.connection ?? conn).send(bytes);
      this.frames.release(bytes);
    } else {
      void bytes.then((b) => {
        (client.connection ?? conn).send(b);
        this.frames.release(b);
      });
    }
  }

  /** True while a request's env work runs asynchronously (the answers of others may be sent meanwhile). */
  get working(): boolean {
    return this.inFlight > 0;
  }

  /** Runs a request; synchronously when its handler is (a sync env's step costs no promise at all). */
  private run(conn: Connection, client: ClientState, req: RequestOf<RequestType>): Uint8Array | Promise<Uint8Array> {
    let out: unknown;
    try {
      const handler = this.handlers[req.type] as Handler<RequestType>;
      out = handler(conn, client, req);
    } catch (err) {
      return this.encodeFailure(conn, req, err);
    }
    // The sync path (a sync env's step) allocates no closure and no promise.
    if (!(out instanceof Promise)) return this.encodeAnswer(conn, client, req, out);
    this.inFlight++;
    return out
      .then(
        (result: unknown) => this.encodeAnswer(conn, client, req, result),
        (err: unknown) => this.encodeFailure(conn, req, err),
      )
      .finally(() => this.inFlight--);
  }

  /**
   * The result's frame, or an error answer when it cannot be encoded: an env fault when the env
   * returned something msgpack cannot carry (a symbol, a cycle, an integer past 64 bits). A bad
   * value must not reject the answer's promise, which nothing awaits, and take the process down.
   */
  private encodeAnswer(conn: Connection, client: ClientState, req: RequestOf<RequestType>, result: unknown): Uint8Array {
    try {
      return this.encodeResult(client, req, result);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      // ping echoes the client's own payload (one nested past what the encoder's stack allows);
      // every other result carries what an env produced.
      const fault =
        req.type === 'ping'
          ? new ProtocolError('ENV_ERR_INVALID_MESSAGE', `the ping payload cannot be echoed back: ${why}`)
          : new EnvContractError(
              `the ${req.type} result cannot be sent: ${why} (observations, rewards and infos must be msgpack values: docs/PROTOCOL.md, sections 1 and 2)`,
            );
      return this.encodeFailure(conn, req, fault);
    }
  }

  /**
   * Encodes a result, into pooled memory when the same stream's previous answer was large (a
   * session's steps and resets, a client's batches), and remembers its size for the next one.
   */
  private encodeResult(client: ClientState, req: RequestOf<RequestType>, result: unknown): Uint8Array {
    const message = { id: req.id, type: 'result', result };
    if (req.type === 'step' || req.type === 'reset') {
      const s = this.sessions.get(req.session_id);
      if (!s) return encode(message);
      const frame = this.frames.encode(message, s.replyBytes);
      s.replyBytes = frame.byteLength;
      return frame;
    }
    if (req.type === 'step_batch' || req.type === 'reset_batch') {
      const frame = this.frames.encode(message, client.batchReplyBytes[req.type]);
      client.batchReplyBytes[req.type] = frame.byteLength;
      return frame;
    }
    return encode(message);
  }

  private encodeFailure(conn: Connection, req: RequestOf<RequestType>, err: unknown): Uint8Array {
    const pe = this.toProtocolError(err, conn.log, req.type);
    this.metrics.errors.inc({ code: pe.code });
    return encode({ id: req.id, type: 'error', error: pe.toWire() });
  }

  private fail(conn: Connection, id: number | null, err: ProtocolError): void {
    this.metrics.errors.inc({ code: err.code });
    conn.log.debug({ code: err.code, id }, err.message);
    conn.sendError(id, err);
  }

  /** Maps anything thrown while serving a request to a wire error. Unknown failures are env or server faults, never client codes. */
  private toProtocolError(err: unknown, log: Logger, op: string): ProtocolError {
    if (err instanceof ProtocolError) return err;
    if (err instanceof InvalidActionError) return new ProtocolError('ENV_ERR_INVALID_ACTION', err.message);
    if (err instanceof ResetNeededError) return new ProtocolError('ENV_ERR_RESET_NEEDED', err.message);
    if (err instanceof InvalidStateError) return new ProtocolError('ENV_ERR_INVALID_STATE', err.message);
    if (err instanceof InvalidOptionsError) return new ProtocolError('ENV_ERR_INVALID_OPTIONS', err.message);
    if (err instanceof UnknownEnvError) return new ProtocolError('ENV_ERR_UNKNOWN_ENV', err.message, { available: err.available });
    if (err instanceof InvalidKwargsError) return new ProtocolError('ENV_ERR_INVALID_KWARGS', err.message, { issues: err.issues });
    const e = err instanceof Error ? err : new Error(String(err));
    log.warn({ err: e, op }, 'env failure');
    return new ProtocolError('ENV_ERR_ENV_FAILURE', `${op} failed inside the env: ${e.name}: ${e.message}`, {
      error: e.name,
      contract: err instanceof EnvContractError,
    });
  }

  // -------------------------------------------------------------------------------------------
  // Handshake and disconnects

  private hello(conn: Connection, req: RequestOf<'hello'>): void {
    if (conn.client) return this.fail(conn, req.id, new ProtocolError('ENV_ERR_INVALID_MESSAGE', 'hello was already received on this connection'));
    if (!SUPPORTED_PROTOCOL_VERSIONS.includes(req.protocol_version)) {
      this.fail(
        conn,
        req.id,
        new ProtocolError(
          'ENV_ERR_VERSION_MISMATCH',
          `protocol version ${req.protocol_version} is not supported; this server speaks ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}`,
          { supported: SUPPORTED_PROTOCOL_VERSIONS },
        ),
      );
      conn.transport.close(1002, 'protocol version mismatch');
      return;
    }
    if (!this.authorizes(req.token)) {
      this.fail(
        conn,
        req.id,
        new ProtocolError('ENV_ERR_UNAUTHORIZED', req.token === undefined ? 'this server needs an auth token (hello.token)' : 'the auth token is wrong'),
      );
      conn.transport.close(1008, 'unauthorized');
      return;
    }
    let client = req.resume_token ? this.clientsByToken.get(req.resume_token) : undefined;
    const resumed = client !== undefined;
    if (client) {
      const old = client.connection;
      if (old && old !== conn) {
        // The old socket is half-open (the client would not reconnect otherwise): take over.
        old.client = null;
        old.transport.terminate();
      }
      conn.log.info({ client: client.id, sessions: client.sessions.size }, 'client resumed');
    } else {
      const clientId = `k_${randomBytes(6).toString('base64url')}`;
      client = new ClientState(clientId, randomBytes(18).toString('base64url'), req.client_name ?? 'unnamed', this.frames);
      this.clients.set(clientId, client);
      this.clientsByToken.set(client.resumeToken, client);
      conn.log.debug({ client: clientId, name: client.name }, 'client greeted');
    }
    client.connection = conn;
    client.detachedAt = null;
    conn.client = client;
    conn.admission?.greeted();
    const welcome: ResultOf<'hello'> = {
      protocol_version: PROTOCOL_VERSION,
      server_name: SERVER_NAME,
      server_version: SERVER_VERSION,
      connection_id: conn.id,
      resume_token: client.resumeToken,
      resumed,
      sessions: [...client.sessions],
      limits: this.limits,
    };
    conn.send(encode({ id: req.id, type: 'result', result: welcome }));
  }

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
  // Sessions

  private async make(conn: Connection, client: ClientState, req: RequestOf<'make'>): Promise<ResultOf<'make'>> {
    if (client.sessions.size + client.reserved >= this.limits.max_sessions_per_client) {
      throw new ProtocolError(
        'ENV_ERR_TOO_MANY_SESSIONS',
        `this client already has ${client.sessions.size} sessions (max_sessions_per_client ${this.limits.max_sessions_per_client}); close some first`,
        { limit: 'max_sessions_per_client', max: this.limits.max_sessions_per_client },
      );
    }
    if (this.sessions.size + this.reservedTotal() >= this.limits.max_sessions) {
      throw new ProtocolError('ENV_ERR_TOO_MANY_SESSIONS', `the server has ${this.sessions.size} sessions open (max_sessions ${this.limits.max_sessions})`, {
        limit: 'max_sessions',
        max: this.limits.max_sessions,
      });
    }
    const id = `s_${randomBytes(9).toString('base64url')}`;
    // Before anything is built: a session past a memory budget costs the server nothing.
    this.memory.reserve(client.id, id, this.registry.estimateBytes(req.env_id, req.kwargs ?? {}), req.env_id);
    client.reserved++;
    let env: Env;
    try {
      env = await this.registry.make(req.env_id, req.kwargs ?? {}, { check: this.checkEnvs });
    } catch (err) {
      this.memory.release(id);
      throw err;
    } finally {
      client.reserved--;
    }
    const maxSteps = findTimeLimit(env);
    const session = new Session(id, req.env_id, env, client.id, conn.log.child({ session: id, env: req.env_id }), maxSteps, this.metrics.forEnv(req.env_id));
    // Sized from the space, a camera session's first reset is encoded into pooled memory too
    // (msgpackr growing its own buffer through a 100 MB answer took the event loop ~0.7 s).
    session.replyBytes = spaceBytes(env.observationSpace);
    this.sessions.set(id, session);
    client.sessions.add(id);
    this.metrics.openSessions.inc({ env_id: req.env_id });
    session.log.debug('session made');
    return {
      session_id: id,
      env_id: req.env_id,
      observation_space: env.observationSpace,
      action_space: env.actionSpace,
      metadata: env.metadata,
      render_mode: env.renderMode ?? null,
      max_episode_steps: maxSteps,
      tools: toolDescriptions(env.tools ?? []),
    };
  }

  private reservedTotal(): number {
    let n = 0;
    for (const c of this.clients.values()) n += c.reserved;
    return n;
  }

  private lookup(client: ClientState, sessionId: string): Session {
    const s = this.sessions.get(sessionId);
    // Another client's session is reported as unknown: ids are capabilities, not something to probe.
    if (!s || s.closed || s.ownerId !== client.id) {
      throw new ProtocolError('ENV_ERR_UNKNOWN_SESSION', `no open session ${sessionId} (never made, closed, or reaped)`, { session_id: sessionId });
    }
    return s;
  }

  /** Runs fn with the session's lock held; synchronously when the lock is free and fn is sync. */
  private withSession<T>(client: ClientState, sessionId: string, fn: (s: Session) => T | Promise<T>): T | Promise<T> {
    const s = this.lookup(client, sessionId);
    if (s.lock.pending >= this.limits.max_pending_per_session) {
      throw new ProtocolError(
        'ENV_ERR_TOO_MANY_PENDING',
        `session ${sessionId} already has ${s.lock.pending} requests waiting (max_pending_per_session ${this.limits.max_pending_per_session})`,
        { session_id: sessionId },
      );
    }
    const run = (): T | Promise<T> => {
      if (s.closed) {
        s.lock.release();
        throw new ProtocolError('ENV_ERR_UNKNOWN_SESSION', `session ${sessionId} was closed`, { session_id: sessionId });
      }
      s.touch();
      let out: T | Promise<T>;
      try {
        out = fn(s);
      } catch (err) {
        s.lock.release();
        throw err;
      }
      if (out instanceof Promise) return out.finally(() => s.lock.release());
      s.lock.release();
      return out;
    };
    if (s.lock.tryAcquire()) return run();
    return s.lock.acquire().then(run);
  }

  private reset(client: ClientState, req: RequestOf<'reset'>) {
    return this.withSession(client, req.session_id, async (s) => {
      const r = await s.env.reset({ seed: req.seed ?? null, options: req.options ?? null });
      s.autoresetPending = false;
      s.recordReset(r.obs, r.info);
      s.metrics.resets.n++;
      return { obs: r.obs, info: r.info };
    });
  }

  private step(client: ClientState, req: RequestOf<'step'>) {
    return this.withSession(client, req.session_id, (s) => {
      const reason = contains(s.env.actionSpace, req.action);
      if (reason) throw new ProtocolError('ENV_ERR_INVALID_ACTION', `action is not in the action space: ${reason}`, { session_id: s.id });
      const start = process.hrtime.bigint();
      const done = (r: Awaited<ReturnType<Env['step']>>) => {
        s.metrics.steps.n++;
        s.metrics.latency.observe(Number(process.hrtime.bigint() - start) / 1e9);
        s.recordStep(r.obs, r.reward, r.terminated || r.truncated, r.info);
        return { obs: r.obs, reward: r.reward, terminated: r.terminated, truncated: r.truncated, info: r.info };
      };
      const r = s.env.step(req.action);
      return r instanceof Promise ? r.then(done) : done(r);
    });
  }

  /** Locks every session of a batch (in request order, so batches cannot deadlock), then runs fn. */
  private async withSessions<T>(client: ClientState, ids: readonly string[], fn: (sessions: Session[]) => Promise<T>): Promise<T> {
    if (new Set(ids).size !== ids.length) throw new ProtocolError('ENV_ERR_INVALID_MESSAGE', 'session_ids lists a session more than once');
    const sessions = ids.map((id) => this.lookup(client, id));
    for (const s of sessions) {
      if (s.lock.pending >= this.limits.max_pending_per_session) {
        throw new ProtocolError('ENV_ERR_TOO_MANY_PENDING', `session ${s.id} already has ${s.lock.pending} requests waiting`, { session_id: s.id });
      }
    }
    const waits: Promise<void>[] = [];
    for (const s of sessions) if (!s.lock.tryAcquire()) waits.push(s.lock.acquire());
    if (waits.length) await Promise.all(waits);
    try {
      const closed = sessions.find((s) => s.closed);
      if (closed) throw new ProtocolError('ENV_ERR_UNKNOWN_SESSION', `session ${closed.id} was closed`, { session_id: closed.id });
      const now = Date.now();
      for (const s of sessions) s.lastActive = now;
      return await fn(sessions);
    } finally {
      for (const s of sessions) s.lock.release();
    }
  }

  private resetBatch(client: ClientState, req: RequestOf<'reset_batch'>) {
    if (req.seeds && req.seeds.length !== req.session_ids.length) {
      throw new ProtocolError('ENV_ERR_INVALID_MESSAGE', `seeds has ${req.seeds.length} entries for ${req.session_ids.length} sessions`);
    }
    return this.withSessions(client, req.session_ids, async (sessions) => {
      const results = await Promise.all(
        sessions.map(async (s, i) => {
          const r = await s.env.reset({ seed: req.seeds?.[i] ?? null, options: req.options ?? null });
          s.autoresetPending = false;
          s.recordReset(r.obs, r.info);
          s.metrics.resets.n++;
          return r;
        }),
      );
      return { obs: stackValues(results.map((r) => r.obs)), infos: results.map((r) => r.info) };
    });
  }

  private stepBatch(client: ClientState, req: RequestOf<'step_batch'>) {
    const n = req.session_ids.length;
    const actions = splitActions(req.actions, n);
    return this.withSessions(client, req.session_ids, async (sessions) => {
      // Validate every action first so a bad one leaves the whole batch unapplied.
      sessions.forEach((s, i) => {
        if (s.autoresetPending && req.autoreset_mode === 'next_step') return; // action ignored on the reset step
        const reason = contains(s.env.actionSpace, actions[i]);
        if (reason)
          throw new ProtocolError('ENV_ERR_INVALID_ACTION', `action ${i} (session ${s.id}) is not in the action space: ${reason}`, {
            session_id: s.id,
            index: i,
          });
      });
      const start = process.hrtime.bigint();
      const rewards = new Float64Array(n);
      const terminated = new Uint8Array(n);
      const truncated = new Uint8Array(n);
      const obs: unknown[] = new Array(n);
      const infos: Record<string, unknown>[] = new Array(n);
      const errors: ({ code: ErrorCode; message: string } | null)[] = new Array(n).fill(null);
      const fail = (s: Session, i: number, err: unknown): void => {
        const pe = this.toProtocolError(err, s.log, 'step_batch');
        errors[i] = { code: pe.code, message: pe.message };
        infos[i] = {};
      };
      const afterReset = (s: Session, i: number, r: ResetOutcome): void => {
        s.autoresetPending = false;
        s.recordReset(r.obs, r.info);
        s.metrics.resets.n++;
        obs[i] = r.obs;
        infos[i] = r.info;
      };
      // Steps are counted once per batch when every session runs the same env (label lookups add up at 256 sessions).
      const oneEnv = sessions.every((s) => s.envId === sessions[0]!.envId);
      let stepped = 0;
      const afterStep = (s: Session, i: number, r: StepOutcome): void | Promise<void> => {
        if (oneEnv) stepped++;
        else s.metrics.steps.n++;
        s.recordStep(r.obs, r.reward, r.terminated || r.truncated, r.info);
        rewards[i] = r.reward;
        terminated[i] = r.terminated ? 1 : 0;
        truncated[i] = r.truncated ? 1 : 0;
        obs[i] = r.obs;
        infos[i] = r.info;
        if (!(r.terminated || r.truncated)) return;
        if (req.autoreset_mode === 'next_step') s.autoresetPending = true;
        if (req.autoreset_mode !== 'same_step') return;
        return after(s.env.reset({ seed: null, options: null }), (rr) => {
          afterReset(s, i, rr);
          infos[i] = { ...rr.info, final_obs: r.obs, final_info: r.info };
        });
      };
      /** One session's part of the batch; synchronous for sync envs, so a batch of CartPoles costs no promise per session. */
      const stepOne = (s: Session, i: number): void | Promise<void> => {
        if (req.autoreset_mode === 'next_step' && s.autoresetPending) return after(s.env.reset({ seed: null, options: null }), (r) => afterReset(s, i, r));
        // A promise that resolves to a promise flattens: the cast only tells TypeScript so.
        return after(s.env.step(actions[i]), (r) => afterStep(s, i, r)) as void | Promise<void>;
      };
      const pending: Promise<void>[] = [];
      sessions.forEach((s, i) => {
        try {
          const p = stepOne(s, i);
          if (p) pending.push(p.catch((err: unknown) => fail(s, i, err)));
        } catch (err) {
          fail(s, i, err);
        }
      });
      if (pending.length) await Promise.all(pending);
      sessions[0]!.metrics.steps.n += stepped;
      sessions[0]!.metrics.latency.observe(Number(process.hrtime.bigint() - start) / 1e9);
      if (errors.some((e) => e)) fillFailedSlots(obs, errors);
      return {
        obs: stackValues(obs),
        rewards: new Tensor('float64', [n], rewards),
        terminated: new Tensor('bool', [n], terminated),
        truncated: new Tensor('bool', [n], truncated),
        infos,
        errors,
      };
    });
  }

  private render(client: ClientState, req: RequestOf<'render'>) {
    return this.withSession(client, req.session_id, async (s) => {
      if (!s.env.render) throw new ProtocolError('ENV_ERR_UNSUPPORTED', `${s.envId} does not render`);
      const frame = await s.env.render();
      if (frame == null) {
        throw new ProtocolError(
          'ENV_ERR_UNSUPPORTED',
          `${s.envId} rendered nothing; make it with kwargs {render_mode: 'rgb_array'} (render modes: ${s.env.metadata.render_modes.join(', ') || 'none'})`,
        );
      }
      if (typeof frame === 'string') return { format: 'tensor' as const, frame };
      if (req.format === 'tensor') return { format: 'tensor' as const, frame };
      const [height, width, channels] = frame.shape;
      if (frame.dtype !== 'uint8' || frame.shape.length !== 3 || (channels !== 3 && channels !== 4)) {
        throw new ProtocolError(
          'ENV_ERR_UNSUPPORTED',
          `cannot encode a ${frame.dtype} [${frame.shape.join(', ')}] frame as ${req.format}; need uint8 [H, W, 3|4]`,
        );
      }
      const img = sharp(Buffer.from(frame.bytes()), { raw: { width: width!, height: height!, channels: channels as 3 | 4 } });
      const bytes = req.format === 'png' ? await img.png({ compressionLevel: 3 }).toBuffer() : await img.jpeg({ quality: req.quality ?? 90 }).toBuffer();
      return { format: req.format, frame: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) };
    });
  }

  private execute(client: ClientState, req: RequestOf<'execute'>) {
    return this.withSession(client, req.session_id, async (s) => {
      const tool = (s.env.tools ?? []).find((t) => t.name === req.tool) as EnvTool<unknown> | undefined;
      if (!tool) {
        throw new ProtocolError(
          'ENV_ERR_UNKNOWN_TOOL',
          `${s.envId} has no tool ${previewValue(req.tool)}; its tools: ${(s.env.tools ?? []).map((t) => t.name).join(', ') || 'none'}`,
          { tools: (s.env.tools ?? []).map((t) => t.name) },
        );
      }
      const parsed = tool.inputSchema.safeParse(req.args);
      if (!parsed.success) {
        const issues = parsed.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
        throw new ProtocolError(
          'ENV_ERR_INVALID_TOOL_ARGS',
          `invalid arguments for ${tool.name}: ${issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ')}`,
          { issues },
        );
      }
      const result = await tool.handler(parsed.data, { env: unwrap(s.env), wrapped: s.env });
      return { result: result ?? null };
    });
  }

  private getState(client: ClientState, req: RequestOf<'get_state'>) {
    return this.withSession(client, req.session_id, async (s) => {
      const get = s.env.getState;
      if (!get) throw new ProtocolError('ENV_ERR_UNSUPPORTED', `${s.envId} does not support get_state`);
      return { state: await get() };
    });
  }

  private setState(client: ClientState, req: RequestOf<'set_state'>) {
    return this.withSession(client, req.session_id, async (s) => {
      const set = s.env.setState;
      if (!set) throw new ProtocolError('ENV_ERR_UNSUPPORTED', `${s.envId} does not support set_state`);
      await set(req.state);
      s.autoresetPending = false;
      return {};
    });
  }

  private async closeRequest(client: ClientState, req: RequestOf<'close'>): Promise<ResultOf<'close'>> {
    const s = this.sessions.get(req.session_id);
    // Closing twice (or closing a reaped session) is not an error: close is idempotent.
    if (!s || s.closed || s.ownerId !== client.id) return { closed: false };
    await s.lock.acquire();
    s.lock.release();
    await this.closeSession(s, 'closed by the client', false);
    return { closed: true };
  }

  private async closeSession(s: Session, reason: string, notify = true): Promise<void> {
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
      await s.env.close?.();
    } catch (err) {
      s.log.warn({ err }, 'env close failed');
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
  peek(sessionId: string): { envId: string; obs: unknown; info: Record<string, unknown> | null; env: Env } | null {
    const s = this.sessions.get(sessionId);
    if (!s) return null;
    return { envId: s.envId, obs: s.stats.lastObs, info: s.stats.lastInfo, env: s.env };
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

function findTimeLimit(env: Env): number | null {
  let e: Env = env;
  while (e instanceof Wrapper) {
    if (e instanceof TimeLimit) return e.maxEpisodeSteps;
    e = e.env;
  }
  return null;
}

/** Splits a batch's actions: a tensor stacked over sessions becomes zero-copy per-session views. */
function splitActions(actions: unknown, n: number): unknown[] {
  if (Array.isArray(actions)) {
    if (actions.length !== n) throw new ProtocolError('ENV_ERR_INVALID_MESSAGE', `actions has ${actions.length} entries for ${n} sessions`);
    return actions;
  }
  if (actions instanceof Tensor) {
    if (actions.shape[0] !== n)
      throw new ProtocolError('ENV_ERR_INVALID_MESSAGE', `actions tensor has leading dimension ${actions.shape[0]} for ${n} sessions`);
    const inner = actions.shape.slice(1);
    if (inner.length === 0) {
      // Scalars (Discrete actions) come back as plain numbers.
      const scalars = new Array<number>(n);
      for (let i = 0; i < n; i++) scalars[i] = actions.at(i);
      return scalars;
    }
    const per = actions.size / n;
    const rows = new Array<Tensor>(n);
    for (let i = 0; i < n; i++) rows[i] = new Tensor(actions.dtype, inner, actions.data.subarray(i * per, (i + 1) * per) as never);
    return rows;
  }
  throw new ProtocolError('ENV_ERR_INVALID_MESSAGE', 'actions must be an array of per-session actions or a tensor stacked over sessions');
}

/** Stacks per-session observations into one tensor when they share dtype and shape; else returns the array. */
export function stackValues(values: unknown[]): unknown {
  const first = values[0];
  if (first instanceof Tensor) {
    const shape = first.shape;
    for (const v of values) {
      if (!(v instanceof Tensor) || v.dtype !== first.dtype || v.shape.length !== shape.length) return values;
      for (let k = 0; k < shape.length; k++) if (v.shape[k] !== shape[k]) return values;
    }
    return stackTensors(values as Tensor[], first.dtype, first.shape);
  }
  if (typeof first === 'number' && values.every((v) => typeof v === 'number' && Number.isInteger(v))) {
    return Tensor.from('int64', [values.length], values as number[]);
  }
  return values;
}

function fillFailedSlots(obs: unknown[], errors: readonly unknown[]): void {
  const template = obs.find((_, i) => !errors[i]);
  for (let i = 0; i < obs.length; i++) {
    if (!errors[i]) continue;
    obs[i] = template instanceof Tensor ? Tensor.zeros(template.dtype, template.shape) : typeof template === 'number' ? 0 : null;
  }
}

const STEP_KEYS: ReadonlySet<string> = new Set(['id', 'type', 'session_id', 'action', 'ack']);
const STEP_BATCH_KEYS: ReadonlySet<string> = new Set(['id', 'type', 'session_ids', 'actions', 'autoreset_mode', 'ack']);
const AUTORESET_MODE_SET: ReadonlySet<unknown> = new Set(AUTORESET_MODES);

/*
 * Step and step_batch requests checked by hand: they are most of the traffic, and zod's parse costs
 * about as much as the rest of a CartPole step. Each accepts a subset of what its schema accepts;
 * anything else goes through the schema, which also words the error.
 */

function hasEnvelope(m: Record<string, unknown>, keys: ReadonlySet<string>): boolean {
  for (const key in m) if (!keys.has(key)) return false;
  return Number.isSafeInteger(m.id) && (m.id as number) >= 0 && (m.ack === undefined || Number.isSafeInteger(m.ack));
}

function isSessionId(v: unknown): boolean {
  return typeof v === 'string' && v.length >= 1 && v.length <= 128;
}

function isWellFormedStep(m: Record<string, unknown>): boolean {
  return hasEnvelope(m, STEP_KEYS) && isSessionId(m.session_id) && m.action !== undefined;
}

/** Also fills in the schema's default autoreset mode. */
function isWellFormedStepBatch(m: Record<string, unknown>): boolean {
  if (!hasEnvelope(m, STEP_BATCH_KEYS) || m.actions === undefined) return false;
  const ids = m.session_ids;
  if (!Array.isArray(ids) || ids.length === 0) return false;
  for (const id of ids) if (!isSessionId(id)) return false;
  if (m.autoreset_mode === undefined) m.autoreset_mode = 'next_step';
  return AUTORESET_MODE_SET.has(m.autoreset_mode);
}
