/**
 * Baseline agents for Bench2Drive-v0, run client-side on obs + info like any policy:
 * - `expert`: a rule-based driver on the privileged view (make with `privileged: true`): pure
 *   pursuit along the route with a lateral offset for overtaking and for giving way to an emergency
 *   vehicle, IDM following of whatever is (or will soon be) in its corridor, stops for red/yellow
 *   lights and stop signs, gap acceptance before junctions and merges.
 * - `naive`: follows the route's centreline at constant throttle and never brakes.
 *
 * @example
 * const agent = makeAgent('expert');
 * agent.reset(info); const [throttle, steer, brake] = agent.act(obs, info);
 */
import { idmAcceleration } from '../driving/idm.ts';
import { RoadOption } from './commands.ts';
import type { PrivilegedActor, PrivilegedView } from './worldstate.ts';
import { DRIVE, EGO, driveAccel, maxSteerAngle, resistance } from './vehicle.ts';

export interface Agent {
  readonly name: string;
  /** Make kwargs the agent needs (the expert reads the privileged view). */
  readonly makeKwargs: Record<string, unknown>;
  reset(info: Record<string, unknown>): void;
  act(obs: Record<string, unknown>, info: Record<string, unknown>): [number, number, number];
}

interface Pt {
  x: number;
  y: number;
  option: number;
}

/** A route polyline with projection (arc length, lateral offset left-positive) and lookup. */
class RouteLine {
  readonly pts: Pt[];
  readonly s: number[] = [0];
  constructor(waypoints: readonly (readonly number[])[]) {
    this.pts = waypoints.map((w) => ({ x: w[0]!, y: w[1]!, option: w[2]! }));
    for (let i = 1; i < this.pts.length; i++)
      this.s.push(this.s[i - 1]! + Math.hypot(this.pts[i]!.x - this.pts[i - 1]!.x, this.pts[i]!.y - this.pts[i - 1]!.y));
  }
  get length(): number {
    return this.s[this.s.length - 1]!;
  }
  project(x: number, y: number): { s: number; d: number } {
    let best = Infinity,
      bs = 0,
      bd = 0;
    for (let i = 0; i + 1 < this.pts.length; i++) {
      const a = this.pts[i]!,
        b = this.pts[i + 1]!;
      const dx = b.x - a.x,
        dy = b.y - a.y;
      const l2 = dx * dx + dy * dy || 1;
      let t = ((x - a.x) * dx + (y - a.y) * dy) / l2;
      const first = i === 0,
        last = i + 2 === this.pts.length;
      if (!first) t = Math.max(0, t);
      if (!last) t = Math.min(1, t);
      const qx = a.x + t * dx,
        qy = a.y + t * dy;
      const d2 = (x - qx) ** 2 + (y - qy) ** 2;
      if (d2 < best) {
        best = d2;
        const l = Math.sqrt(l2);
        bs = this.s[i]! + t * l;
        bd = (dx * (y - a.y) - dy * (x - a.x)) / l;
      }
    }
    return { s: bs, d: bd };
  }
  pose(s: number): { x: number; y: number; heading: number } {
    const n = this.pts.length;
    let i = 0;
    while (i + 2 < n && this.s[i + 1]! < s) i++;
    const a = this.pts[i]!,
      b = this.pts[i + 1]!;
    const seg = this.s[i + 1]! - this.s[i]! || 1;
    const t = (s - this.s[i]!) / seg;
    return { x: a.x + t * (b.x - a.x), y: a.y + t * (b.y - a.y), heading: Math.atan2(b.y - a.y, b.x - a.x) };
  }
  /** Largest heading change per metre over [s0, s0 + len]. */
  curvature(s0: number, len: number): number {
    let k = 0;
    for (let s = s0; s < Math.min(s0 + len, this.length - 2); s += 2) {
      const h0 = this.pose(s).heading,
        h1 = this.pose(s + 2).heading;
      k = Math.max(k, Math.abs(Math.atan2(Math.sin(h1 - h0), Math.cos(h1 - h0))) / 2);
    }
    return k;
  }
}

const num = (t: unknown, i = 0): number => {
  const v = t as { data?: ArrayLike<number> } | number | undefined;
  if (typeof v === 'number') return v;
  return Number(v?.data?.[i] ?? 0);
};

function routeOf(info: Record<string, unknown>): RouteLine {
  const route = info['route'] as { waypoints?: number[][] } | undefined;
  if (!route?.waypoints) throw new Error('the reset info carries no route; is this Bench2Drive-v0?');
  return new RouteLine(route.waypoints);
}

/** Pure pursuit toward (x, y) in the ego frame; returns CARLA-signed steer in [-1, 1]. */
function pursuit(lx: number, ly: number, v: number): number {
  const ld = Math.max(Math.hypot(lx, ly), 1);
  const alpha = Math.atan2(ly, lx);
  const delta = Math.atan((2 * EGO.wheelBase * Math.sin(alpha)) / ld);
  return Math.max(-1, Math.min(1, -delta / maxSteerAngle(v)));
}

function toEgo(x: number, y: number, ex: number, ey: number, yaw: number): [number, number] {
  const dx = x - ex,
    dy = y - ey;
  const c = Math.cos(yaw),
    s = Math.sin(yaw);
  return [c * dx + s * dy, -s * dx + c * dy];
}

/** The naive baseline: lane following at a constant throttle, never braking. */
export class NaiveAgent implements Agent {
  readonly name = 'naive';
  readonly makeKwargs = {};
  private route: RouteLine | null = null;
  constructor(readonly throttle = 0.35) {}
  reset(info: Record<string, unknown>): void {
    this.route = routeOf(info);
  }
  act(obs: Record<string, unknown>): [number, number, number] {
    const x = num(obs['position'], 0),
      y = num(obs['position'], 1),
      yaw = num(obs['compass']),
      v = num(obs['speed']);
    const r = this.route!;
    const { s } = r.project(x, y);
    const p = r.pose(s + Math.max(5, 0.8 * v + 3));
    const [lx, ly] = toEgo(p.x, p.y, x, y, yaw);
    return [this.throttle, pursuit(lx, ly, v), 0];
  }
}

const EXPERT_IDM = { a: 2.0, b: 3.0, T: 1.2, s0: 3.0, delta: 4 } as const;

/** The rule-based expert (see the module comment). */
export class ExpertAgent implements Agent {
  readonly name = 'expert';
  readonly makeKwargs = { privileged: true };
  private route: RouteLine | null = null;
  private dCmd = 0;
  private overtaking: Set<number> = new Set();
  private yieldingEv = false;
  private stopDone = new Set<number>();
  private stoppedFor = 0;
  private turn: number = RoadOption.STRAIGHT;
  private committed = false;

  reset(info: Record<string, unknown>): void {
    this.route = routeOf(info);
    this.dCmd = 0;
    this.overtaking = new Set();
    this.yieldingEv = false;
    this.stopDone = new Set();
    this.stoppedFor = 0;
    this.committed = false;
    this.turn =
      this.route.pts.find((p) => p.option === RoadOption.LEFT || p.option === RoadOption.RIGHT || p.option === RoadOption.STRAIGHT)?.option ??
      RoadOption.STRAIGHT;
  }

  act(_obs: Record<string, unknown>, info: Record<string, unknown>): [number, number, number] {
    const pv = info['privileged'] as PrivilegedView | undefined;
    if (!pv) throw new Error('the expert needs make kwarg privileged: true');
    const r = this.route!;
    const { x, y, yaw, v } = pv.ego;
    const ego = r.project(x, y);
    const w = pv.lane_width;
    const others = pv.actors.map((a) => ({ a, ...r.project(a.x, a.y) }));
    const DT = 0.05;

    // ---- lateral plan ----
    const obstacles = others.filter(
      ({ a, s, d }) =>
        (a.role === 'parked' || a.kind === 'static' || a.kind === 'bicycle') && s - ego.s > -8 && s - ego.s < 45 && Math.abs(d) < w / 2 + a.width / 2,
    );
    const laneClear = (dc: number, back: number, front: number) =>
      !others.some(
        ({ a, s, d }) =>
          a.kind !== 'pedestrian' &&
          Math.abs(d - dc) < w / 2 + 0.8 &&
          s - ego.s > -back - 1.2 * Math.max(0, a.v - v) &&
          s - ego.s < front &&
          !this.overtaking.has(a.id),
      );
    let target = 0;
    if (this.overtaking.size || (obstacles.length && pv.left_lane)) {
      for (const o of obstacles) if (o.s - ego.s < 30) this.overtaking.add(o.a.id);
      const tracked = others.filter(({ a }) => this.overtaking.has(a.id));
      const end = Math.max(-Infinity, ...tracked.map((o) => o.s + o.a.length / 2));
      const started = Math.abs(this.dCmd) > 0.05;
      if (!started && !laneClear(w, 8, 15)) target = 0;
      else if (ego.s - EGO.length / 2 > end + 5 && laneClear(0, 6, 15)) {
        target = 0;
        if (Math.abs(this.dCmd) < 0.1) this.overtaking.clear();
      } else target = w;
    }
    const ev = others.find(({ a }) => a.role === 'emergency' && a.v > 1);
    if (ev && ev.s < ego.s + 2 && ego.s - ev.s < 60) this.yieldingEv = true;
    if (ev && ev.s > ego.s + 8) this.yieldingEv = false;
    if (this.yieldingEv) {
      const side = pv.left_lane ? w : pv.right_lane ? -w : 0;
      if (Math.abs(this.dCmd) > 0.05 || laneClear(side, 12, 20)) target = side;
    }
    // Swerve briskly from low speed (behind an obstacle), gently at speed.
    const step = (v < 4 ? 4.0 : 1.2) * DT;
    this.dCmd += Math.max(-step, Math.min(step, target - this.dCmd));

    const look = Math.max(5, Math.min(15, 3 + 0.8 * v));
    const p = r.pose(ego.s + look);
    const nx = -Math.sin(p.heading),
      ny = Math.cos(p.heading);
    const [lx, ly] = toEgo(p.x + nx * this.dCmd, p.y + ny * this.dCmd, x, y, yaw);
    const steer = pursuit(lx, ly, v);

    // ---- longitudinal plan ----
    let vTarget = Math.min(pv.speed_limit * 0.9, Math.sqrt(2.2 / Math.max(r.curvature(ego.s, 10 + 1.5 * v), 1e-3)));
    const stops: number[] = [];
    for (const c of pv.controls) {
      if (c.s < ego.s - 1) continue;
      if (c.kind === 'light') {
        const dist = c.s - 3 - ego.s;
        // Stop on yellow unless braking hard (4.5 m/s^2) cannot stop before the line.
        if (c.state === 'red' || (c.state === 'yellow' && dist + 1.5 > (v * v) / (2 * 4.5))) if (dist > -1.5) stops.push(c.s - 3);
      } else if (!this.stopDone.has(c.s)) {
        const at = c.s - 2.5;
        stops.push(at);
        if (v < 0.05 && Math.abs(ego.s - at) < 2.5) {
          this.stoppedFor += DT;
          if (this.stoppedFor > 0.6) {
            this.stopDone.add(c.s);
            this.stoppedFor = 0;
          }
        }
      }
    }
    if (pv.junction && pv.junction_entry_s !== null) {
      const entry = pv.junction_entry_s;
      if (ego.s > entry - 1.5) this.committed = true;
      if (
        !this.committed &&
        ego.s > entry - 40 &&
        this.junctionConflict(
          pv,
          others.map((o) => o.a),
          r.pose(entry).heading,
          r.pose(pv.junction_exit_s ?? entry).heading,
        )
      )
        stops.push(entry - 2.5);
    }
    if (pv.merge_s !== null && ego.s < pv.merge_s - 1) {
      const m = pv.merge_s;
      const te = (m - ego.s) / Math.max(v, 3);
      const heading = r.pose(m).heading;
      const conflict = others.some(
        ({ a, s, d }) =>
          a.kind !== 'pedestrian' &&
          Math.cos(a.yaw - heading) > 0.8 &&
          Math.abs(d) < 2.5 * w &&
          s > m - 3 - (te + 1.0) * a.v - 4 &&
          s < m + 4 &&
          Math.abs(s - ego.s) > 0.5,
      );
      if (conflict) stops.push(m - 9);
    }
    let gap = Infinity;
    let leadV = 0;
    const lo = Math.min(0, this.dCmd),
      hi = Math.max(0, this.dCmd);
    // Lateral extent of the ego's front corners relative to the route (it may be turned).
    const rel = yaw - r.pose(ego.s).heading;
    const fl = ego.d + (EGO.length / 2) * Math.sin(rel) + (EGO.width / 2) * Math.cos(rel);
    const fr = ego.d + (EGO.length / 2) * Math.sin(rel) - (EGO.width / 2) * Math.cos(rel);
    const egoLeft = Math.max(fl, fr, ego.d + EGO.width / 2),
      egoRight = Math.min(fl, fr, ego.d - EGO.width / 2);
    const started = Math.abs(this.dCmd) > 0.3;
    for (const { a, s, d } of others) {
      const ahead = s - ego.s;
      if (ahead <= 0 || ahead > 60) continue;
      const half = EGO.width / 2 + a.width / 2 + 0.3;
      const inPlan = d > lo - half && d < hi + half && !this.overtaking.has(a.id);
      const inNow = d + a.width / 2 + 0.25 > egoRight && d - a.width / 2 - 0.25 < egoLeft;
      let g = ahead - (EGO.length + a.length) / 2;
      // Hang back from an obstacle to overtake until the manoeuvre starts, to leave room to swerve.
      if (inNow && this.overtaking.has(a.id) && !started) g -= 9;
      else if (inNow && this.overtaking.has(a.id)) g += 1.5;
      if (inPlan || (inNow && g < 6)) {
        if (g < gap) {
          gap = g;
          leadV = Math.max(0, a.v * Math.cos(a.yaw - r.pose(s).heading));
        }
        continue;
      }
      if (a.v > 0.3 && (a.kind === 'pedestrian' || a.kind === 'bicycle' || a.kind === 'vehicle')) {
        // Something moving toward the corridor: treat its predicted crossing point as an obstacle.
        for (let tau = 0.5; tau <= 3.0; tau += 0.5) {
          const q = r.project(a.x + Math.cos(a.yaw) * a.v * tau, a.y + Math.sin(a.yaw) * a.v * tau);
          const qa = q.s - ego.s;
          if (qa > 0 && q.d > lo - half - 0.4 && q.d < hi + half + 0.4 && qa < v * (tau + 1.5) + 10) {
            const gq = qa - (EGO.length + a.length) / 2 - 1;
            if (gq < gap) {
              gap = gq;
              leadV = 0;
            }
            break;
          }
        }
      }
    }
    for (const st of stops) {
      const dist = st - ego.s;
      vTarget = Math.min(vTarget, dist < 0.3 ? 0 : Math.sqrt(2 * 2.5 * Math.max(0, dist - 0.3)));
    }
    let acc = Math.max(-6, Math.min(2.0, 1.5 * (vTarget - v)));
    if (Number.isFinite(gap)) {
      const idm = idmAcceleration({ ...EXPERT_IDM }, { v, v0: Math.max(vTarget, 0.5), gap, leadV });
      acc = Math.min(acc, idm);
      const need = -(v * v) / (2 * Math.max(gap - 1.0, 0.1));
      if (need < -EXPERT_IDM.b) acc = Math.min(acc, Math.max(-DRIVE.maxBrake, need));
    }
    if (vTarget < 0.05 && v < 0.3) return [0, steer, 1];
    if (acc >= 0) return [Math.max(0, Math.min(1, (acc + resistance(v)) / Math.max(driveAccel(v), 0.1))), steer, 0];
    const brake = Math.max(0, Math.min(1, (-acc - resistance(v)) / DRIVE.maxBrake));
    return [0, steer, brake];
  }

  /** Vehicles whose path crosses ours in the junction, inside it or reaching it within 4.5 s. */
  private junctionConflict(pv: PrivilegedView, actors: PrivilegedActor[], hIn: number, hOut: number): boolean {
    const j = pv.junction!;
    for (const a of actors) {
      if (a.kind === 'pedestrian' || a.kind === 'static' || a.role === 'parked') continue;
      const box = Math.max(Math.abs(a.x - j.x), Math.abs(a.y - j.y)) - j.half;
      const cIn = Math.cos(a.yaw - hIn);
      const cOut = Math.cos(a.yaw - hOut);
      let crossing: boolean;
      if (this.turn === RoadOption.RIGHT) crossing = cOut > 0.7 && cIn < 0.7;
      else if (this.turn === RoadOption.LEFT) crossing = cIn < 0.5;
      else crossing = Math.abs(cIn) < 0.5;
      if (!crossing) continue;
      if (box <= 0.5) {
        // Already in the box: a conflict unless it is leaving along our exit ahead of us.
        if (!(cOut > 0.7 && a.v > 1)) return true;
        continue;
      }
      const towards = (j.x - a.x) * Math.cos(a.yaw) + (j.y - a.y) * Math.sin(a.yaw) > 0;
      if (towards && a.v > 1.5 && box / a.v < 4.0) return true;
    }
    return false;
  }
}

/** The agents `gymwire eval bench2drive --agent NAME` knows. */
export const AGENTS = ['expert', 'naive'] as const;
export function makeAgent(name: string): Agent {
  if (name === 'expert') return new ExpertAgent();
  if (name === 'naive') return new NaiveAgent();
  throw new Error(`unknown agent ${JSON.stringify(name)}; available: ${AGENTS.join(', ')}`);
}
