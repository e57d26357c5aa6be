/**
 * One request/answer link to a peer (a Python worker, an env thread, a render thread, a model
 * runtime): ids and the answers they wait for, a deadline per request, bounded queues both ways,
 * cancellation, and one mapping from whatever the peer fails with to a typed error that names the
 * peer as the side at fault. Every link builds on this instead of keeping its own pending map.
 *
 * The channel knows no transport. The link hands it a `send(id, body)` that writes one request in
 * the link's own envelope, and calls `settle(id, outcome)` for each answer it reads back. `send`
 * returning false is the transport's backpressure signal: later requests wait in a bounded queue
 * until the link calls `resume()`. An answer that comes twice, after its deadline or cancellation,
 * or for an id never sent is counted in `stats` and dropped; it never throws and never reaches a
 * caller. `fail(reason)` (the peer died or was killed) rejects everything waiting and every later
 * request.
 *
 * @example
 * const channel = new Channel({ name: 'env thread 1', send: (id, body) => port.postMessage({ id, ...body }) });
 * port.on('message', (m) => channel.settle(m.id, m.ok ? { ok: true, value: m.value } : { ok: false, error: m.error }));
 * const value = await channel.request({ method: 'step', args: [1] }, { deadlineMs: 5_000, what: 'step' });
 */
import { ProtocolError } from '../protocol/errors.ts';
import type { ErrorCode } from '../protocol/errors.ts';

export interface ChannelLimits {
  /** Requests sent and not yet answered, at most; more wait in the queue. */
  maxInFlight: number;
  /** Requests waiting to be sent (the peer is not reading, or maxInFlight is reached), at most; more are refused at once. */
  maxQueued: number;
  /** Deadline of a request from when it is sent (ms); 0: none. A request may name its own. */
  deadlineMs: number;
}

export const DEFAULT_CHANNEL_LIMITS: ChannelLimits = { maxInFlight: 1024, maxQueued: 4096, deadlineMs: 60_000 };

export interface ChannelOptions<Body> {
  /** The peer, as error messages and logs name it ("the Python worker 3", "env thread 2"). */
  name: string;
  /** Writes one request; false means the peer's side is full and later requests wait for `resume()`. It may throw (a body the encoder refuses): that request alone fails. */
  send(id: number, body: Body): boolean | void;
  limits?: Partial<ChannelLimits>;
  /** The code of a peer's fault (default ENV_ERR_ENV_FAILURE: the env's side, never the server's). */
  peerFaultCode?: ErrorCode;
  /** Called when a request misses its deadline, after it is rejected: the link decides what the peer's silence costs it (kill and restart it, fail its sessions). */
  onDeadline?(late: { id: number; what: string; ageMs: number; body: Body }): void;
  /** The error a request that missed its deadline fails with, when the link has its own family (the client SDK's REQUEST_TIMEOUT); default a ProtocolError with `peerFaultCode`. */
  timeoutError?(late: { id: number; what: string; deadlineMs: number; body: Body }): Error;
  /** The error a request refused for a full queue fails with; default a ProtocolError with `peerFaultCode`. */
  refusedError?(refused: { what: string; queued: number; maxQueued: number }): Error;
}

export type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export interface RequestOptions {
  /** This request's deadline (ms) instead of the channel's; 0: none. */
  deadlineMs?: number;
  /** What the request does, for error messages ("step", "make CartPole-v1"). */
  what?: string;
  /** Cancels the request: it is dropped from the queue, or its answer is dropped when it comes. */
  signal?: AbortSignal;
}

/** What the channel dropped instead of crashing on it. */
export interface ChannelStats {
  /** Answers for a request that had missed its deadline or was cancelled. */
  late: number;
  /** Second answers for a request already answered. */
  duplicate: number;
  /** Answers for an id never sent. */
  unknown: number;
  /** Messages the link could not read at all (reported by the link through `noteGarbage`). */
  garbage: number;
  /** Requests that missed their deadline. */
  timedOut: number;
  /** Requests refused because the queue was full. */
  refused: number;
}

interface Waiting<Body> {
  what: string;
  /** Kept while the request waits: a link that re-dials may send it again (`replay`). */
  body: Body;
  resolve(value: unknown): void;
  reject(err: Error): void;
  deadlineMs: number;
  /** When it was sent (performance.now()); null while it waits in the queue. */
  sentAt: number | null;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | null;
}

/** Ids of requests given up on (deadline, cancellation), kept so a late answer is told from an unknown one. */
const FORGOTTEN_IDS_KEPT = 1024;

export class Channel<Body = unknown> {
  readonly stats: ChannelStats = { late: 0, duplicate: 0, unknown: 0, garbage: 0, timedOut: 0, refused: 0 };
  readonly limits: ChannelLimits;
  private readonly inFlight = new Map<number, Waiting<Body>>();
  private readonly queue: { id: number; body: Body; w: Waiting<Body> }[] = [];
  private readonly forgotten = new Set<number>();
  private nextId = 1;
  private paused = false;
  private lostReason: string | null = null;
  private sweeper: NodeJS.Timeout | null = null;
  private sweeperEveryMs = Infinity;
  private readonly peerFaultCode: ErrorCode;

  constructor(private readonly opts: ChannelOptions<Body>) {
    this.limits = { ...DEFAULT_CHANNEL_LIMITS, ...opts.limits };
    this.peerFaultCode = opts.peerFaultCode ?? 'ENV_ERR_ENV_FAILURE';
  }

  get name(): string {
    return this.opts.name;
  }

  /** Requests sent and not answered. */
  get pending(): number {
    return this.inFlight.size;
  }

  /** Requests waiting to be sent. */
  get queued(): number {
    return this.queue.length;
  }

  /** The backpressure signal for producers: true while the queue is at least half full (new requests may soon be refused). */
  get saturated(): boolean {
    return this.queue.length * 2 >= this.limits.maxQueued;
  }

  get alive(): boolean {
    return this.lostReason === null;
  }

  /** Why the channel failed, or null. */
  get lost(): string | null {
    return this.lostReason;
  }

  /** Sends `body` (or queues it) and resolves with the peer's answer; rejects with a typed error naming the side at fault. */
  request<T = unknown>(body: Body, opts: RequestOptions = {}): Promise<T> {
    const what = opts.what ?? 'request';
    if (this.lostReason !== null) return Promise.reject(this.lostError(what));
    if (opts.signal?.aborted) return Promise.reject(cancelledError(opts.signal, what, this.opts.name));
    const mustQueue = this.paused || this.inFlight.size >= this.limits.maxInFlight || this.queue.length > 0;
    if (mustQueue && this.queue.length >= this.limits.maxQueued) {
      this.stats.refused++;
      const refused = this.opts.refusedError?.({ what, queued: this.queue.length, maxQueued: this.limits.maxQueued });
      return Promise.reject(
        refused ??
          new ProtocolError(
            this.peerFaultCode,
            `${this.opts.name} is not keeping up: ${this.queue.length} requests already wait to be sent (limit ${this.limits.maxQueued}); ${what} was not sent`,
            { side: 'env', backpressure: true, queued: this.queue.length },
          ),
      );
    }
    return new Promise<T>((resolve, reject) => {
      const id = this.nextId++;
      const w: Waiting<Body> = {
        what,
        body,
        resolve: resolve as (value: unknown) => void,
        reject,
        deadlineMs: opts.deadlineMs ?? this.limits.deadlineMs,
        sentAt: null,
        signal: opts.signal,
        onAbort: null,
      };
      if (opts.signal) {
        w.onAbort = () => this.cancel(id, w);
        opts.signal.addEventListener('abort', w.onAbort, { once: true });
      }
      if (mustQueue) this.queue.push({ id, body, w });
      else this.transmit(id, body, w);
    });
  }

  /** The link read an answer for `id`: resolves or rejects its request, or counts it (late, duplicate, unknown) and drops it. */
  settle(id: number, outcome: Outcome): void {
    const w = this.inFlight.get(id);
    if (w === undefined) {
      if (this.forgotten.delete(id)) this.stats.late++;
      else if (Number.isInteger(id) && id > 0 && id < this.nextId) this.stats.duplicate++;
      else this.stats.unknown++;
      return;
    }
    this.inFlight.delete(id);
    this.detach(w);
    if (outcome.ok) w.resolve(outcome.value);
    else w.reject(peerError(outcome.error, { peer: this.opts.name, what: w.what, code: this.peerFaultCode }));
    this.pump();
  }

  /** The body of request `id` while it waits for its answer (sent or queued), else undefined: a link reads how to check the answer from it. */
  bodyOf(id: number): Body | undefined {
    return this.inFlight.get(id)?.body ?? this.queue.find((q) => q.id === id)?.body;
  }

  /** The lowest id sent and not yet answered, or undefined: everything below it has been answered or given up on. */
  get oldestInFlight(): number | undefined {
    // Sent in id order (the queue is FIFO and a request skips it only while it is empty), so the first key is the oldest.
    return this.inFlight.keys().next().value;
  }

  /**
   * Sends every request still waiting for its answer again, in id order, with its id and body (a link
   * that re-dialled its peer resumes them; the peer recognises the ids). `which` picks the ones to
   * send; deadlines keep counting from the first send.
   */
  replay(which: (body: Body) => boolean = () => true): void {
    for (const [id, w] of [...this.inFlight].sort(([a], [b]) => a - b)) {
      if (!which(w.body)) continue;
      try {
        this.opts.send(id, w.body);
      } catch (err) {
        this.inFlight.delete(id);
        this.detach(w);
        w.reject(err instanceof Error ? err : new Error(describeThrown(err)));
      }
    }
  }

  /**
   * Fails the waiting requests (sent or queued) that `which` picks with `err`, and leaves the channel
   * usable for later ones (the peer announced that some of its state is gone, not that it is). A late
   * answer to one of them is counted and dropped.
   */
  rejectWaiting(err: Error, which: (body: Body) => boolean = () => true): void {
    for (const [id, w] of [...this.inFlight]) {
      if (!which(w.body)) continue;
      this.inFlight.delete(id);
      this.forget(id);
      this.detach(w);
      w.reject(err);
    }
    for (let i = this.queue.length - 1; i >= 0; i--) {
      const q = this.queue[i]!;
      if (!which(q.body)) continue;
      this.queue.splice(i, 1);
      this.detach(q.w);
      q.w.reject(err);
    }
    this.pump();
  }

  /** The link got a message it cannot read at all (no id, wrong shape): counted and dropped. */
  noteGarbage(): void {
    this.stats.garbage++;
  }

  /** The transport's side is full: later requests wait in the queue. */
  pause(): void {
    this.paused = true;
  }

  /** The transport drained: queued requests go out. */
  resume(): void {
    this.paused = false;
    this.pump();
  }

  /**
   * The peer is gone (exit, kill, broken stream): every waiting request and every later one fails
   * with `reason`, or with `reason` itself when it is an Error (a link with its own error family).
   * The first reason stands.
   */
  fail(reason: string | Error): void {
    if (this.lostReason === null) {
      this.lostReason = typeof reason === 'string' ? reason : reason.message;
      if (typeof reason !== 'string') this.lostAs = reason;
    }
    this.stopSweeper();
    const waiting = [...this.inFlight.values(), ...this.queue.map((q) => q.w)];
    this.inFlight.clear();
    this.queue.length = 0;
    for (const w of waiting) {
      this.detach(w);
      w.reject(this.lostError(w.what));
    }
  }

  private lostAs: Error | null = null;

  private lostError(what: string): Error {
    if (this.lostAs) return this.lostAs;
    return new ProtocolError(this.peerFaultCode, `${this.opts.name} is gone (${this.lostReason}); ${what} was not answered`, { side: 'env', peer_lost: true });
  }

  private transmit(id: number, body: Body, w: Waiting<Body>): void {
    w.sentAt = performance.now();
    this.inFlight.set(id, w);
    let accepted: boolean | void;
    try {
      accepted = this.opts.send(id, body);
    } catch (err) {
      // The body could not be written (an encoder refused it): this request fails, the link is fine.
      this.inFlight.delete(id);
      this.detach(w);
      w.reject(err instanceof Error ? err : new Error(describeThrown(err)));
      return;
    }
    if (accepted === false) this.paused = true;
    if (w.deadlineMs > 0) this.startSweeper(w.deadlineMs);
  }

  private pump(): void {
    while (this.queue.length > 0 && !this.paused && this.inFlight.size < this.limits.maxInFlight && this.lostReason === null) {
      const next = this.queue.shift()!;
      this.transmit(next.id, next.body, next.w);
    }
  }

  private cancel(id: number, w: Waiting<Body>): void {
    const queuedAt = this.queue.findIndex((q) => q.id === id);
    if (queuedAt >= 0) this.queue.splice(queuedAt, 1);
    else if (this.inFlight.delete(id)) this.forget(id);
    else return;
    w.reject(cancelledError(w.signal!, w.what, this.opts.name));
    this.pump();
  }

  private forget(id: number): void {
    this.forgotten.add(id);
    if (this.forgotten.size > FORGOTTEN_IDS_KEPT) this.forgotten.delete(this.forgotten.values().next().value!);
  }

  private detach(w: Waiting<Body>): void {
    if (w.onAbort) w.signal!.removeEventListener('abort', w.onAbort);
    w.onAbort = null;
  }

  /** One coarse timer while requests with deadlines are in flight (no timer per request on the hot path). */
  private startSweeper(deadlineMs: number): void {
    const everyMs = Math.max(5, Math.min(1_000, deadlineMs / 8));
    // A shorter deadline than the running sweep can resolve restarts it finer (a 10 s handshake's sweep must not delay a 50 ms request's timeout by a second).
    if (this.sweeper !== null && everyMs >= this.sweeperEveryMs) return;
    this.stopSweeper();
    this.sweeperEveryMs = everyMs;
    this.sweeper = setInterval(this.sweep, everyMs);
    this.sweeper.unref();
  }

  private stopSweeper(): void {
    if (this.sweeper !== null) clearInterval(this.sweeper);
    this.sweeper = null;
    this.sweeperEveryMs = Infinity;
  }

  private readonly sweep = (): void => {
    if (this.inFlight.size === 0) return this.stopSweeper();
    const now = performance.now();
    const expired: [number, Waiting<Body>][] = [];
    for (const entry of this.inFlight) {
      const w = entry[1];
      if (w.deadlineMs > 0 && now - w.sentAt! > w.deadlineMs) expired.push(entry);
    }
    for (const [id, w] of expired) {
      this.inFlight.delete(id);
      this.forget(id);
      this.detach(w);
      this.stats.timedOut++;
      const ageMs = Math.round(now - w.sentAt!);
      w.reject(
        this.opts.timeoutError?.({ id, what: w.what, deadlineMs: w.deadlineMs, body: w.body }) ??
          new ProtocolError(this.peerFaultCode, `${this.opts.name} did not answer ${w.what} within ${w.deadlineMs} ms`, {
            side: 'env',
            timed_out: true,
            deadline_ms: w.deadlineMs,
          }),
      );
      this.opts.onDeadline?.({ id, what: w.what, ageMs, body: w.body });
    }
    this.pump();
  };
}

function cancelledError(signal: AbortSignal, what: string, peer: string): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error(`${what} on ${peer} was cancelled: ${describeThrown(reason)}`);
}

/**
 * A printable account of anything thrown or rejected with, that never throws itself: a
 * null-prototype object, a value whose `toString` or `message` getter throws, undefined.
 */
export function describeThrown(value: unknown): string {
  try {
    if (value instanceof Error) {
      const name = safeString(() => value.name) ?? 'Error';
      const message = safeString(() => value.message) ?? '(unreadable message)';
      return message ? `${name}: ${message}` : name;
    }
    if (value === undefined) return 'undefined (nothing was thrown)';
    if (value === null) return 'null';
    if (typeof value === 'string') return truncate(value);
    if (typeof value !== 'object' && typeof value !== 'function') return truncate(String(value));
    const json = safeString(() => JSON.stringify(value));
    const tag = Object.prototype.toString.call(value);
    return json && json !== '{}' ? `${tag} ${truncate(json)}` : tag;
  } catch {
    return 'an unreadable value';
  }
}

const MAX_DESCRIBED = 500;
const truncate = (text: string) => (text.length > MAX_DESCRIBED ? `${text.slice(0, MAX_DESCRIBED)}… (${text.length} characters)` : text);

function safeString(get: () => unknown): string | null {
  try {
    const v = get();
    return typeof v === 'string' ? v : v === undefined ? null : String(v);
  } catch {
    return null;
  }
}

/**
 * What a peer's failure becomes on this side. A real Error passes through unchanged (callers map
 * their own classes: InvalidActionError, ProtocolError, ...) unless reading it throws; anything else
 * becomes a ProtocolError with `code` (default ENV_ERR_ENV_FAILURE) naming the peer as at fault.
 */
export function peerError(value: unknown, ctx: { peer: string; what?: string; code?: ErrorCode }): Error {
  try {
    // A usable Error: its name and message read as strings (a getter that throws makes it the peer's odd value).
    if (value instanceof Error && typeof value.name === 'string' && typeof value.message === 'string') return value;
  } catch {
    /* an Error whose getters throw: the typed error below */
  }
  return new ProtocolError(ctx.code ?? 'ENV_ERR_ENV_FAILURE', `${ctx.what ?? 'a call'} failed in ${ctx.peer}: ${describeThrown(value)}`, {
    side: 'env',
    error: value instanceof Error ? (safeString(() => value.name) ?? 'Error') : typeof value,
  });
}

/**
 * Runs one in-process call under a deadline and the fault mapping: resolves with its value, or
 * rejects with what `peerError` makes of its failure, or with a timeout error naming `peer` when it
 * has not settled within `deadlineMs` (its late outcome is dropped). A sync value is returned as is.
 */
export function withDeadline<T>(
  call: () => T | Promise<T>,
  ctx: { peer: string; what: string; deadlineMs: number; code?: ErrorCode; onLate?: () => void },
): T | Promise<T> {
  let out: T | Promise<T>;
  try {
    out = call();
  } catch (err) {
    throw peerError(err, ctx);
  }
  if (!(out instanceof Promise)) return out;
  const mapped = out.then(undefined, (err: unknown) => {
    throw peerError(err, ctx);
  });
  if (!(ctx.deadlineMs > 0)) return mapped;
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const timer = setTimeout(() => {
      done = true;
      reject(
        new ProtocolError(ctx.code ?? 'ENV_ERR_ENV_FAILURE', `${ctx.what} did not finish in ${ctx.peer} within ${ctx.deadlineMs} ms`, {
          side: 'env',
          timed_out: true,
          deadline_ms: ctx.deadlineMs,
        }),
      );
    }, ctx.deadlineMs);
    timer.unref?.();
    mapped.then(
      (v) => {
        if (done) return ctx.onLate?.();
        clearTimeout(timer);
        resolve(v);
      },
      (err: unknown) => {
        if (done) return ctx.onLate?.();
        clearTimeout(timer);
        reject(err as Error);
      },
    );
  });
}
