/**
 * Conformance-v0, the "everything env": its observation exercises every Gymnasium space type and
 * every dtype, it has tools and state save/load, and it terminates and truncates, so client SDKs
 * and the conformance suite can check every wire path against it.
 *
 * The task itself is small: move a point in [-1, 1]^2 towards a goal with a Box(-1, 1, (2,))
 * action; reward is minus the distance; the episode terminates within 0.1 of the goal and is
 * truncated at 50 steps by the registry's TimeLimit.
 */
import { z } from 'zod';

import { box, dict, discrete, graph, multiBinary, multiDiscrete, oneOf, sequence, text, tuple } from '../../protocol/spaces.ts';
import { Random } from '../../runtime/random.ts';
import { DTYPES, Tensor } from '../../protocol/tensor.ts';
import type { DType } from '../../protocol/tensor.ts';
import { defineTool, InvalidActionError, InvalidOptionsError } from '../core/env.ts';
import type { Env, EnvMetadata, EnvTool, ResetOptions, ResetResult, StepResult } from '../core/env.ts';
import { packState, unpackState } from '../core/state.ts';

const CHARSET = 'abcdefghijklmnopqrstuvwxyz';

/** Bounds per dtype: finite for integers, one infinite side for floats (bounds must round-trip). */
function dtypeBox(dtype: DType) {
  if (dtype === 'bool') return box({ low: 0, high: 1, shape: [2], dtype });
  if (dtype === 'float16' || dtype === 'float32' || dtype === 'float64') return box({ low: [-Infinity, -1], high: [Infinity, 1], shape: [2], dtype });
  if (dtype.startsWith('uint')) return box({ low: 0, high: 100, shape: [2], dtype });
  return box({ low: -100, high: 100, shape: [2], dtype });
}

export const CONFORMANCE_OBSERVATION_SPACE = dict({
  ...Object.fromEntries(DTYPES.map((d) => [`box_${d}`, dtypeBox(d)])),
  position: box({ low: -1, high: 1, shape: [2], dtype: 'float32' }),
  discrete: discrete(5, -2),
  multi_discrete: multiDiscrete([3, 4]),
  multi_binary: multiBinary(4),
  text: text(8, { minLength: 1, charset: CHARSET }),
  tuple: tuple([discrete(2), box({ low: -1, high: 1, shape: [3], dtype: 'float32' })]),
  sequence: sequence(discrete(3)),
  graph: graph(box({ low: -1, high: 1, shape: [2], dtype: 'float32' }), discrete(3)),
  oneof: oneOf([discrete(2), box({ low: -1, high: 1, shape: [1], dtype: 'float32' })]),
});

interface State {
  position: [number, number];
  goal: [number, number];
  steps: number;
}

export class ConformanceEnv implements Env {
  readonly observationSpace = CONFORMANCE_OBSERVATION_SPACE;
  readonly actionSpace = box({ low: -1, high: 1, shape: [2], dtype: 'float32' });
  readonly metadata: EnvMetadata = { render_modes: ['rgb_array'], render_fps: 10, description: 'every space type and dtype' };
  readonly renderMode: string | null;
  private readonly rng = new Random();
  private state: State | null = null;

  /** Static, so listings show the tools before any session exists. */
  static readonly TOOLS: readonly EnvTool<never>[] = [
    defineTool({
      name: 'echo',
      description: 'Returns its text argument unchanged (checks string round trips).',
      inputSchema: z.object({ text: z.string().max(1000).describe('text to echo') }).strict(),
      handler: ({ text }) => ({ text }),
    }),
    defineTool({
      name: 'add',
      description: 'Adds two numbers (checks argument validation).',
      inputSchema: z.object({ a: z.number().describe('the first addend'), b: z.number().describe('the second addend') }).strict(),
      handler: ({ a, b }) => ({ sum: a + b }),
    }),
    defineTool({
      name: 'get_goal',
      description: 'Returns the current goal position; needs a reset first.',
      inputSchema: z.object({}).strict(),
      handler: (_args, ctx) => {
        const env = ctx.env as ConformanceEnv;
        if (!env.state) throw new InvalidOptionsError('call reset before get_goal');
        return { goal: env.state.goal };
      },
    }),
    defineTool({
      name: 'move',
      description: 'Steps the env with a move (dx, dy) in [-1, 1] and returns reward, terminated and truncated, like step.',
      inputSchema: z.object({ dx: z.number().min(-1).max(1), dy: z.number().min(-1).max(1) }).strict(),
      handler: async ({ dx, dy }, ctx) => {
        const r = await ctx.wrapped.step(Tensor.from('float32', [2], [dx, dy]));
        return { reward: r.reward, terminated: r.terminated, truncated: r.truncated, position: (r.obs as Record<string, Tensor>).position!.toNumbers() };
      },
    }),
  ];
  get tools(): readonly EnvTool<never>[] {
    return ConformanceEnv.TOOLS;
  }

  constructor(opts: { render_mode?: string | null } = {}) {
    this.renderMode = opts.render_mode ?? null;
  }

  reset(opts: ResetOptions = {}): ResetResult {
    if (opts.seed != null) this.rng.seed(opts.seed);
    const options = opts.options ?? {};
    if (options.goal !== undefined) {
      const g = options.goal;
      if (!Array.isArray(g) || g.length !== 2 || !g.every((v) => typeof v === 'number' && Math.abs(v) <= 1)) {
        throw new InvalidOptionsError('options.goal must be [x, y] with both in [-1, 1]');
      }
    }
    const goal = (options.goal as [number, number] | undefined) ?? [this.rng.uniform(-0.8, 0.8), this.rng.uniform(-0.8, 0.8)];
    this.state = { position: [this.rng.uniform(-0.8, 0.8), this.rng.uniform(-0.8, 0.8)], goal, steps: 0 };
    return { obs: this.observe(), info: { goal, distance: this.distance() } };
  }

  step(action: Tensor): StepResult {
    if (!(action instanceof Tensor) || action.dtype !== 'float32' || action.size !== 2)
      throw new InvalidActionError('action must be a float32 tensor of shape [2]');
    const s = this.state!;
    const dx = action.at(0);
    const dy = action.at(1);
    if (!Number.isFinite(dx) || !Number.isFinite(dy)) throw new InvalidActionError('action must be finite');
    const clamp = (v: number) => Math.max(-1, Math.min(1, v));
    s.position = [clamp(s.position[0] + 0.25 * dx + 0.01 * this.rng.normal()), clamp(s.position[1] + 0.25 * dy + 0.01 * this.rng.normal())];
    s.steps += 1;
    const distance = this.distance();
    return { obs: this.observe(), reward: -distance, terminated: distance < 0.1, truncated: false, info: { distance, steps: s.steps } };
  }

  render(): Tensor | null {
    if (this.renderMode !== 'rgb_array' || !this.state) return null;
    const size = 32;
    const img = new Uint8Array(size * size * 3).fill(32);
    const plot = (p: [number, number], rgb: [number, number, number]) => {
      const x = Math.round(((p[0] + 1) / 2) * (size - 1));
      const y = Math.round(((1 - p[1]) / 2) * (size - 1));
      img.set(rgb, (y * size + x) * 3);
    };
    plot(this.state.goal, [0, 255, 0]);
    plot(this.state.position, [255, 0, 0]);
    return new Tensor('uint8', [size, size, 3], img);
  }

  getState(): Uint8Array {
    return packState('Conformance-v0', { state: this.state, rng: this.rng.getState() });
  }

  setState(bytes: Uint8Array): void {
    const s = unpackState<{ state: State | null; rng: number[] }>('Conformance-v0', bytes);
    this.state = s.state;
    this.rng.setState(s.rng);
  }

  private distance(): number {
    const s = this.state!;
    return Math.hypot(s.position[0] - s.goal[0], s.position[1] - s.goal[1]);
  }

  /** Every field is derived from the state and the seeded RNG, so the same seed gives the same observations. */
  private observe(): Record<string, unknown> {
    const s = this.state!;
    const r = this.rng;
    const obs: Record<string, unknown> = {};
    for (const d of DTYPES) {
      let values: number[];
      if (d === 'bool') values = [r.integer(0, 2), r.integer(0, 2)];
      else if (d === 'float16' || d === 'float32' || d === 'float64') values = [r.normal() * 10, r.uniform(-1, 1)];
      else if (d.startsWith('uint')) values = [r.integer(0, 101), r.integer(0, 101)];
      else values = [r.integer(-100, 101), r.integer(-100, 101)];
      obs[`box_${d}`] = Tensor.from(d, [2], values);
    }
    obs.position = Tensor.from('float32', [2], s.position);
    obs.discrete = r.integer(-2, 3);
    obs.multi_discrete = Tensor.from('int64', [2], [r.integer(0, 3), r.integer(0, 4)]);
    obs.multi_binary = Tensor.from(
      'int8',
      [4],
      [0, 1, 2, 3].map(() => r.integer(0, 2)),
    );
    obs.text = Array.from({ length: r.integer(1, 9) }, () => CHARSET[r.integer(0, CHARSET.length)]).join('');
    obs.tuple = [r.integer(0, 2), Tensor.from('float32', [3], [r.uniform(-1, 1), r.uniform(-1, 1), r.uniform(-1, 1)])];
    obs.sequence = Array.from({ length: r.integer(0, 4) }, () => r.integer(0, 3));
    const nodes = r.integer(1, 4);
    const edges = r.integer(0, 3);
    obs.graph = {
      nodes: Tensor.from(
        'float32',
        [nodes, 2],
        Array.from({ length: nodes * 2 }, () => r.uniform(-1, 1)),
      ),
      edges: Tensor.from(
        'int64',
        [edges],
        Array.from({ length: edges }, () => r.integer(0, 3)),
      ),
      edge_links: Tensor.from(
        'int64',
        [edges, 2],
        Array.from({ length: edges * 2 }, () => r.integer(0, nodes)),
      ),
    };
    obs.oneof = r.integer(0, 2) === 0 ? [0, r.integer(0, 2)] : [1, Tensor.from('float32', [1], [r.uniform(-1, 1)])];
    return obs;
  }
}
