/**
 * Traffic participants as oriented boxes: vehicles, pedestrians, bicycles (moving agents) and
 * static objects (traffic cones, barriers, construction signs, generic objects), with a state track
 * on a fixed time grid that is replayed non-reactively, as NAVSIM replays its logs.
 *
 * @example
 * const track = makeTrack({ token: 'lead', type: 'vehicle', length: 4.6, width: 1.9, height: 1.6, states: [[0, 30, 0, 0, 8, 0]] });
 * stateAt(track, 0.35); // {x, y, heading, vx, vy} interpolated
 */
import type { OrientedBox } from './geometry.ts';
import { boxCorners, normalizeAngle } from './geometry.ts';

export const MOVING_TYPES = ['vehicle', 'pedestrian', 'bicycle'] as const;
export const STATIC_TYPES = ['traffic_cone', 'barrier', 'czone_sign', 'generic_object'] as const;
export const AGENT_TYPES = [...MOVING_TYPES, ...STATIC_TYPES] as const;
export type AgentType = (typeof AGENT_TYPES)[number];

/** True for the static-object classes (NAVSIM's `STATIC_OBJECT_TYPES`). */
export function isStaticType(t: AgentType): boolean {
  return (STATIC_TYPES as readonly string[]).includes(t);
}

/** Scene-file form: states are `[t, x, y, heading, vx, vy]` (box centre, global velocity). */
export interface AgentData {
  token: string;
  type: AgentType;
  length: number;
  width: number;
  height: number;
  states: number[][];
}

export interface AgentState {
  x: number;
  y: number;
  heading: number;
  vx: number;
  vy: number;
}

/** A track with its states in a flat array for fast lookup. */
export interface AgentTrack {
  token: string;
  type: AgentType;
  length: number;
  width: number;
  height: number;
  /** Times (s), ascending. */
  t: Float64Array;
  /** Per state: x, y, heading, vx, vy. */
  s: Float64Array;
}

export function makeTrack(a: AgentData): AgentTrack {
  const n = a.states.length;
  const t = new Float64Array(n);
  const s = new Float64Array(n * 5);
  a.states.forEach((row, i) => {
    t[i] = row[0] ?? 0;
    for (let k = 0; k < 5; k++) s[5 * i + k] = row[k + 1] ?? 0;
  });
  return { token: a.token, type: a.type, length: a.length, width: a.width, height: a.height, t, s };
}

/** Index of the sample at time `time` on the track's grid, or -1 if absent (within 1e-6 s). */
export function sampleIndex(track: AgentTrack, time: number): number {
  const t = track.t;
  let lo = 0,
    hi = t.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const v = t[mid] as number;
    if (Math.abs(v - time) < 1e-6) return mid;
    if (v < time) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/**
 * State at `time`, linearly interpolated (heading by shortest arc); null outside the track's span
 * (the agent is not present then).
 */
export function stateAt(track: AgentTrack, time: number): AgentState | null {
  const t = track.t;
  const n = t.length;
  if (n === 0 || time < (t[0] as number) - 1e-6 || time > (t[n - 1] as number) + 1e-6) return null;
  let i = 0;
  while (i < n - 2 && (t[i + 1] as number) <= time) i++;
  const t0 = t[i] as number,
    t1 = n > 1 ? (t[i + 1] as number) : t0;
  const f = t1 > t0 ? Math.min(1, Math.max(0, (time - t0) / (t1 - t0))) : 0;
  const a = 5 * i,
    b = n > 1 ? 5 * (i + 1) : a;
  const s = track.s;
  const lerp = (k: number) => (s[a + k] as number) + f * ((s[b + k] as number) - (s[a + k] as number));
  const h0 = s[a + 2] as number;
  return { x: lerp(0), y: lerp(1), heading: normalizeAngle(h0 + f * normalizeAngle((s[b + 2] as number) - h0)), vx: lerp(3), vy: lerp(4) };
}

/** The agent's box at a state. */
export function agentBox(track: AgentTrack, st: AgentState): OrientedBox {
  return { x: st.x, y: st.y, heading: st.heading, length: track.length, width: track.width };
}

/** Corners of the agent at a state (FL, RL, RR, FR). */
export function agentCorners(track: AgentTrack, st: AgentState, out?: Float64Array): Float64Array {
  return boxCorners(agentBox(track, st), out);
}
