/**
 * One Python worker process (`python -m gymwire.worker`): spawning it, batching calls to it, timing
 * them out, and noticing when it dies.
 *
 * Calls made in the same tick go to the worker as one frame (a step_batch over sessions of this
 * worker is one round trip) and come back as one frame of answers in the same order. Frames travel
 * on the one request/answer channel (runtime/channel.ts): ids, the deadline, the bounded queue
 * and what an odd answer becomes are its job. A worker that exits, sends a frame it cannot read, or
 * does not answer within `callTimeoutMs`, is killed; every call in flight and every later call on it
 * fails with ENV_ERR_ENV_FAILURE and `details.worker_lost` (errors.ts). The pool (pool.ts) starts
 * its replacement. Its stdout and stderr reach the server log line by line, long lines cut (output.ts).
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

import { Channel, describeThrown } from '../../runtime/channel.ts';
import { DEFAULT_MAX_WORKER_FRAME_BYTES, FrameChannel } from './channel.ts';
import type { WorkerFailure } from './errors.ts';
import { failureError, workerLostError } from './errors.ts';
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
  /** How long one frame of calls may take before the worker counts as hung and is killed. */
  callTimeoutMs: number;
  /** Longest stdout/stderr line logged whole (bytes); the rest of a longer line is dropped. */
  maxOutputLineBytes?: number;
  /** Largest frame read from the worker (bytes); a larger one counts as garbage and the worker is killed. */
  maxFrameBytes?: number;
  /** Frames of calls waiting to be sent while the worker does not read, at most; more fail at once. */
  maxQueuedFrames?: number;
  logger: Logger;
  /** Called once when the worker is gone (exit, crash, kill). */
  onExit?: (worker: PythonWorker, reason: string) => void;
}

/** One queued call: where its answer goes, converted (`convert`) or as an error naming `what`. */
interface Pending {
  call: WorkerCall;
  what: string;
  convert: ((value: unknown) => unknown) | null;
  resolve(value: unknown): void;
  reject(err: Error): void;
}

type CallResult = { ok: unknown } | { error: WorkerFailure };

/** The worker's first frame (id 0) says it is ready; call frames count from 1. */
const READY_ID = 0;
/** How much longer than a call a worker may take to start. */
const STARTUP_GRACE_MS = 120_000;
/** Frames waiting to be sent to a worker that does not read, by default. */
export const DEFAULT_MAX_QUEUED_FRAMES = 1024;

/** The SDK's source in this checkout: on the worker's PYTHONPATH so a plain python3 finds gymwire. */
const SDK_SOURCE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'client', 'python', 'src');

export class PythonWorker {
  readonly process: ChildProcess;
  readonly log: Logger;
  /** Live env handles on this worker (the pool places sessions by this count). */
  sessions = 0;
  private readonly frames: FrameChannel;
  /** Frames of calls and their answers: ids, deadlines, the bounded queue (runtime/channel.ts). */
  readonly channel: Channel<WorkerCall[]>;
  private queue: Pending[] = [];
  private nextHandle = 1;
  /** Whether it ever got ready: one that dies before that is broken (bad interpreter, missing package), not unlucky. */
  answered = false;
  private exitNotified = false;
  /** Lines of its output that were cut (longer than maxOutputLineBytes). */
  cutLines = 0;

  constructor(private readonly opts: WorkerOptions) {
    const pythonPath = [existsSync(SDK_SOURCE) ? SDK_SOURCE : null, process.env.PYTHONPATH].filter(Boolean).join(delimiter);
    this.process = spawn(opts.python, ['-m', 'gymwire.worker', '--fd', '3'], {
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      env: { ...process.env, PYTHONPATH: pythonPath, PYTHONUNBUFFERED: '1' },
    });
    this.log = opts.logger.child({ worker: opts.index, pid: this.process.pid });
    // The Python side's own output (warnings, tracebacks, prints in env code) goes to the server log, bounded per line.
    const maxLine = opts.maxOutputLineBytes ?? DEFAULT_MAX_OUTPUT_LINE_BYTES;
    const logLine = (level: 'warn' | 'info', stream: string) => (line: string, cutBytes: number) => {
      if (cutBytes === 0) return this.log[level]({ stream }, line);
      this.cutLines++;
      this.log[level]({ stream, cut_bytes: cutBytes }, `${line}… (line cut: ${cutBytes} more bytes dropped)`);
    };
    captureLines(this.process.stderr!, maxLine, logLine('warn', 'stderr'));
    captureLines(this.process.stdout!, maxLine, logLine('info', 'stdout'));
    // Until the worker says it is ready, a frame may also wait for its imports (gymnasium, the env's packages).
    this.channel = new Channel<WorkerCall[]>({
      name: `the Python worker ${opts.index}`,
      send: (id, calls) => this.frames.send({ id, calls }),
      limits: { deadlineMs: opts.callTimeoutMs + STARTUP_GRACE_MS, maxQueued: opts.maxQueuedFrames ?? DEFAULT_MAX_QUEUED_FRAMES },
      onDeadline: ({ what, ageMs }) =>
        this.lose(this.answered ? `it did not answer within ${opts.callTimeoutMs} ms (${what})` : `it did not start within ${Math.round(ageMs / 1000)} s`),
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

  /** A fresh env handle on this worker. */
  newHandle(): number {
    return this.nextHandle++;
  }

  /**
   * Queues one call; calls queued in the same tick travel in one frame. Resolves with the answer
   * (passed through `convert` when given); rejects with the server error for a Python exception
   * (naming `what`, the env id) or a lost worker.
   */
  call<T = unknown>(call: WorkerCall, what: string, convert: ((value: unknown) => T) | null = null): Promise<T> {
    if (!this.channel.alive) return Promise.reject(workerLostError(this.channel.lost!));
    return new Promise<T>((resolve, reject) => {
      if (this.queue.length === 0) queueMicrotask(this.flushQueue);
      this.queue.push({ call, what, convert, resolve: resolve as (value: unknown) => void, reject });
    });
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

  private readonly flushQueue = (): void => {
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    const calls = new Array<WorkerCall>(batch.length);
    for (let i = 0; i < batch.length; i++) calls[i] = batch[i]!.call;
    const what = calls.length === 1 ? calls[0]!.op : `${calls.length} calls (${calls[0]!.op}, ...)`;
    const deadlineMs = this.answered ? this.opts.callTimeoutMs : undefined;
    this.channel.request<CallResult[]>(calls, { what, deadlineMs }).then(
      (results) => this.distribute(batch, results),
      (err: unknown) => {
        // A lost worker's calls fail as a lost session; a body the codec refused fails these calls alone.
        const e = this.channel.alive ? (err as Error) : workerLostError(this.channel.lost!);
        for (const q of batch) q.reject(e);
      },
    );
  };

  private distribute(calls: Pending[], results: CallResult[]): void {
    if (!Array.isArray(results)) {
      this.channel.noteGarbage();
      return this.lose(`it answered a frame without results: ${describeThrown(results)}`);
    }
    for (let i = 0; i < calls.length; i++) {
      const c = calls[i]!;
      const r = results[i];
      if (r === null || typeof r !== 'object') c.reject(workerLostError(`it gave no answer for ${c.call.op}`));
      else if ('error' in r) {
        this.log.debug({ op: c.call.op, traceback: r.error.traceback }, 'python env raised');
        c.reject(failureError(c.call.op, r.error, c.what));
      } else if (c.convert === null) c.resolve(r.ok);
      else {
        try {
          c.resolve(c.convert(r.ok));
        } catch (err) {
          c.reject(err instanceof Error ? err : new Error(describeThrown(err)));
        }
      }
    }
  }

  private answer(message: unknown): void {
    const id = (message as { id?: unknown } | null)?.id;
    if (typeof id !== 'number') {
      this.channel.noteGarbage();
      return this.log.warn({ message: describeThrown(message) }, 'python worker sent a frame without an id; dropped');
    }
    if (id === READY_ID) {
      this.answered = true;
      return;
    }
    this.answered = true;
    this.channel.settle(id, { ok: true, value: (message as { results?: unknown }).results });
  }

  /** Marks the worker lost (the first reason stands), kills it (SIGKILL: a hung env ignores SIGTERM) and fails what waits on it. */
  private lose(reason: string): void {
    if (this.channel.alive) this.log.error({ reason, sessions: this.sessions }, 'python worker lost; its sessions fail from now on');
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill('SIGKILL');
    this.channel.fail(reason);
    const pending = this.queue;
    this.queue = [];
    for (const q of pending) q.reject(workerLostError(this.channel.lost!));
    if (!this.exitNotified) {
      this.exitNotified = true;
      this.opts.onExit?.(this, reason);
    }
  }
}
