/**
 * A gymwire env plugin: one module whose `register(registry)` export registers envs through the
 * public Env contract. Serve it with
 *   gymwire serve --plugin examples/plugin-env/envs.ts
 * (a compiled .js plugin works the same way). Copy this file to start your own env.
 *
 * `mine/Corridor-v0`: walk left or right along a corridor of `length` cells to the goal at the far
 * end; reward 1 on reaching it, -0.01 per step otherwise. It has a tool (`distance`) and state
 * save/load, so every server feature (MCP tools, get_state/set_state, the viewer) applies.
 */
import { z } from 'zod';

import type { Env, ResetOptions, ResetResult, StepResult } from '../../envs/core/env.ts';
import { defineTool, InvalidStateError } from '../../envs/core/env.ts';
import type { Registry } from '../../envs/core/registry.ts';
import { packState, unpackState } from '../../envs/core/state.ts';
import { Random } from '../../runtime/random.ts';
import { box, discrete } from '../../protocol/spaces.ts';
import { Tensor } from '../../protocol/tensor.ts';

const LEFT = 0;
const STATE_FORMAT = 'mine/Corridor-v0';

interface CorridorState {
  position: number;
  rng: number[];
}

export class CorridorEnv implements Env<Tensor, number> {
  readonly observationSpace;
  readonly actionSpace = discrete(2);
  readonly metadata = { render_modes: [] as string[] };
  readonly tools = [
    defineTool({
      name: 'distance',
      description: 'Cells left between the agent and the goal',
      inputSchema: z.object({}).strict(),
      handler: (_args, ctx) => (ctx.env as CorridorEnv).length - 1 - (ctx.env as CorridorEnv).position,
    }),
  ];
  private readonly rng = new Random();
  position = 0;

  constructor(readonly length: number) {
    this.observationSpace = box({ low: 0, high: 1, shape: [2], dtype: 'float32' });
  }

  reset({ seed }: ResetOptions = {}): ResetResult<Tensor> {
    if (seed != null) this.rng.seed(seed);
    // Start somewhere in the first half, so seeds matter.
    this.position = this.rng.integer(0, Math.ceil(this.length / 2));
    return { obs: this.observe(), info: { position: this.position } };
  }

  step(action: number): StepResult<Tensor> {
    this.position = Math.max(0, Math.min(this.length - 1, this.position + (action === LEFT ? -1 : 1)));
    const arrived = this.position === this.length - 1;
    return { obs: this.observe(), reward: arrived ? 1 : -0.01, terminated: arrived, truncated: false, info: { position: this.position } };
  }

  getState(): Uint8Array {
    return packState(STATE_FORMAT, { position: this.position, rng: this.rng.getState() } satisfies CorridorState);
  }

  setState(bytes: Uint8Array): void {
    const state = unpackState<CorridorState>(STATE_FORMAT, bytes);
    if (!Number.isInteger(state.position) || state.position < 0 || state.position >= this.length) {
      throw new InvalidStateError(`position ${state.position} is outside the corridor of ${this.length} cells`);
    }
    this.position = state.position;
    this.rng.setState(state.rng);
  }

  private observe(): Tensor {
    return Tensor.from('float32', [2], [this.position / (this.length - 1), 1]);
  }
}

export function register(registry: Registry): void {
  registry.register({
    id: 'mine/Corridor-v0',
    description: 'Walk along a corridor to the goal at its far end (a plugin env: examples/plugin-env).',
    entryPoint: ({ length }) => new CorridorEnv(length),
    kwargsSchema: z.object({ length: z.number().int().min(2).max(1000).default(8) }).strict(),
    maxEpisodeSteps: 100,
    tags: ['example', 'plugin'],
  });
}
