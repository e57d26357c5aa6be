/**
 * Throwaway envs for server tests (Gymnasium's GenericTestEnv idea): slow, crashing, or both.
 */
import { z } from 'zod';

import { registerClassic } from '../../envs/classic/index.ts';
import type { Env, StepResult } from '../../envs/core/env.ts';
import { Registry } from '../../envs/core/registry.ts';
import { box, dict, discrete, text } from '../../protocol/spaces.ts';
import { Tensor } from '../../protocol/tensor.ts';

/**
 * Counts its steps; action 1 throws; action 2 returns an info msgpack cannot carry (a symbol);
 * `delay_ms` makes each step async and slow.
 */
export class TestEnv implements Env<number, number> {
  readonly observationSpace = discrete(1_000_000);
  readonly actionSpace = discrete(3);
  readonly metadata = { render_modes: [] };
  count = 0;

  constructor(private readonly delayMs: number) {}

  reset() {
    this.count = 0;
    return { obs: 0, info: {} };
  }

  step(action: number): StepResult<number> | Promise<StepResult<number>> {
    if (action === 1) throw new Error('boom: action 1 crashes this env');
    const result = () => {
      this.count += 1;
      return {
        obs: this.count,
        reward: 1,
        terminated: false,
        truncated: false,
        info: action === 2 ? { count: this.count, handle: Symbol('not a wire value') } : { count: this.count },
      };
    };
    if (this.delayMs <= 0) return result();
    return new Promise((resolve) => setTimeout(() => resolve(result()), this.delayMs));
  }
}

/**
 * Large frames (160x160x3 uint8, above the server's pooled-frame size) whose every byte is the step
 * count mod 256, drawn into one reused buffer as real envs do: an answer overwritten or reused too
 * early shows up as a frame of mixed or wrong bytes. `delay_ms` makes steps async.
 */
export class FramesEnv implements Env<Tensor, number> {
  static readonly SIDE = 160;
  readonly observationSpace = box({ low: 0, high: 255, shape: [FramesEnv.SIDE, FramesEnv.SIDE, 3], dtype: 'uint8' });
  readonly actionSpace = discrete(2);
  readonly metadata = { render_modes: [] };
  private count = 0;
  private readonly pixels = new Uint8Array(FramesEnv.SIDE * FramesEnv.SIDE * 3);

  constructor(private readonly delayMs: number) {}

  reset() {
    this.count = 0;
    return { obs: this.draw(), info: {} };
  }

  step(): StepResult<Tensor> | Promise<StepResult<Tensor>> {
    const result = () => {
      this.count += 1;
      return { obs: this.draw(), reward: 1, terminated: false, truncated: false, info: { count: this.count } };
    };
    if (this.delayMs <= 0) return result();
    return new Promise((resolve) => setTimeout(() => resolve(result()), this.delayMs));
  }

  private draw(): Tensor {
    this.pixels.fill(this.count & 0xff);
    return new Tensor('uint8', [FramesEnv.SIDE, FramesEnv.SIDE, 3], this.pixels);
  }
}

/**
 * A Dict observation as robot-learning envs have them: a camera image, a nested wrist camera, a
 * float state, a Discrete phase and the task's text, all a function of the seed and the step count. `side` sets the
 * images' size (sessions of different sides do not stack); action 1 throws, as TestEnv's does.
 */
export class DictFramesEnv implements Env<Record<string, unknown>, number> {
  readonly observationSpace;
  readonly actionSpace = discrete(3);
  readonly metadata = { render_modes: [] };
  private count = 0;
  private seed = 0;

  constructor(private readonly side: number) {
    const image = box({ low: 0, high: 255, shape: [side, side, 3], dtype: 'uint8' });
    this.observationSpace = dict({
      image,
      cameras: dict({ wrist: image }),
      state: box({ low: -Infinity, high: Infinity, shape: [3], dtype: 'float32' }),
      phase: discrete(4),
      task: text(32, { minLength: 1 }),
    });
  }

  reset(opts: { seed?: number | null } = {}) {
    this.count = 0;
    if (opts.seed != null) this.seed = opts.seed;
    return { obs: this.observe(), info: {} };
  }

  step(action: number): StepResult<Record<string, unknown>> {
    if (action === 1) throw new Error('boom: action 1 crashes this env');
    this.count += 1;
    return { obs: this.observe(), reward: 1, terminated: false, truncated: false, info: {} };
  }

  private observe(): Record<string, unknown> {
    const n = this.side * this.side * 3;
    const shade = (this.seed * 16 + this.count) & 0xff;
    return {
      image: new Tensor('uint8', [this.side, this.side, 3], new Uint8Array(n).fill(shade)),
      cameras: { wrist: new Tensor('uint8', [this.side, this.side, 3], new Uint8Array(n).fill(255 - shade)) },
      state: Tensor.from('float32', [3], [this.seed, this.count, 0.5]),
      phase: this.count % 4,
      task: `task${this.seed}`,
    };
  }
}

export function testRegistry(): Registry {
  const registry = new Registry();
  registerClassic(registry);
  registry.register({
    id: 'test/Counter-v0',
    entryPoint: (kw) => new TestEnv(kw.delay_ms ?? 0),
    kwargsSchema: z.object({ delay_ms: z.number().int().min(0).max(5000).optional() }).strict(),
  });
  registry.register({
    id: 'test/Frames-v0',
    entryPoint: (kw) => new FramesEnv(kw.delay_ms ?? 0),
    kwargsSchema: z.object({ delay_ms: z.number().int().min(0).max(5000).optional() }).strict(),
  });
  registry.register({
    id: 'test/DictFrames-v0',
    entryPoint: (kw) => new DictFramesEnv(kw.side ?? 8),
    kwargsSchema: z.object({ side: z.number().int().min(1).max(64).optional() }).strict(),
  });
  return registry;
}
