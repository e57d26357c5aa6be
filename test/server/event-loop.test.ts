/**
 * One client's heavy env work must not stall another's: while client A makes and resets a
 * Bench2Drive session with six cameras at the largest size its kwargs allow, client B pings the
 * same server (port 0, real sockets) back to back and its slowest ping is bounded. The issue's
 * target is 50 ms; the bound asserted here is looser so a loaded test machine cannot flip it, and
 * test/bench/event-loop.bench.ts reports the real figure (docs/benchmarks.md).
 */
import { afterEach, describe, expect, it } from 'vitest';

import { connect } from '../../client/ts/client.ts';
import { Registry } from '../../envs/core/registry.ts';
import { registerBench2Drive, Bench2DriveEnv } from '../../envs/bench2drive/index.ts';
import { registerClassic } from '../../envs/classic/index.ts';
import { RenderPool } from '../../envs/driving/render/pool.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { startServer } from '../../server/index.ts';
import { pingGapsDuringHeavyClient } from '../helpers/ping-gaps.ts';
import type { RunningServer } from '../../server/index.ts';

const LARGEST = { cameras: true, camera_width: 3200, camera_height: 1800, route: 'HighwayCutIn_0' };
/**
 * Generous against the 50 ms target: vitest runs other files on the same two cores meanwhile, and
 * the floor (no cameras) alone reached 180 ms there. Rendering on the event loop cost seconds.
 */
const MAX_PING_GAP_MS = 500;
/** For resets and steps, whose 104 MB answers are still encoded on the event loop (see below). */
const MAX_FRAME_PING_GAP_MS = 2500;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

async function serve(pool: RenderPool): Promise<RunningServer> {
  const registry = new Registry();
  registerClassic(registry);
  registerBench2Drive(registry, { renderPool: pool });
  const server = await startServer({ port: 0, transport: 'ws', registry, limits: { max_memory_bytes: 0, max_memory_bytes_per_client: 0 } });
  cleanups.push(() => server.close(5000));
  return server;
}

describe('heavy env work off the event loop', () => {
  it('answers another client’s ping promptly while a largest-size Bench2Drive camera session is made, reset and stepped', async () => {
    const pool = new RenderPool({ threads: 1 });
    cleanups.push(() => pool.close());
    const server = await serve(pool);
    const b = await connect(server.url);
    cleanups.push(() => b.close());
    // A server that has served before: the first camera session's one-off costs (starting the
    // render thread, compiling the env's code) are not what this measures.
    const warm = await b.make('gymwire/Bench2Drive-v0', { cameras: ['CAM_FRONT'], camera_width: 64, camera_height: 36, route: 'HighwayCutIn_0' });
    await warm.reset({ seed: 0 });
    await warm.close();

    // The floor: the same client and phases without cameras, so only the machine's load slows
    // pings; measured before and after, as the load of the other test files comes and goes.
    const floorBefore = await pingGapsDuringHeavyClient(b, server.url, { route: 'HighwayCutIn_0' }, 1);
    const gaps = await pingGapsDuringHeavyClient(b, server.url, LARGEST, 1);
    const floorAfter = await pingGapsDuringHeavyClient(b, server.url, { route: 'HighwayCutIn_0' }, 1);
    expect(floorBefore.lines).toEqual(['made', 'reset null', 'step']);
    expect(gaps.lines).toEqual(['made', 'reset [1800,3200,3]', 'step']);
    expect(gaps.pings).toBeGreaterThan(10);
    // On the event loop, making this session stalled pings for tens of seconds and each frame for
    // seconds. Making it now costs no more than the floor; its first frames still carry 104 MB
    // answers that are encoded and written on the event loop (the full suite on two cores took
    // resets to ~1.2 s there), so those get a looser bound that still fails rendering on the loop.
    const floor = Math.max(floorBefore.maxMs, floorAfter.maxMs);
    const report = JSON.stringify({ gaps: gaps.maxByPhase, floorBefore: floorBefore.maxByPhase, floorAfter: floorAfter.maxByPhase });
    expect(gaps.maxByPhase['make'], report).toBeLessThan(Math.max(MAX_PING_GAP_MS, 3 * floor));
    expect(gaps.maxMs, report).toBeLessThan(Math.max(MAX_FRAME_PING_GAP_MS, 3 * floor));
  }, 240_000);

  it('renders the same images on the pool as the env draws itself (same seed, same episode)', async () => {
    const pool = new RenderPool({ threads: 2 });
    cleanups.push(() => pool.close());
    const server = await serve(pool);
    const c = await connect(server.url);
    cleanups.push(() => c.close());
    const kwargs = { cameras: ['CAM_FRONT', 'CAM_BACK_LEFT'], camera_width: 96, camera_height: 54, route: 'PedestrianCrossing_1', render_mode: 'rgb_array' };
    const remote = await c.make('gymwire/Bench2Drive-v0', kwargs);
    const local = new Bench2DriveEnv(kwargs as never);
    const images = (obs: unknown) => Object.values((obs as { rgb: Record<string, Tensor> }).rgb).map((t) => Buffer.from(t.bytes()).toString('base64'));
    expect(images((await remote.reset({ seed: 5 })).obs)).toEqual(images(local.reset({ seed: 5 }).obs));
    for (let i = 0; i < 10; i++) {
      const action = Tensor.from('float32', [3], [0.6, i % 3 === 0 ? 0.1 : 0, 0]);
      const r = await remote.step(action);
      const l = local.step(action);
      expect(images(r.obs)).toEqual(images(l.obs));
      expect(r.reward).toBe(l.reward);
    }
    const frame = (await remote.render()) as Tensor;
    expect(frame.shape).toEqual([54, 96, 3]);
    expect(Buffer.from(frame.bytes()).equals(Buffer.from(local.render()!.bytes()))).toBe(true);
    await expect(remote.step(Tensor.from('float32', [3], [2, 0, 0]))).rejects.toMatchObject({ code: 'ENV_ERR_INVALID_ACTION' });
  });
});
