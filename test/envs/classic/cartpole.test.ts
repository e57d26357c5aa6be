import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { CartPoleEnv } from '../../../envs/classic/cartpole.ts';
import { defaultRegistry } from '../../../envs/index.ts';
import { packState } from '../../../envs/core/state.ts';
import { Random } from '../../../runtime/random.ts';
import type { Tensor } from '../../../protocol/tensor.ts';

interface Case {
  seed: number;
  initial_state: [number, number, number, number];
  actions: number[];
  steps: { obs: number[]; reward: number; terminated: boolean; truncated: boolean }[];
}
const fixture = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'cartpole-gymnasium.json'), 'utf8')) as {
  gymnasium: string;
  cases: Case[];
};

describe('CartPole-v1', () => {
  it.each(fixture.cases.map((c) => [c.seed, c] as const))('reproduces Gymnasium 1.3 step for step from the same state (case %i)', (_seed, c) => {
    // Start from Gymnasium's initial state (the RNGs differ: numpy's PCG64 is not ported; the dynamics are).
    const inner = new CartPoleEnv();
    inner.setState(packState('CartPole-v1', { state: c.initial_state, beyond: null, rng: new Random(0).getState() }));
    for (let t = 0; t < c.steps.length; t++) {
      const r = inner.step(c.actions[t]!);
      const want = c.steps[t]!;
      expect(Array.from((r.obs as Tensor).data as Float32Array)).toEqual(want.obs.map((v) => Math.fround(v)));
      expect(r.reward).toBe(want.reward);
      expect(r.terminated).toBe(want.terminated);
    }
  });

  it('truncates at 500 steps through the registry', async () => {
    const env = await defaultRegistry().make('gymwire/CartPole-v1');
    await env.reset({ seed: 1 });
    // Balance with a simple controller so the time limit, not the pole, ends the episode.
    let last;
    let steps = 0;
    let obs = (await env.reset({ seed: 1 })).obs as Tensor;
    do {
      const action = obs.at(2) + 0.5 * obs.at(3) > 0 ? 1 : 0;
      last = await env.step(action);
      obs = last.obs as Tensor;
      steps++;
    } while (!last.terminated && !last.truncated);
    expect(steps).toBe(500);
    expect(last.truncated).toBe(true);
    expect(last.terminated).toBe(false);
  });

  it('refuses actions other than 0 and 1', () => {
    const env = new CartPoleEnv();
    env.reset({ seed: 0 });
    expect(() => env.step(2)).toThrow(/0 \(push left\) or 1/);
  });

  it('renders a 400x600 RGB frame', () => {
    const env = new CartPoleEnv({ render_mode: 'rgb_array' });
    env.reset({ seed: 0 });
    const frame = env.render()!;
    expect(frame.shape).toEqual([400, 600, 3]);
  });
});
