import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Random } from '../../../runtime/random.ts';
import { Tensor } from '../../../protocol/tensor.ts';
import { contains } from '../../../protocol/spaces.ts';
import type { Env } from '../../../envs/core/env.ts';
import { InvalidActionError, InvalidOptionsError, InvalidStateError } from '../../../envs/core/env.ts';
import { Registry } from '../../../envs/core/registry.ts';
import type { EvacObs } from '../../../envs/evac/env.ts';
import { EVAC_ENV_ID, registerEvac } from '../../../envs/evac/index.ts';
import type { WorldModelRuntime } from '../../../envs/evac/runtime.ts';
import { chunkTensor, filled, runScripted } from './helpers.ts';

let registry: Registry;
let runtime: WorldModelRuntime;

beforeAll(() => {
  registry = new Registry();
  runtime = registerEvac(registry, { batchWindowMs: 1 });
});
afterAll(async () => {
  await runtime.close();
});

const make = (kwargs: Record<string, unknown> = {}) => registry.make(EVAC_ENV_ID, kwargs, { check: true });

describe('EvacWorldModel-v0 reset and step', () => {
  it('reset returns full_image uint8 [H,W,3], state float32 [16] and the task text', async () => {
    const env = await make();
    const { obs, info } = await env.reset({ seed: 3, options: { episode_index: 2 } });
    const o = obs as EvacObs;
    expect(o.full_image.dtype).toBe('uint8');
    expect(o.full_image.shape).toEqual([64, 64, 3]);
    expect(o.state.dtype).toBe('float32');
    expect(o.state.shape).toEqual([16]);
    expect(Array.from(o.state.data.slice(0, 8))).toEqual(Array.from(o.state.data.slice(8)));
    expect(o.task_description).toMatch(/red block/);
    expect(info.episode_index).toBe(2);
    expect(contains(env.observationSpace, obs)).toBeNull();
  });

  it('step returns the last frame, per-frame [chunk] rewards/terminations/truncations, and all frames on request', async () => {
    const env = await make({ return_all_frames: true });
    await env.reset({ seed: 1 });
    const s = await env.step(filled(0.3));
    const info = s.info as Record<string, Tensor>;
    expect(info.rewards!.shape).toEqual([8]);
    expect(info.terminations!.dtype).toBe('bool');
    expect(info.truncations!.shape).toEqual([8]);
    expect(info.frames!.shape).toEqual([8, 64, 64, 3]);
    const last = (info.frames!.data as Uint8Array).subarray(7 * 64 * 64 * 3);
    expect(Buffer.from((s.obs as EvacObs).full_image.data).equals(Buffer.from(last))).toBe(true);
    expect(s.info.elapsed_steps).toBe(8);
  });

  it('the state tracks the end-effector pose from the action adapter', async () => {
    const env = await make();
    const { obs } = await env.reset({ seed: 1, options: { episode_index: 0 } });
    const before = (obs as EvacObs).state.data[0]!;
    const s = await env.step(filled(1));
    // 8 frames x 0.02 m, unless the workspace clips it.
    expect((s.obs as EvacObs).state.data[0]! - before).toBeCloseTo(Math.min(0.16, 0.4 - before), 4);
    expect((s.obs as EvacObs).state.data[7]).toBe(-1);
  });

  it('the same seed gives the same episode (seeded noise), another seed different noise', async () => {
    const run = async (seed: number) => {
      const env = await make();
      await env.reset({ seed });
      const out: Uint8Array[] = [];
      for (let k = 0; k < 3; k++) out.push(((await env.step(filled(0.2))).obs as EvacObs).full_image.data.slice());
      return Buffer.concat(out);
    };
    const a = await run(7);
    expect(a.equals(await run(7))).toBe(true);
    expect(a.equals(await run(8))).toBe(false);
  });

  it('bad actions and options are refused with actionable errors', async () => {
    const env = await make();
    await env.reset({ seed: 0 });
    await expect(env.step(new Tensor('float32', [7, 7], new Float32Array(49)))).rejects.toThrow(InvalidActionError);
    await expect(env.step(new Tensor('float32', [7, 7], new Float32Array(49)))).rejects.toThrow(/shape \[7, 7\]; expected an action chunk float32 \[8, 7\]/);
    const nan = new Float32Array(56);
    nan[10] = NaN;
    await expect(env.step(new Tensor('float32', [8, 7], nan))).rejects.toThrow(/action\[1\]\[3\] is NaN/);
    await expect(env.step(filled(2))).rejects.toThrow(/outside \[-1, 1\]/);
    await expect(env.step('left')).rejects.toThrow(InvalidActionError);
    await expect(env.reset({ options: { episode_index: 99 } })).rejects.toThrow(InvalidOptionsError);
    await expect(env.reset({ options: { scene: 1 } })).rejects.toThrow(
      /unknown reset option "scene"; EvacWorldModel-v0 takes \{episode_index, frame, pose, task\}/,
    );
    // Nested arrays work as well as tensors.
    const ok = await env.step(Array.from({ length: 8 }, () => [0, 0, 0, 0, 0, 0, -1]));
    expect(ok.info.elapsed_steps).toBe(8);
  });
});

describe('EvacWorldModel-v0 reset from a given frame', () => {
  it('starts from the frame, pose and task given as reset options, and steps from them', async () => {
    const env = await make({ return_all_frames: true });
    const data = new Uint8Array(64 * 64 * 3);
    for (let i = 0; i < data.length; i++) data[i] = (i * 7) % 251;
    const frame = new Tensor('uint8', [64, 64, 3], data);
    const pose = [0.1, -0.05, 0.2, 0, 0, 0, 1, -1];
    const { obs, info } = await env.reset({ seed: 4, options: { frame, pose: Tensor.from('float64', [8], pose), task: 'lift the cube' } });
    const o = obs as EvacObs;
    expect(Buffer.from(o.full_image.data).equals(Buffer.from(data))).toBe(true);
    expect(Array.from(o.state.data.slice(0, 8))).toEqual(Array.from(Float32Array.from(pose)));
    expect(o.task_description).toBe('lift the cube');
    expect(info.given_frame).toBe(true);
    // The env copied the frame: the caller's buffer may change (a decoded request's may be reused).
    data.fill(0);
    expect((await env.step(filled(0.2))).info.elapsed_steps).toBe(8);
    // Its steps are the world model's from that frame: the same frame and seed give the same frames.
    const again = await make({ return_all_frames: true });
    const copy = new Uint8Array(64 * 64 * 3).map((_, i) => (i * 7) % 251);
    await again.reset({ seed: 4, options: { frame: new Tensor('uint8', [64, 64, 3], copy), pose, task: 'lift the cube' } });
    const a = await again.step(filled(0.2));
    await env.reset({ seed: 4, options: { frame: new Tensor('uint8', [64, 64, 3], copy), pose, task: 'lift the cube' } });
    const b = await env.step(filled(0.2));
    expect(Buffer.from((a.info.frames as Tensor<'uint8'>).data).equals(Buffer.from((b.info.frames as Tensor<'uint8'>).data))).toBe(true);
    // Without pose and task the drawn episode's are kept.
    const plain = await env.reset({ seed: 4, options: { frame: new Tensor('uint8', [64, 64, 3], copy), episode_index: 1 } });
    expect((plain.obs as EvacObs).task_description).toMatch(/red block/);
    expect(plain.info.episode_index).toBe(1);
  });

  it('a frame of the wrong shape or dtype, or a bad pose or task, is an invalid-options error naming what is expected', async () => {
    const env = await make();
    const bad = [
      [{ frame: new Tensor('uint8', [32, 32, 3], new Uint8Array(32 * 32 * 3)) }, /frame must be a uint8 tensor \[64, 64, 3\].*got uint8 \[32, 32, 3\]/],
      [{ frame: new Tensor('float32', [64, 64, 3], new Float32Array(64 * 64 * 3)) }, /got float32 \[64, 64, 3\]/],
      [{ frame: new Tensor('uint8', [64, 64, 4], new Uint8Array(64 * 64 * 4)) }, /got uint8 \[64, 64, 4\]/],
      [{ frame: [[1, 2, 3]] }, /frame must be a uint8 tensor.*got an array of 1/],
      [{ pose: [0, 0, 0] }, /pose must be 8 finite numbers/],
      [{ pose: [0, 0, 0, 0, 0, 0, 1, NaN] }, /pose must be 8 finite numbers/],
      [{ task: 'caf\u00e9' }, /task must be printable ASCII/],
    ] as const;
    for (const [options, message] of bad) {
      await expect(env.reset({ options: options as never })).rejects.toThrow(InvalidOptionsError);
      await expect(env.reset({ options: options as never })).rejects.toThrow(message);
    }
  });
});

describe('EvacWorldModel-v0 reward, termination and truncation (RLinf rules)', () => {
  it('a scripted policy lifts the block: relative reward +coef on the first success frame, termination on the last frame', async () => {
    const env = await make();
    let successes = 0;
    for (let ep = 0; ep < 8; ep++) {
      const { obs } = await env.reset({ seed: ep, options: { episode_index: ep } });
      const r = await runScripted(env, obs as EvacObs, 64);
      if (r.success) successes++;
      // Relative rewards telescope: the episode's sum is coef x (final R - 0).
      if (r.success) expect(r.rewards.reduce((a, b) => a + b, 0)).toBe(5);
    }
    expect(successes).toBe(8);
  });

  it('per-frame relative rewards match coef x R_t - coef x R_(t-1), carried across chunks', async () => {
    const env = await make({ return_all_frames: true });
    const { obs } = await env.reset({ seed: 0, options: { episode_index: 0 } });
    let o = obs as EvacObs;
    let prev = 0;
    for (let k = 0; k < 32; k++) {
      const { scriptedChunk } = await import('../../../envs/evac/tiny/policy.ts');
      const s = await env.step(chunkTensor(scriptedChunk(o.full_image.data, o.state.data, 64, 8)));
      const raw = Array.from((s.info.raw_rewards as Tensor<'float32'>).data);
      const probs = Array.from((s.info.success_prob as Tensor<'float32'>).data);
      expect(raw).toEqual(probs.map((p) => (p > 0.5 ? 1 : 0)));
      const rewards = Array.from((s.info.rewards as Tensor<'float32'>).data);
      const expected = raw.map((r, t) => 5 * r - 5 * (t === 0 ? prev : raw[t - 1]!));
      expect(rewards).toEqual(expected);
      prev = raw[7]!;
      const terms = Array.from((s.info.terminations as Tensor<'bool'>).data);
      expect(terms.slice(0, 7).every((v) => v === 0)).toBe(true);
      expect(terms[7]).toBe(raw.some((r) => r === 1) ? 1 : 0);
      expect(s.terminated).toBe(raw.some((r) => r === 1));
      o = s.obs as EvacObs;
      if (s.terminated) return;
    }
    throw new Error('the scripted policy never succeeded');
  });

  it('without relative reward the raw 0/1 rewards come back unscaled', async () => {
    const env = await make({ use_rel_reward: false });
    const { obs } = await env.reset({ seed: 0, options: { episode_index: 1 } });
    const r = await runScripted(env, obs as EvacObs, 64);
    expect(r.success).toBe(true);
    expect(r.rewards.at(-1)).toBeGreaterThanOrEqual(1);
    expect(r.rewards.at(-1)).toBeLessThanOrEqual(8);
  });

  it('random actions rarely succeed', async () => {
    // Twelve sessions at once: they share batched model runs.
    const rng = new Random(11);
    const envs = await Promise.all(Array.from({ length: 12 }, () => make()));
    const outcomes = await Promise.all(
      envs.map(async (env, ep) => {
        await env.reset({ seed: 100 + ep });
        for (let k = 0; k < 32; k++) {
          const s = await env.step(
            new Tensor(
              'float32',
              [8, 7],
              Float32Array.from({ length: 56 }, () => rng.uniform(-1, 1)),
            ),
          );
          if (s.terminated || s.truncated) return s.terminated;
        }
        return false;
      }),
    );
    expect(outcomes.filter(Boolean).length).toBeLessThanOrEqual(1);
  });

  it('observations and returned frames stay as they were while later batches reuse the buffers', async () => {
    const envs = await Promise.all(Array.from({ length: 4 }, () => make({ return_all_frames: true })));
    await Promise.all(envs.map((e, i) => e.reset({ seed: i })));
    const first = await Promise.all(envs.map((e) => e.step(filled(0.5))));
    const kept = first.map((s) => ({ image: Buffer.from((s.obs as EvacObs).full_image.data), all: Buffer.from((s.info.frames as Tensor<'uint8'>).data) }));
    for (let k = 0; k < 4; k++) await Promise.all(envs.map((e) => e.step(filled(-0.5))));
    first.forEach((s, i) => {
      expect(Buffer.from((s.obs as EvacObs).full_image.data).equals(kept[i]!.image)).toBe(true);
      expect(Buffer.from((s.info.frames as Tensor<'uint8'>).data).equals(kept[i]!.all)).toBe(true);
    });
  });

  it('truncates on the chunk that reaches max_episode_steps (counted in frames)', async () => {
    const env = await make({ max_episode_steps: 24 });
    await env.reset({ seed: 0 });
    const flags: boolean[] = [];
    for (let k = 0; k < 3; k++) {
      const s = await env.step(filled(0));
      flags.push(s.truncated);
      expect(Array.from((s.info.truncations as Tensor<'bool'>).data)).toEqual([0, 0, 0, 0, 0, 0, 0, s.truncated ? 1 : 0]);
    }
    expect(flags).toEqual([false, false, true]);
  });
});

describe('EvacWorldModel-v0 state and rendering', () => {
  it('getState/setState reproduce the same future exactly', async () => {
    const env: Env = await make();
    await env.reset({ seed: 5 });
    await env.step(filled(0.5));
    const saved = await env.getState!();
    const future = async () => {
      const out: Buffer[] = [];
      for (let k = 0; k < 3; k++) {
        const s = await env.step(filled(-0.4, 1));
        out.push(Buffer.from((s.obs as EvacObs).full_image.data), Buffer.from((s.obs as EvacObs).state.data.buffer));
      }
      return Buffer.concat(out);
    };
    const a = await future();
    await env.setState!(saved);
    expect((await future()).equals(a)).toBe(true);
    const other = await make();
    await other.setState!(saved);
    const b: Buffer[] = [];
    for (let k = 0; k < 3; k++) {
      const s = await other.step(filled(-0.4, 1));
      b.push(Buffer.from((s.obs as EvacObs).full_image.data), Buffer.from((s.obs as EvacObs).state.data.buffer));
    }
    expect(Buffer.concat(b).equals(a)).toBe(true);
    const cartpoleLike = new Uint8Array([1, 2, 3]);
    await expect(Promise.resolve().then(() => other.setState!(cartpoleLike))).rejects.toThrow(InvalidStateError);
  });

  it('render returns the last frame as uint8 [H,W,3]; 128 and 256 are selectable', async () => {
    const env = await make({ render_mode: 'rgb_array', resolution: 128 });
    const { obs } = await env.reset({ seed: 0 });
    const frame = (await env.render!()) as Tensor;
    expect(frame.shape).toEqual([128, 128, 3]);
    expect(Buffer.from(frame.data as Uint8Array).equals(Buffer.from((obs as EvacObs).full_image.data))).toBe(true);
    const big = await make({ resolution: 256 });
    const r = await big.reset({ seed: 0 });
    expect((r.obs as EvacObs).full_image.shape).toEqual([256, 256, 3]);
    const s = await big.step(filled(0));
    expect((s.obs as EvacObs).full_image.shape).toEqual([256, 256, 3]);
  });

  it('refuses kwargs that pick two models', async () => {
    await expect(make({ model_dir: '/tmp', resolution: 64 })).rejects.toThrow(/model_dir or resolution/);
    await expect(make({ resolution: 96 })).rejects.toThrow(/invalid kwargs/);
  });
});
