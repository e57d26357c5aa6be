/**
 * The Bench2Drive family: `gymwire/Bench2Drive-v0`, closed-loop routes scored with the CARLA
 * leaderboard 2.0 criteria as Bench2Drive uses them (see docs/envs/bench2drive.md).
 */
import type { Registry } from '../core/registry.ts';
import { Bench2DriveEnv, Bench2DriveKwargsSchema, estimateBench2DriveBytes } from './env.ts';

export { Bench2DriveEnv } from './env.ts';

export function registerBench2Drive(registry: Registry): void {
  registry.register({
    id: 'gymwire/Bench2Drive-v0',
    description:
      'Bench2Drive-style closed-loop driving at 20 Hz: one ~150 m route per episode (14 scenario types x 5 routes), throttle/steer/brake (or waypoints via PID), CARLA leaderboard 2.0 infractions, route completion, penalty and driving score in info; cameras/LiDAR optional.',
    entryPoint: (kwargs) => new Bench2DriveEnv(kwargs),
    kwargsSchema: Bench2DriveKwargsSchema,
    estimateBytes: estimateBench2DriveBytes,
    tags: ['driving', 'benchmark', 'bench2drive', 'closed-loop'],
  });
}
