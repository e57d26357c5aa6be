/**
 * `gymwire/EvacWorldModel-v0`: RLinf's EvacEnv as a Gymnasium env over any model directory that
 * follows the world-model contract (contract.ts, docs/world-models.md).
 *
 * reset picks an episode of the reset dataset (`options.episode_index`, or one drawn from the seeded
 * RNG), repeats its first frame as the context memory and reports the end-effector pose duplicated
 * for two arms (state [16]). step takes one action chunk [chunk, 7]; the world model generates the
 * chunk's frames and the reward model scores each one. As in RLinf: a frame's raw reward is its
 * rounded success probability (prob > threshold); with relative reward the per-frame reward is
 * coef x R_t - coef x R_(t-1), carrying R across chunks and starting from 0 at reset (without it the
 * raw 0/1 rewards, unscaled, as RLinf returns them); any success in the chunk terminates on the
 * chunk's last frame; elapsed steps count frames and truncate at `max_episode_steps`. The scalar
 * reward is the chunk's sum; `info` carries the per-frame `rewards`, `terminations` and `truncations`
 * [chunk] so RLinf's chunk_step tensors can be rebuilt.
 */
import { box, dict, text } from '../../protocol/spaces.ts';
import { Random } from '../../protocol/random.ts';
import { Tensor } from '../../protocol/tensor.ts';
import type { Env, EnvMetadata, Info, ResetOptions, ResetResult, StepResult } from '../core/env.ts';
import { InvalidActionError, InvalidOptionsError, InvalidStateError } from '../core/env.ts';
import { packState, unpackState } from '../core/state.ts';
import { contextIndices } from './contract.ts';
import type { ResetEpisode } from './dataset.ts';
import type { LoadedWorldModel } from './runtime.ts';

export interface EvacEnvOptions {
  render_mode?: 'rgb_array' | null;
  /** Put every generated frame of the chunk in info.frames (uint8 [chunk,H,W,3]). */
  return_all_frames?: boolean;
  use_rel_reward?: boolean;
  reward_coef?: number;
  /** In frames, as RLinf counts; defaults to the manifest's. */
  max_episode_steps?: number;
}

export interface EvacObs {
  full_image: Tensor<'uint8'>;
  state: Tensor<'float32'>;
  task_description: string;
}

const STATE_FORMAT = 'EvacWorldModel-v0';
const MAX_TASK_LENGTH = 1024;
/** Printable ASCII: what task descriptions are written in. */
const PRINTABLE = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)).join('');

interface EvacState {
  model: string;
  history: Uint8Array[];
  pose: number[];
  prevScaled: number;
  elapsed: number;
  episode: number;
  task: string;
  rng: number[];
}

export class EvacWorldModelEnv implements Env<EvacObs, unknown> {
  readonly observationSpace;
  readonly actionSpace;
  readonly metadata: EnvMetadata;
  readonly renderMode: 'rgb_array' | null;

  private readonly rng = new Random();
  private readonly H: number;
  private readonly W: number;
  private readonly chunk: number;
  private readonly useRel: boolean;
  private readonly coef: number;
  private readonly maxSteps: number;
  private readonly returnAll: boolean;
  private state: EvacState | null = null;
  /** History frames this env allocated (never the dataset's shared first frames), and free ones. */
  private readonly owned = new WeakSet<Uint8Array>();
  private spare: Uint8Array[] = [];

  constructor(
    private readonly model: LoadedWorldModel,
    private readonly episodes: readonly ResetEpisode[],
    opts: EvacEnvOptions = {},
  ) {
    const m = model.manifest;
    this.H = m.height;
    this.W = m.width;
    this.chunk = m.chunk;
    this.useRel = opts.use_rel_reward ?? m.reward.relative;
    this.coef = opts.reward_coef ?? m.reward.coefficient;
    this.maxSteps = opts.max_episode_steps ?? m.maxEpisodeSteps;
    this.returnAll = opts.return_all_frames ?? false;
    this.renderMode = opts.render_mode ?? null;
    this.observationSpace = dict({
      full_image: box({ low: 0, high: 255, shape: [this.H, this.W, 3], dtype: 'uint8' }),
      state: box({ low: -Infinity, high: Infinity, shape: [16], dtype: 'float32' }),
      task_description: text(MAX_TASK_LENGTH, { minLength: 0, charset: PRINTABLE }),
    });
    const low: number[] = [];
    const high: number[] = [];
    for (let t = 0; t < this.chunk; t++) {
      low.push(...m.action.low);
      high.push(...m.action.high);
    }
    this.actionSpace = box({ low, high, shape: [this.chunk, m.action.dim], dtype: 'float32' });
    this.metadata = {
      render_modes: ['rgb_array'],
      render_fps: 10,
      model: m.name,
      provider: model.provider,
      chunk: this.chunk,
      context_frames: m.context.frames,
      context_selection: m.context.selection,
      num_episodes: episodes.length,
      max_episode_steps_frames: this.maxSteps,
    };
  }

  async reset(opts: ResetOptions = {}): Promise<ResetResult<EvacObs>> {
    if (opts.seed != null) this.rng.seed(opts.seed);
    const options = opts.options ?? {};
    for (const key of Object.keys(options)) {
      if (key !== 'episode_index') throw new InvalidOptionsError(`unknown reset option ${JSON.stringify(key)}; EvacWorldModel-v0 takes {episode_index}`);
    }
    let episode: number;
    const requested = options.episode_index;
    if (requested === undefined || requested === null) episode = this.rng.integer(0, this.episodes.length);
    else {
      const n = typeof requested === 'bigint' ? Number(requested) : requested;
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n >= this.episodes.length) {
        throw new InvalidOptionsError(`episode_index must be an integer in [0, ${this.episodes.length - 1}], got ${String(requested)}`);
      }
      episode = n;
    }
    const ep = this.episodes[episode]!;
    const T = this.model.manifest.context.frames;
    this.state = {
      model: this.model.manifest.name,
      history: Array.from({ length: T }, () => ep.frame),
      pose: [...ep.initPose],
      prevScaled: 0,
      elapsed: 0,
      episode,
      task: ep.task,
      rng: [],
    };
    return { obs: this.observe(), info: { episode_index: episode } };
  }

  async step(action: unknown): Promise<StepResult<EvacObs>> {
    const st = this.state;
    if (!st) throw new InvalidActionError('call reset before step');
    const m = this.model.manifest;
    const values = this.parseAction(action);
    const A = m.action.dim;
    const actions = new Float32Array(values.length);
    for (let i = 0; i < values.length; i++) {
      const d = i % A;
      actions[i] = (values[i]! - (m.action.mean?.[d] ?? 0)) / (m.action.std?.[d] ?? 1);
    }
    let noise: Float32Array | null = null;
    if (this.model.inputs.noise) {
      noise = new Float32Array(this.model.inputs.noise.reduce((a, b) => a * b, 1));
      for (let i = 0; i < noise.length; i++) noise[i] = this.rng.normal();
    }
    const idx = contextIndices(m.context.selection, m.context.frames, st.history.length);
    const frameLen = this.H * this.W * 3;
    const context = idx.map((h) => st.history[h]!);

    const res = await this.model.step({ context, actions, pose: Float32Array.from(st.pose), noise });

    // History keeps its own copies of the frames it needs (the batch's buffer is recycled once every
    // session has released it); frames that leave the history become the next step's copies.
    const C = this.chunk;
    const n = st.history.length;
    const keep = m.context.selection === 'last' ? Math.min(n + C, m.context.frames) : n + C;
    const next: Uint8Array[] = [];
    for (let j = n + C - keep; j < n + C; j++) next.push(j < n ? st.history[j]! : this.ownedCopy(res.frames.subarray((j - n) * frameLen, (j - n + 1) * frameLen)));
    for (const f of st.history) if (this.owned.has(f) && !next.includes(f)) this.spare.push(f);
    st.history = next;
    const lastFrame = res.frames.slice((C - 1) * frameLen, C * frameLen);
    const allFrames = this.returnAll ? res.frames.slice() : null;
    if (res.poses) st.pose = Array.from(res.poses.subarray((C - 1) * 8, C * 8));

    const raw = Array.from(res.probs, (p) => (p > m.reward.threshold ? 1 : 0));
    const rewards = new Float32Array(C);
    for (let t = 0; t < C; t++) {
      const scaled = this.coef * raw[t]!;
      const prev = t === 0 ? st.prevScaled : this.coef * raw[t - 1]!;
      rewards[t] = this.useRel ? scaled - prev : raw[t]!;
    }
    st.prevScaled = this.coef * raw[C - 1]!;
    st.elapsed += C;
    const terminated = raw.some((r) => r === 1);
    const truncated = st.elapsed >= this.maxSteps;
    const terminations = new Uint8Array(C);
    const truncations = new Uint8Array(C);
    terminations[C - 1] = terminated ? 1 : 0;
    truncations[C - 1] = truncated ? 1 : 0;
    const info: Info = {
      rewards: new Tensor('float32', [C], rewards),
      terminations: new Tensor('bool', [C], terminations),
      truncations: new Tensor('bool', [C], truncations),
      success_prob: new Tensor('float32', [C], Float32Array.from(res.probs)),
      raw_rewards: new Tensor('float32', [C], Float32Array.from(raw)),
      elapsed_steps: st.elapsed,
      success: terminated,
      episode_index: st.episode,
    };
    if (allFrames) info.frames = new Tensor('uint8', [C, this.H, this.W, 3], allFrames);
    res.release();
    let reward = 0;
    for (const r of rewards) reward += r;
    return { obs: this.observe(lastFrame), reward, terminated, truncated, info };
  }

  /** The last frame, uint8 [H,W,3] (the server encodes it as PNG). */
  render(): Tensor<'uint8'> | null {
    if (this.renderMode !== 'rgb_array' || !this.state) return null;
    return new Tensor('uint8', [this.H, this.W, 3], this.state.history[this.state.history.length - 1]!.slice());
  }

  close(): void {}

  getState(): Uint8Array {
    const st = this.state;
    return packState(STATE_FORMAT, st ? { ...st, rng: this.rng.getState() } : { rng: this.rng.getState() });
  }

  setState(bytes: Uint8Array): void {
    const s = unpackState<Partial<EvacState> & { rng: number[] }>(STATE_FORMAT, bytes);
    this.rng.setState(s.rng);
    if (s.model === undefined) {
      this.state = null;
      return;
    }
    if (s.model !== this.model.manifest.name) {
      throw new InvalidStateError(`state was taken from model ${s.model}; this env runs ${this.model.manifest.name}`);
    }
    this.state = { ...(s as EvacState), history: s.history!.map((f) => Uint8Array.from(f)), pose: [...s.pose!] };
  }

  /** `frame` is the newest frame when the caller already holds a copy of it that nothing else writes. */
  private observe(frame?: Uint8Array): EvacObs {
    const st = this.state!;
    const state = new Float32Array(16);
    state.set(st.pose.slice(0, 8), 0);
    state.set(st.pose.slice(0, 8), 8);
    return {
      full_image: new Tensor('uint8', [this.H, this.W, 3], frame ?? st.history[st.history.length - 1]!.slice()),
      state: new Tensor('float32', [16], state),
      task_description: st.task,
    };
  }

  private ownedCopy(src: Uint8Array): Uint8Array {
    const dst = this.spare.pop() ?? new Uint8Array(src.length);
    dst.set(src);
    this.owned.add(dst);
    return dst;
  }

  /** Accepts a float tensor or nested number arrays of shape [chunk, dim], finite and within bounds. */
  private parseAction(action: unknown): Float64Array {
    const m = this.model.manifest;
    const C = this.chunk;
    const A = m.action.dim;
    const want = `an action chunk float32 [${C}, ${A}] (rows: x, y, z, roll, pitch, yaw, gripper)`;
    let flat: ArrayLike<number>;
    if (action instanceof Tensor) {
      if (action.dtype !== 'float32' && action.dtype !== 'float64') throw new InvalidActionError(`got a ${action.dtype} tensor; expected ${want}`);
      if (action.shape.length !== 2 || action.shape[0] !== C || action.shape[1] !== A) {
        throw new InvalidActionError(`got shape [${action.shape.join(', ')}]; expected ${want}`);
      }
      flat = action.data as Float32Array | Float64Array;
    } else if (Array.isArray(action) && action.length === C && action.every((r) => Array.isArray(r) && r.length === A && r.every((v) => typeof v === 'number'))) {
      flat = (action as number[][]).flat();
    } else {
      throw new InvalidActionError(`expected ${want}`);
    }
    const out = Float64Array.from(flat);
    for (let i = 0; i < out.length; i++) {
      const v = out[i]!;
      const t = Math.floor(i / A);
      const d = i % A;
      if (!Number.isFinite(v)) throw new InvalidActionError(`action[${t}][${d}] is ${v}; actions must be finite`);
      if (v < m.action.low[d]! || v > m.action.high[d]!) {
        throw new InvalidActionError(`action[${t}][${d}] = ${v} is outside [${m.action.low[d]}, ${m.action.high[d]}]`);
      }
    }
    return out;
  }
}
