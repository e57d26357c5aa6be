/**
 * nuPlan/NAVSIM comfort metrics (`pdm_comfort_metrics.py`): Savitzky-Golay filtered longitudinal
 * and lateral acceleration, jerk magnitude, longitudinal jerk, yaw rate and yaw acceleration, each
 * checked against strict bounds at every state. `savgol` reproduces scipy's `savgol_filter` in its
 * default `mode='interp'` (including even windows, which scipy centres half a sample late). The
 * window choices are NAVSIM's code as it runs, per version:
 * - v1 (v1.1 @3e8291b): acceleration over the whole horizon; jerk = the derivative (whole horizon)
 *   of acceleration smoothed with window 8; yaw terms with window 5.
 * - v2 (main @0a380a9): longitudinal and lateral acceleration moved from the rear axle to the box
 *   centre (`state_array_to_center_state_array`), smoothed with window 8; jerk = the derivative
 *   with window 15 of acceleration smoothed with window 8; yaw terms with window 5.
 *
 * @example
 * comfortChecks(states, 41).all; // true when all six bounds hold
 */
import { PACIFICA, S, STATE_SIZE } from './bicycle.ts';

export const COMFORT_BOUNDS = {
  maxAbsMagJerk: 8.37,
  maxAbsLatAccel: 4.89,
  maxLonAccel: 2.4,
  minLonAccel: -4.05,
  maxAbsYawAccel: 1.93,
  maxAbsLonJerk: 4.13,
  maxAbsYawRate: 0.95,
} as const;

function factorial(n: number): number {
  let f = 1;
  for (let i = 2; i <= n; i++) f *= i;
  return f;
}

/** Solves a small dense system (Gauss-Jordan, partial pivoting). */
function solveSmall(M: number[][], b: number[]): number[] {
  const n = b.length;
  const A = M.map((r, i) => [...r, b[i] as number]);
  for (let c = 0; c < n; c++) {
    let p = c;
    for (let r = c + 1; r < n; r++) if (Math.abs((A[r] as number[])[c] as number) > Math.abs((A[p] as number[])[c] as number)) p = r;
    [A[c], A[p]] = [A[p] as number[], A[c] as number[]];
    const row = A[c] as number[];
    const piv = row[c] as number;
    for (let r = 0; r < n; r++) {
      if (r === c) continue;
      const other = A[r] as number[];
      const f = (other[c] as number) / piv;
      for (let k = c; k <= n; k++) other[k] = (other[k] as number) - f * (row[k] as number);
    }
  }
  return A.map((r, i) => (r[n] as number) / (r[i] as number));
}

// Filter weights depend only on (window, order, derivative, spacing): memoised, they are constants.
const weightMemo = new Map<string, number[]>();
function fitWeights(coords: number[], polyorder: number, deriv: number, delta: number): number[] {
  const key = `${coords.join(',')}|${polyorder}|${deriv}|${delta}`;
  let w = weightMemo.get(key);
  if (!w) {
    w = computeFitWeights(coords, polyorder, deriv, delta);
    weightMemo.set(key, w);
  }
  return w;
}

/** Weights w(coord) of a least-squares polynomial fit evaluating derivative `deriv` at coordinate 0. */
function computeFitWeights(coords: number[], polyorder: number, deriv: number, delta: number): number[] {
  const m = polyorder + 1;
  // Minimum-norm solution of A c = e_deriv * deriv!/delta^deriv with A[p][k] = coord_k^p: c = Aᵀ (AAᵀ)⁻¹ y.
  const AAt: number[][] = [];
  for (let p = 0; p < m; p++) {
    const row: number[] = [];
    for (let q = 0; q < m; q++) row.push(coords.reduce((s, x) => s + Math.pow(x, p + q), 0));
    AAt.push(row);
  }
  const y = new Array<number>(m).fill(0);
  y[deriv] = factorial(deriv) / Math.pow(delta, deriv);
  const z = solveSmall(AAt, y);
  return coords.map((x) => z.reduce((s, zp, p) => s + zp * Math.pow(x, p), 0));
}

/** (TᵀT)⁻¹ rows for polynomial fits over t = 0..n-1, memoised by (n, order). */
const polyfitMemo = new Map<string, number[][]>();
function polyfitOperator(n: number, order: number): number[][] {
  const key = `${n}|${order}`;
  let op = polyfitMemo.get(key);
  if (!op) {
    const m = order + 1;
    const M: number[][] = [];
    for (let p = 0; p < m; p++) {
      const row: number[] = [];
      for (let q = 0; q < m; q++) {
        let s = 0;
        for (let t = 0; t < n; t++) s += Math.pow(t, p + q);
        row.push(s);
      }
      M.push(row);
    }
    // Column c of the inverse: solve M x = e_c.
    const cols = Array.from({ length: m }, (_, c) =>
      solveSmall(
        M,
        Array.from({ length: m }, (_v, r) => (r === c ? 1 : 0)),
      ),
    );
    op = Array.from({ length: m }, (_, r) => cols.map((col) => col[r] as number));
    polyfitMemo.set(key, op);
  }
  return op;
}

/** Least-squares polynomial coefficients (ascending powers) of y over t = 0..n-1. */
function polyfit(y: number[], order: number): number[] {
  const m = order + 1;
  const b: number[] = [];
  for (let p = 0; p < m; p++) {
    let s = 0;
    for (let t = 0; t < y.length; t++) s += (y[t] as number) * Math.pow(t, p);
    b.push(s);
  }
  const op = polyfitOperator(y.length, order);
  return op.map((row) => row.reduce((s, v, k) => s + v * (b[k] as number), 0));
}

/** scipy.signal.savgol_filter(x, window, polyorder, deriv, delta, mode='interp'). */
export function savgol(x: ArrayLike<number>, window: number, polyorder: number, deriv = 0, delta = 1): Float64Array {
  const n = x.length;
  const w = Math.min(window, n);
  const out = new Float64Array(n);
  const h = Math.floor(w / 2);
  const even = w % 2 === 0;
  const offsets: number[] = [];
  for (let o = even ? -(h - 1) : -h; o <= h; o++) offsets.push(o);
  const weights = fitWeights(
    offsets.map((o) => (even ? o - 0.5 : o)),
    polyorder,
    deriv,
    delta,
  );
  for (let i = h; i < n - h; i++) {
    let s = 0;
    for (let k = 0; k < offsets.length; k++) s += (weights[k] as number) * (x[i + (offsets[k] as number)] as number);
    out[i] = s;
  }
  const fitEdge = (start: number, from: number, to: number): void => {
    const seg: number[] = [];
    for (let t = 0; t < w; t++) seg.push(x[start + t] as number);
    let c = polyfit(seg, polyorder);
    for (let d = 0; d < deriv; d++) c = c.slice(1).map((v, p) => v * (p + 1));
    for (let i = from; i < to; i++) {
      const t = i - start;
      out[i] = c.reduce((s, v, p) => s + v * Math.pow(t, p), 0) / Math.pow(delta, deriv);
    }
  };
  fitEdge(0, 0, h);
  fitEdge(n - w, n - h, n);
  return out;
}

function round8(a: Float64Array): Float64Array {
  for (let i = 0; i < a.length; i++) a[i] = Math.round((a[i] as number) * 1e8) / 1e8;
  return a;
}

function column(states: Float64Array, n: number, k: number): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = states[i * STATE_SIZE + k] as number;
  return out;
}

function unwrap(h: Float64Array): Float64Array {
  const out = Float64Array.from(h);
  let adj = 0;
  for (let i = 1; i < h.length; i++) {
    adj += Math.round(((h[i] as number) - (h[i - 1] as number)) / (2 * Math.PI));
    out[i] = (h[i] as number) - 2 * Math.PI * adj;
  }
  return out;
}

/** Which NAVSIM's comfort code to follow (see the module comment). */
export type ComfortVersion = 1 | 2;

/** nuPlan's Pacifica: rear axle to box centre, for v2's centre accelerations. */
const REAR_AXLE_TO_CENTER = (PACIFICA.front + PACIFICA.rear) / 2 - PACIFICA.rear;

/**
 * v2's `get_acceleration_shifted` with displacement (d, 0): NAVSIM adds d·ω² and d·α to the
 * longitudinal component only (the lateral one is left as is).
 */
function centerLonAccel(states: Float64Array, n: number): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const o = i * STATE_SIZE;
    const w = states[o + S.ANGULAR_VELOCITY] as number,
      a = states[o + S.ANGULAR_ACCELERATION] as number;
    out[i] = (states[o + S.AX] as number) + REAR_AXLE_TO_CENTER * w * w + REAR_AXLE_TO_CENTER * a;
  }
  return out;
}

/** The six filtered comfort signals for `n` states at `dt` spacing. */
export function comfortSignals(
  states: Float64Array,
  n: number,
  dt = 0.1,
  version: ComfortVersion = 1,
): { lonAccel: Float64Array; latAccel: Float64Array; jerk: Float64Array; lonJerk: Float64Array; yawRate: Float64Array; yawAccel: Float64Array } {
  const ax = column(states, n, S.AX),
    ay = column(states, n, S.AY);
  const mag = ax.map((v, i) => Math.hypot(v, ay[i] as number));
  const heading = unwrap(column(states, n, S.HEADING));
  const yaw = { yawRate: round8(savgol(heading, 5, 2, 1, dt)), yawAccel: round8(savgol(heading, 5, 3, 2, dt)) };
  if (version === 1) {
    return {
      lonAccel: round8(savgol(ax, n, 2)),
      latAccel: round8(savgol(ay, n, 2)),
      jerk: round8(savgol(round8(savgol(mag, 8, 2)), n, 2, 1, dt)),
      lonJerk: round8(savgol(round8(savgol(ax, 8, 2)), n, 2, 1, dt)),
      ...yaw,
    };
  }
  const lon = round8(savgol(centerLonAccel(states, n), 8, 2));
  return {
    lonAccel: lon,
    latAccel: round8(savgol(ay, 8, 2)),
    jerk: round8(savgol(round8(savgol(mag, 8, 2)), 15, 2, 1, dt)),
    lonJerk: round8(savgol(lon, 15, 2, 1, dt)),
    ...yaw,
  };
}

function within(a: Float64Array, lo: number, hi: number): boolean {
  for (const v of a) if (!(v > lo && v < hi)) return false;
  return true;
}

/** Each comfort check and their conjunction (`ego_is_comfortable`). */
export function comfortChecks(
  states: Float64Array,
  n: number,
  dt = 0.1,
  version: ComfortVersion = 1,
): { lonAccel: boolean; latAccel: boolean; jerk: boolean; lonJerk: boolean; yawAccel: boolean; yawRate: boolean; all: boolean } {
  const s = comfortSignals(states, n, dt, version);
  const B = COMFORT_BOUNDS;
  const r = {
    lonAccel: within(s.lonAccel, B.minLonAccel, B.maxLonAccel),
    latAccel: within(s.latAccel, -B.maxAbsLatAccel, B.maxAbsLatAccel),
    jerk: within(s.jerk, -B.maxAbsMagJerk, B.maxAbsMagJerk),
    lonJerk: within(s.lonJerk, -B.maxAbsLonJerk, B.maxAbsLonJerk),
    yawAccel: within(s.yawAccel, -B.maxAbsYawAccel, B.maxAbsYawAccel),
    yawRate: within(s.yawRate, -B.maxAbsYawRate, B.maxAbsYawRate),
  };
  return { ...r, all: r.lonAccel && r.latAccel && r.jerk && r.lonJerk && r.yawAccel && r.yawRate };
}

/** EC thresholds (RMS of frame-to-frame differences): acceleration, jerk, yaw rate, yaw acceleration. */
export const EC_THRESHOLDS = { accel: 0.7, jerk: 0.5, yawRate: 0.1, yawAccel: 0.1 } as const;

/**
 * Two-frame extended comfort (v2, `scene_aggregator._compute_two_frame_comfort`): `prev` are the
 * simulated states planned `shift` samples earlier, `cur` the current ones (both `n` states). The
 * overlap (`cur[:-shift]`, `prev[shift:]`) is cut first and each slice filtered on its own
 * (`extract_features`: acceleration magnitude window 8, jerk window 15, yaw rate window 5, yaw
 * acceleration window 5 with polynomial order 2); EC = 1 iff the RMS differences are within bounds.
 */
export function extendedComfort(
  prev: Float64Array,
  cur: Float64Array,
  n: number,
  shift = 5,
  dt = 0.1,
): { ec: number; rms: { accel: number; jerk: number; yawRate: number; yawAccel: number } } {
  const m = n - shift;
  const features = (st: Float64Array) => {
    const ax = column(st, m, S.AX),
      ay = column(st, m, S.AY);
    const accel = round8(
      savgol(
        ax.map((v, i) => Math.hypot(v, ay[i] as number)),
        8,
        2,
      ),
    );
    const heading = unwrap(column(st, m, S.HEADING));
    return { accel, jerk: round8(savgol(accel, 15, 2, 1, dt)), yawRate: round8(savgol(heading, 5, 2, 1, dt)), yawAccel: round8(savgol(heading, 5, 2, 2, dt)) };
  };
  const a = features(cur.subarray(0, m * STATE_SIZE)),
    b = features(prev.subarray(shift * STATE_SIZE, n * STATE_SIZE));
  const rms = (x: Float64Array, y: Float64Array) => {
    let s = 0;
    for (let i = 0; i < m; i++) s += ((x[i] as number) - (y[i] as number)) ** 2;
    return Math.sqrt(s / m);
  };
  const r = { accel: rms(a.accel, b.accel), jerk: rms(a.jerk, b.jerk), yawRate: rms(a.yawRate, b.yawRate), yawAccel: rms(a.yawAccel, b.yawAccel) };
  const ok = r.accel <= EC_THRESHOLDS.accel && r.jerk <= EC_THRESHOLDS.jerk && r.yawRate <= EC_THRESHOLDS.yawRate && r.yawAccel <= EC_THRESHOLDS.yawAccel;
  return { ec: ok ? 1 : 0, rms: r };
}
