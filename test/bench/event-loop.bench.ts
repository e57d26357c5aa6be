/**
 * One client's heavy env work against another's ping, and what making a camera session costs the
 * event loop. Prints JSON lines:
 *   - bounds: building the bounds of one 3200x1800 camera's box element by element (how boxes
 *     were described before broadcast bounds; a session has six) and as built now;
 *   - answer: what one NAVSIM answer at the largest camera size (8 x [4, 1080, 1920, 3], 199 MB)
 *     costs the event loop to encode: whole (one copy, how answers were encoded before) and split
 *     (the frame's own bytes only; the tensors are written from their own memory);
 *   - ping: client B's ping round trips (p50, p99, max; and the max per phase) while client A (its
 *     own process) makes, resets and steps a driving session: first on an idle server (the floor:
 *     the machine's load alone, nothing else running), then Bench2Drive with no cameras, six
 *     default 1600x900 cameras with everything on the event loop, the same on env threads (the
 *     default), six 3200x1800 cameras on env threads over ws and uws, and NAVSIM with eight cameras
 *     of four frames each at the largest size its kwargs allow (1920x1080) and at the default size.
 *     The largest sizes also run with env threads at the event loop's priority (`_nice0`; env
 *     threads run at niceness 10 by default, see envs/core/thread-priority.ts). Each configuration
 *     starts after a full garbage collection, so none pays for the garbage of the one before.
 *   npx tsx test/bench/event-loop.bench.ts [--quick] [--only <name substring>]
 */
import { availableParallelism, cpus } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

import { connect } from '../../client/ts/client.ts';
import { bench2DriveEnvThreads, registerBench2Drive } from '../../envs/bench2drive/index.ts';
import { Registry } from '../../envs/core/registry.ts';
import type { EnvThreadPool } from '../../envs/core/env-threads.ts';
import { navsimEnvThreads, registerNavsim } from '../../envs/navsim/index.ts';
import { encode, encodeSplit } from '../../protocol/codec.ts';
import { box } from '../../protocol/spaces.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { startServer } from '../../server/index.ts';
import { pingGapsDuringHeavyClient } from '../helpers/ping-gaps.ts';

// A full garbage collection on demand, without --expose-gc on the command line.
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

const QUICK = process.argv.includes('--quick');
const ONLY = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1]! : '';
const machine = `${cpus()[0]?.model ?? 'cpu'} x${availableParallelism()}`;

function emit(bench: string, metric: string, value: number, unit: string, extra: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ bench, metric, value: Number(value.toFixed(1)), unit, machine, ...extra })}\n`);
}

// Bounds: one [1800, 3200, 3] uint8 box.
if (!ONLY) {
  const shape = [1800, 3200, 3];
  const n = shape.reduce((a, b) => a * b, 1);
  let t = performance.now();
  // The old construction: a JS array per bound, converted element by element.
  Tensor.from('uint8', shape, new Array<number>(n).fill(0));
  Tensor.from('uint8', shape, new Array<number>(n).fill(255));
  emit('bounds', 'per_element_one_3200x1800_ms', performance.now() - t, 'ms');
  t = performance.now();
  box({ low: 0, high: 255, shape, dtype: 'uint8' });
  emit('bounds', 'broadcast_one_3200x1800_ms', performance.now() - t, 'ms');
}

// Answer: one largest-size NAVSIM camera answer, encoded whole and split (best of three each).
if (!ONLY || 'answer'.includes(ONLY)) {
  const cameras: Record<string, Tensor> = {};
  for (let i = 0; i < 8; i++) cameras[`CAM_${i}`] = new Tensor('uint8', [4, 1080, 1920, 3], new Uint8Array(4 * 1080 * 1920 * 3).fill(i));
  const answer = { id: 1, type: 'result', result: { obs: { cameras, ego_status: Tensor.from('float32', [4, 7], new Float32Array(28)) }, reward: 0.9 } };
  const best = (f: () => void) => {
    let ms = Infinity;
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      f();
      ms = Math.min(ms, performance.now() - t);
    }
    return ms;
  };
  emit(
    'answer',
    'whole_encode_199mb_ms',
    best(() => encode(answer)),
    'ms',
  );
  emit(
    'answer',
    'split_encode_199mb_ms',
    best(() => encodeSplit(answer)),
    'ms',
  );
}

/** p50, p99 and max of round trips (ms). */
function quantiles(samples: number[]): { p50: number; p99: number; max: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return { p50: at(0.5), p99: at(0.99), max: sorted[sorted.length - 1] ?? 0 };
}

function emitPings(name: string, samples: number[], extra: Record<string, unknown> = {}): void {
  const q = quantiles(samples);
  for (const [k, v] of Object.entries(q)) emit('ping', `${name}_${k}_ms`, v, 'ms', { pings: samples.length, ...extra });
}

/** Where heavy work runs: Bench2Drive's and NAVSIM's env threads (null: the event loop). */
interface Placement {
  bench2drive: EnvThreadPool | null;
  navsim: EnvThreadPool | null;
}

async function pingRun(
  name: string,
  where: Placement,
  kwargs: Record<string, unknown>,
  steps: number,
  envId = 'gymwire/Bench2Drive-v0',
  transport: 'ws' | 'uws' = 'ws',
): Promise<void> {
  if (ONLY && !name.includes(ONLY)) return;
  // The previous configuration's garbage (gigabytes of camera answers) is freed before this one
  // starts, so its cost is not charged to this configuration's pings.
  collectGarbage();
  const registry = new Registry();
  registerBench2Drive(registry, { envThreads: where.bench2drive, renderPool: null });
  registerNavsim(registry, { envThreads: where.navsim });
  const server = await startServer({ port: 0, transport, registry, limits: { max_memory_bytes: 0, max_memory_bytes_per_client: 0 } });
  const b = await connect(server.url);
  try {
    // Warm: the first session's one-off costs (a render thread starting, code compiling) are not measured.
    const warm = await b.make('gymwire/Bench2Drive-v0', { cameras: ['CAM_FRONT'], camera_width: 64, camera_height: 36, route: 'HighwayCutIn_0' });
    await warm.reset({ seed: 0 });
    await warm.close();
    if (name === 'floor_idle_server') {
      // Nothing else runs on the server: what the machine's load alone costs a ping.
      const samples: number[] = [];
      const until = performance.now() + (QUICK ? 2000 : 5000);
      while (performance.now() < until) {
        const t0 = performance.now();
        await b.ping();
        samples.push(performance.now() - t0);
      }
      emitPings(name, samples);
      return;
    }
    const gaps = await pingGapsDuringHeavyClient(b, server.url, kwargs, steps, envId);
    emitPings(name, gaps.samples, { env: envId, transport });
    for (const [phase, ms] of Object.entries(gaps.maxByPhase)) emit('ping', `${name}_${phase}_max_ms`, ms, 'ms', { pings: gaps.pings });
  } finally {
    await b.close();
    await server.close(5000);
    await registry.close();
  }
}

const route = 'HighwayCutIn_0';
const steps = QUICK ? 2 : 5;
const offLoop: Placement = { bench2drive: bench2DriveEnvThreads(), navsim: navsimEnvThreads() };
// Env threads at the event loop's own priority (niceness 0) instead of thread-priority.ts's default.
const offLoopSamePriority: Placement = { bench2drive: bench2DriveEnvThreads({ nice: 0 }), navsim: navsimEnvThreads({ nice: 0 }) };
const onLoop: Placement = { bench2drive: null, navsim: null };
const navsim = 'gymwire/NavsimEnv-v2';
const navsimLargest = { cameras: true, camera_width: 1920, camera_height: 1080 };
const b2dLargest = { route, cameras: true, camera_width: 3200, camera_height: 1800 };
await pingRun('floor_idle_server', offLoop, {}, 0);
await pingRun('floor_no_cameras', offLoop, { route }, steps);
await pingRun('default_cameras_on_event_loop', onLoop, { route, cameras: true }, steps);
await pingRun('default_cameras_env_threads', offLoop, { route, cameras: true }, steps);
await pingRun('largest_cameras_env_threads', offLoop, b2dLargest, steps);
await pingRun('largest_cameras_env_threads_nice0', offLoopSamePriority, b2dLargest, steps);
await pingRun('largest_cameras_env_threads_uws', offLoop, b2dLargest, steps, 'gymwire/Bench2Drive-v0', 'uws');
await pingRun('navsim_no_cameras_on_event_loop', onLoop, {}, steps, navsim);
await pingRun('navsim_no_cameras_env_threads', offLoop, {}, steps, navsim);
await pingRun('navsim_default_cameras_env_threads', offLoop, { cameras: true }, steps, navsim);
await pingRun('navsim_largest_cameras_on_event_loop', onLoop, navsimLargest, steps, navsim);
await pingRun('navsim_largest_cameras_env_threads', offLoop, navsimLargest, steps, navsim);
await pingRun('navsim_largest_cameras_env_threads_nice0', offLoopSamePriority, navsimLargest, steps, navsim);
await pingRun('navsim_largest_cameras_env_threads_uws', offLoop, navsimLargest, steps, navsim, 'uws');
for (const pool of [offLoop, offLoopSamePriority].flatMap((p) => [p.bench2drive!, p.navsim!])) await pool.close();
