/**
 * One client's heavy env work must not stall another's: while client A (its own process) makes,
 * resets and steps a Bench2Drive session with six cameras and a NAVSIM session with eight
 * four-frame cameras, each at the largest size its kwargs allow (answers of 104 and 199 MB), client
 * B pings the same server (port 0, real sockets) back to back, on ws and on uws. Env work runs on
 * env threads and large answers leave as split frames (no copy on the event loop), so B's slowest
 * ping stays within a bound derived from the floor: the same phases without cameras, measured
 * before and after in the same test, since the load of a shared two-core machine alone costs
 * pings up to hundreds of milliseconds there. The target is 50 ms on an unloaded machine;
 * test/bench/event-loop.bench.ts reports the figures (docs/benchmarks.md).
 */
import { afterEach, describe, expect, it } from 'vitest';

import { connect } from '../../client/ts/client.ts';
import { Registry } from '../../envs/core/registry.ts';
import { registerBench2Drive, Bench2DriveEnv } from '../../envs/bench2drive/index.ts';
import { registerClassic } from '../../envs/classic/index.ts';
import { registerNavsim } from '../../envs/navsim/index.ts';
import { RenderPool } from '../../envs/driving/render/pool.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { startServer } from '../../server/index.ts';
import { pingGapsDuringHeavyClient } from '../helpers/ping-gaps.ts';
import type { RunningServer } from '../../server/index.ts';

const BENCH2DRIVE = 'gymwire/Bench2Drive-v0';
const NAVSIM = 'gymwire/NavsimEnv-v2';
const ROUTE = { route: 'HighwayCutIn_0' };
const LARGEST: [string, Record<string, unknown>, string][] = [
  [BENCH2DRIVE, { ...ROUTE, cameras: true, camera_width: 3200, camera_height: 1800 }, 'reset [1800,3200,3]'],
  [NAVSIM, { cameras: true, camera_width: 1920, camera_height: 1080 }, 'reset [4,1080,1920,3]'],
];
/**
 * How much slower than the floor B's worst ping may be. Copying one 199 MB answer on the event
 * loop cost 1.6-2.1 s on the loaded two-core machine, and rendering there seconds more, so the
 * bound still fails either; what it allows is the extra CPU load of A's rendering threads and
 * its decoding, which starves the server's process on two cores without blocking its loop.
 */
const bound = (floorMs: number) => Math.max(3 * floorMs, floorMs + 300);
const secondSlowest = (samples: number[]) => [...samples].sort((a, b) => b - a)[1] ?? 0;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

async function serve(transport: 'ws' | 'uws', pool: RenderPool | null = null): Promise<RunningServer> {
  const registry = new Registry();
  registerClassic(registry);
  // With a render pool: sessions simulate on the calling thread and render on the pool (the path without env threads).
  registerBench2Drive(registry, pool ? { envThreads: null, renderPool: pool } : {});
  registerNavsim(registry);
  const server = await startServer({ port: 0, transport, registry, limits: { max_memory_bytes: 0, max_memory_bytes_per_client: 0 } });
  cleanups.push(async () => {
    await server.close(5000);
    await registry.close();
  });
  return server;
}

describe.each(['ws', 'uws'] as const)('heavy env work off the event loop (%s)', (transport) => {
  it('answers another client’s ping promptly while largest-size Bench2Drive and NAVSIM camera sessions are made, reset and stepped', async () => {
    const server = await serve(transport);
    const b = await connect(server.url);
    cleanups.push(() => b.close());
    // A server that has served before: the first sessions' one-off costs (starting env threads,
    // compiling the envs' code) are not what this measures.
    for (const envId of [BENCH2DRIVE, NAVSIM]) {
      const warm = await b.make(envId, envId === BENCH2DRIVE ? { ...ROUTE, cameras: ['CAM_FRONT'], camera_width: 64, camera_height: 36 } : {});
      await warm.reset({ seed: 0 });
      await warm.close();
    }
    const floorRun = async () => {
      const runs = [await pingGapsDuringHeavyClient(b, server.url, ROUTE, 1, BENCH2DRIVE), await pingGapsDuringHeavyClient(b, server.url, {}, 1, NAVSIM)];
      for (const r of runs) expect(r.lines).toEqual(['made', 'reset null', 'step']);
      return Math.max(...runs.map((r) => r.maxMs));
    };
    const floorBefore = await floorRun();
    const heavy: Record<string, { maxMs: number; samples: number[]; maxByPhase: Record<string, number> }> = {};
    for (const [envId, kwargs, resetLine] of LARGEST) {
      const gaps = await pingGapsDuringHeavyClient(b, server.url, kwargs, 1, envId);
      expect(gaps.lines).toEqual(['made', resetLine, 'step']);
      expect(gaps.pings).toBeGreaterThan(10);
      heavy[envId] = gaps;
    }
    const floorAfter = await floorRun();
    const floor = Math.max(floorBefore, floorAfter);
    const report = JSON.stringify({
      transport,
      floorBefore,
      floorAfter,
      bound: bound(floor),
      heavy: Object.fromEntries(Object.entries(heavy).map(([id, g]) => [id, { maxMs: g.maxMs, secondMs: secondSlowest(g.samples), maxByPhase: g.maxByPhase }])),
    });
    // The second-slowest ping, not the slowest: each run sends two large answers (reset's and
    // step's observations), so copying them on the event loop stalls at least two pings, while one
    // scheduler stall on a loaded machine (a single slow ping) is not what this test is about.
    for (const gaps of Object.values(heavy)) expect(secondSlowest(gaps.samples), report).toBeLessThan(bound(floor));
  }, 600_000);
});

describe.each(['env threads', 'a render pool'] as const)('Bench2Drive sessions on %s', (where) => {
  it('draw the same images as the env draws itself (same seed, same episode)', async () => {
    const pool = where === 'a render pool' ? new RenderPool({ threads: 2 }) : null;
    if (pool) cleanups.push(() => pool.close());
    const server = await serve('ws', pool);
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
