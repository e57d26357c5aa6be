/**
 * NAVSIM sessions run on env threads, not the server's event loop: no NAVSIM reset or step runs
 * on the main thread while a session is made, reset and stepped; the server answers a ping sent
 * right after a camera reset before that reset; the results are byte-for-byte those of the env
 * run in-process; errors, tools and state cross the thread with their wire codes. Counts and
 * ordering, not timing, so a loaded machine cannot flip them; test/bench/event-loop.bench.ts
 * reports the ping times.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';

import { connect } from '../../client/ts/client.ts';
import type { EnvThreadPool } from '../../envs/core/env-threads.ts';
import { ThreadedEnv } from '../../envs/core/env-threads.ts';
import { Registry } from '../../envs/core/registry.ts';
import { unwrap } from '../../envs/core/wrappers.ts';
import { NavsimEnv } from '../../envs/navsim/env.ts';
import { navsimEnvThreads, registerNavsim } from '../../envs/navsim/index.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { startServer } from '../../server/index.ts';
import type { RunningServer } from '../../server/index.ts';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

async function serve(envThreads: EnvThreadPool | null): Promise<RunningServer> {
  const registry = new Registry();
  registerNavsim(registry, { envThreads });
  const server = await startServer({ port: 0, transport: 'ws', registry, limits: { max_memory_bytes: 0, max_memory_bytes_per_client: 0 } });
  cleanups.push(() => server.close(5000));
  return server;
}

function pool(): EnvThreadPool {
  const p = navsimEnvThreads({ threads: 1 });
  cleanups.push(() => p.close());
  return p;
}

const PLAN = Tensor.from('float32', [8, 3], Array.from({ length: 8 }, (_, i) => [2 * (i + 1), 0.1 * i, 0]).flat());
const CAMERAS = { cameras: true, camera_width: 640, camera_height: 360 };

/** Which answer arrives first: a camera reset's, or that of a ping sent right after it on the same connection. */
async function firstAnswer(server: RunningServer): Promise<string[]> {
  const c = await connect(server.url, { requestTimeoutMs: 120_000 });
  cleanups.push(() => c.close());
  const env = await c.make('gymwire/NavsimEnv-v2', CAMERAS);
  await env.reset({ seed: 0 }); // warm: the thread and the scene cache
  const order: string[] = [];
  const reset = env.reset({ seed: 1, options: { scene_index: 7 } }).then(() => order.push('reset'));
  const ping = c.ping().then(() => order.push('ping'));
  await Promise.all([reset, ping]);
  return order;
}

describe('NAVSIM on env threads', () => {
  it('runs no NAVSIM work on the main thread, and answers a ping sent after a camera reset first', async () => {
    const onMain = [vi.spyOn(NavsimEnv.prototype, 'reset'), vi.spyOn(NavsimEnv.prototype, 'step'), vi.spyOn(NavsimEnv.prototype, 'render')];
    cleanups.push(async () => onMain.forEach((s) => s.mockRestore()));
    expect(await firstAnswer(await serve(pool()))).toEqual(['ping', 'reset']);
    for (const spy of onMain) expect(spy).not.toHaveBeenCalled();
    // The control: the same session on the event loop does its work here.
    await firstAnswer(await serve(null));
    expect(onMain[0]).toHaveBeenCalled();
  }, 240_000);

  it('gives the in-process env’s observations, rewards and infos, and its tools and state', async () => {
    const registry = new Registry();
    registerNavsim(registry, { envThreads: pool() });
    const env = await registry.make('gymwire/NavsimEnv-v2', { ...CAMERAS, camera_width: 64, camera_height: 36, bev: true });
    cleanups.push(async () => env.close?.());
    expect(unwrap(env)).toBeInstanceOf(ThreadedEnv);
    const local = new NavsimEnv(2, { ...CAMERAS, camera_width: 64, camera_height: 36, bev: true });
    expect(env.observationSpace).toEqual(local.observationSpace);
    const bytes = (obs: unknown) =>
      JSON.stringify(obs, (_k, v: unknown) => (v instanceof Tensor ? `${v.dtype}[${v.shape.join(',')}]:${Buffer.from(v.bytes()).toString('base64')}` : v));
    const r = await env.reset({ seed: 3 });
    const l = local.reset({ seed: 3 });
    expect(bytes(r.obs)).toEqual(bytes(l.obs));
    expect(r.info).toEqual(l.info);
    const state = await env.getState!();
    const s = await env.step(PLAN);
    const ls = local.step(PLAN);
    expect(s.reward).toBe(ls.reward);
    expect(s.info).toEqual(ls.info);
    // State crosses the thread: restoring it replays the same step.
    await env.setState!(state);
    expect((await env.step(PLAN)).reward).toBe(ls.reward);
    // Tools run on the thread against the session's scene.
    await env.reset({ seed: 3 });
    local.reset({ seed: 3 });
    const tool = env.tools!.find((t) => t.name === 'get_ego_state')!;
    const localTool = local.tools.find((t) => t.name === 'get_ego_state')!;
    expect(await tool.handler({} as never, { env, wrapped: env })).toEqual(await localTool.handler({} as never, { env: local, wrapped: local }));
  }, 120_000);

  it('reports env errors from the thread with their wire codes, and the session keeps working', async () => {
    const server = await serve(pool());
    const c = await connect(server.url);
    cleanups.push(() => c.close());
    const env = await c.make('gymwire/NavsimEnv-v1');
    await expect(env.step(PLAN)).rejects.toMatchObject({ code: 'ENV_ERR_RESET_NEEDED' });
    await expect(env.reset({ options: { scene_index: 10_000 } })).rejects.toMatchObject({ code: 'ENV_ERR_INVALID_OPTIONS' });
    await env.reset({ seed: 0 });
    const r = await env.step(PLAN);
    expect(r.terminated).toBe(true);
    expect(typeof r.reward).toBe('number');
    await expect(c.make('gymwire/NavsimEnv-v1', { scene_dir: '/etc' })).rejects.toMatchObject({ code: 'ENV_ERR_INVALID_KWARGS' });
  }, 120_000);
});
