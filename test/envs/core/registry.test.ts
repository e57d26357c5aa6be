import { z } from 'zod';
import { describe, expect, it } from 'vitest';

import { CartPoleEnv } from '../../../envs/classic/cartpole.ts';
import { InvalidKwargsError, Registry, UnknownEnvError } from '../../../envs/core/registry.ts';
import { OrderEnforcing, TimeLimit, unwrap } from '../../../envs/core/wrappers.ts';

function registry(): Registry {
  const r = new Registry();
  r.register({
    id: 'test/CartPole-v1',
    description: 'cart',
    entryPoint: (kw) => new CartPoleEnv(kw),
    kwargsSchema: z.object({ render_mode: z.enum(['rgb_array']).optional() }).strict(),
    maxEpisodeSteps: 7,
  });
  return r;
}

describe('Registry', () => {
  it('refuses ids that are not namespace/Name-vN and duplicate ids', () => {
    const r = registry();
    expect(() => r.register({ id: 'bad id!', entryPoint: () => new CartPoleEnv() })).toThrow(/does not match/);
    expect(() => r.register({ id: 'test/CartPole-v1', entryPoint: () => new CartPoleEnv() })).toThrow(/already registered/);
  });

  it('names the available ids for an unknown env', async () => {
    await expect(registry().make('test/Nope-v0')).rejects.toBeInstanceOf(UnknownEnvError);
    await expect(registry().make('test/Nope-v0')).rejects.toThrow(/available: test\/CartPole-v1/);
  });

  it('validates kwargs with the spec schema and lists each issue', async () => {
    const err = await registry()
      .make('test/CartPole-v1', { render_mode: 'human', extra: 1 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidKwargsError);
    expect((err as InvalidKwargsError).issues.map((i) => i.path).sort()).toEqual(['', 'render_mode'].sort());
  });

  it('stacks TimeLimit inside OrderEnforcing and lists kwargs schemas', async () => {
    const env = await registry().make('test/CartPole-v1');
    expect(env).toBeInstanceOf(OrderEnforcing);
    expect((env as OrderEnforcing).env).toBeInstanceOf(TimeLimit);
    expect(unwrap(env)).toBeInstanceOf(CartPoleEnv);
    const [listing] = registry().list();
    expect(listing).toMatchObject({ id: 'test/CartPole-v1', max_episode_steps: 7 });
    expect(listing!.kwargs_schema).toMatchObject({ type: 'object', additionalProperties: false });
  });

  it('runs close hooks once', async () => {
    const r = registry();
    let closed = 0;
    r.onClose(() => closed++);
    await r.close();
    await r.close();
    expect(closed).toBe(1);
  });

  it('closes a resource handed to closes() once, with the registry', async () => {
    const r = new Registry();
    let closed = 0;
    const pool = { close: () => void closed++ };
    expect(r.closes(pool)).toBe(pool);
    expect(closed).toBe(0);
    await r.close();
    await r.close();
    expect(closed).toBe(1);
  });
});
