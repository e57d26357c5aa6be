/**
 * A Python env seen through the server's Env contract: every method is a call to the worker that
 * holds it, so sessions of hosted envs get every server feature unchanged (limits, resume, metrics,
 * step_batch, autoreset, MCP tools, the viewer).
 *
 * Failures keep to the session (errors.ts): a Python exception answers that request with
 * ENV_ERR_ENV_FAILURE and the traceback's last line; a call past `--worker-timeout` fails with
 * `details.timed_out` and loses its session alone (worker.ts); a lost worker answers every later
 * request of its sessions with ENV_ERR_ENV_FAILURE saying the session is gone.
 *
 * @example
 * const env = await makeHostedEnv(pool, { kind: 'gym', id: 'CartPole-v1' }, {}, 'gym/CartPole-v1');
 * const { obs } = await env.reset({ seed: 0 });
 */
import { z } from 'zod';

import type { Env, EnvMetadata, EnvTool, Info, RenderFrame, ResetOptions, ResetResult, StepResult } from '../core/env.ts';
import { ProtocolError } from '../../protocol/errors.ts';
import type { Space } from '../../protocol/spaces.ts';
import { SpaceSchema } from '../../protocol/spaces.ts';
import type { WorkerPool } from './pool.ts';
import type { PythonWorker } from './worker.ts';

/** What a worker builds: a Gymnasium id (optionally `module:Id`) or a `module:callable`. */
export type HostedTarget = { kind: 'gym'; id: string } | { kind: 'callable'; path: string };

/** The worker's answer to make (client/python/src/gymwire/worker/host.py `Host.make`). */
interface MadeEnv {
  observation_space: unknown;
  action_space: unknown;
  metadata: Record<string, unknown>;
  render_mode: string | null;
  tools: { name: string; description: string; parameters: Record<string, unknown> }[];
  state: boolean;
}

// Steps and resets come back as arrays (cheaper to pack and unpack than maps).
const toStepResult = (v: unknown): StepResult => {
  const [obs, reward, terminated, truncated, info] = v as [unknown, number, boolean, boolean, Info];
  return { obs, reward, terminated, truncated, info };
};
const toResetResult = (v: unknown): ResetResult => {
  const [obs, info] = v as [unknown, Info];
  return { obs, info };
};

function parseSpace(desc: unknown, which: string, what: string): Space {
  const parsed = SpaceSchema.safeParse(desc);
  if (!parsed.success)
    throw new ProtocolError(
      'ENV_ERR_ENV_FAILURE',
      `the Python env ${what} has an ${which} the wire cannot describe: ${parsed.error.issues[0]?.message ?? 'invalid'}`,
    );
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
  /** The worker's channel has the per-call deadline (--worker-timeout). */
  readonly boundsOwnCalls = true;
  private closed = false;

  constructor(
    private readonly pool: WorkerPool,
    readonly worker: PythonWorker,
    readonly handle: number,
    /** The env id, for error messages. */
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
      handler: (args: unknown) => this.worker.call({ op: 'tool', handle, name: t.name, args }, what),
    })) as unknown as EnvTool<never>[];
    if (made.state) {
      this.getState = () => this.worker.call<Uint8Array>({ op: 'get_state', handle }, what);
      this.setState = (state) => this.worker.call({ op: 'set_state', handle, state }, what, () => undefined);
    }
  }

  reset(opts: ResetOptions = {}): Promise<ResetResult> {
    // msgpack carries a JS number past 2^32 as a float, which Gymnasium refuses as a seed: such seeds travel as 64-bit integers.
    const seed = opts.seed == null ? null : opts.seed > 0xffffffff ? BigInt(opts.seed) : opts.seed;
    return this.worker.call({ op: 'reset', handle: this.handle, seed, options: opts.options ?? null }, this.what, toResetResult);
  }

  step(action: unknown): Promise<StepResult> {
    return this.worker.call({ op: 'step', handle: this.handle, action }, this.what, toStepResult);
  }

  render(): Promise<RenderFrame | null> {
    // Made without a render mode, a Gymnasium env has no frame to give (MuJoCo's raises): the server answers ENV_ERR_UNSUPPORTED.
    if (this.renderMode === null) return Promise.resolve(null);
    return this.worker.call<RenderFrame | null>({ op: 'render', handle: this.handle }, this.what);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.pool.release(this.worker);
    await this.worker.closeHandle(this.handle, this.what);
  }
}

/**
 * Builds a target on a worker the pool picks, and returns its proxy. With `check` (gymwire serve
 * --check) the worker checks every observation against the space as the env returned it, before
 * it converts it for the wire (a float64 array for a float32 Box is reported, not cast).
 */
export async function makeHostedEnv(pool: WorkerPool, target: HostedTarget, kwargs: Record<string, unknown>, what: string, check = false): Promise<HostedEnv> {
  const worker = pool.place();
  const handle = worker.newHandle();
  let made: MadeEnv;
  try {
    made = await worker.call<MadeEnv>({ op: 'make', handle, target, kwargs, ...(check ? { check: true } : {}) }, what);
  } catch (err) {
    pool.release(worker);
    void worker.closeHandle(handle, what);
    throw err;
  }
  try {
    return new HostedEnv(pool, worker, handle, what, made);
  } catch (err) {
    pool.release(worker);
    void worker.closeHandle(handle, what);
    throw err;
  }
}
