import { describe, expect, it } from 'vitest';

import { CartPoleEnv } from '../../../envs/classic/cartpole.ts';
import type { Env } from '../../../envs/core/env.ts';
import { EnvContractError, OrderEnforcing, PassiveEnvChecker, ResetNeededError, TimeLimit } from '../../../envs/core/wrappers.ts';
import { box, discrete } from '../../../protocol/spaces.ts';
import { Tensor } from '../../../protocol/tensor.ts';

describe('TimeLimit', () => {
  it('truncates at max_episode_steps and keeps its count in the state', async () => {
    const env = new TimeLimit(new CartPoleEnv(), 3);
    env.reset({ seed: 1 });
    await env.step(0);
    const state = await env.getState!();
    expect((await env.step(0)).truncated).toBe(false);
    expect((await env.step(0)).truncated).toBe(true);
    await env.setState!(state);
    expect(env.elapsedSteps).toBe(1);
  });
});

describe('OrderEnforcing', () => {
  it('refuses step and render before reset, and step after the end', async () => {
    const env = new OrderEnforcing(new TimeLimit(new CartPoleEnv({ render_mode: 'rgb_array' }), 1));
    expect(() => env.step(0)).toThrow(ResetNeededError);
    expect(() => env.render()).toThrow(ResetNeededError);
    await env.reset({ seed: 0 });
    expect((await env.step(0)).truncated).toBe(true);
    expect(() => env.step(0)).toThrow(/episode has ended/);
    await env.reset();
    await env.step(1);
  });
});

describe('PassiveEnvChecker', () => {
  const liar: Env = {
    observationSpace: box({ low: -1, high: 1, shape: [1], dtype: 'float32' }),
    actionSpace: discrete(2),
    metadata: { render_modes: [] },
    reset: () => ({ obs: Tensor.from('float32', [1], [0]), info: {} }),
    step: () => ({ obs: Tensor.from('float64', [1], [0]), reward: Number.NaN, terminated: false, truncated: false, info: {} }),
  };

  it('catches observations outside the space and non-finite rewards', () => {
    const env = new PassiveEnvChecker(liar);
    env.reset();
    expect(() => env.step(0)).toThrow(EnvContractError);
    expect(() => env.step(0)).toThrow(/dtype float32/);
  });
});
