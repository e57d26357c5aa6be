/**
 * What every conformance case stands on: the target and case types, the checks that fail a case
 * with a message a server author can act on, deep equality over wire values, and raw frame-level
 * connections. `suite.ts` and the case modules import it; `suite.ts` re-exports it.
 */
import { decode, encode } from '../protocol/codec.ts';
import { ProtocolError } from '../protocol/errors.ts';
import type { ErrorCode } from '../protocol/errors.ts';
import { CONFORMANCE_CLIENT_NAME, PROTOCOL_VERSION } from '../protocol/messages.ts';
import { isPlainObject } from '../protocol/spaces.ts';
export { batchRow } from '../protocol/batch.ts';
import type { Space } from '../protocol/spaces.ts';
import { Tensor } from '../protocol/tensor.ts';
import type { ClientOptions, GymwireClient } from '../client/ts/client.ts';
import type { ClientTransport, Connector } from '../client/ts/transport.ts';

/** How long a raw request may go unanswered (as the suite's client requests: a hosted env's first make starts its workers). */
export const REQUEST_DEADLINE_MS = 15_000;

export interface ConformanceTarget {
  /** Opens a fresh transport to the server (a new connection each call). */
  connector: Connector;
  token?: string;
  /** A label for reports. */
  name: string;
  /** The server's HTTP side and a way to stop it, when the suite controls the server (`--serve`): the lifecycle cases need it. */
  lifecycle?: ServerLifecycle;
}

/** A server the suite may stop. */
export interface ServerLifecycle {
  /** `http://HOST:PORT` of the server's HTTP routes (/healthz). */
  httpBase: string;
  /** Starts the server's graceful stop (SIGTERM for a served command); resolves once it is asked. */
  stop(): Promise<void> | void;
}

export interface CaseContext {
  target: ConformanceTarget;
  envId: string;
  /** A connected client with fast reconnects (through `connector` when given); closed by the runner. */
  client(opts?: ClientOptions & { connector?: Connector }): Promise<GymwireClient>;
  /** A raw connection for frame-level cases. */
  raw(): Promise<RawConnection>;
  /** Steps to try before giving up on seeing an episode end. */
  maxSteps: number;
  /** How long to wait for the server to close a connection that never says hello (its hello timeout and some slack). */
  helloWaitMs: number;
}

export type CaseResult = { status: 'pass' } | { status: 'skip'; reason: string } | undefined;
export interface ConformanceCase {
  name: string;
  /** The ids of the statements in docs/PROTOCOL.md and docs/errors.md this case checks (`[P-HELLO-3]` is `P-HELLO-3`). */
  covers: string[];
  /** Cases that do not depend on the env run once per server. */
  perServer?: boolean;
  /** The case stops the server: it runs after every other case. */
  endsServer?: boolean;
  run(ctx: CaseContext): Promise<CaseResult | void>;
}

export class ConformanceFailure extends Error {
  override readonly name = 'ConformanceFailure';
}

export function check(cond: unknown, message: string): asserts cond {
  if (!cond) throw new ConformanceFailure(message);
}

export async function expectCode(p: Promise<unknown>, code: ErrorCode, what: string): Promise<ProtocolError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ProtocolError && err.code === code) return err;
    throw new ConformanceFailure(`${what}: expected ${code}, got ${err instanceof ProtocolError ? err.code : String(err)}`);
  }
  throw new ConformanceFailure(`${what}: expected ${code}, but it succeeded`);
}

/** Deep equality over wire values (tensors by dtype, shape and bytes; NaN equals NaN). */
export function valuesEqual(a: unknown, b: unknown): boolean {
  if (a instanceof Tensor || b instanceof Tensor) return a instanceof Tensor && b instanceof Tensor && a.equals(b);
  if (a instanceof Uint8Array || b instanceof Uint8Array) return a instanceof Uint8Array && b instanceof Uint8Array && Buffer.from(a).equals(Buffer.from(b));
  if (Array.isArray(a) || Array.isArray(b)) return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => valuesEqual(v, b[i]));
  if (isPlainObject(a) || isPlainObject(b)) {
    if (!isPlainObject(a) || !isPlainObject(b)) return false;
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    return ka.length === kb.length && ka.every((k, i) => k === kb[i] && valuesEqual(a[k], b[k]));
  }
  return Object.is(a, b) || a === b;
}

/** Frames in and out, no client logic: for handshake and malformed-frame cases. */
export class RawConnection {
  private readonly inbox: Record<string, unknown>[] = [];
  private waiters: (() => void)[] = [];
  closed = false;
  /** The WebSocket close code, once closed. */
  closeCode: number | null = null;

  constructor(readonly transport: ClientTransport) {
    transport.onmessage = (frame) => {
      this.inbox.push(decode(frame) as Record<string, unknown>);
      for (const w of this.waiters.splice(0)) w();
    };
    transport.onclose = (code) => {
      this.closed = true;
      this.closeCode = code;
      for (const w of this.waiters.splice(0)) w();
    };
  }

  /** Waits until the server closes the connection (or timeoutMs passes); the close code, or null. */
  async closedWith(timeoutMs = 3000): Promise<number | null> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.closed) return this.closeCode;
      const left = deadline - Date.now();
      if (left <= 0) return null;
      await this.arrival(left);
    }
  }

  /** The next event named `name` (other events stay in the inbox), within timeoutMs. */
  async event(name: string, timeoutMs = REQUEST_DEADLINE_MS): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.inbox.findIndex((m) => m.type === 'event' && m.event === name);
      if (i >= 0) return this.inbox.splice(i, 1)[0]!;
      if (this.closed) throw new ConformanceFailure(`the server closed the connection (code ${this.closeCode}) without the ${name} event`);
      const left = deadline - Date.now();
      if (left <= 0) throw new ConformanceFailure(`no ${name} event within ${timeoutMs} ms`);
      await this.arrival(left);
    }
  }

  send(message: unknown): void {
    this.transport.send(encode(message));
  }

  sendBytes(bytes: Uint8Array): void {
    this.transport.send(bytes);
  }

  /** The next message that is not an event, within timeoutMs. */
  async next(timeoutMs = REQUEST_DEADLINE_MS): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.inbox.findIndex((m) => m.type !== 'event');
      if (i >= 0) return this.inbox.splice(i, 1)[0]!;
      if (this.closed) throw new ConformanceFailure('the server closed the connection instead of answering');
      const left = deadline - Date.now();
      if (left <= 0) throw new ConformanceFailure(`no answer within ${timeoutMs} ms`);
      await this.arrival(left);
    }
  }

  /** Resolves when the next message or the close arrives, or after `ms`, whichever is first. */
  private arrival(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== wake);
        resolve();
      }, ms);
      this.waiters.push(wake);
    });
  }

  async hello(token?: string): Promise<Record<string, unknown>> {
    this.send({ id: 0, type: 'hello', protocol_version: PROTOCOL_VERSION, client_name: CONFORMANCE_CLIENT_NAME, ...(token ? { token } : {}) });
    const welcome = await this.next();
    check(welcome.type === 'result', `hello failed: ${JSON.stringify(welcome.error)}`);
    return welcome;
  }

  close(): void {
    this.transport.close();
  }
}

export function errorCode(msg: Record<string, unknown>): string | undefined {
  return msg.type === 'error' ? (msg.error as { code: string }).code : undefined;
}

// ---------------------------------------------------------------------------------------------
// Invalid actions derived from the action space

export function invalidActions(space: Space): { what: string; action: unknown }[] {
  const out: { what: string; action: unknown }[] = [{ what: 'a string', action: 'not an action' }];
  if (space.type === 'box') {
    const other = space.dtype === 'float64' ? 'float32' : 'float64';
    out.push({ what: `wrong dtype (${other})`, action: Tensor.zeros(other, space.shape) });
    out.push({ what: 'wrong shape', action: Tensor.zeros(space.dtype, [...space.shape, 2]) });
    const hi = space.high.size ? space.high.at(0) : Infinity;
    if (Number.isFinite(hi) && space.high.size) {
      const t = Tensor.zeros(space.dtype, space.shape);
      const above = space.dtype.startsWith('float') ? hi + Math.max(1, Math.abs(hi)) : hi + 1;
      const values = space.low.toNumbers().map((lo, i) => (i === 0 ? above : Number.isFinite(lo) ? lo : 0));
      out.push({ what: 'above high', action: Tensor.from(space.dtype, t.shape, values) });
    }
    if (space.dtype.startsWith('float') && space.low.size)
      out.push({
        what: 'NaN',
        action: Tensor.from(
          space.dtype,
          space.shape,
          space.low.toNumbers().map(() => Number.NaN),
        ),
      });
  } else if (space.type === 'discrete') {
    out.push({ what: 'out of range', action: space.start + space.n });
    out.push({ what: 'non-integer', action: space.start + 0.5 });
    out.push({ what: 'a tensor', action: Tensor.zeros('float32', [2]) });
  } else if (space.type === 'dict') {
    out.push({ what: 'missing keys', action: {} });
  }
  return out;
}

/**
 * A raw connection past its hello, with numbered requests: for cases that check the wire form of
 * an answer (dtypes, details, ids) rather than what the client makes of it.
 */
export class RawSession {
  private nextId = 1;
  private constructor(readonly raw: RawConnection) {}

  static async open(ctx: CaseContext): Promise<RawSession> {
    const raw = await ctx.raw();
    await raw.hello(ctx.target.token);
    return new RawSession(raw);
  }

  /** Sends one request and returns its whole answer (result or error). */
  async call(type: string, fields: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    this.raw.send({ id, type, ...fields });
    const answer = await this.raw.next();
    check(answer.id === id || answer.id === null, `the answer to ${type} #${id} carries id ${JSON.stringify(answer.id)}`);
    return answer;
  }

  /** The result of a request that must succeed. */
  async result<T = Record<string, unknown>>(type: string, fields: Record<string, unknown> = {}): Promise<T> {
    const answer = await this.call(type, fields);
    check(answer.type === 'result', `${type} failed: ${JSON.stringify(answer.error)}`);
    return answer.result as T;
  }

  /** The error of a request that must be refused with `code`. */
  async refused(
    code: ErrorCode,
    what: string,
    type: string,
    fields: Record<string, unknown> = {},
  ): Promise<{ code: string; message: string; details: Record<string, unknown> }> {
    const answer = await this.call(type, fields);
    const error = answer.error as { code: string; message: string; details: Record<string, unknown> } | undefined;
    check(answer.type === 'error' && error?.code === code, `${what}: expected ${code}, got ${answer.type === 'error' ? error?.code : 'a result'}`);
    return error!;
  }

  /** Makes a session of `envId` and resets it with `seed`; its id. */
  async session(envId: string, seed: number, kwargs: Record<string, unknown> = {}): Promise<string> {
    const { session_id } = await this.result<{ session_id: string }>('make', { env_id: envId, kwargs });
    await this.result('reset', { session_id, seed });
    return session_id;
  }
}

/** The session's state, or null when its env answers ENV_ERR_UNSUPPORTED (it keeps no state). */
export async function stateOf(env: { getState(): Promise<Uint8Array> }): Promise<Uint8Array | null> {
  try {
    return await env.getState();
  } catch (err) {
    if (err instanceof ProtocolError && err.code === 'ENV_ERR_UNSUPPORTED') return null;
    throw err;
  }
}
