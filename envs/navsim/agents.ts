/**
 * Baseline NAVSIM agents as functions scene -> trajectory (8 poses, rear-axle frame, 0.5 s): the
 * constant-velocity agent (drives straight on at the current speed), PDM-Closed, and the logged
 * human. The first works from the observation alone (`constantVelocityFromObs`).
 *
 * @example
 * const poses = BASELINES['pdm-closed'](scene);
 */
import { SceneScorer } from './evaluate.ts';
import type { Scene } from './scene.ts';

export type Poses = number[][];

/** Constant velocity from the ego status observation (float32 [4, 7]; last row is the current frame). */
export function constantVelocityFromObs(egoStatus: ArrayLike<number>): Poses {
  const vx = egoStatus[3 * 7 + 3] as number,
    vy = egoStatus[3 * 7 + 4] as number;
  return Array.from({ length: 8 }, (_, k) => [vx * 0.5 * (k + 1), vy * 0.5 * (k + 1), 0]);
}

export function constantVelocity(scene: Scene): Poses {
  return Array.from({ length: 8 }, (_, k) => [scene.ego.vx * 0.5 * (k + 1), scene.ego.vy * 0.5 * (k + 1), 0]);
}

export function pdmClosedAgent(scene: Scene, version: 1 | 2 = 1): Poses {
  return new SceneScorer(scene).pdmClosed(version).poses;
}

export function humanAgent(scene: Scene): Poses {
  if (!scene.human_trajectory) throw new Error(`scene ${scene.name} has no human trajectory`);
  return scene.human_trajectory.poses.map((p) => [...p]);
}

export const BASELINES: Record<string, (scene: Scene, version?: 1 | 2) => Poses> = {
  'constant-velocity': constantVelocity,
  'pdm-closed': pdmClosedAgent,
  human: humanAgent,
};
