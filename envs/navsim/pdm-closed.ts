/**
 * PDM-Closed as NAVSIM's metric caching runs it (`pdm_closed_planner.py`,
 * `abstract_pdm_closed_planner.py`, `pdm_generator.py`): IDM proposals along the route centreline
 * and its +-1 m parallels at speed-limit fractions 0.2..1.0 (15 proposals), unrolled path by path.
 * Every second step the leading agent is searched among the objects of PDM-Closed's own
 * constant-velocity forecast (pdm-observation.ts) that touch the path's driving corridor (the
 * path ahead buffered by half the ego width, square caps); one leading-agent buffer serves all
 * proposals of a path without being reset, so a proposal with nothing ahead keeps the previous
 * proposal's lead velocity and one following a red light keeps its rear length, as NAVSIM's does.
 * The proposals are simulated with the LQR tracker, scored against the same forecast, and the best
 * one (first on ties) is unrolled to 5 s and returned. Used to normalise ego progress and as a
 * baseline agent.
 *
 * @example
 * const { states, poses } = pdmClosed(scene, world, 1);
 */
import { S, STATE_SIZE } from '../driving/bicycle.ts';
import { boxCorners, normalizeAngle, relativePose } from '../driving/geometry.ts';
import { simulate } from '../driving/lqr.ts';
import type { FrameObject, ScoringWorld, Version } from './pdm.ts';
import { aggregate, buildWorld, proposalMetrics } from './pdm.ts';
import { forecastWorld } from './pdm-observation.ts';
import { Corridor, SE2Path, discreteCenterline, parallelPath, polygonDistance } from './pdm-path.ts';
import type { Scene } from './scene.ts';
import { egoStateArray, sampleStates } from './trajectory.ts';

export const PDM_CLOSED = {
  speedLimitFractions: [0.2, 0.4, 0.6, 0.8, 1.0],
  fallbackTargetVelocity: 15,
  lateralOffsets: [-1, 1],
  minGap: 1,
  headway: 1.5,
  accelMax: 1.5,
  decelMax: 3,
  exponent: 10,
  mapRadius: 100,
  trajectoryPoses: 50,
  leadingAgentUpdate: 2,
} as const;

export interface PdmClosedResult {
  /** Simulated states of the chosen proposal (41 x 11, flat). */
  states: Float64Array;
  /** The chosen proposal's reference states (41 x 11, flat; only x, y, heading set). */
  reference: Float64Array;
  /** The trajectory as 8 poses in the rear-axle frame at 0.5 s (a NAVSIM agent's output). */
  poses: number[][];
  proposalIndex: number;
}

/** One lateral path's unrolling: IDM states (progress, velocity), SE2 states and leading agents per proposal. */
interface PathBatch {
  path: SE2Path;
  corridor: Corridor;
  targets: number[];
  idm: Float64Array[]; // per proposal: (progress, velocity) x (T + 1)
  se2: Float64Array[]; // per proposal: (x, y, heading) x (T + 1)
  lead: Float64Array[]; // per proposal: (progress, velocity, rear length) x (T + 1)
}

const DT = 0.1;
const PROPOSAL_POSES = 40;

/**
 * Runs PDM-Closed on a scene. `world` is the scoring world of the same version: its map, route,
 * centreline lanes and drivable-area layers are reused; the objects come from PDM-Closed's own
 * constant-velocity forecast, never from the logged future.
 */
export function pdmClosed(scene: Scene, world: ScoringWorld = buildWorld(scene, 1), version: Version = 1): PdmClosedResult {
  const ego = scene.ego;
  const v = world.vehicle;
  const forecast = forecastWorld(scene, world);
  const speedLimit = world.centerlineLanes[0]?.speedLimit ?? null;
  const targets = PDM_CLOSED.speedLimitFractions.map((f) => f * (speedLimit ?? PDM_CLOSED.fallbackTargetVelocity));
  const maxTarget = Math.max(...targets);
  const T = PDM_CLOSED.trajectoryPoses;
  const centre = discreteCenterline(world.centerlineLanes);
  const paths = [centre, ...PDM_CLOSED.lateralOffsets.map((o) => parallelPath(centre, o))].map((d) => new SE2Path(d));

  const batches: PathBatch[] = paths.map((path) => {
    const progress0 = path.project(ego.x, ego.y);
    const corridor = new Corridor(path.substring(progress0, progress0 + Math.abs(maxTarget) * T * DT), v.width / 2);
    const start = path.interpolate(progress0);
    const batch: PathBatch = { path, corridor, targets: [...targets], idm: [], se2: [], lead: [] };
    for (let p = 0; p < targets.length; p++) {
      const idm = new Float64Array((T + 1) * 2),
        se2 = new Float64Array((T + 1) * 3);
      idm[0] = progress0;
      idm[1] = ego.vx;
      se2.set(start, 0);
      batch.idm.push(idm);
      batch.se2.push(se2);
      batch.lead.push(new Float64Array((T + 1) * 3));
    }
    for (let t = 1; t <= PROPOSAL_POSES; t++) step(batch, [...targets.keys()], t, forecast);
    return batch;
  });

  // Simulate and score the 41-state proposals against the forecast, as the planner does.
  const init = egoStateArray(ego);
  const proposals: { batch: PathBatch; index: number }[] = batches.flatMap((batch) => batch.targets.map((_t, index) => ({ batch, index })));
  const simulated = proposals.map(({ batch, index }) => simulate(referenceFromSe2(batch.se2[index] as Float64Array, PROPOSAL_POSES + 1), init));
  const scored = aggregate(
    simulated.map((s) => proposalMetrics(s, forecast, { version })),
    version,
  );
  let bestIdx = 0;
  scored.forEach((s, i) => {
    if (s.pdms > (scored[bestIdx]?.pdms ?? -1)) bestIdx = i;
  });

  // `generate_trajectory`: the chosen proposal alone is unrolled on to 5 s.
  const best = proposals[bestIdx] as { batch: PathBatch; index: number };
  for (let t = PROPOSAL_POSES + 1; t <= T; t++) step(best.batch, [best.index], t, forecast);
  const chosen = referenceFromSe2(best.batch.se2[best.index] as Float64Array, T + 1);

  // Re-sample the chosen trajectory as NAVSIM's scoring does (microsecond time points, truncated).
  const t0 = scene.timestamp_us;
  const knots: Float64Array[] = [],
    times: number[] = [];
  for (let i = 0; i <= T; i++) {
    knots.push(chosen.slice(i * STATE_SIZE, (i + 1) * STATE_SIZE));
    times.push(t0 + i * 100000);
  }
  const reference = sampleStates(times, knots, t0, PROPOSAL_POSES + 1, DT);
  const states = simulate(reference, init);
  const poses: number[][] = [];
  for (let k = 1; k <= 8; k++) {
    const o = k * 5 * STATE_SIZE;
    const rp = relativePose(ego, { x: reference[o + S.X] as number, y: reference[o + S.Y] as number, heading: reference[o + S.HEADING] as number });
    poses.push([rp.x, rp.y, rp.heading]);
  }
  return { states, reference, poses, proposalIndex: bestIdx };
}

function referenceFromSe2(se2: Float64Array, count: number): Float64Array {
  const ref = new Float64Array(count * STATE_SIZE);
  for (let i = 0; i < count; i++) {
    ref[i * STATE_SIZE + S.X] = se2[3 * i] as number;
    ref[i * STATE_SIZE + S.Y] = se2[3 * i + 1] as number;
    ref[i * STATE_SIZE + S.HEADING] = se2[3 * i + 2] as number;
  }
  return ref;
}

/** One unrolling step for the proposals `members` of a path: leading agents, IDM, then poses. */
function step(batch: PathBatch, members: number[], t: number, forecast: ScoringWorld): void {
  updateLeadingAgents(batch, members, t, forecast);
  const P = PDM_CLOSED;
  for (const p of members) {
    const idm = batch.idm[p] as Float64Array,
      lead = batch.lead[p] as Float64Array;
    const x = idm[2 * (t - 1)] as number,
      vel = idm[2 * (t - 1) + 1] as number;
    const xLead = lead[3 * t] as number,
      vLead = lead[3 * t + 1] as number,
      rearLead = lead[3 * t + 2] as number;
    const sStar = P.minGap + vel * P.headway + (vel * (vel - vLead)) / (2 * Math.sqrt(P.accelMax * P.decelMax));
    const sAlpha = Math.max(xLead - x - rearLead, P.minGap);
    let acc = P.accelMax * (1 - Math.pow(vel / (batch.targets[p] as number), P.exponent) - (sStar / sAlpha) ** 2);
    acc = Math.min(P.accelMax, Math.max(-P.decelMax, acc));
    idm[2 * t] = x + DT * vel;
    idm[2 * t + 1] = vel + DT * acc;
    (batch.se2[p] as Float64Array).set(batch.path.interpolate(idm[2 * t] as number), 3 * t);
  }
}

/**
 * `_update_leading_agents`: every second step, the objects touching the corridor (not overlapped
 * at t = 0) are projected onto the path; each proposal takes the nearest one ahead of it by
 * polygon distance, the first in frame order (the occupancy map's STR-tree order) among equally near
 * ones, as NAVSIM's `np.argmin` over its query result. One buffer is written for all proposals in
 * turn and never reset, as in NAVSIM.
 */
function updateLeadingAgents(batch: PathBatch, members: number[], t: number, forecast: ScoringWorld): void {
  if (t % PDM_CLOSED.leadingAgentUpdate !== 0) {
    for (const p of members) (batch.lead[p] as Float64Array).copyWithin(3 * t, 3 * (t - 1), 3 * t);
    return;
  }
  const frame = forecast.frames[t] ?? [];
  const candidates: { o: FrameObject; progress: number }[] = [];
  for (const o of frame) {
    if (forecast.ignoredTokens.has(o.token)) continue;
    if (!batch.corridor.intersects(o.polygon, [o.minX, o.minY, o.maxX, o.maxY])) continue;
    candidates.push({ o, progress: batch.path.project(o.cx, o.cy) });
  }
  const v = forecast.vehicle;
  const toCenter = (v.front + v.rear) / 2 - v.rear;
  const buffer = new Float64Array(3);
  for (const p of members) {
    const egoProgress = (batch.idm[p] as Float64Array)[2 * (t - 1)] as number;
    const ahead = candidates.filter((c) => c.progress > egoProgress);
    if (ahead.length > 0) {
      const se2 = batch.se2[p] as Float64Array;
      const x = se2[3 * (t - 1)] as number,
        y = se2[3 * (t - 1) + 1] as number,
        h = se2[3 * (t - 1) + 2] as number;
      const egoPoly = boxCorners({ x: x + toCenter * Math.cos(h), y: y + toCenter * Math.sin(h), heading: h, length: v.front + v.rear, width: v.width });
      let nearest = ahead[0] as { o: FrameObject; progress: number },
        nearestD = Infinity;
      for (const c of ahead) {
        const d = polygonDistance(egoPoly, c.o.polygon);
        if (d < nearestD) {
          nearestD = d;
          nearest = c;
        }
      }
      buffer[0] = egoProgress + nearestD;
      if (!nearest.o.redLight) {
        const u = forecast.unique.get(nearest.o.token);
        buffer[1] = !u || u.isStatic ? 0 : u.speed * Math.cos(normalizeAngle(u.heading - h));
      }
    } else {
      buffer[0] = batch.path.length;
      buffer[2] = (v.front + v.rear) / 2;
    }
    (batch.lead[p] as Float64Array).set(buffer, 3 * t);
  }
}
