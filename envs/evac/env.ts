/**
 * `gymwire/EvacWorldModel-v0`: RLinf's EvacEnv as a Gymnasium env over any model directory that
 * follows the world-model contract (contract.ts, docs/world-models.md).
 *
 * reset picks an episode of the reset dataset (`options.episode_index`, or one drawn from the seeded
 * RNG), repeats its first frame as the context memory and reports the end-effector pose duplicated
 * for two arms (state [16]). `options.frame` (uint8 [H,W,3]) starts from a frame of the caller's
 * instead, e.g. a simulator's, with `options.pose` and `options.task` replacing the episode's. step takes one action chunk [chunk, 7]; the world model generates the
 * chunk's frames and the reward model scores each one. As in RLinf: a frame's raw reward is its
 * rounded success probability (prob > threshold); with relative reward the per-frame reward is
 * coef x R_t - coef x R_(t-1), carrying R across chunks and starting from 0 at reset (without it the
 * raw 0/1 rewards, unscaled, as RLinf returns them); any success in the chunk terminates on the
 * chunk's last frame; elapsed steps count frames and truncate at `max_episode_steps`. The scalar
 * reward is the chunk's sum; `info` carries the per-frame `rewards`, `terminations` and `truncations`
 * [chunk] so RLinf's chunk_step tensors can be rebuilt.
 */
import { box, dict, text } from '../../protocol/spaces.ts';
import { Random } from '../../runtime/random.ts';
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
  /** Sparse context memory: `gymwire` (evenly spread, first and latest) or `rlinf` (EvacEnv's indices). */
  context_indexing?: 'gymwire' | 'rlinf';
  /** RLinf's `ignore_terminations`: a success does not end the episode; it runs to max_episode_steps. */
  ignore_terminations?: boolean;
  /** Actions outside the action space: `refuse` (an invalid-action error), `clip` to the bounds, or `pass` them on as RLinf does. */
  out_of_range_actions?: 'refuse' | 'clip' | 'pass';
}

/** Picks the episode of a reset that names none (the env's seeded RNG unless a shared draw is given). */
export interface EpisodeDraw {
  /** `seed`: the reset's seed, if any; `rng`: the env's own seeded RNG. */
  next(seed: number | undefined, rng: Random): number;
  /** The env is closed: it draws no more. */
  release?(): void;
}

/** A model output that is NaN or infinite: the env fails rather than hand the value on. */
export class WorldModelOutputError extends Error {
  override readonly name = 'WorldModelOutputError';
}

export interface EvacObs {
  full_image: Tensor<'uint8'>;
  state: Tensor<'float32'>;
  task_description: string;
}

const STATE_FORMAT = 'EvacWorldModel-v0';
const RESET_OPTIONS = ['episode_index', 'frame', 'pose', 'task'];
const MAX_TASK_LENGTH = 1024;
/** Printable ASCII: what task descriptions are written in. */
const PRINTABLE = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)).join('');

interface EvacState {
  model: string;
  history: Uint8Array[];
  /** The pose at each history frame, 8 values per frame (the pose history). */
  poseHistory: number[];
  /** The world model's latent state for the next chunk, when it has one. */
  latent: number[] | null;
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
  /** Steps until truncation: each step generates one chunk of frames, and episodes last `max_episode_steps` frames. */
  get maxEpisodeSteps(): number {
    return Math.ceil(this.maxSteps / this.chunk);
  }

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
  /** The last batch's frames that the history holds as views, and the release of their buffer. */
  private held: { views: Uint8Array[]; release(): void } | null = null;
  private readonly actionMean: readonly number[];
  private readonly actionStd: readonly number[];
  private readonly noiseSize: number;
  private readonly latentSize: number;
  private readonly indexing: 'gymwire' | 'rlinf';
  private readonly ignoreTerminations: boolean;
  private readonly outOfRange: 'refuse' | 'clip' | 'pass';

  constructor(
    private readonly model: LoadedWorldModel,
    private readonly episodes: readonly ResetEpisode[],
    opts: EvacEnvOptions = {},
    private readonly draw: EpisodeDraw | null = null,
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
    this.actionMean = Array.from({ length: m.action.dim }, (_, d) => m.action.mean?.[d] ?? 0);
    this.actionStd = Array.from({ length: m.action.dim }, (_, d) => m.action.std?.[d] ?? 1);
    this.noiseSize = model.inputs.noise ? model.inputs.noise.reduce((a, b) => a * b, 1) : 0;
    this.latentSize = model.inputs.latent ? model.inputs.latent.reduce((a, b) => a * b, 1) : 0;
    this.indexing = opts.context_indexing ?? 'gymwire';
    this.ignoreTerminations = opts.ignore_terminations ?? false;
    this.outOfRange = opts.out_of_range_actions ?? 'refuse';
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
      context_indexing: this.indexing,
      ignore_terminations: this.ignoreTerminations,
      out_of_range_actions: this.outOfRange,
      num_episodes: episodes.length,
      max_episode_steps_frames: this.maxSteps,
    };
  }

  async reset(opts: ResetOptions = {}): Promise<ResetResult<EvacObs>> {
    if (opts.seed != null) this.rng.seed(opts.seed);
    const options = opts.options ?? {};
    for (const key of Object.keys(options)) {
      if (!RESET_OPTIONS.includes(key)) {
        throw new InvalidOptionsError(`unknown reset option ${JSON.stringify(key)}; EvacWorldModel-v0 takes {${RESET_OPTIONS.join(', ')}}`);
      }
    }
    const given = this.givenStart(options);
    let episode: number;
    const requested = options.episode_index;
    if (requested === undefined || requested === null) {
      episode = this.draw ? this.draw.next(opts.seed ?? undefined, this.rng) : this.rng.integer(0, this.episodes.length);
    } else {
      const n = typeof requested === 'bigint' ? Number(requested) : requested;
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n >= this.episodes.length) {
        throw new InvalidOptionsError(`episode_index must be an integer in [0, ${this.episodes.length - 1}], got ${String(requested)}`);
      }
      episode = n;
    }
    const ep = this.episodes[episode]!;
    const T = this.model.manifest.context.frames;
    const frame = given.frame ?? ep.frame;
    const pose = given.pose ?? ep.initPose;
    this.dropHeld();
    this.state = {
      model: this.model.manifest.name,
      history: Array.from({ length: T }, () => frame),
      poseHistory: Array.from({ length: T }, () => pose).flat(),
      latent: this.latentSize > 0 ? new Array<number>(this.latentSize).fill(0) : null,
      pose: [...pose],
      prevScaled: 0,
      elapsed: 0,
      episode,
      task: given.task ?? ep.task,
      rng: [],
    };
    return { obs: this.observe(), info: { episode_index: episode, given_frame: given.frame !== undefined } };
  }

  /**
   * The caller's own start (reset options `frame`, `pose`, `task`), checked against the model: a
   * uint8 [H,W,3] tensor, 8 finite numbers (x, y, z, qx, qy, qz, qw, gripper), printable text.
   * The frame is copied: the decoded option may be a view of the request's buffer.
   */
  private givenStart(options: Record<string, unknown>): { frame?: Uint8Array; pose?: number[]; task?: string } {
    const out: { frame?: Uint8Array; pose?: number[]; task?: string } = {};
    const { frame, pose, task } = options;
    const want = `a uint8 tensor [${this.H}, ${this.W}, 3] (an RGB frame at the model's resolution)`;
    if (frame !== undefined && frame !== null) {
      if (!(frame instanceof Tensor)) throw new InvalidOptionsError(`reset option frame must be ${want}; got ${describe(frame)}`);
      const shape = frame.shape;
      if (frame.dtype !== 'uint8' || shape.length !== 3 || shape[0] !== this.H || shape[1] !== this.W || shape[2] !== 3) {
        throw new InvalidOptionsError(`reset option frame must be ${want}; got ${frame.dtype} [${shape.join(', ')}]`);
      }
      out.frame = Uint8Array.from(frame.data as Uint8Array);
    }
    if (pose !== undefined && pose !== null) {
      const values =
        pose instanceof Tensor ? (pose.shape.length === 1 && pose.dtype !== 'bool' ? Array.from(pose.data as ArrayLike<number>, Number) : null) : pose;
      if (!Array.isArray(values) || values.length !== 8 || !values.every((v) => typeof v === 'number' && Number.isFinite(v))) {
        throw new InvalidOptionsError(`reset option pose must be 8 finite numbers (x, y, z, qx, qy, qz, qw, gripper); got ${describe(pose)}`);
      }
      out.pose = values as number[];
    }
    if (task !== undefined && task !== null) {
      if (typeof task !== 'string' || task.length > MAX_TASK_LENGTH || [...task].some((c) => !PRINTABLE.includes(c))) {
        throw new InvalidOptionsError(`reset option task must be printable ASCII text of at most ${MAX_TASK_LENGTH} characters`);
      }
      out.task = task;
    }
    return out;
  }

  async step(action: unknown): Promise<StepResult<EvacObs>> {
    const st = this.state;
    if (!st) throw new InvalidActionError('call reset before step');
    const m = this.model.manifest;
    const actions = this.parseAction(action);
    let noise: Float32Array | null = null;
    if (this.noiseSize > 0) {
      noise = new Float32Array(this.noiseSize);
      for (let i = 0; i < noise.length; i++) noise[i] = this.rng.normal();
    }
    // The history is the context itself once it holds exactly the last T frames (it is replaced, never
    // changed in place, so the batch can copy it later).
    const T = m.context.frames;
    const indices = contextIndices(m.context.selection, T, st.history.length, this.indexing);
    const context = m.context.selection === 'last' && st.history.length === T ? st.history : indices.map((h) => st.history[h]!);
    let contextPoses: Float32Array | null = null;
    if (this.model.inputs.contextPoses) {
      contextPoses = new Float32Array(T * 8);
      indices.forEach((h, i) => contextPoses!.set(st.poseHistory.slice(h * 8, h * 8 + 8), i * 8));
    }
    const latentIn = st.latent ? Float32Array.from(st.latent) : null;

    const res = await this.model.step({ context, actions, pose: new Float32Array(st.pose), noise, contextPoses, latent: latentIn });
    try {
      this.checkFinite(res.probs, 'reward.onnx', 'prob');
      if (res.poses) this.checkFinite(res.poses, 'action_adapter.onnx', 'poses');
      if (res.latent) this.checkFinite(res.latent, 'world_model.onnx', 'next_latent');
    } catch (err) {
      // The session's state is left as it was before this step: the client may reset or restore.
      res.release();
      throw err;
    }

    // With last-k context the history holds views of this batch's frames and keeps the batch's buffer
    // until the next step's result (release() is deferred; by then the next batch has copied its
    // context). Frames kept longer than that, and every frame of a sparse (whole-episode) history,
    // are copied into buffers this env owns; owned frames that leave the history are reused.
    const C = this.chunk;
    const frameLen = this.H * this.W * 3;
    const n = st.history.length;
    const last = m.context.selection === 'last';
    const keep = last ? Math.min(n + C, T) : n + C;
    const heldViews = this.held?.views;
    const views: Uint8Array[] = [];
    const next: Uint8Array[] = [];
    for (let j = n + C - keep; j < n + C; j++) {
      if (j < n) {
        const f = st.history[j]!;
        next.push(heldViews?.includes(f) ? this.ownedCopy(f) : f);
        continue;
      }
      const f = res.frames.subarray((j - n) * frameLen, (j - n + 1) * frameLen);
      if (last) views.push(f);
      next.push(last ? f : this.ownedCopy(f));
    }
    for (const f of st.history) if (this.owned.has(f) && !next.includes(f)) this.spare.push(f);
    st.history = next;
    const newPoses: number[] = [];
    for (let t = 0; t < C; t++) for (let i = 0; i < 8; i++) newPoses.push(res.poses ? res.poses[t * 8 + i]! : st.pose[i]!);
    st.poseHistory = [...st.poseHistory, ...newPoses].slice(-keep * 8);
    if (res.latent) st.latent = Array.from(res.latent);
    const lastFrame = res.frames.slice((C - 1) * frameLen, C * frameLen);
    const allFrames = this.returnAll ? res.frames.slice() : null;
    if (res.poses) for (let i = 0; i < 8; i++) st.pose[i] = res.poses[(C - 1) * 8 + i]!;

    const threshold = m.reward.threshold;
    const probs = new Float32Array(res.probs);
    this.dropHeld();
    if (views.length > 0) this.held = { views, release: res.release };
    else res.release();
    const raw = new Float32Array(C);
    const rewards = new Float32Array(C);
    let prevScaled = st.prevScaled;
    let reward = 0;
    let terminated = false;
    for (let t = 0; t < C; t++) {
      const success = probs[t]! > threshold;
      raw[t] = success ? 1 : 0;
      terminated ||= success;
      const scaled = this.coef * raw[t]!;
      rewards[t] = this.useRel ? scaled - prevScaled : raw[t]!;
      prevScaled = scaled;
      reward += rewards[t]!;
    }
    st.prevScaled = prevScaled;
    st.elapsed += C;
    const truncated = st.elapsed >= this.maxSteps;
    const terminations = new Uint8Array(C);
    const truncations = new Uint8Array(C);
    // RLinf's EvacEnv reports a success in its chunk tensors whatever ignore_terminations says (the
    // env worker decides what ends an episode); only the Gymnasium flag, which ends the episode here, is held back.
    terminations[C - 1] = terminated ? 1 : 0;
    truncations[C - 1] = truncated ? 1 : 0;
    const success = terminated;
    if (this.ignoreTerminations) terminated = false;
    const info: Info = {
      rewards: new Tensor('float32', [C], rewards),
      terminations: new Tensor('bool', [C], terminations),
      truncations: new Tensor('bool', [C], truncations),
      success_prob: new Tensor('float32', [C], probs),
      raw_rewards: new Tensor('float32', [C], raw),
      elapsed_steps: st.elapsed,
      success,
      episode_index: st.episode,
    };
    if (allFrames) info.frames = new Tensor('uint8', [C, this.H, this.W, 3], allFrames);
    return { obs: this.observe(lastFrame), reward, terminated, truncated, info };
  }

  /** The last frame, uint8 [H,W,3] (the server encodes it as PNG). */
  render(): Tensor<'uint8'> | null {
    if (this.renderMode !== 'rgb_array' || !this.state) return null;
    return new Tensor('uint8', [this.H, this.W, 3], this.state.history[this.state.history.length - 1]!.slice());
  }

  close(): void {
    this.dropHeld();
    this.draw?.release?.();
  }

  getState(): Uint8Array {
    const st = this.state;
    return packState(STATE_FORMAT, st ? { ...st, rng: this.rng.getState() } : { rng: this.rng.getState() });
  }

  setState(bytes: Uint8Array): void {
    const s = unpackState<Partial<EvacState> & { rng: number[] }>(STATE_FORMAT, bytes);
    if (s.model !== undefined && s.model !== this.model.manifest.name) {
      throw new InvalidStateError(`state was taken from model ${s.model}; this env runs ${this.model.manifest.name}`);
    }
    this.rng.setState(s.rng);
    this.dropHeld();
    if (s.model === undefined) {
      this.state = null;
      return;
    }
    this.state = {
      ...(s as EvacState),
      history: s.history!.map((f) => Uint8Array.from(f)),
      poseHistory: [...(s.poseHistory ?? [])],
      latent: s.latent ? [...s.latent] : null,
      pose: [...s.pose!],
    };
  }

  /** Fails the step when a model output row of this session is NaN or infinite, naming the model and output. */
  private checkFinite(values: Float32Array, file: string, output: string): void {
    for (let i = 0; i < values.length; i++) {
      if (!Number.isFinite(values[i]!)) {
        throw new WorldModelOutputError(
          `${file} (model ${this.model.manifest.name}) returned ${values[i]} in output "${output}" at flat index ${i} of this session's chunk; the model produced a non-finite value`,
        );
      }
    }
  }

  /** `frame` is the newest frame when the caller already holds a copy of it that nothing else writes. */
  private observe(frame?: Uint8Array): EvacObs {
    const st = this.state!;
    const state = new Float32Array(16);
    for (let i = 0; i < 8; i++) state[i] = state[i + 8] = st.pose[i]!;
    return {
      full_image: new Tensor('uint8', [this.H, this.W, 3], frame ?? st.history[st.history.length - 1]!.slice()),
      state: new Tensor('float32', [16], state),
      task_description: st.task,
    };
  }

  private dropHeld(): void {
    this.held?.release();
    this.held = null;
  }

  private ownedCopy(src: Uint8Array): Uint8Array {
    const dst = this.spare.pop() ?? new Uint8Array(src.length);
    dst.set(src);
    this.owned.add(dst);
    return dst;
  }

  /**
   * Accepts a float tensor or nested number arrays of shape [chunk, dim], finite and within bounds;
   * returns the normalised actions the model takes.
   */
  private parseAction(action: unknown): Float32Array {
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
    } else if (
      Array.isArray(action) &&
      action.length === C &&
      action.every((r) => Array.isArray(r) && r.length === A && r.every((v) => typeof v === 'number'))
    ) {
      flat = (action as number[][]).flat();
    } else {
      throw new InvalidActionError(`expected ${want}`);
    }
    const out = new Float32Array(C * A);
    const { low, high } = m.action;
    for (let t = 0, i = 0; t < C; t++) {
      for (let d = 0; d < A; d++, i++) {
        const v = flat[i]!;
        if (!Number.isFinite(v)) throw new InvalidActionError(`action[${t}][${d}] is ${v}; actions must be finite`);
        let x = v;
        if (v < low[d]! || v > high[d]!) {
          if (this.outOfRange === 'refuse') {
            throw new InvalidActionError(
              `action[${t}][${d}] = ${v} is outside [${low[d]}, ${high[d]}] (make kwarg out_of_range_actions: 'clip' or 'pass' accepts it)`,
            );
          }
          if (this.outOfRange === 'clip') x = Math.min(high[d]!, Math.max(low[d]!, v));
        }
        out[i] = (x - this.actionMean[d]!) / this.actionStd[d]!;
      }
    }
    return out;
  }
}

/** What a refused option was, for its error: a tensor's dtype and shape, else its JavaScript type. */
function describe(value: unknown): string {
  if (value instanceof Tensor) return `a ${value.dtype} tensor [${value.shape.join(', ')}]`;
  if (Array.isArray(value)) return `an array of ${value.length}`;
  return typeof value;
}
