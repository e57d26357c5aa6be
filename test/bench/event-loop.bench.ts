/**
 * One client's heavy env work against another's ping, and what making a camera session costs the
 * event loop. Prints JSON lines:
 *   - bounds: building the bounds of one 3200x1800 camera's box element by element (how boxes
 *     were described before broadcast bounds; a session has six) and as built now;
 *   - ping: the slowest ping of client B while client A (its own process) makes, resets and steps
 *     a Bench2Drive session, per phase: no cameras (the floor: the machine's load alone), six
 *     default 1600x900 cameras rendered on the event loop (before the render pool), the same on
 *     the render pool, and six 3200x1800 cameras on the render pool.
 *   npx tsx test/bench/event-loop.bench.ts [--quick]
 */
import { availableParallelism, cpus } from 'node:os';

import { connect } from '../../client/ts/client.ts';
import { registerBench2Drive } from '../../envs/bench2drive/index.ts';
import { Registry } from '../../envs/core/registry.ts';
import { RenderPool } from '../../envs/driving/render/pool.ts';
import { box } from '../../protocol/spaces.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { startServer } from '../../server/index.ts';
import { pingGapsDuringHeavyClient } from '../helpers/ping-gaps.ts';

const QUICK = process.argv.includes('--quick');
const machine = `${cpus()[0]?.model ?? 'cpu'} x${availableParallelism()}`;

function emit(bench: string, metric: string, value: number, unit: string, extra: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ bench, metric, value: Number(value.toFixed(1)), unit, machine, ...extra })}\n`);
}

// Bounds: one [1800, 3200, 3] uint8 box.
{
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

async function pingRun(name: string, pool: RenderPool | null, kwargs: Record<string, unknown>, steps: number): Promise<void> {
  const registry = new Registry();
  registerBench2Drive(registry, { renderPool: pool });
  const server = await startServer({ port: 0, transport: 'ws', registry, limits: { max_memory_bytes: 0, max_memory_bytes_per_client: 0 } });
  const b = await connect(server.url);
  try {
    // Warm: the first session's one-off costs (a render thread starting, code compiling) are not measured.
    const warm = await b.make('gymwire/Bench2Drive-v0', { cameras: ['CAM_FRONT'], camera_width: 64, camera_height: 36, route: 'HighwayCutIn_0' });
    await warm.reset({ seed: 0 });
    await warm.close();
    const gaps = await pingGapsDuringHeavyClient(b, server.url, kwargs, steps);
    for (const [phase, ms] of Object.entries(gaps.maxByPhase)) emit('ping', `${name}_${phase}_max_ms`, ms, 'ms', { pings: gaps.pings });
  } finally {
    await b.close();
    await server.close(5000);
    await registry.close();
  }
}

const route = 'HighwayCutIn_0';
const steps = QUICK ? 2 : 5;
const pool = new RenderPool();
await pingRun('floor_no_cameras', pool, { route }, steps);
await pingRun('default_cameras_on_event_loop', null, { route, cameras: true }, steps);
await pingRun('default_cameras_render_pool', pool, { route, cameras: true }, steps);
await pingRun('largest_cameras_render_pool', pool, { route, cameras: true, camera_width: 3200, camera_height: 1800 }, steps);
await pool.close();
