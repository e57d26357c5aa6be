/**
 * EVAC world-model serving benchmark: chunk steps per second with 1, 8 and 32 concurrent sessions,
 * batched (one model run per batch window, up to 32 steps) against one-by-one (maxBatch 1), and the
 * main thread's event-loop delay p99 while 32 sessions step. The floor for the delay is measured in
 * the same run: the same batch run synchronously on the main thread, as onnxruntime-node does when
 * it is not moved off it.
 *
 *   npx tsx test/bench/evac.bench.ts [--seconds 3] [--resolution 64]
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import * as ort from 'onnxruntime-node';

import { Tensor } from '../../protocol/tensor.ts';
import { Registry } from '../../envs/core/registry.ts';
import { EVAC_ENV_ID, registerEvac, tinyModelDir } from '../../envs/evac/index.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
};
const SECONDS = arg('--seconds', 3);
const RES = arg('--resolution', 64) as 64 | 128 | 256;

function emit(metric: string, value: number, unit: string, extra: Record<string, unknown> = {}): void {
  console.log(JSON.stringify({ bench: 'evac', metric, value: Math.round(value * 100) / 100, unit, resolution: RES, ...extra }));
}

const action = (k: number) => new Tensor('float32', [8, 7], Float32Array.from({ length: 56 }, (_, j) => Math.sin(k + j) * 0.8));

async function throughput(sessions: number, batched: boolean, watchLoop = false): Promise<{ rate: number; p99: number | null; maxBatch: number }> {
  const registry = new Registry();
  const runtime = registerEvac(registry, batched ? { maxBatch: 32, batchWindowMs: 2 } : { maxBatch: 1, batchWindowMs: 0 });
  try {
    const envs = await Promise.all(Array.from({ length: sessions }, () => registry.make(EVAC_ENV_ID, { resolution: RES })));
    await Promise.all(envs.map((e, i) => e.reset({ seed: i })));
    await Promise.all(envs.map(async (e) => e.step(action(0))));
    const h = monitorEventLoopDelay({ resolution: 1 });
    let steps = 0;
    const deadline = performance.now() + SECONDS * 1000;
    const t0 = performance.now();
    if (watchLoop) h.enable();
    await Promise.all(
      envs.map(async (e, i) => {
        for (let k = 1; performance.now() < deadline; k++) {
          const s = await e.step(action(i + k));
          steps++;
          if (s.terminated || s.truncated) await e.reset();
        }
      }),
    );
    const elapsed = (performance.now() - t0) / 1000;
    h.disable();
    return { rate: steps / elapsed, p99: watchLoop ? h.percentile(99) / 1e6 : null, maxBatch: runtime.stats.maxBatchSeen };
  } finally {
    await runtime.close();
  }
}

/** The floor: one batch of 32 run on the main thread, as plain onnxruntime-node would. */
async function mainThreadDelay(): Promise<number> {
  const dir = tinyModelDir(RES);
  const wm = await ort.InferenceSession.create(`${dir}/world_model.onnx`, { intraOpNumThreads: 1 });
  const B = 32;
  const feeds = {
    context: new ort.Tensor('uint8', new Uint8Array(B * 4 * RES * RES * 3).fill(120), [B, 4, RES, RES, 3]),
    actions: new ort.Tensor('float32', new Float32Array(B * 56), [B, 8, 7]),
    poses: new ort.Tensor('float32', new Float32Array(B * 64), [B, 8, 8]),
    noise: new ort.Tensor('float32', new Float32Array(B * 8), [B, 8]),
  };
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  const deadline = performance.now() + 1000;
  while (performance.now() < deadline) {
    await wm.run(feeds);
    await new Promise((r) => setImmediate(r));
  }
  h.disable();
  await wm.release();
  return h.percentile(99) / 1e6;
}

for (const sessions of [1, 8, 32]) {
  const one = await throughput(sessions, false);
  const bat = await throughput(sessions, true, sessions === 32);
  emit('chunk_steps_per_s', one.rate, 'steps/s', { sessions, mode: 'one-by-one' });
  emit('chunk_steps_per_s', bat.rate, 'steps/s', { sessions, mode: 'batched', max_batch_seen: bat.maxBatch });
  emit('batched_speedup', bat.rate / one.rate, 'x', { sessions, ...(sessions === 32 ? { target: 4 } : {}) });
  if (bat.p99 !== null) emit('event_loop_delay_p99', bat.p99, 'ms', { sessions, mode: 'batched, model in worker', target: 5 });
}
emit('event_loop_delay_p99_floor', await mainThreadDelay(), 'ms', { sessions: 32, mode: 'same model run on the main thread' });
// What this machine's scheduler alone does to the event loop (other jobs share the cores).
const idle = monitorEventLoopDelay({ resolution: 1 });
idle.enable();
await new Promise((r) => setTimeout(r, 1000));
idle.disable();
emit('event_loop_delay_p99_idle', idle.percentile(99) / 1e6, 'ms', { sessions: 0, mode: 'idle process' });
