/**
 * The pool of Python workers: how many, which one a new session goes to, and replacing the ones
 * that die.
 *
 * Workers start on demand, up to `size`. A new session goes to an idle slot first (starting its
 * worker), else to the worker with the fewest sessions, so sessions spread over the cores. A worker
 * that dies (crash, kill, hang past the call timeout) is replaced at once when it had been working,
 * and on the next placement when it never answered (a broken interpreter should not respawn in a
 * loop). A worker recycles itself when abandoned calls pile up on it (worker.ts). Sessions on a dead worker fail with a clear error; other workers' sessions never notice.
 *
 * @example
 * const pool = new WorkerPool({ python: 'python3', size: 4, callTimeoutMs: 60_000, logger });
 * const worker = pool.place();
 * await pool.close();
 */
import { availableParallelism } from 'node:os';

import type { Logger } from 'pino';

import { PythonWorker } from './worker.ts';

export interface PoolOptions {
  /** The Python interpreter; default $GYMWIRE_PYTHON or python3. */
  python?: string;
  /** Worker processes at most; default one per core. */
  size?: number;
  /** How long one call may take before it is abandoned and its session lost (ms); default 60 s. */
  callTimeoutMs?: number;
  /** Abandoned calls still running on one worker before it is recycled; default 16. */
  maxAbandonedCalls?: number;
  /** Longest stdout/stderr line of a worker logged whole (bytes); default 64 KiB. */
  maxOutputLineBytes?: number;
  /** Largest frame read from a worker (bytes); default 1 GiB. */
  maxFrameBytes?: number;
  logger: Logger;
}

export const DEFAULT_CALL_TIMEOUT_MS = 60_000;

export function defaultPoolSize(): number {
  return Math.max(1, availableParallelism());
}

export class WorkerPool {
  readonly python: string;
  readonly size: number;
  readonly callTimeoutMs: number;
  private readonly workerLimits: Pick<PoolOptions, 'maxOutputLineBytes' | 'maxFrameBytes' | 'maxAbandonedCalls'>;
  private readonly slots: (PythonWorker | null)[];
  private readonly log: Logger;
  private started = 0;
  private closed = false;
  /** Calls abandoned at their deadline, over the pool's life (the /metrics counter). */
  abandonedCalls = 0;
  /** Workers started again after one was lost (crash, kill, recycled). */
  restarts = 0;

  constructor(opts: PoolOptions) {
    this.python = opts.python ?? process.env.GYMWIRE_PYTHON ?? 'python3';
    this.size = opts.size ?? defaultPoolSize();
    if (!Number.isInteger(this.size) || this.size < 1) throw new Error(`the worker pool needs at least 1 worker, got ${this.size}`);
    this.callTimeoutMs = opts.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    this.workerLimits = { maxOutputLineBytes: opts.maxOutputLineBytes, maxFrameBytes: opts.maxFrameBytes, maxAbandonedCalls: opts.maxAbandonedCalls };
    this.slots = new Array<PythonWorker | null>(this.size).fill(null);
    this.log = opts.logger.child({ component: 'python-workers' });
  }

  /** Abandoned calls still running on the live workers. */
  get stuckCalls(): number {
    return this.workers().reduce((n, w) => n + w.stuckCalls, 0);
  }

  /** The live workers (for tests and metrics). */
  workers(): PythonWorker[] {
    return this.slots.filter((w): w is PythonWorker => w !== null && w.alive);
  }

  /**
   * The worker for a new session: an idle live worker, else a new one in a free slot, else the
   * least loaded. Counts the session at once so concurrent makes spread too; the caller gives it
   * back with `release` when the make fails or the session closes.
   */
  place(): PythonWorker {
    if (this.closed) throw new Error('the Python worker pool is closed');
    let best: PythonWorker | null = null;
    let free = -1;
    this.slots.forEach((w, i) => {
      if (!w || !w.alive) {
        if (free < 0) free = i;
      } else if (!best || w.sessions < best.sessions) best = w;
    });
    const chosen: PythonWorker = best !== null && ((best as PythonWorker).sessions === 0 || free < 0) ? best : this.start(free);
    chosen.sessions++;
    return chosen;
  }

  release(worker: PythonWorker): void {
    worker.sessions = Math.max(0, worker.sessions - 1);
  }

  /** Any live worker (for calls that belong to no session, like describing a target). */
  any(): PythonWorker {
    const live = this.workers()[0];
    if (live) return live;
    if (this.closed) throw new Error('the Python worker pool is closed');
    const free = this.slots.findIndex((w) => !w || !w.alive);
    return this.start(free);
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map((w) => w?.close()));
  }

  private start(slot: number): PythonWorker {
    const worker = new PythonWorker({
      python: this.python,
      index: this.started++,
      callTimeoutMs: this.callTimeoutMs,
      ...this.workerLimits,
      logger: this.log,
      onExit: (w, reason) => this.onExit(slot, w, reason),
      onAbandon: () => void this.abandonedCalls++,
    });
    this.slots[slot] = worker;
    return worker;
  }

  private onExit(slot: number, worker: PythonWorker, reason: string): void {
    if (this.closed || this.slots[slot] !== worker) return;
    if (!worker.answered) {
      this.slots[slot] = null;
      return;
    }
    this.log.info({ slot, reason }, 'restarting a python worker');
    this.restarts++;
    this.start(slot);
  }
}
