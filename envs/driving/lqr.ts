/**
 * NAVSIM's `BatchLQRTracker` (identical to nuPlan's LQR tracker) and `PDMSimulator`: velocity and
 * curvature profiles are fitted to the reference poses by regularised least squares (jerk 1e-4,
 * curvature rate 1e-2), then at each 0.1 s step a one-step longitudinal LQR (q 10, r 1, lookahead
 * 10 steps) gives the acceleration and a lateral LQR over the 10-step linearised error dynamics
 * (Q diag(1, 10, 0), R 1) gives the steering rate; near a stop a P controller takes over. The
 * commands drive the kinematic bicycle model of `bicycle.ts`.
 *
 * @example
 * const simulated = simulate(referenceStates, initial, 41); // Float64Array [41 * 11]
 */
import type { VehicleParameters } from './bicycle.ts';
import { PACIFICA, S, STATE_SIZE, propagate } from './bicycle.ts';
import { normalizeAngle } from './geometry.ts';

export interface LqrParameters {
  qLongitudinal: number;
  rLongitudinal: number;
  qLateral: [number, number, number];
  rLateral: number;
  dt: number;
  horizon: number;
  jerkPenalty: number;
  curvatureRatePenalty: number;
  stoppingGain: number;
  stoppingVelocity: number;
  vehicle: VehicleParameters;
}

export const LQR_DEFAULTS: LqrParameters = {
  qLongitudinal: 10,
  rLongitudinal: 1,
  qLateral: [1, 10, 0],
  rLateral: 1,
  dt: 0.1,
  horizon: 10,
  jerkPenalty: 1e-4,
  curvatureRatePenalty: 1e-2,
  stoppingGain: 0.5,
  stoppingVelocity: 0.2,
  vehicle: PACIFICA,
};

/** Solves the dense symmetric system M x = b in place by Gaussian elimination with partial pivoting. */
function solve(M: Float64Array, b: Float64Array, n: number): Float64Array {
  for (let c = 0; c < n; c++) {
    let p = c;
    let best = Math.abs(M[c * n + c] as number);
    for (let r = c + 1; r < n; r++) {
      const v = Math.abs(M[r * n + c] as number);
      if (v > best) {
        best = v;
        p = r;
      }
    }
    if (p !== c) {
      for (let k = 0; k < n; k++) {
        const t = M[c * n + k] as number;
        M[c * n + k] = M[p * n + k] as number;
        M[p * n + k] = t;
      }
      const t = b[c] as number;
      b[c] = b[p] as number;
      b[p] = t;
    }
    const piv = M[c * n + c] as number;
    if (piv === 0) continue;
    for (let r = c + 1; r < n; r++) {
      const f = (M[r * n + c] as number) / piv;
      if (f === 0) continue;
      for (let k = c; k < n; k++) M[r * n + k] = (M[r * n + k] as number) - f * (M[c * n + k] as number);
      b[r] = (b[r] as number) - f * (b[c] as number);
    }
  }
  const x = new Float64Array(n);
  for (let r = n - 1; r >= 0; r--) {
    let s = b[r] as number;
    for (let k = r + 1; k < n; k++) s -= (M[r * n + k] as number) * (x[k] as number);
    const piv = M[r * n + r] as number;
    x[r] = piv === 0 ? 0 : s / piv;
  }
  return x;
}

export interface Profiles {
  velocity: Float64Array;
  acceleration: Float64Array;
  curvature: Float64Array;
  curvatureRate: Float64Array;
}

/**
 * `get_velocity_curvature_profiles_with_derivatives_from_poses`: for N poses (flat x, y, heading)
 * returns velocity (N-1), acceleration (N-2), curvature (N-1) and curvature rate (N-2).
 */
export function fitProfiles(poses: Float64Array, dt: number, jerkPenalty: number, curvatureRatePenalty: number): Profiles {
  const N = poses.length / 3;
  const M = N - 1;
  // Velocity / acceleration fit, unknowns v0, a_0..a_{M-2}. Displacement i along its heading is
  // v0·dt + dt²·Σ_{j<i} a_j; since cos² + sin² = 1, AᵀA has closed form and does not depend on the
  // poses, so (AᵀA + λRᵀR) is the same matrix for every trajectory.
  const proj = new Float64Array(M);
  const dh = new Float64Array(M);
  for (let i = 0; i < M; i++) {
    const h = poses[3 * i + 2] as number;
    const dx = (poses[3 * (i + 1)] as number) - (poses[3 * i] as number);
    const dy = (poses[3 * (i + 1) + 1] as number) - (poses[3 * i + 1] as number);
    proj[i] = Math.cos(h) * dx + Math.sin(h) * dy;
    dh[i] = normalizeAngle((poses[3 * (i + 1) + 2] as number) - h);
  }
  const suffix = new Float64Array(M + 1);
  for (let i = M - 1; i >= 0; i--) suffix[i] = (suffix[i + 1] as number) + (proj[i] as number);
  const b = new Float64Array(M);
  b[0] = dt * (suffix[0] as number);
  for (let k = 1; k < M; k++) b[k] = dt * dt * (suffix[k] as number);
  const x = solve(Float64Array.from(velocityNormalMatrix(M, dt, jerkPenalty)), b, M);
  const acceleration = x.slice(1);
  const velocity = new Float64Array(M);
  velocity[0] = x[0] as number;
  let cum = 0;
  for (let i = 1; i < M; i++) {
    cum += (acceleration[i - 1] as number) * dt;
    velocity[i] = (x[0] as number) + cum;
  }
  // Curvature / curvature-rate fit: row i is v_i·dt·κ0 + v_i·dt²·Σ_{j<i} κ'_j.
  const v2 = new Float64Array(M + 1),
    vy = new Float64Array(M + 1);
  for (let i = M - 1; i >= 0; i--) {
    const v = velocity[i] as number;
    v2[i] = (v2[i + 1] as number) + v * v;
    vy[i] = (vy[i + 1] as number) + v * (dh[i] as number);
  }
  const K = new Float64Array(M * M);
  const c = new Float64Array(M);
  const dt2 = dt * dt,
    dt3 = dt2 * dt,
    dt4 = dt2 * dt2;
  K[0] = dt2 * (v2[0] as number) + 1e-10;
  c[0] = dt * (vy[0] as number);
  for (let j = 1; j < M; j++) {
    K[j] = K[j * M] = dt3 * (v2[j] as number);
    c[j] = dt2 * (vy[j] as number);
    for (let k = 1; k < M; k++) K[j * M + k] = dt4 * (v2[Math.max(j, k)] as number) + (j === k ? curvatureRatePenalty : 0);
  }
  const kk = solve(K, c, M);
  const curvatureRate = kk.slice(1);
  const curvature = new Float64Array(M);
  curvature[0] = kk[0] as number;
  cum = 0;
  for (let i = 1; i < M; i++) {
    cum += (curvatureRate[i - 1] as number) * dt;
    curvature[i] = (kk[0] as number) + cum;
  }
  return { velocity, acceleration, curvature, curvatureRate };
}

/**
 * AᵀA + λRᵀR of the velocity fit. "Jerk" penalty R = [0 | banded]: nuPlan's
 * `_make_banded_difference_matrix` writes -I over the +1 superdiagonal, so every row but the last
 * penalises a single acceleration; we keep that, since matching NAVSIM's numbers is the point.
 */
function velocityNormalMatrix(M: number, dt: number, jerkPenalty: number): Float64Array {
  const P = new Float64Array(M * M);
  const dt2 = dt * dt,
    dt3 = dt2 * dt,
    dt4 = dt2 * dt2;
  P[0] = M * dt2;
  for (let j = 1; j < M; j++) {
    P[j] = P[j * M] = dt3 * (M - j);
    for (let k = 1; k < M; k++) P[j * M + k] = dt4 * (M - Math.max(j, k));
  }
  const rows = M - 2;
  for (let r = 0; r < rows; r++) {
    const i = r + 1;
    P[i * M + i] = (P[i * M + i] as number) + jerkPenalty;
    if (r === rows - 1) {
      const j = r + 2;
      P[j * M + j] = (P[j * M + j] as number) + jerkPenalty;
      P[i * M + j] = (P[i * M + j] as number) - jerkPenalty;
      P[j * M + i] = (P[j * M + i] as number) - jerkPenalty;
    }
  }
  return P;
}

/**
 * Tracks one reference (flat states, 11 per step, only x, y, heading used) from step to step.
 * `command(index, state)` returns the acceleration and steering-rate commands at step `index`.
 */
export class LqrTracker {
  private readonly profiles: Profiles;
  constructor(
    private readonly reference: Float64Array,
    private readonly p: LqrParameters = LQR_DEFAULTS,
  ) {
    const n = reference.length / STATE_SIZE;
    const poses = new Float64Array(3 * n);
    for (let i = 0; i < n; i++) {
      poses[3 * i] = reference[i * STATE_SIZE + S.X] as number;
      poses[3 * i + 1] = reference[i * STATE_SIZE + S.Y] as number;
      poses[3 * i + 2] = reference[i * STATE_SIZE + S.HEADING] as number;
    }
    this.profiles = fitProfiles(poses, p.dt, p.jerkPenalty, p.curvatureRatePenalty);
  }

  command(index: number, state: Float64Array): { accel: number; steeringRate: number } {
    const p = this.p;
    const H = p.horizon;
    const dt = p.dt;
    const ref = this.reference;
    const o = index * STATE_SIZE;
    const xErr = (state[S.X] as number) - (ref[o + S.X] as number);
    const yErr = (state[S.Y] as number) - (ref[o + S.Y] as number);
    const hRef = ref[o + S.HEADING] as number;
    const latErr = -xErr * Math.sin(hRef) + yErr * Math.cos(hRef);
    const headErr = normalizeAngle((state[S.HEADING] as number) - hRef);
    const v0 = state[S.VX] as number;
    const steer = state[S.STEERING_ANGLE] as number;

    const vel = this.profiles.velocity,
      curv = this.profiles.curvature;
    const numPoses = vel.length;
    const refIdx = Math.min(index + H, numPoses - 1);
    const vRef = vel[refIdx] as number;
    const curvature = new Float64Array(H);
    const refLen = refIdx - index;
    for (let i = 0; i < H; i++) curvature[i] = i < refLen ? (curv[index + i] as number) : (curv[refIdx] as number);

    if (vRef <= p.stoppingVelocity && v0 <= p.stoppingVelocity) {
      return { accel: -p.stoppingGain * (v0 - vRef), steeringRate: 0 };
    }
    // Longitudinal one-step LQR.
    const Bl = H * dt;
    const accel = (-1 / (Bl * p.qLongitudinal * Bl + p.rLongitudinal)) * Bl * p.qLongitudinal * (v0 - vRef);
    // Lateral: roll the linearised dynamics over the horizon with the constant-accel velocity profile.
    const L = p.vehicle.wheelBase;
    let A = [1, 0, 0, 0, 1, 0, 0, 0, 1];
    let Bv = [0, 0, 0];
    let g = [0, 0, 0];
    let cum = 0;
    for (let k = 0; k < H; k++) {
      const v = v0 + cum;
      cum += accel * dt;
      const a01 = v * dt,
        a12 = (v * dt) / L;
      const aff1 = -v * (curvature[k] as number) * dt;
      // Step matrix S = [[1, a01, 0], [0, 1, a12], [0, 0, 1]]
      A = [
        (A[0] as number) + a01 * (A[3] as number),
        (A[1] as number) + a01 * (A[4] as number),
        (A[2] as number) + a01 * (A[5] as number),
        (A[3] as number) + a12 * (A[6] as number),
        (A[4] as number) + a12 * (A[7] as number),
        (A[5] as number) + a12 * (A[8] as number),
        A[6] as number,
        A[7] as number,
        A[8] as number,
      ];
      Bv = [(Bv[0] as number) + a01 * (Bv[1] as number), (Bv[1] as number) + a12 * (Bv[2] as number), (Bv[2] as number) + dt];
      g = [(g[0] as number) + a01 * (g[1] as number), (g[1] as number) + a12 * (g[2] as number) + aff1, g[2] as number];
    }
    const x0 = [latErr, headErr, steer];
    const e = [0, 0, 0];
    for (let i = 0; i < 3; i++)
      e[i] =
        (A[3 * i] as number) * (x0[0] as number) +
        (A[3 * i + 1] as number) * (x0[1] as number) +
        (A[3 * i + 2] as number) * (x0[2] as number) +
        (g[i] as number);
    e[1] = normalizeAngle(e[1] as number);
    e[2] = normalizeAngle(e[2] as number);
    const q = p.qLateral;
    const btq = [(Bv[0] as number) * q[0], (Bv[1] as number) * q[1], (Bv[2] as number) * q[2]];
    const denom = (btq[0] as number) * (Bv[0] as number) + (btq[1] as number) * (Bv[1] as number) + (btq[2] as number) * (Bv[2] as number) + p.rLateral;
    const tail = (btq[0] as number) * (e[0] as number) + (btq[1] as number) * (e[1] as number) + (btq[2] as number) * (e[2] as number);
    return { accel, steeringRate: (-1 / denom) * tail };
  }
}

/**
 * `PDMSimulator.simulate_proposals` for one proposal: tracks `reference` (flat, `steps + 1` states)
 * from `initial`, returning the simulated states (flat, (steps + 1) x 11). NAVSIM's TimePoint step
 * of 100000 us gives dt = 100000 * 1e-6.
 */
export function simulate(reference: Float64Array, initial: Float64Array, p: LqrParameters = LQR_DEFAULTS): Float64Array {
  const n = reference.length / STATE_SIZE;
  const out = new Float64Array(n * STATE_SIZE);
  out.set(initial.subarray(0, STATE_SIZE), 0);
  const tracker = new LqrTracker(reference, p);
  const dt = Math.round(p.dt * 1e6) * 1e-6;
  const opts = { vehicle: p.vehicle };
  for (let i = 1; i < n; i++) {
    const prev = out.subarray((i - 1) * STATE_SIZE, i * STATE_SIZE);
    const cmd = tracker.command(i - 1, prev);
    propagate(prev, cmd, dt, opts, out.subarray(i * STATE_SIZE, (i + 1) * STATE_SIZE));
  }
  return out;
}
