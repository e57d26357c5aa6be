/**
 * Turning an agent's trajectory into the 41 reference states NAVSIM tracks (`pdm_score.py`:
 * `transform_trajectory` + `get_trajectory_as_array`): poses in the rear-axle frame go to global,
 * the current ego state is prepended, and nuPlan's `InterpolatedTrajectory` (linear in x, y, velocity,
 * acceleration and steering; unwrapped linear in heading) is sampled every 0.1 s with NAVSIM's
 * microsecond timestamps. Velocities and accelerations of the agent's poses are zero, as in NAVSIM.
 */
import { STATE_SIZE } from '../driving/bicycle.ts';
import { principalValue } from '../driving/geometry.ts';

export interface EgoStateData {
  x: number;
  y: number;
  heading: number;
  vx: number;
  vy: number;
  ax: number;
  ay: number;
  /** Tire steering angle and yaw rate, when the log has them (0 otherwise). */
  steering_angle?: number | undefined;
  yaw_rate?: number | undefined;
}

/** The 11-float state array of the current ego (`ego_state_to_state_array`). */
export function egoStateArray(e: EgoStateData): Float64Array {
  return Float64Array.of(e.x, e.y, e.heading, e.vx, e.vy, e.ax, e.ay, e.steering_angle ?? 0, 0, e.yaw_rate ?? 0, 0);
}

/** Relative (rear-axle frame) poses to global, nuPlan's `relative_to_absolute_poses`. */
export function posesToGlobal(origin: { x: number; y: number; heading: number }, poses: readonly (readonly number[])[]): number[][] {
  const c = Math.cos(origin.heading),
    s = Math.sin(origin.heading);
  return poses.map((p) => {
    const px = p[0] ?? 0,
      py = p[1] ?? 0,
      ph = p[2] ?? 0;
    return [origin.x + c * px - s * py, origin.y + s * px + c * py, origin.heading + ph];
  });
}

function unwrap(a: number[]): number[] {
  const out = a.slice();
  for (let i = 1; i < out.length; i++) {
    const d = (a[i] as number) - (a[i - 1] as number);
    let dd = ((((d + Math.PI) % (2 * Math.PI)) + 2 * Math.PI) % (2 * Math.PI)) - Math.PI;
    if (dd === -Math.PI && d > 0) dd = Math.PI;
    const corr = Math.abs(d) < Math.PI ? 0 : dd - d;
    out[i] = (out[i - 1] as number) + (d + corr);
  }
  return out;
}

/**
 * Knot states (time in us + 11-float state) to `count` states every `intervalS` seconds from `startUs`,
 * clipped to the knots' span, as `get_trajectory_as_array` does.
 */
export function sampleStates(knotTimesUs: number[], knots: Float64Array[], startUs: number, count: number, intervalS: number): Float64Array {
  const n = knots.length;
  const headings = unwrap(knots.map((k) => k[2] as number));
  const out = new Float64Array(count * STATE_SIZE);
  const startS = startUs * 1e-6;
  const first = knotTimesUs[0] as number,
    last = knotTimesUs[n - 1] as number;
  for (let i = 0; i < count; i++) {
    let t = Math.trunc((i * intervalS + startS) * 1e6);
    t = Math.min(last, Math.max(first, t));
    // scipy interp1d: searchsorted left, clipped to [1, n-1].
    let hi = 0;
    while (hi < n && (knotTimesUs[hi] as number) < t) hi++;
    hi = Math.min(Math.max(hi, 1), n - 1);
    const lo = hi - 1;
    const x0 = knotTimesUs[lo] as number,
      x1 = knotTimesUs[hi] as number;
    const a = knots[lo] as Float64Array,
      b = knots[hi] as Float64Array;
    const o = i * STATE_SIZE;
    for (const k of [0, 1, 3, 4, 5, 6, 7]) {
      const slope = ((b[k] as number) - (a[k] as number)) / (x1 - x0);
      out[o + k] = slope * (t - x0) + (a[k] as number);
    }
    const hs = ((headings[hi] as number) - (headings[lo] as number)) / (x1 - x0);
    out[o + 2] = principalValue(hs * (t - x0) + (headings[lo] as number));
  }
  return out;
}

/**
 * The 41 reference states for an agent trajectory of poses (rear-axle frame, `interval` s apart)
 * from ego state `ego` at `timestampUs`.
 */
export function referenceStates(
  ego: EgoStateData,
  poses: readonly (readonly number[])[],
  interval: number,
  timestampUs: number,
  numPoses = 40,
  dt = 0.1,
): Float64Array {
  const startS = timestampUs * 1e-6;
  const times = [timestampUs];
  const knots = [egoStateArray(ego)];
  const global = posesToGlobal(ego, poses);
  global.forEach((g, i) => {
    times.push(Math.trunc((i * interval + interval + startS) * 1e6));
    knots.push(Float64Array.of(g[0] as number, g[1] as number, principalValue(g[2] as number), 0, 0, 0, 0, 0, 0, 0, 0));
  });
  const st = sampleStates(times, knots, timestampUs, numPoses + 1, dt);
  // from_split_state leaves steering rate, yaw rate and yaw acceleration at zero.
  return st;
}
