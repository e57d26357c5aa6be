/**
 * One Python worker process (`python -m gymwire.worker`): spawning it, batching calls to it, timing
 * them out, and noticing when it dies.
 *
 * Calls made in the same tick go to the worker as one frame (a step_batch over sessions of this
 * worker is one round trip) and come back as one frame of answers in the same order. A worker that
 * exits, or does not answer within `callTimeoutMs`, is killed; every call in flight and every later
 * call on it fails with {@link WorkerLostError}. The pool (pool.ts) starts its replacement.
 *
 * @example
 * const worker = new PythonWorker({ python: 'python3', index: 0, callTimeoutMs: 60_000, logger });
 * const info = await worker.call({ op: 'describe', target: { kind: 'gym', id: 'CartPole-v1' } });
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

/** One operation for the worker; `op` names it (see client/python/src/gymwire/worker/host.py). */
export interface WorkerCall {
  op: string;
  [key: string]: unknown;
}

/** What the worker answers for a failed call. */
export interface WorkerFailure {
  kind: 'env' | 'invalid_kwargs' | 'invalid_state' | 'unknown_handle' | 'unsupported';
  type: string;
  /** The traceback's last line, e.g. "ValueError: bad action". */
  message: string;
  traceback: string;
}

/** A call that the Python side answered with an exception. */
export class WorkerCallError extends Error {
  override readonly name = 'WorkerCallError';
  constructor(
    readonly op: string,
    readonly failure: WorkerFailure,
  ) {
    super(failure.message);
  }
}

/** The worker died or hung; whatever it hosted is gone. */
export class WorkerLostError extends Error {
  override readonly name = 'WorkerLostError';
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

interface InFlight {
  calls: { resolve(value: unknown): void; reject(err: Error): void; op: string }[];
  timer: NodeJS.Timeout;
}

/** The SDK's source in this checkout: on the worker's PYTHONPATH so a plain python3 finds gymwire. */
const SDK_SOURCE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'client', 'python', 'src');

export class PythonWorker {
  readonly process: ChildProcess;
  readonly log: Logger;
  /** Live env handles on this worker (the pool places sessions by this count). */
  sessions = 0;
  private readonly channel: FrameChannel;
  private readonly inFlight = new Map<number, InFlight>();
  private queue: { call: WorkerCall; resolve(value: unknown): void; reject(err: Error): void }[] = [];
  private nextId = 1;
  private nextHandle = 1;
  private lostReason: string | null = null;
  /** Whether it ever answered: one that dies before that is broken (bad interpreter, missing package), not unlucky. */
  answered = false;
  private exitNotified = false;

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
      (err) => this.lose(`its channel failed: ${err.message}`),
    );
    this.process.on('error', (err) => this.lose(`it could not start (${opts.python}: ${err.message}); set --python-exe or GYMWIRE_PYTHON`));
    this.process.on('exit', (code, signal) => this.lose(signal ? `it was killed by ${signal}` : `it exited with code ${code}`));
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

  /** Queues one call; calls queued in the same tick travel in one frame. */
  call(call: WorkerCall): Promise<unknown> {
    if (this.lostReason !== null) return Promise.reject(this.lostError());
    return new Promise((resolve, reject) => {
      if (this.queue.length === 0) queueMicrotask(() => this.flush());
      this.queue.push({ call, resolve, reject });
    });
  }

  /** Kills the process (SIGKILL: a hung env does not answer SIGTERM). */
  kill(reason: string): void {
    this.lose(reason);
  }

  /** Closes the channel so the worker closes its envs and exits; kills it if it has not after graceMs. */
  async close(graceMs = 2_000): Promise<void> {
    if (this.process.exitCode !== null || this.process.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.process.once('exit', () => resolve()));
    this.lostReason ??= 'the server is shutting down';
    this.channel.close();
    const timer = setTimeout(() => this.process.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }

  private flush(): void {
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    if (this.lostReason !== null) {
      for (const q of batch) q.reject(this.lostError());
      return;
    }
    const id = this.nextId++;
    const timer = setTimeout(() => this.lose(`it did not answer within ${this.opts.callTimeoutMs} ms (${batch.map((q) => q.call.op).join(', ')})`), this.opts.callTimeoutMs);
    this.inFlight.set(id, { calls: batch.map((q) => ({ resolve: q.resolve, reject: q.reject, op: q.call.op })), timer });
    try {
      this.channel.send({ id, calls: batch.map((q) => q.call) });
    } catch (err) {
      // A value the codec cannot encode: fail these calls, the worker is fine.
      clearTimeout(timer);
      this.inFlight.delete(id);
      for (const q of batch) q.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  private answer(message: unknown): void {
    const { id, results } = message as { id: number; results: ({ ok: unknown } | { error: WorkerFailure })[] };
    const entry = this.inFlight.get(id);
    if (!entry) return this.log.warn({ id }, 'python worker answered a frame nobody waits for');
    this.inFlight.delete(id);
    clearTimeout(entry.timer);
    this.answered = true;
    entry.calls.forEach((c, i) => {
      const r = results[i];
      if (r === undefined) c.reject(new WorkerLostError(`the Python worker gave no answer for ${c.op}`));
      else if ('error' in r) {
        this.log.debug({ op: c.op, traceback: r.error.traceback }, 'python env raised');
        c.reject(new WorkerCallError(c.op, r.error));
      } else c.resolve(r.ok);
    });
  }

  private lostError(): WorkerLostError {
    return new WorkerLostError(`the Python worker hosting this env is gone: ${this.lostReason}`);
  }

  private lose(reason: string): void {
    if (this.lostReason === null) {
      this.lostReason = reason;
      this.log.error({ reason, sessions: this.sessions }, 'python worker lost; its sessions fail from now on');
    }
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill('SIGKILL');
    const err = this.lostError();
    for (const entry of this.inFlight.values()) {
      clearTimeout(entry.timer);
      for (const c of entry.calls) c.reject(err);
    }
    this.inFlight.clear();
    if (!this.exitNotified) {
      this.exitNotified = true;
      this.opts.onExit?.(this, reason);
    }
  }
}
