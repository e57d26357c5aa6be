/**
 * The Bench2Drive family: `gymwire/Bench2Drive-v0`, closed-loop routes scored with the CARLA
 * leaderboard 2.0 criteria as Bench2Drive uses them (see docs/envs/bench2drive.md).
 */
import { EnvThreadPool, type EnvThreadPoolOptions } from '../core/env-threads.ts';
import type { Registry } from '../core/registry.ts';
import { RenderPool } from '../driving/render/pool.ts';
import { Bench2DriveEnv, Bench2DriveKwargsSchema, estimateBench2DriveBytes } from './env.ts';
import { PooledCameras } from './pooled.ts';
import { MAX_TICKS } from './sim.ts';
import type { Bench2DriveThreadArgs } from './thread.ts';

export { Bench2DriveEnv } from './env.ts';
export { PooledCameras } from './pooled.ts';

export interface RegisterBench2DriveOptions {
  /**
   * Where sessions run (default: env threads of their own, closed with the registry): the
   * simulation costs up to ~100 ms a reset and cameras far more, all off the calling thread, the
   * cameras rendered there too. Null runs sessions on the calling thread (see renderPool).
   */
  envThreads?: EnvThreadPool | null;
  /**
   * Without env threads: where camera sessions render (default: a pool of their own, closed with
   * the registry); null renders on the calling thread, which then blocks for the whole of every frame.
   */
  renderPool?: RenderPool | null;
}

/** A pool of Bench2Drive env threads (for callers that share one between registries). */
export function bench2DriveEnvThreads(opts: EnvThreadPoolOptions = {}): EnvThreadPool {
  return new EnvThreadPool(new URL('./thread.ts', import.meta.url), import.meta.url, opts);
}

export function registerBench2Drive(registry: Registry, opts: RegisterBench2DriveOptions = {}): void {
  const envThreads = opts.envThreads === undefined ? registry.closes(bench2DriveEnvThreads()) : opts.envThreads;
  // Renders need a pool of their own only when sessions run on the calling thread.
  const renderPool = opts.renderPool !== undefined ? opts.renderPool : envThreads === null ? registry.closes(new RenderPool()) : null;
  registry.register({
    id: 'gymwire/Bench2Drive-v0',
    description:
      'Bench2Drive-style closed-loop driving at 20 Hz: one ~150 m route per episode (14 scenario types x 5 routes), throttle/steer/brake (or waypoints via PID), CARLA leaderboard 2.0 infractions, route completion, penalty and driving score in info; cameras/LiDAR optional.',
    entryPoint: (kwargs, { log }) => {
      if (envThreads) {
        // The shell (spaces, metadata, tool schemas) prepares no cameras; the env itself is built on its thread.
        return envThreads.make(new Bench2DriveEnv(kwargs, { externalCameras: true }), { kwargs } satisfies Bench2DriveThreadArgs, log);
      }
      if (!renderPool || !kwargs.cameras) return new Bench2DriveEnv(kwargs);
      return new PooledCameras(new Bench2DriveEnv(kwargs, { externalCameras: true }), renderPool);
    },
    kwargsSchema: Bench2DriveKwargsSchema,
    tools: Bench2DriveEnv.TOOLS,
    ownEpisodeSteps: MAX_TICKS,
    estimateBytes: estimateBench2DriveBytes,
    tags: ['driving', 'benchmark', 'bench2drive', 'closed-loop'],
  });
}
