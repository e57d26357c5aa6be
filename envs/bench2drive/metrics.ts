/**
 * Bench2Drive's aggregate metrics, reproduced from its scripts: Driving Score and Success Rate
 * (`merge_route_json.py`), Efficiency and Comfortness (`efficiency_smoothness_benchmark.py`) and
 * the multi-ability table (`ability_benchmark.py`).
 *
 * Behaviours of those scripts kept on purpose (documented in docs/envs/bench2drive.md):
 * - Comfortness compares CARLA's angular velocity, which is in deg/s, with rad/s bounds, and it
 *   phase-unwraps those deg/s values with 2π.
 * - Its "yaw acceleration" is the Savitzky–Golay-smoothed yaw rate itself, not a derivative.
 * - It differentiates with dt = 0.1 s although agents log `metric_info` every 0.05 s tick.
 * - The ability table follows v0.0.4's `ability_benchmark.py`: a failed Traffic_Signs route is
 *   still credited a success when it got past the first junction + 8 m with no red-light or stop
 *   infraction (the route counts once).
 *
 * @example
 * drivingScore(records, 70); successRate(records, 70); comfortness(perRouteMetricInfo);
 */
import { COMFORT_BOUNDS, savgol } from '../driving/comfort.ts';
import type { RouteRecord } from './scoring.ts';

// The shared scipy-exact Savitzky–Golay filter (mode='interp') and nuPlan's bounds, as Bench2Drive's script uses them.
export { COMFORT_BOUNDS, savgol };

// ---- Comfortness ----

/** One `metric_info` sample, as Bench2Drive's agents log it every tick (CARLA conventions). */
export interface MetricInfo {
  acceleration: readonly number[];
  /** deg/s, as CARLA reports it. */
  angular_velocity: readonly number[];
  forward_vector: readonly number[];
  right_vector: readonly number[];
  location: readonly number[];
  rotation: readonly number[];
}

/** numpy's round: half to even. */
function roundHalfEven(v: number): number {
  const r = Math.round(v);
  return Math.abs(v % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

function phaseUnwrap(h: readonly number[]): number[] {
  const twoPi = 2 * Math.PI;
  let adj = 0;
  return h.map((v, i) => {
    if (i > 0) adj += roundHalfEven((v - h[i - 1]!) / twoPi);
    return v - twoPi * adj;
  });
}

const within = (v: ArrayLike<number>, lo: number, hi: number) => {
  for (let i = 0; i < v.length; i++) if (!(v[i]! > lo && v[i]! < hi)) return false;
  return true;
};

/** `compute_comfort_metric` on one window: true when all six bounds hold at every sample. */
export function comfortWindow(s: readonly MetricInfo[], windowSize = 7, polyOrder = 2, dt = 0.1): boolean {
  const w = Math.min(windowSize, s.length);
  if (!(polyOrder < w)) throw new Error(`${polyOrder} < ${w} does not hold!`);
  const ax = s.map((m) => m.acceleration[0] ?? 0);
  const ay = s.map((m) => m.acceleration[1] ?? 0);
  const lon = s.map((m, i) => ax[i]! * (m.forward_vector[0] ?? 0) + ay[i]! * (m.forward_vector[1] ?? 0));
  const lat = s.map((m, i) => ax[i]! * (m.right_vector[0] ?? 0) + ay[i]! * (m.right_vector[1] ?? 0));
  const mag = ax.map((v, i) => Math.hypot(v, ay[i]!));
  const yawRateRaw = phaseUnwrap(s.map((m) => m.angular_velocity[2] ?? 0));
  const yawAcc = savgol(yawRateRaw, w, polyOrder);
  const yawRate = savgol(yawRateRaw, w, polyOrder);
  const lonS = savgol(lon, w, polyOrder);
  const latS = savgol(lat, w, polyOrder);
  const magS = savgol(mag, w, polyOrder);
  const magJerk = savgol(magS, w, polyOrder, 1, dt);
  const lonJerk = savgol(lonS, w, polyOrder, 1, dt);
  const b = COMFORT_BOUNDS;
  return (
    within(lonS, b.minLonAccel, b.maxLonAccel) &&
    within(latS, -b.maxAbsLatAccel, b.maxAbsLatAccel) &&
    within(magJerk, -b.maxAbsMagJerk, b.maxAbsMagJerk) &&
    within(lonJerk, -b.maxAbsLonJerk, b.maxAbsLonJerk) &&
    within(yawAcc, -b.maxAbsYawAccel, b.maxAbsYawAccel) &&
    within(yawRate, -b.maxAbsYawRate, b.maxAbsYawRate)
  );
}

/**
 * `seg_compute_comfort_metric`: routes of at most 20 samples are one window (1 or 0); longer ones
 * are cut into consecutive 20-sample chunks, a short last chunk is dropped, and the result is the
 * fraction of chunks that pass.
 */
export function routeComfort(samples: readonly MetricInfo[], perStep = 20): number {
  if (samples.length === 0) return 0;
  if (samples.length <= perStep) return comfortWindow(samples) ? 1 : 0;
  let pass = 0;
  let total = 0;
  for (let i = 0; i + perStep <= samples.length; i += perStep) {
    total += 1;
    if (comfortWindow(samples.slice(i, i + perStep))) pass += 1;
  }
  return pass / total;
}

/** Comfortness: mean over routes of their comfort fraction. */
export function comfortness(perRoute: readonly number[]): number {
  return perRoute.length ? perRoute.reduce((a, b) => a + b, 0) / perRoute.length : 0;
}

// ---- Efficiency ----

const PCT_RE = /\b\d+\.?\d*%/;

/**
 * Efficiency: for each route with min-speed entries, the mean of their percentages (parsed from
 * the messages as the script does, entries above 1000 dropped), then the mean over those routes.
 * A route whose entries are all dropped is skipped (the script would divide by zero).
 */
export function efficiency(records: readonly Pick<RouteRecord, 'infractions'>[]): number | null {
  const perRoute: number[] = [];
  for (const r of records) {
    const entries = r.infractions['min_speed_infractions'] ?? [];
    if (entries.length < 1) continue;
    const vals: number[] = [];
    for (const e of entries) {
      const m = PCT_RE.exec(e.message);
      if (!m) continue;
      const v = parseFloat(m[0].slice(0, -1));
      if (v > 1000) continue;
      vals.push(v);
    }
    if (vals.length) perRoute.push(vals.reduce((a, b) => a + b, 0) / vals.length);
  }
  return perRoute.length ? perRoute.reduce((a, b) => a + b, 0) / perRoute.length : null;
}

// ---- Driving Score, Success Rate ----

/** Success as `merge_route_json.py` and `ability_benchmark.py` define it. */
export function routeSucceeded(r: Pick<RouteRecord, 'status' | 'infractions'>): boolean {
  if (r.status !== 'Completed' && r.status !== 'Perfect') return false;
  for (const [k, v] of Object.entries(r.infractions)) if (k !== 'min_speed_infractions' && v.length > 0) return false;
  return true;
}

/** DS = Σ score_composed / total routes (missing routes count as 0). */
export function drivingScore(records: readonly Pick<RouteRecord, 'scores'>[], totalRoutes: number): number {
  return records.reduce((a, r) => a + r.scores.score_composed, 0) / totalRoutes;
}

/** SR = successful routes / total routes. */
export function successRate(records: readonly Pick<RouteRecord, 'status' | 'infractions'>[], totalRoutes: number): number {
  return records.filter(routeSucceeded).length / totalRoutes;
}

// ---- Multi-ability ----

/** `ability_benchmark.py`'s table (v0.0.4 @7ec25d1), names spelled as Bench2Drive spells them. */
export const ABILITIES: Readonly<Record<string, readonly string[]>> = {
  Overtaking: [
    'Accident',
    'AccidentTwoWays',
    'ConstructionObstacle',
    'ConstructionObstacleTwoWays',
    'HazardAtSideLaneTwoWays',
    'HazardAtSideLane',
    'ParkedObstacleTwoWays',
    'ParkedObstacle',
    'VehicleOpensDoorTwoWays',
  ],
  Merging: [
    'CrossingBicycleFlow',
    'EnterActorFlow',
    'HighwayExit',
    'InterurbanActorFlow',
    'HighwayCutIn',
    'InterurbanAdvancedActorFlow',
    'MergerIntoSlowTrafficV2',
    'MergerIntoSlowTraffic',
    'NonSignalizedJunctionLeftTurn',
    'NonSignalizedJunctionRightTurn',
    'NonSignalizedJunctionLeftTurnEnterFlow',
    'ParkingExit',
    'SequentialLaneChange',
    'SignalizedJunctionLeftTurn',
    'SignalizedJunctionRightTurn',
    'SignalizedJunctionLeftTurnEnterFlow',
  ],
  Emergency_Brake: [
    'BlockedIntersection',
    'DynamicObjectCrossing',
    'HardBreakRoute',
    'OppositeVehicleTakingPriority',
    'OppositeVehicleRunningRedLight',
    'ParkingCutIn',
    'PedestrianCrossing',
    'ParkingCrossingPedestrian',
    'StaticCutIn',
    'VehicleTurningRoute',
    'VehicleTurningRoutePedestrian',
    'ControlLoss',
  ],
  Give_Way: ['InvadingTurn', 'YieldToEmergencyVehicle'],
  Traffic_Signs: [
    'BlockedIntersection',
    'OppositeVehicleTakingPriority',
    'OppositeVehicleRunningRedLight',
    'PedestrianCrossing',
    'VehicleTurningRoute',
    'VehicleTurningRoutePedestrian',
    'EnterActorFlow',
    'CrossingBicycleFlow',
    'NonSignalizedJunctionLeftTurn',
    'NonSignalizedJunctionRightTurn',
    'NonSignalizedJunctionLeftTurnEnterFlow',
    'SignalizedJunctionLeftTurn',
    'SignalizedJunctionRightTurn',
    'SignalizedJunctionLeftTurnEnterFlow',
    'T_Junction',
    'VanillaNonSignalizedTurn',
    'VanillaSignalizedTurnEncounterGreenLight',
    'VanillaSignalizedTurnEncounterRedLight',
    'VanillaNonSignalizedTurnEncounterStopsign',
  ],
};
export const ABILITY_NAMES = ['Overtaking', 'Merging', 'Emergency_Brake', 'Give_Way', 'Traffic_Signs'] as const;

export interface AbilityTable {
  /** Success ratio per ability; null when the route set has no route of that ability. */
  abilities: Record<string, number | null>;
  counts: Record<string, [number, number]>;
  /** Sum of the five ratios / 5, as the script does; abilities without routes count 0. */
  mean: number;
}

/**
 * The multi-ability table (v0.0.4's `ability_benchmark.py`). Each route counts once toward every
 * ability listing its scenario (success as for SR). A Traffic_Signs route that failed is still
 * credited a Traffic_Signs success when its route completion exceeds the fraction at the first
 * junction + 8 m and it has no red-light or stop infraction.
 */
export function abilityTable(
  records: readonly Pick<RouteRecord, 'scenario_name' | 'status' | 'infractions' | 'scores' | 'junction_completion'>[],
): AbilityTable {
  const counts: Record<string, [number, number]> = {};
  for (const a of ABILITY_NAMES) counts[a] = [0, 0];
  for (const r of records) {
    const ok = routeSucceeded(r);
    for (const a of ABILITY_NAMES) {
      if (!ABILITIES[a]!.includes(r.scenario_name)) continue;
      counts[a]![1] += 1;
      if (ok) counts[a]![0] += 1;
    }
    if (!ok && ABILITIES['Traffic_Signs']!.includes(r.scenario_name)) {
      const jc = r.junction_completion ?? 0;
      const credited =
        r.scores.score_route / 100 > jc && (r.infractions['stop_infraction'] ?? []).length === 0 && (r.infractions['red_light'] ?? []).length === 0;
      if (credited) counts['Traffic_Signs']![0] += 1;
    }
  }
  const abilities: Record<string, number | null> = {};
  let sum = 0;
  for (const a of ABILITY_NAMES) {
    const [s, t] = counts[a]!;
    abilities[a] = t > 0 ? s / t : null;
    sum += t > 0 ? s / t : 0;
  }
  return { abilities, counts, mean: sum / 5 };
}
