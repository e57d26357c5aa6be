/**
 * One worker thread behind a request/answer channel, with the lifecycle every thread-backed link
 * shares (env threads, render threads, the world-model worker): the thread starts with the first
 * request, is unreferenced while nothing waits on it (so it never keeps a process alive), and a
 * request that misses its deadline, an uncaught error or an exit ends it. Ending it fails what
 * waits on it with the reason and bumps `generation`, so state the caller had put on the old
 * thread (an env, a camera rig, a loaded model) is known to be gone; the next request starts a
 * fresh thread.
 *
 * The link knows nothing of the thread's messages: `start` spawns it, `send` writes one request
 * in the thread's envelope, and `read` turns each message from it into an answer (or handles it
 * itself, such as a log line, or reports it as unreadable).
 *
 * @example
 * const link = new ThreadLink({
 *   name: 'render thread 0',
 *   start: () => new Worker(url),
 *   send: (worker, id, body) => worker.postMessage({ ...body, id }),
 *   read: (m) => ({ id: m.id, outcome: m.ok ? { ok: true, value: m.images } : { ok: false, error: m.error } }),
 *   deadlineMs: 300_000,
 * });
 * const images = await link.request(call, { what: 'render' });
 */
import type { Worker } from 'node:worker_threads';

import { Channel, describeThrown } from './channel.ts';
import type { Outcome } from './channel.ts';

/** What `read` makes of one message from the thread. */
export type ThreadMessage = { id: number; outcome: Outcome } | 'handled' | 'garbage';

export interface ThreadLinkOptions<Body> {
  /** The thread, as errors name it ("env thread 2"). */
  name: string;
  /** Spawns the thread; it may throw (a missing optional dependency): that request fails. */
  start(): Worker;
  /** Writes one request to the thread in its envelope. */
  send(worker: Worker, id: number, body: Body): void;
  read(message: unknown): ThreadMessage;
  /** A request's deadline (ms) unless it names its own; 0: none. Past it the thread counts as hung and is ended. */
  deadlineMs: number;
  /** Called after the thread was lost (not after `close`): the caller drops what lived on it. */
  onLost?(reason: string): void;
}

export class ThreadLink<Body> {
  /** Counts the threads this link lost: what was put on a thread is gone with it. */
  generation = 0;
  private worker: Worker | null = null;
  private channel: Channel<Body> | null = null;
  private closed = false;

  constructor(private readonly opts: ThreadLinkOptions<Body>) {}

  get name(): string {
    return this.opts.name;
  }

  /** Whether a thread is running now. */
  get started(): boolean {
    return this.worker !== null;
  }

  /** Sends `body` and resolves with the thread's answer; rejects with the channel's typed errors, or the reason the thread was lost. */
  request<T = unknown>(body: Body, opts: { what: string; deadlineMs?: number }): Promise<T> {
    let channel: Channel<Body>;
    try {
      channel = this.ensure();
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(describeThrown(err)));
    }
    this.worker!.ref();
    return channel.request<T>(body, opts);
  }

  /** Posts a message that wants no answer (starting the thread if needed); nothing once closed. */
  post(message: unknown, transfer: ArrayBuffer[] = []): void {
    if (this.closed) return;
    this.ensure();
    this.worker!.postMessage(message, transfer);
  }

  /** Ends the thread for good: what waits fails with `reason`, later requests too. */
  async close(reason: string): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = null;
    this.channel?.fail(reason);
    this.channel = null;
    if (worker) await worker.terminate();
  }

  private ensure(): Channel<Body> {
    if (this.closed) throw new Error(`${this.opts.name} is closed`);
    if (this.worker && this.channel) return this.channel;
    const worker = this.opts.start();
    worker.unref();
    const channel = new Channel<Body>({
      name: this.opts.name,
      send: (id, body) => this.opts.send(worker, id, body),
      limits: { deadlineMs: this.opts.deadlineMs },
      // A call that never returns holds the thread and everything on it: end it; later calls get a fresh thread.
      onDeadline: ({ what, ageMs }) => this.lose(worker, `a ${what} call got no answer within its deadline (${ageMs} ms)`),
    });
    worker.on('message', (message: unknown) => {
      let read: ThreadMessage;
      try {
        read = this.opts.read(message);
      } catch {
        read = 'garbage';
      }
      if (read === 'handled') return;
      if (read === 'garbage') return channel.noteGarbage();
      channel.settle(read.id, read.outcome);
      if (channel.pending === 0) worker.unref();
    });
    worker.on('error', (err) => this.lose(worker, describeThrown(err)));
    worker.on('exit', (code) => this.lose(worker, `${this.opts.name} exited with code ${code}`));
    this.worker = worker;
    this.channel = channel;
    return channel;
  }

  private lose(worker: Worker, reason: string): void {
    if (this.worker !== worker) return;
    this.worker = null;
    this.generation++;
    this.channel?.fail(reason);
    this.channel = null;
    void worker.terminate();
    this.opts.onLost?.(reason);
  }
}
