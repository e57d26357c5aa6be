/**
 * EVAC world-model serving benchmark: chunk steps per second with 1, 8 and 32 concurrent sessions,
 * batched (one model run per batch window, up to 32 steps) against one-by-one (maxBatch 1), and the
 * main thread's event-loop delay p99 while 32 sessions step. The floor for the delay is measured in
 * the same run: the same batch run synchronously on the main thread, as onnxruntime-node does when
 * it is not moved off it.
 *
 * Both modes are set up side by side and timed in alternating rounds, so that the load of other
 * processes on a shared machine drifts over both alike; the speedup is the median of the rounds'
 * ratios (its minimum is reported too). Each mode first steps one untimed warm-up round: the first
 * second after set-up runs ~20% slow (JIT, the worker's first batches of that shape), and that cold
 * round used to be one of three timed ones.
 *
 * It runs under the heap flag that `gymwire` starts the server with (bin/gymwire.js re-runs itself
 * with --initial-old-space-size=256), re-running itself the same way: with V8's small default old
 * generation, a process that has already made and dropped envs (here: the 1- and 8-session rounds)
 * gets a mark-compact every ~150 ms while 32 sessions step, with marking steps of up to 10 ms on the
 * event loop. GYMWIRE_NO_REEXEC=1 keeps the default to see that.
 *
 *   npx tsx test/bench/evac.bench.ts [--seconds 6] [--rounds 5] [--resolution 64]
 * (--seconds is each mode's timed total per session count, split over the rounds.)
 */
import { spawnSync } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { IntervalHistogram } from 'node:perf_hooks';
import * as ort from 'onnxruntime-node';

import { Tensor } from '../../protocol/tensor.ts';
import { Registry } from '../../envs/core/registry.ts';
import type { Env } from '../../envs/core/env.ts';
import { EVAC_ENV_ID, registerEvac, tinyModelDir } from '../../envs/evac/index.ts';
import type { WorldModelRuntime } from '../../envs/evac/runtime.ts';

const HEAP_FLAG = '--initial-old-space-size=';
if (!process.execArgv.some((a) => a.startsWith(HEAP_FLAG)) && !process.env.GYMWIRE_NO_REEXEC) {
  const child = spawnSync(process.execPath, [`${HEAP_FLAG}256`, ...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit' });
  process.exit(child.status ?? 1);
}

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
};
const SECONDS = arg('--seconds', 6);
const ROUNDS = arg('--rounds', 5);
const WARMUP_SECONDS = 1;
const RES = arg('--resolution', 64) as 64 | 128 | 256;

function emit(metric: string, value: number, unit: string, extra: Record<string, unknown> = {}): void {
  console.log(JSON.stringify({ bench: 'evac', metric, value: Math.round(value * 100) / 100, unit, resolution: RES, ...extra }));
}

const action = (k: number) =>
  new Tensor(
    'float32',
    [8, 7],
    Float32Array.from({ length: 56 }, (_, j) => Math.sin(k + j) * 0.8),
  );

interface Mode {
  runtime: WorldModelRuntime;
  envs: Env[];
  step: number;
}

async function setUp(sessions: number, batched: boolean): Promise<Mode> {
  const registry = new Registry();
  const runtime = registerEvac(registry, batched ? { maxBatch: 32, batchWindowMs: 2 } : { maxBatch: 1, batchWindowMs: 0 });
  const envs = await Promise.all(Array.from({ length: sessions }, () => registry.make(EVAC_ENV_ID, { resolution: RES })));
  await Promise.all(envs.map((e, i) => e.reset({ seed: i })));
  await Promise.all(envs.map(async (e) => e.step(action(0))));
  return { runtime, envs, step: 1 };
}

/**
 * One timed round: every session steps as fast as it can for `seconds`; returns steps per second
 * and the process's CPU time per step (all threads: less sensitive to other jobs than the rate).
 */
async function round(mode: Mode, seconds: number, loop: IntervalHistogram | null): Promise<{ rate: number; cpuMs: number }> {
  let steps = 0;
  const deadline = performance.now() + seconds * 1000;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  loop?.enable();
  await Promise.all(
    mode.envs.map(async (e, i) => {
      while (performance.now() < deadline) {
        const s = await e.step(action(i + mode.step++));
        steps++;
        if (s.terminated || s.truncated) await e.reset();
      }
    }),
  );
  loop?.disable();
  const cpu = process.cpuUsage(cpu0);
  return { rate: steps / ((performance.now() - t0) / 1000), cpuMs: (cpu.user + cpu.system) / 1000 / steps };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

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
  const one = await setUp(sessions, false);
  const bat = await setUp(sessions, true);
  const loop = sessions === 32 ? monitorEventLoopDelay({ resolution: 1 }) : null;
  const rates = { one: [] as number[], bat: [] as number[] };
  const cpu = { one: [] as number[], bat: [] as number[] };
  try {
    for (const mode of [one, bat]) await round(mode, WARMUP_SECONDS, null);
    for (let r = 0; r < ROUNDS; r++) {
      for (const [key, mode] of [
        ['one', one],
        ['bat', bat],
      ] as const) {
        const res = await round(mode, SECONDS / ROUNDS, key === 'bat' ? loop : null);
        rates[key].push(res.rate);
        cpu[key].push(res.cpuMs);
      }
    }
  } finally {
    await one.runtime.close();
    await bat.runtime.close();
  }
  const ratios = rates.bat.map((b, r) => b / rates.one[r]!);
  const rounded = (xs: number[]) => xs.map((x) => Math.round(x * 100) / 100);
  const cpuPerStep = (xs: number[]) => Math.round(median(xs) * 1000) / 1000;
  emit('chunk_steps_per_s', median(rates.one), 'steps/s', { sessions, mode: 'one-by-one', rounds: rounded(rates.one), cpu_ms_per_step: cpuPerStep(cpu.one) });
  emit('chunk_steps_per_s', median(rates.bat), 'steps/s', {
    sessions,
    mode: 'batched',
    rounds: rounded(rates.bat),
    cpu_ms_per_step: cpuPerStep(cpu.bat),
    max_batch_seen: bat.runtime.stats.maxBatchSeen,
  });
  emit('batched_speedup', median(ratios), 'x', {
    sessions,
    min: Math.round(Math.min(...ratios) * 100) / 100,
    rounds: rounded(ratios),
    ...(sessions === 32 ? { target: 4 } : {}),
  });
  if (loop) emit('event_loop_delay_p99', loop.percentile(99) / 1e6, 'ms', { sessions, mode: 'batched, model in worker', target: 5 });
}
emit('event_loop_delay_p99_floor', await mainThreadDelay(), 'ms', { sessions: 32, mode: 'same model run on the main thread' });
// What this machine's scheduler alone does to the event loop (other jobs share the cores).
const idle = monitorEventLoopDelay({ resolution: 1 });
idle.enable();
await new Promise((r) => setTimeout(r, 1000));
idle.disable();
emit('event_loop_delay_p99_idle', idle.percentile(99) / 1e6, 'ms', { sessions: 0, mode: 'idle process' });
