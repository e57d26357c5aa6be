/**
 * NAVSIM v2's two-stage pseudo-simulation for gymwire scenes. Stage-2 scenes are the same scene
 * 4 s later, started from perturbed ego states around the logged human's 4 s endpoint (NAVSIM
 * pre-renders such follow-ups from perturbed start states); background agents continue on their
 * tracks. The agent's stage-2 plan is scored on every follow-up, each weighted by
 * w = exp(-d² / (2 · 0.1)) with d the distance from the agent's simulated stage-1 endpoint to that
 * follow-up's start; group score = stage-1 score × weighted mean of stage-2 scores.
 *
 * @example
 * const ups = followUpScenes(scene);   // 5 scenes
 */
import { STATE_SIZE } from '../driving/bicycle.ts';
import { absolutePose } from '../driving/geometry.ts';
import type { Scene } from './scene.ts';

export const STAGE2_OFFSET_S = 4;
/** Perturbations of the follow-up start in the human endpoint's frame: (longitudinal, lateral) metres. */
export const STAGE2_PERTURBATIONS: readonly [number, number][] = [
  [0, 0],
  [-2, 0],
  [2, 0],
  [0, -0.6],
  [0, 0.6],
];

/** The follow-up (stage-2) scenes of `scene`, or [] when it lacks a human trajectory or agent tracks to 8 s. */
export function followUpScenes(scene: Scene): Scene[] {
  const h = scene.human_trajectory;
  if (!h || h.poses.length < 2) return [];
  const last = h.poses[h.poses.length - 1] as [number, number, number];
  const prev = h.poses[h.poses.length - 2] as [number, number, number];
  const end = absolutePose(scene.ego, { x: last[0], y: last[1], heading: last[2] });
  const speed = Math.hypot(last[0] - prev[0], last[1] - prev[1]) / h.interval_length;
  const dt = STAGE2_OFFSET_S;
  const agents = scene.agents
    .map((a) => ({
      ...a,
      states: a.states
        .filter((s) => (s[0] as number) >= dt - 1.5 - 1e-6)
        .map((s) => [Math.round(((s[0] as number) - dt) * 10) / 10, s[1], s[2], s[3], s[4], s[5]] as [number, number, number, number, number, number]),
    }))
    .filter((a) => a.states.length > 0 && (a.states.length === 1 || (a.states[a.states.length - 1]?.[0] ?? 0) >= 4 - 1e-6));
  return STAGE2_PERTURBATIONS.map(([dl, dlat], i) => {
    const start = absolutePose(end, { x: dl, y: dlat, heading: 0 });
    return {
      ...scene,
      name: `${scene.name}/stage2-${i}`,
      scene_type: 'synthetic' as const,
      timestamp_us: scene.timestamp_us + dt * 1_000_000,
      traffic_lights: scene.traffic_lights.map((t) => ({ ...t, t: Math.max(0, t.t - dt) })),
      ego: { x: start.x, y: start.y, heading: start.heading, vx: speed, vy: 0, ax: 0, ay: 0 },
      ego_history: undefined,
      agents,
      agent_trajectory: undefined,
      human_trajectory: undefined,
    };
  });
}

/** The rear-axle endpoint of simulated states (flat, 11 per state). */
export function endpoint(states: Float64Array): { x: number; y: number } {
  const o = states.length - STATE_SIZE;
  return { x: states[o] as number, y: states[o + 1] as number };
}
