/**
 * The Bench2Drive family: `gymwire/Bench2Drive-v0`, closed-loop routes scored with the CARLA
 * leaderboard 2.0 criteria as Bench2Drive uses them (see docs/envs/bench2drive.md).
 */
import type { Registry } from '../core/registry.ts';
import { RenderPool } from '../driving/render/pool.ts';
import { Bench2DriveEnv, Bench2DriveKwargsSchema, estimateBench2DriveBytes } from './env.ts';
import { PooledCameras } from './pooled.ts';

export { Bench2DriveEnv } from './env.ts';
export { PooledCameras } from './pooled.ts';

export interface RegisterBench2DriveOptions {
  /**
   * Where camera sessions render (default: a pool of their own, closed with the registry); null
   * renders on the calling thread, which then blocks for the whole of every frame.
   */
  renderPool?: RenderPool | null;
}

export function registerBench2Drive(registry: Registry, opts: RegisterBench2DriveOptions = {}): void {
  let pool = opts.renderPool;
  if (pool === undefined) {
    const own = new RenderPool();
    registry.onClose(() => own.close());
    pool = own;
  }
  const renderPool = pool;
  registry.register({
    id: 'gymwire/Bench2Drive-v0',
    description:
      'Bench2Drive-style closed-loop driving at 20 Hz: one ~150 m route per episode (14 scenario types x 5 routes), throttle/steer/brake (or waypoints via PID), CARLA leaderboard 2.0 infractions, route completion, penalty and driving score in info; cameras/LiDAR optional.',
    entryPoint: (kwargs) => {
      if (!renderPool || !kwargs.cameras) return new Bench2DriveEnv(kwargs);
      return new PooledCameras(new Bench2DriveEnv(kwargs, { externalCameras: true }), renderPool);
    },
    kwargsSchema: Bench2DriveKwargsSchema,
    tools: Bench2DriveEnv.TOOLS,
    estimateBytes: estimateBench2DriveBytes,
    tags: ['driving', 'benchmark', 'bench2drive', 'closed-loop'],
  });
}
