/**
 * Envs run on worker threads: for sync envs whose calls cost the event loop tens of milliseconds
 * to seconds (NAVSIM's scene loading, PDM scoring and camera rendering), so one client's make,
 * reset or step cannot stall another client's requests. A pool of threads hosts many envs each;
 * a {@link ThreadedEnv} on the calling thread stands in for each, with the spaces, metadata and
 * tool schemas of a cheap `shell` instance of the same env (built with the same kwargs but none
 * of the heavy state) and every call forwarded to the thread. Observations come back without a
 * copy on the calling thread (see thread-values.ts).
 *
 * The pool belongs to whoever registers the envs that use it (the registry closes it); threads
 * start with their first env and are unreferenced while idle, so they never keep a process alive.
 *
 * @example
 * const pool = new EnvThreadPool(new URL('../navsim/thread.ts', import.meta.url), import.meta.url);
 * const env = await pool.make(new NavsimEnv(2, kwargs, undefined, { shell: true }), { version: 2, kwargs });
 * const { obs } = await env.reset({ seed: 0 }); // computed on the thread
 */
import { availableParallelism } from 'node:os';

import type { Logger } from 'pino';

import type { Env, EnvMetadata, EnvTool, RenderFrame, ResetOptions, ResetResult, StepResult } from './env.ts';
import { ProtocolError } from '../../protocol/errors.ts';
import type { Space } from '../../protocol/spaces.ts';
import { ThreadLink } from '../../runtime/thread-link.ts';
import { startModuleWorker } from './threads.ts';
import { packValue, unpackError, unpackValue } from './thread-values.ts';
import type { PackedError } from './thread-values.ts';

/** @internal A call to an env thread. */
export interface EnvThreadRequest {
  id: number;
  envId: number;
  method: 'make' | 'reset' | 'step' | 'render' | 'getState' | 'setState' | 'tool' | 'close';
  args: unknown[];
}

/** @internal An env thread's answer, or a line an env logs on its thread (logged here, by the env's logger). */
export type EnvThreadResponse =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: PackedError }
  | { log: { envId: number; level: 'warn' | 'error'; fields: Record<string, unknown>; message: string } };

export interface EnvThreadPoolOptions {
  /** Env threads (default: one per core but one, between 1 and 4). */
  threads?: number;
  /** The threads' niceness (default: thread-priority.ts's, `GYMWIRE_THREAD_NICE` or 10). */
  nice?: number;
  /** How long one env call may take (ms; default 5 min) before its thread is ended and its envs' sessions are lost. */
  callTimeoutMs?: number;
}

/** How long one call on an env thread may take by default (ms) before the thread counts as hung. */
export const DEFAULT_THREAD_CALL_TIMEOUT_MS = 300_000;
/** How much longer `make` may take: a thread's first call also loads its modules. */
const MAKE_GRACE_MS = 60_000;

class EnvThread {
  envs = 0;
  /** The thread, its calls and their answers (runtime/thread-link.ts); an env lives on the thread it was made on, and is gone with it. */
  private readonly link: ThreadLink<Omit<EnvThreadRequest, 'id'>>;
  /** The logger of each env that has one, for what it logs on the thread. */
  readonly loggers = new Map<number, Logger>();

  constructor(
    entry: URL,
    callerUrl: string,
    nice: number | undefined,
    private readonly callTimeoutMs: number,
    readonly index: number,
  ) {
    this.link = new ThreadLink({
      name: `env thread ${index}`,
      start: () => startModuleWorker(entry, callerUrl, nice),
      send: (worker, id, body) => worker.postMessage({ id, ...body } satisfies EnvThreadRequest),
      read: (message) => {
        const res = message as EnvThreadResponse;
        if (typeof res !== 'object' || res === null) return 'garbage';
        if ('log' in res) {
          this.loggers.get(res.log.envId)?.[res.log.level](res.log.fields, res.log.message);
          return 'handled';
        }
        if (typeof res.id !== 'number') return 'garbage';
        try {
          return { id: res.id, outcome: res.ok === true ? { ok: true, value: unpackValue(res.value) } : { ok: false, error: unpackError(res.error) } };
        } catch (err) {
          return { id: res.id, outcome: { ok: false, error: err } };
        }
      },
      deadlineMs: callTimeoutMs,
    });
  }

  /** Counts the threads lost: an env made in an earlier generation is gone. */
  get generation(): number {
    return this.link.generation;
  }

  call(envId: number, method: EnvThreadRequest['method'], args: unknown[], generation = this.generation): Promise<unknown> {
    if (generation !== this.generation) return Promise.reject(lostEnvError(`env thread ${this.index} was restarted after a call on it failed or hung`));
    const deadlineMs = method === 'make' ? this.callTimeoutMs + MAKE_GRACE_MS : this.callTimeoutMs;
    return this.link.request({ envId, method, args: args.map((a) => packValue(a)) }, { what: method, deadlineMs });
  }

  close(): Promise<void> {
    return this.link.close('the env thread pool is closed');
  }
}

function lostEnvError(reason: string): ProtocolError {
  return new ProtocolError('ENV_ERR_ENV_FAILURE', `${reason}; this session is lost: close it and make a new one`, { session_lost: true });
}

export class EnvThreadPool {
  private readonly threads: EnvThread[];
  private nextEnvId = 1;
  private closed = false;

  /** `entry`: the family's thread module (it calls serveEnvThread), as a `.ts` URL next to `callerUrl`. */
  constructor(entry: URL, callerUrl: string, opts: EnvThreadPoolOptions = {}) {
    const n = opts.threads ?? Math.max(1, Math.min(4, availableParallelism() - 1));
    const timeout = opts.callTimeoutMs ?? DEFAULT_THREAD_CALL_TIMEOUT_MS;
    this.threads = Array.from({ length: n }, (_, i) => new EnvThread(entry, callerUrl, opts.nice, timeout, i));
  }

  /**
   * Builds an env on the least loaded thread from `args` (structured-cloneable: the family's
   * thread entry reads them) and returns its stand-in, described by `shell`.
   */
  async make(shell: Env, args: unknown, log?: Logger): Promise<ThreadedEnv> {
    if (this.closed) throw new Error('the env thread pool is closed');
    const thread = this.threads.reduce((a, b) => (b.envs < a.envs ? b : a));
    const envId = this.nextEnvId++;
    thread.envs++;
    if (log) thread.loggers.set(envId, log);
    let generation: number;
    try {
      const made = thread.call(envId, 'make', [args]);
      generation = thread.generation;
      await made;
    } catch (err) {
      thread.envs--;
      thread.loggers.delete(envId);
      throw err;
    }
    return new ThreadedEnv(shell, thread, envId, generation);
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.threads.map((t) => t.close()));
  }
}

/** An env that runs on an env thread; see {@link EnvThreadPool}. */
export class ThreadedEnv implements Env {
  readonly observationSpace: Space;
  readonly actionSpace: Space;
  readonly metadata: EnvMetadata;
  readonly renderMode: string | null;
  readonly tools: readonly EnvTool<never>[];
  readonly maxEpisodeSteps: number | null;
  /** The thread's channel has the call deadline. */
  readonly boundsOwnCalls = true;
  private closed = false;

  /** @internal Made by EnvThreadPool.make. */
  constructor(
    shell: Env,
    private readonly thread: EnvThread,
    private readonly envId: number,
    private readonly generation: number,
  ) {
    this.observationSpace = shell.observationSpace;
    this.actionSpace = shell.actionSpace;
    this.metadata = shell.metadata;
    this.renderMode = shell.renderMode ?? null;
    this.maxEpisodeSteps = shell.maxEpisodeSteps ?? null;
    // Same names, descriptions and schemas (arguments are validated here); the work runs on the thread.
    this.tools = (shell.tools ?? []).map((t) => ({
      ...t,
      handler: (args: never) => this.thread.call(this.envId, 'tool', [t.name, args], this.generation) as never,
    }));
  }

  reset(opts?: ResetOptions): Promise<ResetResult> {
    return this.thread.call(this.envId, 'reset', [opts ?? {}], this.generation) as Promise<ResetResult>;
  }

  step(action: unknown): Promise<StepResult> {
    return this.thread.call(this.envId, 'step', [action], this.generation) as Promise<StepResult>;
  }

  render(): Promise<RenderFrame | null> {
    return this.thread.call(this.envId, 'render', [], this.generation) as Promise<RenderFrame | null>;
  }

  getState(): Promise<Uint8Array> {
    return this.thread.call(this.envId, 'getState', [], this.generation) as Promise<Uint8Array>;
  }

  setState(state: Uint8Array): Promise<void> {
    return this.thread.call(this.envId, 'setState', [state], this.generation) as Promise<void>;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.thread.envs--;
    try {
      // An env whose thread was restarted is gone already.
      if (this.generation === this.thread.generation) await this.thread.call(this.envId, 'close', [], this.generation);
    } finally {
      this.thread.loggers.delete(this.envId);
    }
  }
}
