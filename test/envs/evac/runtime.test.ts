import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';

import { Tensor } from '../../../protocol/tensor.ts';
import { Registry } from '../../../envs/core/registry.ts';
import type { EvacObs } from '../../../envs/evac/env.ts';
import { EVAC_ENV_ID, registerEvac, tinyModelDir } from '../../../envs/evac/index.ts';
import { WorldModelRuntime } from '../../../envs/evac/runtime.ts';
import { integratePose, renderTiny } from '../../../envs/evac/tiny/scene.ts';

const runtimes: WorldModelRuntime[] = [];
afterAll(async () => {
  for (const r of runtimes) await r.close();
});

/** Steps `n` sessions concurrently with per-session seeded actions; returns everything observed. */
async function rollout(opts: { maxBatch: number; batchWindowMs: number }, n: number, steps: number) {
  const registry = new Registry();
  const runtime = registerEvac(registry, opts);
  runtimes.push(runtime);
  const envs = await Promise.all(Array.from({ length: n }, () => registry.make(EVAC_ENV_ID)));
  const traces = await Promise.all(
    envs.map(async (env, i) => {
      await env.reset({ seed: 40 + i });
      const out: Buffer[] = [];
      for (let k = 0; k < steps; k++) {
        const a = Float32Array.from({ length: 56 }, (_, j) => Math.sin(i * 7 + k * 3 + j) * 0.9);
        const s = await env.step(new Tensor('float32', [8, 7], a));
        const o = s.obs as EvacObs;
        out.push(
          Buffer.from(o.full_image.data),
          Buffer.from(o.state.data.buffer.slice(0)),
          Buffer.from((s.info.success_prob as Tensor<'float32'>).data.buffer.slice(0)),
        );
      }
      return Buffer.concat(out);
    }),
  );
  return { traces, stats: { ...runtime.stats } };
}

describe('WorldModelRuntime', () => {
  it('batched runs give exactly the one-by-one results', async () => {
    const oneByOne = await rollout({ maxBatch: 1, batchWindowMs: 0 }, 6, 3);
    const batched = await rollout({ maxBatch: 32, batchWindowMs: 5 }, 6, 3);
    expect(oneByOne.stats.maxBatchSeen).toBe(1);
    expect(batched.stats.maxBatchSeen).toBeGreaterThan(1);
    expect(batched.stats.runs).toBeLessThan(oneByOne.stats.runs);
    batched.traces.forEach((t, i) => expect(t.equals(oneByOne.traces[i]!)).toBe(true));
  });

  it('sessions that take longer than the window to hand back their steps still share full batches', async () => {
    const registry = new Registry();
    const runtime = registerEvac(registry, { maxBatch: 32, batchWindowMs: 1 });
    runtimes.push(runtime);
    const envs = await Promise.all(Array.from({ length: 8 }, () => registry.make(EVAC_ENV_ID)));
    await Promise.all(envs.map((env, i) => env.reset({ seed: i })));
    const chunk = new Tensor('float32', [8, 7], new Float32Array(56));
    await Promise.all(
      envs.map(async (env) => {
        for (let k = 0; k < 4; k++) {
          await env.step(chunk);
          // Each session's own work after a step: together 8 x 0.5 ms, past the 1 ms window.
          const until = performance.now() + 0.5;
          while (performance.now() < until);
        }
      }),
    );
    expect(runtime.stats.steps).toBe(32);
    expect(runtime.stats.runs).toBe(4);
  });

  it('the ONNX world model draws what the TypeScript reference renderer draws, and the adapter integrates poses alike', async () => {
    const runtime = new WorldModelRuntime();
    runtimes.push(runtime);
    const model = await runtime.load(tinyModelDir(64));
    const pose = [0.05, -0.02, 0.12, 0, 0, 0, 1, -1];
    const block: [number, number, number] = [20, 10, 3];
    const first = renderTiny({ ee: [0.05, -0.02, 0.12], gripperClosed: false, block }, 64);
    const context = new Uint8Array(4 * first.length);
    for (let i = 0; i < 4; i++) context.set(first, i * first.length);
    const rows = Array.from({ length: 8 }, (_, t) => [0.7, -0.3, 0.2 * (t % 3), 0.4, -0.2, 0.9, -1]);
    const res = await model.step({ context, actions: Float32Array.from(rows.flat()), pose: Float32Array.from(pose), noise: new Float32Array(8) });
    let p = pose;
    for (let t = 0; t < 8; t++) {
      p = integratePose(p, rows[t]!);
      for (let i = 0; i < 8; i++) expect(res.poses![t * 8 + i]).toBeCloseTo(p[i]!, 5);
      const ref = renderTiny({ ee: [res.poses![t * 8]!, res.poses![t * 8 + 1]!, res.poses![t * 8 + 2]!], gripperClosed: false, block }, 64);
      expect(Buffer.from(res.frames.subarray(t * ref.length, (t + 1) * ref.length)).equals(Buffer.from(ref))).toBe(true);
    }
  });

  it('a CUDA request without CUDA falls back to the CPU and says so once', async () => {
    const lines: { level: number; msg: string }[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(JSON.parse(chunk.toString()) as { level: number; msg: string });
        cb();
      },
    });
    const runtime = new WorldModelRuntime({ device: 'cuda', logger: pino({ level: 'info' }, sink) });
    runtimes.push(runtime);
    const a = await runtime.load(tinyModelDir(64));
    await runtime.load(tinyModelDir(128));
    await new Promise((r) => setImmediate(r));
    const warnings = lines.filter((l) => l.level === 40);
    if (a.provider === 'cpu') {
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.msg).toMatch(/CUDA execution provider unavailable/);
    } else {
      expect(warnings).toHaveLength(0);
    }
  });

  it('close() ends the worker; later loads are refused', async () => {
    const runtime = new WorldModelRuntime();
    await runtime.load(tinyModelDir(64));
    await runtime.close();
    await runtime.close();
    await expect(runtime.load(tinyModelDir(64))).rejects.toThrow(/closed/);
  });
});
