/**
 * One Python worker process (`python -m gymwire.worker`): spawning it, sending calls to it, timing
 * them out one by one, and noticing when it dies.
 *
 * Each call is one request on the one request/answer channel (runtime/channel.ts: ids, the
 * deadline, the bounded queue, what an odd answer becomes). Calls made in the same tick travel as
 * one frame (a step_batch over sessions of this worker is one round trip); the worker answers by
 * id, together when it can and out of order when one call is slow (client/python/src/gymwire/worker/loop.py:
 * a stalled call keeps a thread of its own, so the worker's other sessions carry on).
 *
 * A call not answered within `callTimeoutMs` fails alone: its session is lost (its later calls fail
 * at once, its close answers at once) and the call counts as abandoned (a log line, the pool's
 * metrics). The worker is recycled (killed; the pool starts a new one) when no healthy session is
 * left on it while an abandoned call still runs, or when more than `maxAbandonedCalls` abandoned
 * calls still run on it. A worker that exits or sends a frame it cannot read is killed at once:
 * every call in flight and every later call on it fails with ENV_ERR_ENV_FAILURE and
 * `details.worker_lost` (errors.ts). Its stdout and stderr reach the server log line by line, long
 * lines cut (output.ts).
 *
 * @example
 * const worker = new PythonWorker({ python: 'python3', index: 0, callTimeoutMs: 60_000, logger });
 * const info = await worker.call({ op: 'describe', target: { kind: 'gym', id: 'CartPole-v1' } }, 'gym/CartPole-v1');
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import type { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';

import type { Logger } from 'pino';

import { ProtocolError } from '../../protocol/errors.ts';
import { Channel, describeThrown } from '../../runtime/channel.ts';
import { DEFAULT_MAX_WORKER_FRAME_BYTES, FrameChannel } from './channel.ts';
import type { WorkerFailure } from './errors.ts';
import { callTimedOutError, failureError, sessionLostError, workerLostError } from './errors.ts';
import { captureLines, DEFAULT_MAX_OUTPUT_LINE_BYTES } from './output.ts';

/** One operation for the worker; `op` names it (see client/python/src/gymwire/worker/host.py). */
export interface WorkerCall {
  op: string;
  [key: string]: unknown;
}

export interface WorkerOptions {
  /** The Python interpreter (needs gymnasium and the gymwire package). */
  python: string;
  /** The worker's number in its pool, for logs. */
  index: number;
  /** How long one call may take before it is abandoned and its session lost (ms). */
  callTimeoutMs: number;
  /** Abandoned calls still running on the worker, at most; past it the worker is recycled. */
  maxAbandonedCalls?: number;
  /** Longest stdout/stderr line logged whole (bytes); the rest of a longer line is dropped. */
  maxOutputLineBytes?: number;
  /** Largest frame read from the worker (bytes); a larger one counts as garbage and the worker is killed. */
  maxFrameBytes?: number;
  /** Calls waiting to be sent while the worker does not read, at most; more fail at once. */
  maxQueuedCalls?: number;
  logger: Logger;
  /** Called once when the worker is gone (exit, crash, kill, recycled). */
  onExit?: (worker: PythonWorker, reason: string) => void;
  /** Called for each call abandoned at its deadline. */
  onAbandon?: (worker: PythonWorker, call: WorkerCall) => void;
}

type CallResult = { ok: unknown } | { error: WorkerFailure };

/** The worker's first frame (id 0) says it is ready; call frames count from 1. */
const READY_ID = 0;
/** How much longer than a call a worker may take to start. */
const STARTUP_GRACE_MS = 120_000;
/** Calls waiting to be sent to a worker that does not read, by default. */
export const DEFAULT_MAX_QUEUED_CALLS = 65_536;
/** Abandoned calls still running on one worker before it is recycled, by default. */
export const DEFAULT_MAX_ABANDONED_CALLS = 16;
/** Calls in flight on one worker at most (sessions times their pending requests bound it first). */
const MAX_IN_FLIGHT_CALLS = 65_536;

/** The SDK's source in this checkout: on the worker's PYTHONPATH so a plain python3 finds gymwire. */
const SDK_SOURCE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'client', 'python', 'src');

export class PythonWorker {
  readonly process: ChildProcess;
  readonly log: Logger;
  /** Live env handles on this worker (the pool places sessions by this count). */
  sessions = 0;
  private readonly frames: FrameChannel;
  /** Calls and their answers: ids, deadlines, the bounded queue (runtime/channel.ts). */
  readonly channel: Channel<WorkerCall>;
  /** Calls handed to the channel this tick, sent as one frame. */
  private outIds: number[] = [];
  private outCalls: WorkerCall[] = [];
  private nextHandle = 1;
  /** Env handles whose session is lost (a call abandoned at its deadline), until their close. */
  private readonly lostHandles = new Set<number>();
  /** Abandoned calls still running on the worker, by request id (an answer that comes late removes its id). */
  private readonly stuck = new Map<number, WorkerCall>();
  private readonly maxAbandonedCalls: number;
  /** Whether it ever got ready: one that dies before that is broken (bad interpreter, missing package), not unlucky. */
  answered = false;
  private exitNotified = false;
  /** Lines of its output that were cut (longer than maxOutputLineBytes). */
  cutLines = 0;
  /** Calls abandoned at their deadline, over the worker's life. */
  abandonedCalls = 0;

  constructor(private readonly opts: WorkerOptions) {
    const pythonPath = [existsSync(SDK_SOURCE) ? SDK_SOURCE : null, process.env.PYTHONPATH].filter(Boolean).join(delimiter);
    this.process = spawn(opts.python, ['-m', 'gymwire.worker', '--fd', '3'], {
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      env: { ...process.env, PYTHONPATH: pythonPath, PYTHONUNBUFFERED: '1' },
    });
    this.log = opts.logger.child({ worker: opts.index, pid: this.process.pid });
    this.maxAbandonedCalls = opts.maxAbandonedCalls ?? DEFAULT_MAX_ABANDONED_CALLS;
    // The Python side's own output (warnings, tracebacks, prints in env code) goes to the server log, bounded per line.
    const maxLine = opts.maxOutputLineBytes ?? DEFAULT_MAX_OUTPUT_LINE_BYTES;
    const logLine = (level: 'warn' | 'info', stream: string) => (line: string, cutBytes: number) => {
      if (cutBytes === 0) return this.log[level]({ stream }, line);
      this.cutLines++;
      this.log[level]({ stream, cut_bytes: cutBytes }, `${line}… (line cut: ${cutBytes} more bytes dropped)`);
    };
    captureLines(this.process.stderr!, maxLine, logLine('warn', 'stderr'));
    captureLines(this.process.stdout!, maxLine, logLine('info', 'stdout'));
    // Until the worker says it is ready, a call may also wait for its imports (gymnasium, the env's packages).
    this.channel = new Channel<WorkerCall>({
      name: `the Python worker ${opts.index}`,
      send: (id, call) => {
        if (this.outIds.length === 0) queueMicrotask(this.flush);
        this.outIds.push(id);
        this.outCalls.push(call);
      },
      limits: {
        deadlineMs: opts.callTimeoutMs + STARTUP_GRACE_MS,
        maxInFlight: MAX_IN_FLIGHT_CALLS,
        maxQueued: opts.maxQueuedCalls ?? DEFAULT_MAX_QUEUED_CALLS,
      },
      timeoutError: ({ body, deadlineMs }) => callTimedOutError(body.op, deadlineMs),
      onDeadline: ({ id, what, ageMs, body }) => {
        if (!this.answered) return this.lose(`it did not start within ${Math.round(ageMs / 1000)} s (${what})`);
        this.abandon(id, body);
      },
    });
    this.frames = new FrameChannel(
      this.process.stdio[3] as Duplex,
      (message) => this.answer(message),
      // A worker that exits resets its socket first: give the exit a moment to report why.
      (err) => void setTimeout(() => this.lose(`its channel failed: ${err.message}`), 200).unref(),
      opts.maxFrameBytes ?? DEFAULT_MAX_WORKER_FRAME_BYTES,
    );
    this.frames.onDrain(() => this.channel.resume());
    this.process.on('error', (err) => this.lose(`it could not start (${opts.python}: ${err.message}); set --python-exe or GYMWIRE_PYTHON`));
    this.process.on('exit', (code, signal) => {
      const how = signal ? `it was killed by ${signal}` : `it exited with code ${code}`;
      // Dying before the first answer is a setup problem, whose explanation is on its stderr.
      this.lose(this.answered ? how : `${how} before answering (its stderr is in the server log: does ${opts.python} have gymnasium and the gymwire package?)`);
    });
    this.log.debug('python worker started');
  }

  get alive(): boolean {
    return this.channel.alive;
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  /** Abandoned calls still running on the worker. */
  get stuckCalls(): number {
    return this.stuck.size;
  }

  /** A fresh env handle on this worker. */
  newHandle(): number {
    return this.nextHandle++;
  }

  /**
   * Sends one call; calls made in the same tick travel in one frame. Resolves with the answer
   * (passed through `convert` when given); rejects with the server error for a Python exception
   * (naming `what`, the env id), a call past its deadline, a lost session or a lost worker.
   */
  call<T = unknown>(call: WorkerCall, what: string, convert: ((value: unknown) => T) | null = null): Promise<T> {
    if (!this.channel.alive) return Promise.reject(workerLostError(this.channel.lost!));
    if (typeof call.handle === 'number' && this.lostHandles.has(call.handle)) return Promise.reject(sessionLostError());
    return this.channel.request<CallResult>(call, { what: `${call.op} of ${what}`, deadlineMs: this.answered ? this.opts.callTimeoutMs : undefined }).then(
      (r) => {
        if (r === null || typeof r !== 'object') throw workerLostError(`it gave no answer for ${call.op}`);
        if ('error' in r) {
          this.log.debug({ op: call.op, traceback: r.error.traceback }, 'python env raised');
          throw failureError(call.op, r.error, what);
        }
        if (convert === null) return r.ok as T;
        try {
          return convert(r.ok);
        } catch (err) {
          throw err instanceof Error ? err : new Error(describeThrown(err));
        }
      },
      (err: unknown) => {
        // A call past its deadline says so even when its worker was recycled for it; other calls of a lost worker fail as a lost session.
        if (this.channel.alive || (err instanceof ProtocolError && err.details.timed_out === true)) throw err;
        throw workerLostError(this.channel.lost!);
      },
    );
  }

  /**
   * Closes the env of `handle`. A lost session's close answers at once: its env may still be inside
   * the abandoned call, so the close is sent without waiting (the worker runs it after that call, if
   * that ever ends), and the worker is recycled if no healthy session is left.
   */
  closeHandle(handle: number, what: string): Promise<void> {
    const lost = this.lostHandles.delete(handle);
    // The last healthy session going while an abandoned call still runs: the worker goes with it.
    this.recycleIfIdle();
    // A lost worker took the env with it: nothing to close.
    if (!this.alive) return Promise.resolve();
    if (!lost) return this.call({ op: 'close', handle }, what, () => undefined).catch(() => undefined);
    void this.channel.request({ op: 'close', handle }, { what: `close of ${what}`, deadlineMs: 0 }).catch(() => undefined);
    return Promise.resolve();
  }

  /** Closes the channel so the worker closes its envs and exits; kills it if it has not after graceMs. */
  async close(graceMs = 2_000): Promise<void> {
    if (this.process.exitCode !== null || this.process.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.process.once('exit', () => resolve()));
    this.channel.fail('the server is shutting down');
    this.frames.close();
    const timer = setTimeout(() => this.process.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }

  /** Recycles the worker when an abandoned call still runs on it and no healthy session is left (the pool calls it when a session goes). */
  recycleIfIdle(): void {
    if (!this.alive || this.stuck.size === 0) return;
    if (this.sessions - this.lostHandles.size <= 0) this.lose(`recycled: ${this.stuck.size} abandoned call(s) still run on it and no healthy session is left`);
  }

  private readonly flush = (): void => {
    const ids = this.outIds;
    const calls = this.outCalls;
    this.outIds = [];
    this.outCalls = [];
    if (ids.length === 0 || !this.channel.alive) return;
    let accepted: boolean;
    try {
      accepted = this.frames.send({ ids, calls });
    } catch (err) {
      // A body the codec refused: this frame's calls fail, the worker is fine.
      const frame = new Set(calls);
      this.channel.rejectWaiting(err instanceof Error ? err : new Error(describeThrown(err)), (call) => frame.has(call));
      return;
    }
    if (!accepted) this.channel.pause();
  };

  /** A call missed its deadline: its session is lost, the call counted; the worker goes when past the bound or with no healthy session. */
  private abandon(id: number, call: WorkerCall): void {
    this.abandonedCalls++;
    this.stuck.set(id, call);
    if (typeof call.handle === 'number') this.lostHandles.add(call.handle);
    this.log.warn(
      { op: call.op, handle: call.handle, stuck: this.stuck.size, max_abandoned_calls: this.maxAbandonedCalls },
      `python env call abandoned: ${call.op} did not answer within ${this.opts.callTimeoutMs} ms; its session is lost`,
    );
    this.opts.onAbandon?.(this, call);
    if (this.stuck.size > this.maxAbandonedCalls)
      return this.lose(`recycled: ${this.stuck.size} abandoned calls still run on it (limit ${this.maxAbandonedCalls}, --max-abandoned-calls)`);
    this.recycleIfIdle();
  }

  private answer(message: unknown): void {
    const m = message as { id?: unknown; ids?: unknown; results?: unknown } | null;
    if (m !== null && typeof m === 'object' && m.id === READY_ID) {
      this.answered = true;
      return;
    }
    const ids = m?.ids;
    const results = m?.results;
    if (!Array.isArray(ids) || !Array.isArray(results) || ids.length !== results.length) {
      this.channel.noteGarbage();
      return this.log.warn({ message: describeThrown(message) }, 'python worker sent a frame without ids and results; dropped');
    }
    this.answered = true;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i] as number;
      // An abandoned call that finally returned: its thread is free again (the answer is counted late and dropped).
      const late = this.stuck.get(id);
      if (late !== undefined) {
        this.stuck.delete(id);
        this.log.info({ op: late.op, handle: late.handle }, 'an abandoned python env call returned');
      }
      this.channel.settle(id, { ok: true, value: results[i] });
    }
  }

  /** Marks the worker lost (the first reason stands), kills it (SIGKILL: a hung env ignores SIGTERM) and fails what waits on it. */
  private lose(reason: string): void {
    if (this.channel.alive) this.log.error({ reason, sessions: this.sessions }, 'python worker lost; its sessions fail from now on');
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill('SIGKILL');
    this.channel.fail(reason);
    this.outIds = [];
    this.outCalls = [];
    if (!this.exitNotified) {
      this.exitNotified = true;
      this.opts.onExit?.(this, reason);
    }
  }
}
