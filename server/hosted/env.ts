/**
 * A Python env seen through the server's Env contract: every method is a call to the worker that
 * holds it, so sessions of hosted envs get every server feature unchanged (limits, resume, metrics,
 * step_batch, autoreset, MCP tools, the viewer).
 *
 * Failures keep to the session: a Python exception answers that request with ENV_ERR_ENV_FAILURE
 * and the traceback's last line; a lost worker answers every later request of its sessions with
 * ENV_ERR_ENV_FAILURE saying the session is gone.
 *
 * @example
 * const env = await makeHostedEnv(pool, { kind: 'gym', id: 'CartPole-v1' }, {});
 * const { obs } = await env.reset({ seed: 0 });
 */
import { z } from 'zod';

import type { Env, EnvMetadata, EnvTool, RenderFrame, ResetOptions, ResetResult, StepResult } from '../../envs/core/env.ts';
import { InvalidStateError } from '../../envs/core/env.ts';
import { InvalidKwargsError } from '../../envs/core/registry.ts';
import { ProtocolError } from '../../protocol/errors.ts';
import type { Space } from '../../protocol/spaces.ts';
import { SpaceSchema } from '../../protocol/spaces.ts';
import type { WorkerPool } from './pool.ts';
import type { PythonWorker } from './worker.ts';
import { WorkerCallError, WorkerLostError } from './worker.ts';

/** What a worker builds: a Gymnasium id (optionally `module:Id`) or a `module:callable`. */
export type HostedTarget = { kind: 'gym'; id: string } | { kind: 'callable'; path: string };

interface MadeEnv {
  observation_space: unknown;
  action_space: unknown;
  metadata: Record<string, unknown>;
  render_mode: string | null;
  tools: { name: string; description: string; parameters: Record<string, unknown> }[];
  state: boolean;
}

/** Maps a worker's failure to the error the server answers with. */
export function hostedError(err: unknown, what: string): Error {
  if (err instanceof WorkerLostError) {
    return new ProtocolError('ENV_ERR_ENV_FAILURE', `${err.message}; this session is lost: close it and make a new one`, { worker_lost: true });
  }
  if (err instanceof WorkerCallError) {
    const f = err.failure;
    if (f.kind === 'invalid_kwargs') return new InvalidKwargsError(`invalid kwargs for ${what}: ${f.message}`, [{ path: '', message: f.message }]);
    if (f.kind === 'invalid_state') return new InvalidStateError(f.message);
    // A missing optional package (pygame for classic-control frames): the op is unsupported here.
    if (f.kind === 'unsupported') return new ProtocolError('ENV_ERR_UNSUPPORTED', `${err.op} is not available for ${what} on this server: ${f.message}`, { error: f.type });
    return new ProtocolError('ENV_ERR_ENV_FAILURE', `${err.op} failed in the Python env ${what}: ${f.message}`, { error: f.type });
  }
  return err instanceof Error ? err : new Error(String(err));
}

function parseSpace(desc: unknown, which: string, what: string): Space {
  const parsed = SpaceSchema.safeParse(desc);
  if (!parsed.success) throw new ProtocolError('ENV_ERR_ENV_FAILURE', `the Python env ${what} has an ${which} the wire cannot describe: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return parsed.data;
}

/** A tool's JSON Schema as zod, so the server validates arguments before the Python method runs. */
function toolSchema(parameters: Record<string, unknown>): z.ZodType {
  try {
    return z.fromJSONSchema(parameters as never) as z.ZodType;
  } catch {
    // A schema zod cannot rebuild still reaches the method, which validates its own arguments.
    return z.record(z.string(), z.unknown());
  }
}

export class HostedEnv implements Env {
  readonly observationSpace: Space;
  readonly actionSpace: Space;
  readonly metadata: EnvMetadata;
  readonly renderMode: string | null;
  readonly tools: readonly EnvTool<never>[];
  readonly getState?: () => Promise<Uint8Array>;
  readonly setState?: (state: Uint8Array) => Promise<void>;
  private closed = false;

  constructor(
    private readonly pool: WorkerPool,
    readonly worker: PythonWorker,
    readonly handle: number,
    readonly what: string,
    made: MadeEnv,
  ) {
    this.observationSpace = parseSpace(made.observation_space, 'observation space', what);
    this.actionSpace = parseSpace(made.action_space, 'action space', what);
    const renderModes = Array.isArray(made.metadata.render_modes) ? (made.metadata.render_modes as string[]) : [];
    this.metadata = { ...made.metadata, render_modes: renderModes };
    this.renderMode = made.render_mode ?? null;
    this.tools = made.tools.map((t) => ({
      name: t.name,
      description: t.description,
      inputSchema: toolSchema(t.parameters),
      handler: (args: unknown) => this.call({ op: 'tool', name: t.name, args }),
    })) as unknown as EnvTool<never>[];
    if (made.state) {
      this.getState = () => this.call({ op: 'get_state' }) as Promise<Uint8Array>;
      this.setState = async (state) => void (await this.call({ op: 'set_state', state }));
    }
  }

  reset(opts: ResetOptions = {}): Promise<ResetResult> {
    return this.call({ op: 'reset', seed: opts.seed ?? null, options: opts.options ?? null }) as Promise<ResetResult>;
  }

  step(action: unknown): Promise<StepResult> {
    return this.call({ op: 'step', action }) as Promise<StepResult>;
  }

  render(): Promise<RenderFrame | null> {
    return this.call({ op: 'render' }) as Promise<RenderFrame | null>;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.pool.release(this.worker);
    // A lost worker took the env with it: nothing to close.
    if (this.worker.alive) await this.call({ op: 'close' }).catch(() => undefined);
  }

  private call(call: Record<string, unknown> & { op: string }): Promise<unknown> {
    return this.worker.call({ ...call, handle: this.handle }).catch((err: unknown) => {
      throw hostedError(err, this.what);
    });
  }
}

/** Builds a target on a worker the pool picks, and returns its proxy. */
export async function makeHostedEnv(pool: WorkerPool, target: HostedTarget, kwargs: Record<string, unknown>, what: string): Promise<HostedEnv> {
  const worker = pool.place();
  const handle = worker.newHandle();
  let made: MadeEnv;
  try {
    made = (await worker.call({ op: 'make', handle, target, kwargs })) as MadeEnv;
  } catch (err) {
    pool.release(worker);
    throw hostedError(err, what);
  }
  try {
    return new HostedEnv(pool, worker, handle, what, made);
  } catch (err) {
    pool.release(worker);
    void worker.call({ op: 'close', handle }).catch(() => undefined);
    throw err;
  }
}
