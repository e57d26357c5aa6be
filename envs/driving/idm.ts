/**
 * The Intelligent Driver Model as nuPlan implements it (`idm_policy.py`): the gap is clamped to at
 * least s0 and the acceleration clipped to [-b, a]. Parameter sets: NAVSIM's IDM traffic
 * ({@link IDM_NAVSIM_TRAFFIC}) and PDM-Closed's ({@link IDM_PDM_CLOSED}).
 *
 * @example
 * idmAcceleration(IDM_PDM_CLOSED, { v: 10, v0: 15, gap: 20, leadV: 8 });
 */

export interface IdmParameters {
  /** Maximum acceleration a (m/s^2). */
  a: number;
  /** Comfortable deceleration b (m/s^2, positive). */
  b: number;
  /** Desired time headway T (s). */
  T: number;
  /** Minimum gap s0 (m). */
  s0: number;
  /** Acceleration exponent delta. */
  delta: number;
}

/** NAVSIM's reactive IDM traffic (v0 10 m/s is the target speed passed per call). */
export const IDM_NAVSIM_TRAFFIC: IdmParameters = { a: 1.0, b: 2.0, T: 1.5, s0: 1.0, delta: 4 };
/** PDM-Closed's IDM (`metric_cache_processor.py`). */
export const IDM_PDM_CLOSED: IdmParameters = { a: 1.5, b: 3.0, T: 1.5, s0: 1.0, delta: 4 };

/**
 * IDM acceleration. `gap` is the bumper-to-bumper distance to the leader (Infinity for none) and
 * `leadV` its speed along the path.
 */
export function idmAcceleration(p: IdmParameters, s: { v: number; v0: number; gap: number; leadV: number }): number {
  const v = s.v;
  const v0 = Math.max(s.v0, 1e-6);
  const free = 1 - Math.pow(v / v0, p.delta);
  let interaction = 0;
  if (Number.isFinite(s.gap)) {
    const gap = Math.max(s.gap, p.s0);
    const dv = v - s.leadV;
    const sStar = p.s0 + v * p.T + (v * dv) / (2 * Math.sqrt(p.a * p.b));
    interaction = Math.pow(Math.max(sStar, 0) / gap, 2);
  }
  const acc = p.a * (free - interaction);
  return Math.min(p.a, Math.max(-p.b, acc));
}
