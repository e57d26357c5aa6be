/**
 * One Python worker process (`python -m gymwire.worker`): spawning it, batching calls to it, timing
 * them out, and noticing when it dies.
 *
 * Calls made in the same tick go to the worker as one frame (a step_batch over sessions of this
 * worker is one round trip) and come back as one frame of answers in the same order. A worker that
 * exits, or does not answer within `callTimeoutMs`, is killed; every call in flight and every later
 * call on it fails with ENV_ERR_ENV_FAILURE (errors.ts). The pool (pool.ts) starts its replacement.
 *
 * @example
 * const worker = new PythonWorker({ python: 'python3', index: 0, callTimeoutMs: 60_000, logger });
 * const info = await worker.call({ op: 'describe', target: { kind: 'gym', id: 'CartPole-v1' } }, 'gym/CartPole-v1');
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';

import type { Logger } from 'pino';

import { FrameChannel } from './channel.ts';
import type { WorkerFailure } from './errors.ts';
import { failureError, workerLostError } from './errors.ts';

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

interface InFlight {
  calls: Pending[];
  sentAt: number;
}

/** The worker's first frame (id 0) says it is ready; call frames count from 1. */
const READY_ID = 0;
/** How much longer than a call a worker may take to start. */
const STARTUP_GRACE_MS = 120_000;

/** The SDK's source in this checkout: on the worker's PYTHONPATH so a plain python3 finds gymwire. */
const SDK_SOURCE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'client', 'python', 'src');

export class PythonWorker {
  readonly process: ChildProcess;
  readonly log: Logger;
  /** Live env handles on this worker (the pool places sessions by this count). */
  sessions = 0;
  private readonly channel: FrameChannel;
  /** Frames sent and not yet answered, oldest first (Map keeps insertion order). */
  private readonly inFlight = new Map<number, InFlight>();
  /** Checks the oldest frame's age: one coarse timer for the worker's life, not one per frame. */
  private watchdog: NodeJS.Timeout | null = null;
  private queue: Pending[] = [];
  private nextId = 1;
  private nextHandle = 1;
  private lostReason: string | null = null;
  /** Whether it ever got ready: one that dies before that is broken (bad interpreter, missing package), not unlucky. */
  answered = false;
  private exitNotified = false;
  private readonly startedAt = performance.now();
  /** When the worker said it finished importing (its first frame); calls are timed from then. */
  private readyAt: number | null = null;

  constructor(private readonly opts: WorkerOptions) {
    const pythonPath = [existsSync(SDK_SOURCE) ? SDK_SOURCE : null, process.env.PYTHONPATH].filter(Boolean).join(delimiter);
    this.process = spawn(opts.python, ['-m', 'gymwire.worker', '--fd', '3'], {
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      env: { ...process.env, PYTHONPATH: pythonPath, PYTHONUNBUFFERED: '1' },
    });
    this.log = opts.logger.child({ worker: opts.index, pid: this.process.pid });
    // The Python side's own output (warnings, tracebacks, prints in env code) goes to the server log.
    createInterface({ input: this.process.stderr! }).on('line', (line) => this.log.warn({ stream: 'stderr' }, line));
    createInterface({ input: this.process.stdout! }).on('line', (line) => this.log.info({ stream: 'stdout' }, line));
    this.channel = new FrameChannel(
      this.process.stdio[3] as Duplex,
      (message) => this.answer(message),
      // A worker that exits resets its socket first: give the exit a moment to report why.
      (err) => void setTimeout(() => this.lose(`its channel failed: ${err.message}`), 200).unref(),
    );
    this.process.on('error', (err) => this.lose(`it could not start (${opts.python}: ${err.message}); set --python-exe or GYMWIRE_PYTHON`));
    this.process.on('exit', (code, signal) => {
      const how = signal ? `it was killed by ${signal}` : `it exited with code ${code}`;
      // Dying before the first answer is a setup problem, whose explanation is on its stderr.
      this.lose(this.answered ? how : `${how} before answering (its stderr is in the server log: does ${opts.python} have gymnasium and the gymwire package?)`);
    });
    this.watchdog = setInterval(this.checkHung, Math.max(10, Math.min(1_000, opts.callTimeoutMs / 4)));
    this.watchdog.unref();
    this.log.debug('python worker started');
  }

  get alive(): boolean {
    return this.lostReason === null;
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
    if (this.lostReason !== null) return Promise.reject(workerLostError(this.lostReason));
    return new Promise<T>((resolve, reject) => {
      if (this.queue.length === 0) queueMicrotask(this.flushQueue);
      this.queue.push({ call, what, convert, resolve: resolve as (value: unknown) => void, reject });
    });
  }

  /** Closes the channel so the worker closes its envs and exits; kills it if it has not after graceMs. */
  async close(graceMs = 2_000): Promise<void> {
    if (this.process.exitCode !== null || this.process.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.process.once('exit', () => resolve()));
    this.lostReason ??= 'the server is shutting down';
    this.stopWatchdog();
    this.channel.close();
    const timer = setTimeout(() => this.process.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }

  private readonly flushQueue = (): void => {
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    if (this.lostReason !== null) {
      for (const q of batch) q.reject(workerLostError(this.lostReason));
      return;
    }
    const id = this.nextId++;
    this.inFlight.set(id, { calls: batch, sentAt: performance.now() });
    const calls = new Array<WorkerCall>(batch.length);
    for (let i = 0; i < batch.length; i++) calls[i] = batch[i]!.call;
    try {
      this.channel.send({ id, calls });
    } catch (err) {
      // A value the codec cannot encode: fail these calls, the worker is fine.
      this.inFlight.delete(id);
      for (const q of batch) q.reject(err instanceof Error ? err : new Error(String(err)));
    }
  };

  private readonly checkHung = (): void => {
    const oldest = this.inFlight.values().next().value as InFlight | undefined;
    if (!oldest) return;
    const now = performance.now();
    if (this.readyAt === null) {
      // Still importing (gymnasium, the env's packages): allow a slow start on top of the call timeout.
      if (now - this.startedAt > this.opts.callTimeoutMs + STARTUP_GRACE_MS)
        this.lose(`it did not start within ${Math.round((now - this.startedAt) / 1000)} s`);
      return;
    }
    if (now - Math.max(oldest.sentAt, this.readyAt) > this.opts.callTimeoutMs) {
      this.lose(`it did not answer within ${this.opts.callTimeoutMs} ms (${oldest.calls.map((c) => c.call.op).join(', ')})`);
    }
  };

  private stopWatchdog(): void {
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = null;
  }

  private answer(message: unknown): void {
    if ((message as { id: number }).id === READY_ID) {
      this.readyAt = performance.now();
      this.answered = true;
      return;
    }
    const { id, results } = message as { id: number; results: ({ ok: unknown } | { error: WorkerFailure })[] };
    const entry = this.inFlight.get(id);
    if (!entry) return this.log.warn({ id }, 'python worker answered a frame nobody waits for');
    this.inFlight.delete(id);
    this.answered = true;
    const calls = entry.calls;
    for (let i = 0; i < calls.length; i++) {
      const c = calls[i]!;
      const r = results[i];
      if (r === undefined) c.reject(workerLostError(`it gave no answer for ${c.call.op}`));
      else if ('error' in r) {
        this.log.debug({ op: c.call.op, traceback: r.error.traceback }, 'python env raised');
        c.reject(failureError(c.call.op, r.error, c.what));
      } else if (c.convert === null) c.resolve(r.ok);
      else {
        try {
          c.resolve(c.convert(r.ok));
        } catch (err) {
          c.reject(err instanceof Error ? err : new Error(String(err)));
        }
      }
    }
  }

  /** Marks the worker lost (the first reason stands), kills it (SIGKILL: a hung env ignores SIGTERM) and fails what waits on it. */
  private lose(reason: string): void {
    if (this.lostReason === null) {
      this.lostReason = reason;
      this.log.error({ reason, sessions: this.sessions }, 'python worker lost; its sessions fail from now on');
    }
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill('SIGKILL');
    const err = workerLostError(this.lostReason);
    for (const entry of this.inFlight.values()) for (const c of entry.calls) c.reject(err);
    this.inFlight.clear();
    this.stopWatchdog();
    if (!this.exitNotified) {
      this.exitNotified = true;
      this.opts.onExit?.(this, reason);
    }
  }
}
