/**
 * Gymnasium-shaped handles on remote sessions. {@link RemoteEnv} is one session (async
 * reset/step/render/tools/state); {@link RemoteVectorEnv} steps N sessions in one frame with a
 * Gymnasium 1.x autoreset mode and returns infos as dicts of arrays with `_key` masks.
 *
 * @example
 * const vec = await client.makeVec('gymwire/CartPole-v1', 8, { autoresetMode: 'next_step' });
 * const { obs } = await vec.reset({ seed: 0 });
 * const { rewards, terminations } = await vec.step(Tensor.from('int64', [8], [0, 1, 0, 1, 0, 1, 0, 1]));
 */
import { batchRow } from '../../protocol/batch.ts';
import type { AutoresetMode, MakeResult, ResultOf, ToolDescription } from '../../protocol/messages.ts';
import { Random } from '../../runtime/random.ts';
import { sample } from '../../runtime/space-sample.ts';
import type { Space } from '../../protocol/spaces.ts';
import { Tensor } from '../../protocol/tensor.ts';
import type { GymwireClient } from './client.ts';
import { SdkError } from './errors.ts';

export interface StepOutput<Obs = unknown> {
  obs: Obs;
  reward: number;
  terminated: boolean;
  truncated: boolean;
  info: Record<string, unknown>;
}

export class RemoteEnv<Obs = unknown, Act = unknown> {
  readonly sessionId: string;
  readonly envId: string;
  readonly observationSpace: Space;
  readonly actionSpace: Space;
  readonly metadata: Record<string, unknown>;
  readonly renderMode: string | null;
  readonly maxEpisodeSteps: number | null;
  readonly tools: ToolDescription[];
  private closedReason: string | null = null;
  private readonly sampler = new Random();

  constructor(
    private readonly client: GymwireClient,
    made: MakeResult,
  ) {
    this.sessionId = made.session_id;
    this.envId = made.env_id;
    this.observationSpace = made.observation_space;
    this.actionSpace = made.action_space;
    this.metadata = made.metadata;
    this.renderMode = made.render_mode;
    this.maxEpisodeSteps = made.max_episode_steps;
    this.tools = made.tools;
  }

  get closed(): boolean {
    return this.closedReason !== null;
  }

  async reset(opts: { seed?: number | null; options?: Record<string, unknown> } = {}): Promise<{ obs: Obs; info: Record<string, unknown> }> {
    if (opts.seed != null) this.sampler.seed(opts.seed);
    const r = await this.client.request('reset', { session_id: this.sessionId, seed: opts.seed ?? null, options: opts.options ?? null });
    return r as { obs: Obs; info: Record<string, unknown> };
  }

  // Not async: the request's own promise is returned as is (one promise less per step).
  step(action: Act): Promise<StepOutput<Obs>> {
    return this.client.request('step', { session_id: this.sessionId, action }) as Promise<StepOutput<Obs>>;
  }

  /** A frame as a uint8 tensor, or encoded PNG/JPEG bytes. */
  async render(format: 'tensor' | 'png' | 'jpeg' = 'tensor', quality?: number): Promise<Tensor | Uint8Array | string> {
    const r = await this.client.request('render', { session_id: this.sessionId, format, ...(quality ? { quality } : {}) });
    return r.frame;
  }

  async listTools(): Promise<ToolDescription[]> {
    return (await this.client.request('list_tools', { session_id: this.sessionId })).tools;
  }

  /** Calls one of the env's tools; arguments are validated against its schema on the server. */
  async callTool(name: string, args: Record<string, unknown> = {}): Promise<unknown> {
    return (await this.client.request('execute', { session_id: this.sessionId, tool: name, args })).result;
  }

  async getState(): Promise<Uint8Array> {
    return (await this.client.request('get_state', { session_id: this.sessionId })).state;
  }

  async setState(state: Uint8Array): Promise<void> {
    await this.client.request('set_state', { session_id: this.sessionId, state });
  }

  /** Closes the session; closing twice is fine. */
  async close(): Promise<void> {
    if (this.closedReason !== null) return;
    this.closedReason = 'closed';
    this.client.forget(this.sessionId);
    if (this.client.isOpen) await this.client.request('close', { session_id: this.sessionId });
  }

  /** A random action from the action space (seeded alongside reset's seed). */
  sampleAction(): Act {
    return sample(this.actionSpace, this.sampler) as Act;
  }

  /** @internal the server closed this session (reaped, or lost after a reconnect). */
  markClosed(reason: string): void {
    this.closedReason = reason;
    this.client.forget(this.sessionId);
  }
}

export interface VectorStepOutput {
  /** Stacked over sessions: one Tensor, a Dict observation's map of per-key batches, or else an array (see {@link RemoteVectorEnv.row}). */
  obs: unknown;
  rewards: Float64Array;
  terminations: boolean[];
  truncations: boolean[];
  infos: Record<string, unknown[]>;
}

/** N sessions of one env stepped together: one frame per step, whatever N is. */
export class RemoteVectorEnv {
  readonly numEnvs: number;
  readonly sessionIds: string[];

  constructor(
    private readonly client: GymwireClient,
    readonly envs: RemoteEnv[],
    readonly autoresetMode: AutoresetMode,
  ) {
    if (envs.length === 0) throw new SdkError('BAD_RESPONSE', 'a vector env needs at least one session');
    this.numEnvs = envs.length;
    this.sessionIds = envs.map((e) => e.sessionId);
  }

  get singleObservationSpace(): Space {
    return this.envs[0]!.observationSpace;
  }

  get singleActionSpace(): Space {
    return this.envs[0]!.actionSpace;
  }

  get metadata(): Record<string, unknown> {
    return { ...this.envs[0]!.metadata, autoreset_mode: this.autoresetMode };
  }

  /**
   * Resets every session (or those in `mask`, for the disabled autoreset mode). An integer seed
   * seeds session i with seed + i, as Gymnasium's vector envs do.
   */
  async reset(
    opts: { seed?: number | (number | null)[] | null; options?: Record<string, unknown>; mask?: boolean[] } = {},
  ): Promise<{ obs: unknown; infos: Record<string, unknown[]> }> {
    const indices = opts.mask ? this.sessionIds.map((_, i) => i).filter((i) => opts.mask![i]) : this.sessionIds.map((_, i) => i);
    const allSeeds = typeof opts.seed === 'number' ? this.sessionIds.map((_, i) => (opts.seed as number) + i) : (opts.seed ?? null);
    const seeds = allSeeds ? indices.map((i) => allSeeds[i] ?? null) : null;
    if (indices.length === 0) return { obs: [], infos: {} };
    const r = await this.client.request('reset_batch', { session_ids: indices.map((i) => this.sessionIds[i]!), seeds, options: opts.options ?? null });
    return { obs: r.obs, infos: mergeInfos(r.infos) };
  }

  /**
   * Session `i`'s observation from a batched one (any of the forms `reset` and `step` return):
   * tensor rows are views, a Discrete row is the integer.
   *
   * @example
   * const { obs } = await vec.reset({ seed: 0 });
   * const first = vec.row(obs, 0); // {image: Tensor uint8 [H, W, 3], state: Tensor float32 [9]} for a Dict env
   */
  row(obs: unknown, i: number): unknown {
    return batchRow(obs, i, this.singleObservationSpace);
  }

  /** Steps every session with its action: a tensor stacked over sessions, or an array of actions. */
  async step(actions: Tensor | unknown[]): Promise<VectorStepOutput> {
    const r: ResultOf<'step_batch'> = await this.client.request('step_batch', { session_ids: this.sessionIds, actions, autoreset_mode: this.autoresetMode });
    const failed = r.errors.map((e, i) => (e ? `${this.sessionIds[i]}: ${e.code}: ${e.message}` : null)).filter((e) => e !== null);
    if (failed.length) throw new SdkError('BAD_RESPONSE', `step_batch: ${failed.length} session(s) failed: ${failed.join('; ')}`, { result: r });
    return {
      obs: r.obs,
      rewards: r.rewards.data as Float64Array,
      terminations: Array.from(r.terminated.data as Uint8Array, (v) => v === 1),
      truncations: Array.from(r.truncated.data as Uint8Array, (v) => v === 1),
      infos: mergeInfos(r.infos),
    };
  }

  async close(): Promise<void> {
    await Promise.all(this.envs.map((e) => e.close()));
  }
}

/** Gymnasium vector infos: `{key: values[N], _key: present[N]}`. */
export function mergeInfos(infos: Record<string, unknown>[]): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {};
  infos.forEach((info, i) => {
    for (const [key, value] of Object.entries(info)) {
      if (!out[key]) {
        out[key] = new Array(infos.length).fill(null);
        out[`_${key}`] = new Array(infos.length).fill(false);
      }
      out[key]![i] = value;
      out[`_${key}`]![i] = true;
    }
  });
  return out;
}

export { Tensor };
