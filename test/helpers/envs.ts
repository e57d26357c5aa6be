/**
 * Throwaway envs for server tests (Gymnasium's GenericTestEnv idea): slow, crashing, or both.
 */
import { z } from 'zod';

import { registerClassic } from '../../envs/classic/index.ts';
import type { Env, StepResult } from '../../envs/core/env.ts';
import { Registry } from '../../envs/core/registry.ts';
import { discrete } from '../../protocol/spaces.ts';

/** Counts its steps; action 1 throws; `delay_ms` makes each step async and slow. */
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
      return { obs: this.count, reward: 1, terminated: false, truncated: false, info: { count: this.count } };
    };
    if (this.delayMs <= 0) return result();
    return new Promise((resolve) => setTimeout(() => resolve(result()), this.delayMs));
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
  return registry;
}
