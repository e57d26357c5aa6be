/**
 * The gymwire client: one connection (re-dialled as needed) carrying pipelined requests for any
 * number of sessions.
 *
 * When the connection drops, the client reconnects with backoff, presents its resume token so the
 * server re-attaches its sessions, and re-sends every request still waiting for an answer with
 * its original id. The server remembers its answers by id, so a step that had already run is
 * answered from memory, never applied twice.
 *
 * @example
 * const client = await connect('ws://127.0.0.1:8765');
 * const env = await client.make('gymwire/CartPole-v1');
 * let { obs } = await env.reset({ seed: 42 });
 * const { reward, terminated } = await env.step(1);
 * await client.close();
 */
import { BusyPoller } from '../../runtime/busy-poll.ts';
import type { BusyPollSetting } from '../../runtime/busy-poll.ts';
import { Channel } from '../../runtime/channel.ts';
import { decode, encode } from '../../protocol/codec.ts';
import { ProtocolError } from '../../protocol/errors.ts';
import { MAX_FRAME_DEPTH, nestsDeeperThan } from '../../protocol/frame-scan.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { PROTOCOL_VERSION, RESULT_SCHEMAS, ServerMessageSchema } from '../../protocol/messages.ts';
import type { AutoresetMode, Limits, RequestInput, RequestType, ResultOf, ServerEvent, ServerMessage, Welcome } from '../../protocol/messages.ts';
import { SdkError } from './errors.ts';
import { RemoteEnv, RemoteVectorEnv } from './remote-env.ts';
import type { ClientTransport, Connector } from './transport.ts';
import { wsConnector } from './transport.ts';

export interface ClientOptions {
  /** Auth token the server was started with. */
  token?: string;
  clientName?: string;
  /** Per-request timeout in ms (default 120 s; 0 disables). */
  requestTimeoutMs?: number;
  /** Requests sent and not yet answered, at most (default 4096); more wait in the client until answers come. */
  maxInFlight?: number;
  /** Requests waiting to be sent behind maxInFlight, at most (default 65536); more fail at once with TOO_MANY_PENDING. */
  maxQueued?: number;
  /** Reconnect and resume after a dropped connection (default true). */
  reconnect?: boolean;
  /** Give up reconnecting after this long (default 60 s). */
  reconnectTimeoutMs?: number;
  /** First backoff delay; doubles up to 2 s. */
  reconnectDelayMs?: number;
  connectTimeoutMs?: number;
  /**
   * Keepalive for a silent link (no FIN or RST, e.g. a frozen NAT entry): after this long without a
   * byte from the server the client sends a WebSocket ping (ms; default 15 s; 0 turns keepalive off).
   */
  keepaliveIntervalMs?: number;
  /** A ping unanswered this long (ms; default 30 s) drops the connection, and the client reconnects and resumes. */
  keepaliveTimeoutMs?: number;
  /** Called for server events (session closed by the reaper, shutdown) and reconnects. */
  onEvent?: (event: ClientEvent) => void;
  /**
   * Polling the socket after each request instead of sleeping until the answer (runtime/busy-poll.ts):
   * 'auto' (default) adapts the window to how soon answers come and stays off when they come late
   * (a server across a network, a slow env); 0 never polls; N polls N µs after every request.
   * It saves waking an idle core for each answer (tens of µs on VMs), which pipelined rollouts
   * against a server on the same host feel most.
   */
  busyPoll?: BusyPollSetting;
}

export type ClientEvent = ServerEvent | { type: 'reconnected'; resumed: boolean } | { type: 'disconnected'; code: number; reason: string };

/** One request as the client's channel holds it until its answer comes. */
type Outgoing =
  | { type: RequestType; fields: Record<string, unknown>; /** Encoded at its first send and kept: a resume sends the same bytes. */ frame?: Uint8Array }
  /** The handshake goes to the transport being opened, whatever state the client is in. */
  | { type: 'hello'; hello: Record<string, unknown>; transport: ClientTransport };

type State = 'connecting' | 'open' | 'reconnecting' | 'closed';

export class GymwireClient {
  private transport: ClientTransport | null = null;
  private state: State = 'connecting';
  /** Ids, answers waited for, deadlines, bounds (runtime/channel.ts); a request made while reconnecting counts as sent and goes out with the resume. */
  private readonly channel: Channel<Outgoing>;
  private welcomeInfo: Welcome | null = null;
  private resumeToken: string | undefined;
  private readonly envs = new Map<string, RemoteEnv>();
  private reconnecting: Promise<void> | null = null;
  /** Set when the server's shutdown closed the client (no reconnects): later requests fail with it rather than CLOSED. */
  private closedBy: SdkError | null = null;
  /** Set from the server's `shutdown` event until a reconnect succeeds: requests for its (gone) sessions fail with it at once. */
  private shutdownError: SdkError | null = null;
  /** How this client waits for answers (see ClientOptions.busyPoll); null when busyPoll is 0. */
  readonly poller: BusyPoller | null;
  /** The poller, unless the transport in use hands frames over in-process (nothing to poll). */
  private polling: BusyPoller | null = null;

  private constructor(
    private readonly connector: Connector,
    private readonly opts: ClientOptions,
  ) {
    this.poller = BusyPoller.create(opts.busyPoll ?? 'auto');
    const requestTimeoutMs = opts.requestTimeoutMs ?? 120_000;
    this.channel = new Channel<Outgoing>({
      name: 'the gymwire server',
      send: (id, body) => this.write(id, body),
      limits: { deadlineMs: requestTimeoutMs, maxInFlight: opts.maxInFlight ?? 4096, maxQueued: opts.maxQueued ?? 65_536 },
      timeoutError: ({ id, body }) =>
        body.type === 'hello'
          ? new SdkError('CONNECT_FAILED', 'no welcome from the server within the connect timeout')
          : new SdkError('REQUEST_TIMEOUT', `${body.type} got no answer within ${requestTimeoutMs} ms`, { id, type: body.type }),
      onDeadline: ({ body }) => {
        if ('transport' in body) body.transport.close();
      },
      refusedError: ({ what, queued, maxQueued }) =>
        new SdkError('TOO_MANY_PENDING', `${what} was not sent: ${queued} requests already wait behind the client's maxInFlight (maxQueued ${maxQueued})`, {
          queued,
          max_queued: maxQueued,
        }),
    });
  }

  /** Connects and performs the hello/welcome handshake. */
  static async connect(target: string | Connector, opts: ClientOptions = {}): Promise<GymwireClient> {
    const connector =
      typeof target === 'string'
        ? wsConnector(target, {
            connectTimeoutMs: opts.connectTimeoutMs,
            keepaliveIntervalMs: opts.keepaliveIntervalMs,
            keepaliveTimeoutMs: opts.keepaliveTimeoutMs,
          })
        : target;
    const client = new GymwireClient(connector, opts);
    await client.open();
    return client;
  }

  get welcome(): Welcome {
    if (!this.welcomeInfo) throw new SdkError('NOT_CONNECTED', 'not connected');
    return this.welcomeInfo;
  }

  get limits(): Limits {
    return this.welcome.limits;
  }

  get isOpen(): boolean {
    return this.state === 'open';
  }

  /** Lists the envs the server hosts. */
  async listEnvs(): Promise<ResultOf<'list_envs'>['envs']> {
    return (await this.request('list_envs', {})).envs;
  }

  /** Makes a session of `envId`; kwargs are validated by the env's schema on the server. */
  async make(envId: string, kwargs: Record<string, unknown> = {}): Promise<RemoteEnv> {
    const made = await this.request('make', { env_id: envId, kwargs });
    const env = new RemoteEnv(this, made);
    this.envs.set(made.session_id, env);
    return env;
  }

  /** Makes `numEnvs` sessions stepped together in one frame per step. */
  async makeVec(envId: string, numEnvs: number, opts: { kwargs?: Record<string, unknown>; autoresetMode?: AutoresetMode } = {}): Promise<RemoteVectorEnv> {
    const envs = await Promise.all(Array.from({ length: numEnvs }, () => this.make(envId, opts.kwargs ?? {})));
    return new RemoteVectorEnv(this, envs, opts.autoresetMode ?? 'next_step');
  }

  async ping(payload?: unknown): Promise<number> {
    const start = performance.now();
    await this.request('ping', { payload });
    return performance.now() - start;
  }

  /** Sends one request and resolves with its validated result. Requests may be pipelined. */
  request<T extends RequestType>(type: T, fields: RequestInput<T>): Promise<ResultOf<T>> {
    if (this.state === 'closed') return Promise.reject(this.closedBy ?? new SdkError('CLOSED', 'the client is closed'));
    if (this.shutdownError && ('session_id' in fields || 'session_ids' in fields)) return Promise.reject(this.shutdownError);
    return this.channel.request<ResultOf<T>>({ type, fields: fields as Record<string, unknown> }, { what: type });
  }

  /** The channel's send: encodes a request once (its id, and an ack of everything answered before it) and writes it when connected. */
  private write(id: number, body: Outgoing): boolean {
    if ('transport' in body) {
      body.transport.send(encode({ ...body.hello, id, type: 'hello' }));
      return true;
    }
    if (body.frame === undefined) {
      // The server refuses such a frame whole; refused here it has a typed error (the encoder alone would overflow its stack on deeper input).
      if (nestsDeeperThan(body.fields, MAX_FRAME_DEPTH - 1))
        throw new SdkError('TOO_DEEP', `${body.type} request nests deeper than ${MAX_FRAME_DEPTH} levels (kwargs, options or an action); it was not sent`, {
          max_depth: MAX_FRAME_DEPTH,
        });
      // Everything below the oldest unanswered request has been received: the server may forget those answers.
      const ack = (this.channel.oldestInFlight ?? id) - 1;
      const frame = encode({ ...body.fields, id, type: body.type, ack });
      const limit = this.welcomeInfo?.limits.max_frame_bytes;
      if (limit !== undefined && frame.byteLength > limit) {
        // Sent anyway, it could close the connection, and a resume would send it again, forever.
        throw new SdkError(
          'FRAME_TOO_LARGE',
          `${body.type} request is ${frame.byteLength} bytes, over the server's max_frame_bytes ${limit}; it was not sent`,
          {
            size: frame.byteLength,
            max_frame_bytes: limit,
          },
        );
      }
      body.frame = frame;
    }
    // While reconnecting the request waits in the channel; the resume sends it.
    if (this.state === 'open') {
      this.transport!.send(body.frame);
      this.polling?.touch();
    }
    return true;
  }

  /** Closes the connection; the server reaps this client's sessions after its grace period (close envs first to free them now). */
  async close(): Promise<void> {
    if (this.state !== 'closed') this.shut(new SdkError('CLOSED', 'the client was closed'));
    this.transport?.close();
    this.transport = null;
  }

  /** Ends the client: no more requests, no reconnects; whatever waits fails with `err`. */
  private shut(err: SdkError): void {
    this.state = 'closed';
    this.poller?.stop();
    this.channel.fail(err);
  }

  /** Closes every session this client made, then the connection. */
  async closeAll(): Promise<void> {
    await Promise.allSettled([...this.envs.values()].map((e) => e.close()));
    await this.close();
  }

  /** @internal */
  forget(sessionId: string): void {
    this.envs.delete(sessionId);
  }

  /** Drops the socket without telling the server, as a network failure would (for tests). */
  simulateConnectionLoss(): void {
    this.transport?.close();
  }

  // -------------------------------------------------------------------------------------------

  private async open(): Promise<void> {
    const transport = await this.connector();
    this.attach(transport);
    const welcome = await this.handshake(transport);
    this.welcomeInfo = welcome;
    this.resumeToken = welcome.resume_token;
    this.state = 'open';
  }

  private attach(transport: ClientTransport): void {
    this.transport = transport;
    this.polling = transport.inProcess ? null : this.poller;
    transport.onmessage = (frame) => this.onFrame(frame);
    transport.onclose = (code, reason) => {
      if (this.transport !== transport) return;
      this.transport = null;
      this.onDisconnect(code, reason);
    };
  }

  /** Sends hello to `transport` (it must be its first frame) and waits for the welcome. */
  private handshake(transport: ClientTransport): Promise<Welcome> {
    const hello = {
      protocol_version: PROTOCOL_VERSION,
      client_name: this.opts.clientName ?? 'gymwire-ts',
      ...(this.opts.token !== undefined ? { token: this.opts.token } : {}),
      ...(this.resumeToken !== undefined ? { resume_token: this.resumeToken } : {}),
    };
    return this.channel.request<Welcome>({ type: 'hello', hello, transport }, { what: 'hello', deadlineMs: this.opts.connectTimeoutMs ?? 10_000 });
  }

  private onFrame(frame: Uint8Array): void {
    this.polling?.arrived();
    let msg: ServerMessage;
    try {
      const raw = decode(frame) as { type?: unknown; id?: unknown; result?: unknown };
      // Results are validated by their own schema below; the envelope check stays cheap on the hot path.
      msg =
        raw && raw.type === 'result' && typeof raw.id === 'number' && typeof raw.result === 'object' && raw.result !== null
          ? (raw as ServerMessage)
          : ServerMessageSchema.parse(raw);
    } catch (err) {
      this.opts.onEvent?.({ type: 'event', event: 'shutdown', reason: `unreadable frame from server: ${(err as Error).message}` });
      return;
    }
    if (msg.type === 'event') {
      if (msg.event === 'session_closed' && msg.session_id) this.envs.get(msg.session_id)?.markClosed(msg.reason);
      if (msg.event === 'shutdown' && this.state !== 'closed') this.onServerShutdown(msg.reason);
      this.opts.onEvent?.(msg);
      return;
    }
    if (msg.type === 'error' && msg.id === null) {
      // An error the server could not tie to a request: nothing we sent should cause it.
      this.opts.onEvent?.({ type: 'event', event: 'shutdown', reason: `server error without id: ${msg.error.code}: ${msg.error.message}` });
      return;
    }
    const id = msg.id as number;
    const type = this.channel.bodyOf(id)?.type;
    // No longer waited for (answered after a timeout, a duplicate answer after a resume): the channel counts and drops it.
    if (type === undefined || msg.type === 'error') {
      this.channel.settle(id, msg.type === 'error' ? { ok: false, error: ProtocolError.fromWire(msg.error) } : { ok: true, value: null });
      return;
    }
    // The per-step answer is checked by hand (zod's copy-on-parse of large observations showed up as GC
    // pressure); everything else, and any step answer that fails the quick check, goes through its schema.
    if ((type === 'step' && isStepResult(msg.result)) || (type === 'step_batch' && isStepBatchResult(msg.result))) {
      this.channel.settle(id, { ok: true, value: msg.result });
      return;
    }
    const parsed = RESULT_SCHEMAS[type].safeParse(msg.result);
    this.channel.settle(
      id,
      parsed.success
        ? { ok: true, value: parsed.data }
        : { ok: false, error: new SdkError('BAD_RESPONSE', `the server's ${type} result does not match the protocol: ${parsed.error.message}`) },
    );
  }

  /**
   * The server answered everything in flight before its `shutdown` event and closes next, taking its
   * sessions with it: what still waits, and any request for a session, fails now instead of after a
   * timeout. The client still reconnects (a restarted server takes new sessions); requests that need
   * no session wait for that, up to the reconnect timeout.
   */
  private onServerShutdown(reason: string | undefined): void {
    this.shutdownError = new SdkError('SERVER_SHUTDOWN', `the server shut down${reason ? ` (${reason})` : ''}; its sessions are gone`);
    for (const env of [...this.envs.values()]) env.markClosed('the server shut down');
    this.channel.rejectWaiting(this.shutdownError);
  }

  private onDisconnect(code: number, reason: string): void {
    if (this.state === 'closed') return;
    this.opts.onEvent?.({ type: 'disconnected', code, reason });
    const fatal = code === 1008 || code === 1002; // unauthorized or version mismatch: retrying cannot help
    if (this.opts.reconnect === false || fatal || this.state === 'connecting') {
      this.closedBy = this.shutdownError;
      this.shut(this.shutdownError ?? new SdkError('CONNECTION_LOST', `connection closed (${code}${reason ? `: ${reason}` : ''})`, { code }));
      return;
    }
    this.state = 'reconnecting';
    this.reconnecting ??= this.reconnectLoop().finally(() => (this.reconnecting = null));
  }

  private async reconnectLoop(): Promise<void> {
    const deadline = Date.now() + (this.opts.reconnectTimeoutMs ?? 60_000);
    let delay = this.opts.reconnectDelayMs ?? 50;
    let lastError: unknown = null;
    while (this.state === 'reconnecting' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 2000);
      try {
        const transport = await this.connector();
        if (this.state !== 'reconnecting') {
          transport.close();
          return;
        }
        this.attach(transport);
        const welcome = await this.handshake(transport);
        this.welcomeInfo = welcome;
        this.resumeToken = welcome.resume_token;
        this.state = 'open';
        this.shutdownError = null;
        if (!welcome.resumed) {
          // The server forgot us (restarted, or the grace period passed): sessions are gone.
          for (const env of this.envs.values()) env.markClosed('the server did not resume this client’s sessions');
          this.channel.rejectWaiting(
            new SdkError('SESSION_LOST', 'reconnected, but the server no longer has this client’s sessions'),
            (p) => p.type !== 'list_envs' && p.type !== 'ping' && p.type !== 'make',
          );
        }
        // Re-send what is still waiting, in the original order, with the original ids.
        this.channel.replay((p) => p.type !== 'hello');
        this.opts.onEvent?.({ type: 'reconnected', resumed: welcome.resumed });
        return;
      } catch (err) {
        lastError = err;
        if (err instanceof ProtocolError) break; // refused (auth, version): retrying will not help
      }
    }
    if (this.state === 'reconnecting')
      this.shut(new SdkError('CONNECTION_LOST', `could not reconnect: ${(lastError as Error | null)?.message ?? 'timed out'}`));
  }
}

function isStepResult(r: Record<string, unknown>): boolean {
  return (
    typeof r.reward === 'number' &&
    typeof r.terminated === 'boolean' &&
    typeof r.truncated === 'boolean' &&
    'obs' in r &&
    typeof r.info === 'object' &&
    r.info !== null &&
    !Array.isArray(r.info)
  );
}

/** The same check as StepBatchResultSchema, by hand: the rollout engine's every step passes here. */
function isStepBatchResult(r: Record<string, unknown>): boolean {
  const { infos, errors } = r;
  if (!('obs' in r) || !(r.rewards instanceof Tensor) || !(r.terminated instanceof Tensor) || !(r.truncated instanceof Tensor)) return false;
  if (!Array.isArray(infos) || !Array.isArray(errors)) return false;
  for (const info of infos as unknown[]) if (typeof info !== 'object' || info === null || Array.isArray(info)) return false;
  for (const e of errors as unknown[]) {
    if (e === null) continue;
    if (typeof e !== 'object' || typeof (e as { code?: unknown }).code !== 'string' || typeof (e as { message?: unknown }).message !== 'string') return false;
  }
  return true;
}

/** Connects to a gymwire server (a ws:// URL, or a connector such as the in-memory one in tests). */
export function connect(target: string | Connector, opts: ClientOptions = {}): Promise<GymwireClient> {
  return GymwireClient.connect(target, opts);
}
