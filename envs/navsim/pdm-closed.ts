/**
 * PDM-Closed (`pdm_closed_planner.py` with NAVSIM's metric-caching settings): IDM proposals along
 * the route centreline and its +-1 m offsets at speed-limit fractions 0.2..1.0 (15 proposals),
 * a leading agent searched every second step in the path's driving corridor among objects
 * extrapolated at constant velocity, each proposal simulated with the LQR tracker and scored, and
 * the best one returned. Used to normalise ego progress and as a baseline agent.
 *
 * @example
 * const { states, poses } = pdmClosed(scene, world, 1);
 */
import { PACIFICA, S, STATE_SIZE } from '../driving/bicycle.ts';
import type { Coords } from '../driving/geometry.ts';
import { Polyline, bounds, boxCorners, convexIntersects, normalizeAngle, polygonsIntersect, relativePose, segmentIntersectsPolygon } from '../driving/geometry.ts';
import { simulate } from '../driving/lqr.ts';
import type { FrameObject, ScoringWorld, Version } from './pdm.ts';
import { buildWorld, proposalMetrics, aggregate, redLightsAt } from './pdm.ts';
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

/** A path with arc-length interpolation of (x, y, heading) like `PDMPath`. */
class PathSE2 {
  readonly line: Polyline;
  readonly headings: Float64Array;
  constructor(xy: Float64Array) {
    this.line = new Polyline(xy);
    const n = xy.length / 2;
    this.headings = new Float64Array(n);
    let prev = 0;
    for (let i = 0; i < n; i++) {
      const j = Math.min(i, n - 2);
      let h = this.line.segmentHeading(j);
      if (i > 0) h = prev + normalizeAngle(h - prev);
      this.headings[i] = h;
      prev = h;
    }
  }
  interpolate(s: number): [number, number, number] {
    const d = Math.min(Math.max(s, 1e-5), this.line.length);
    const p = this.line.interpolate(d);
    const st = this.line.s;
    let i = 0;
    while (i < st.length - 2 && (st[i + 1] as number) <= d) i++;
    const s0 = st[i] as number, s1 = st[i + 1] as number;
    const f = s1 > s0 ? (d - s0) / (s1 - s0) : 0;
    const h = (this.headings[i] as number) + f * ((this.headings[i + 1] as number) - (this.headings[i] as number));
    return [p.x, p.y, normalizeAngle(h)];
  }
}

function offsetPath(line: Polyline, offset: number): Float64Array {
  const c = line.coords;
  const n = c.length / 2;
  const out = new Float64Array(c.length);
  for (let i = 0; i < n; i++) {
    const h = line.segmentHeading(Math.min(i, n - 2));
    out[2 * i] = (c[2 * i] as number) - Math.sin(h) * offset;
    out[2 * i + 1] = (c[2 * i + 1] as number) + Math.cos(h) * offset;
  }
  return out;
}

function segDist2(px: number, py: number, ax: number, ay: number, bx: number, by: number): number {
  const dx = bx - ax, dy = by - ay;
  const l2 = dx * dx + dy * dy;
  let t = l2 > 0 ? ((px - ax) * dx + (py - ay) * dy) / l2 : 0;
  t = Math.max(0, Math.min(1, t));
  const qx = ax + t * dx - px, qy = ay + t * dy - py;
  return qx * qx + qy * qy;
}

/** Distance between two polygons (0 when they intersect). */
export function polygonDistance(a: Coords, b: Coords): number {
  if (polygonsIntersect(a, b)) return 0;
  let best = Infinity;
  const na = a.length / 2, nb = b.length / 2;
  for (let i = 0; i < na; i++) {
    for (let j = 0; j < nb; j++) {
      const k = (j + 1) % nb;
      best = Math.min(best, segDist2(a[2 * i] as number, a[2 * i + 1] as number, b[2 * j] as number, b[2 * j + 1] as number, b[2 * k] as number, b[2 * k + 1] as number));
    }
  }
  for (let i = 0; i < nb; i++) {
    for (let j = 0; j < na; j++) {
      const k = (j + 1) % na;
      best = Math.min(best, segDist2(b[2 * i] as number, b[2 * i + 1] as number, a[2 * j] as number, a[2 * j + 1] as number, a[2 * k] as number, a[2 * k + 1] as number));
    }
  }
  return Math.sqrt(best);
}

/** Distance from a polygon to a polyline (0 when they touch). */
function polygonToPolyline(poly: Coords, pts: number[]): number {
  let best = Infinity;
  const n = poly.length / 2;
  for (let i = 0; i + 3 < pts.length; i += 2) {
    const ax = pts[i] as number, ay = pts[i + 1] as number, bx = pts[i + 2] as number, by = pts[i + 3] as number;
    if (segmentIntersectsPolygon(ax, ay, bx, by, poly)) return 0;
    for (let k = 0; k < n; k++) {
      best = Math.min(best, segDist2(poly[2 * k] as number, poly[2 * k + 1] as number, ax, ay, bx, by));
      const l = (k + 1) % n;
      best = Math.min(best, segDist2(ax, ay, poly[2 * k] as number, poly[2 * k + 1] as number, poly[2 * l] as number, poly[2 * l + 1] as number));
    }
  }
  return Math.sqrt(best);
}

interface CvObject { token: string; corners: Float64Array; vx: number; vy: number; isStatic: boolean; heading: number; speed: number; red: boolean }

export interface PdmClosedResult {
  /** Simulated states of the chosen proposal (41 x 11, flat). */
  states: Float64Array;
  /** The chosen proposal's reference states (41 x 11, flat; only x, y, heading set). */
  reference: Float64Array;
  /** The trajectory as 8 poses in the rear-axle frame at 0.5 s (a NAVSIM agent's output). */
  poses: number[][];
  proposalIndex: number;
}

/**
 * Runs PDM-Closed on a scene. `world` is the scoring world of the same version (its map and
 * centreline are reused); PDM-Closed's own observation extrapolates objects at constant velocity.
 */
export function pdmClosed(scene: Scene, world: ScoringWorld = buildWorld(scene, 1), version: Version = 1): PdmClosedResult {
  const ego = scene.ego;
  const v = PACIFICA;
  const toCenter = (v.front + v.rear) / 2 - v.rear;
  const egoCx = ego.x + toCenter * Math.cos(ego.heading), egoCy = ego.y + toCenter * Math.sin(ego.heading);
  const egoPoly = boxCorners({ x: egoCx, y: egoCy, heading: ego.heading, length: v.front + v.rear, width: v.width });
  // Objects at t = 0 within the map radius, plus red on-route lane connectors.
  const objects: CvObject[] = [];
  for (const tr of world.tracks) {
    if (tr.t.length === 0 || Math.abs((tr.t[0] as number)) > 1e-6) continue;
    const x = tr.s[0] as number, y = tr.s[1] as number;
    if (Math.hypot(x - egoCx, y - egoCy) > PDM_CLOSED.mapRadius) continue;
    const stat = world.unique.get(tr.token)?.isStatic ?? false;
    const vx = stat ? 0 : (tr.s[3] as number), vy = stat ? 0 : (tr.s[4] as number);
    objects.push({ token: tr.token, corners: boxCorners({ x, y, heading: tr.s[2] as number, length: tr.length, width: tr.width }), vx, vy, isStatic: stat, heading: tr.s[2] as number, speed: Math.hypot(vx, vy), red: false });
  }
  for (const id of redLightsAt(scene, 0)) {
    const lane = world.map.lane(id);
    if (lane && world.routeLaneIds.has(id)) objects.push({ token: `red_light_${id}`, corners: lane.polygon, vx: 0, vy: 0, isStatic: true, heading: 0, speed: 0, red: true });
  }
  const collided = new Set(objects.filter((o) => (o.red ? false : convexIntersects(egoPoly, o.corners))).map((o) => o.token));
  const frameAt = (timeIdx: number): { o: CvObject; poly: Coords }[] => {
    const t = Math.floor(timeIdx / 2) * 2 * 0.1;
    return objects.map((o) => {
      if (o.red || o.isStatic) return { o, poly: o.corners };
      const p = new Float64Array(8);
      for (let k = 0; k < 8; k += 2) { p[k] = (o.corners[k] as number) + t * o.vx; p[k + 1] = (o.corners[k + 1] as number) + t * o.vy; }
      return { o, poly: p };
    });
  };

  const startLane = world.map.lane(routeStartLaneId(world, ego)) ;
  const speedLimit = startLane?.speedLimit ?? null;
  const targets = PDM_CLOSED.speedLimitFractions.map((f) => f * (speedLimit ?? PDM_CLOSED.fallbackTargetVelocity));
  const maxTarget = Math.max(...targets);
  const paths = [world.centerline.coords, ...PDM_CLOSED.lateralOffsets.map((o) => offsetPath(world.centerline, o))].map((c) => new PathSE2(c));
  const N = 40;
  const references: Float64Array[] = [];
  for (const path of paths) {
    const s0 = path.line.project(ego.x, ego.y).s;
    // Driving corridor: the path ahead for max target speed x 5 s, widened by half the ego width.
    const corridor: number[] = [];
    const sEnd = s0 + Math.abs(maxTarget) * PDM_CLOSED.trajectoryPoses * 0.1;
    const st = path.line.s;
    const c = path.line.coords;
    const startP = path.line.interpolate(s0);
    corridor.push(startP.x - Math.cos(startP.heading) * v.width / 2, startP.y - Math.sin(startP.heading) * v.width / 2);
    for (let i = 0; i < st.length; i++) if ((st[i] as number) > s0 && (st[i] as number) < sEnd) corridor.push(c[2 * i] as number, c[2 * i + 1] as number);
    const endP = path.line.interpolate(sEnd);
    corridor.push(endP.x + Math.cos(endP.heading) * v.width / 2, endP.y + Math.sin(endP.heading) * v.width / 2);

    const [cMinX, cMinY, cMaxX, cMaxY] = bounds(Float64Array.from(corridor));
    const margin = v.width / 2;
    const nearCorridor = (poly: Coords): boolean => {
      const [a, b, c2, d] = bounds(poly);
      return !(c2 < cMinX - margin || a > cMaxX + margin || d < cMinY - margin || b > cMaxY + margin);
    };
    for (const target of targets) {
      const ref = new Float64Array((N + 1) * STATE_SIZE);
      let prog = s0, vel = ego.vx;
      let lead = [0, 0, 0];
      const put = (i: number) => { const [x, y, h] = path.interpolate(prog); ref[i * STATE_SIZE] = x; ref[i * STATE_SIZE + 1] = y; ref[i * STATE_SIZE + 2] = h; };
      put(0);
      for (let t = 1; t <= N; t++) {
        if (t % PDM_CLOSED.leadingAgentUpdate === 0) {
          const frame = frameAt(t);
          let best: { d: number; o: CvObject } | null = null;
          const [x, y, h] = [ref[(t - 1) * STATE_SIZE] as number, ref[(t - 1) * STATE_SIZE + 1] as number, ref[(t - 1) * STATE_SIZE + 2] as number];
          const egoP = boxCorners({ x: x + toCenter * Math.cos(h), y: y + toCenter * Math.sin(h), heading: h, length: v.front + v.rear, width: v.width });
          for (const { o, poly } of frame) {
            if (collided.has(o.token)) continue;
            if (!nearCorridor(poly) || polygonToPolyline(poly, corridor) > v.width / 2) continue;
            const [mnx, mny, mxx, mxy] = bounds(poly);
            const objProg = path.line.project((mnx + mxx) / 2, (mny + mxy) / 2).s;
            if (objProg <= prog) continue;
            const d = polygonDistance(egoP, poly);
            if (!best || d < best.d) best = { d, o };
          }
          if (best) {
            const o = best.o;
            const leadV = o.red || o.isStatic ? 0 : o.speed * Math.cos(normalizeAngle(o.heading - h));
            lead = [prog + best.d, leadV, 0];
          } else lead = [path.line.length, 0, (v.front + v.rear) / 2];
        }
        const sStar = PDM_CLOSED.minGap + vel * PDM_CLOSED.headway + (vel * (vel - (lead[1] as number))) / (2 * Math.sqrt(PDM_CLOSED.accelMax * PDM_CLOSED.decelMax));
        const sAlpha = Math.max((lead[0] as number) - prog - (lead[2] as number), PDM_CLOSED.minGap);
        let acc = PDM_CLOSED.accelMax * (1 - Math.pow(vel / target, PDM_CLOSED.exponent) - (sStar / sAlpha) ** 2);
        acc = Math.min(PDM_CLOSED.accelMax, Math.max(-PDM_CLOSED.decelMax, acc));
        prog = prog + 0.1 * vel;
        vel = vel + 0.1 * acc;
        put(t);
      }
      references.push(ref);
    }
  }
  const init = egoStateArray(ego);
  const simulated = references.map((r) => simulate(r, init));
  const scored = aggregate(simulated.map((s) => proposalMetrics(s, world, { version })), version);
  let bestIdx = 0;
  scored.forEach((s, i) => { if (s.pdms > (scored[bestIdx]?.pdms ?? -1)) bestIdx = i; });
  // Re-sample the chosen proposal as NAVSIM's scoring does (microsecond time points, truncated).
  const chosen = references[bestIdx] as Float64Array;
  const t0 = scene.timestamp_us;
  const knots: Float64Array[] = [], times: number[] = [];
  for (let i = 0; i <= N; i++) { knots.push(chosen.slice(i * STATE_SIZE, (i + 1) * STATE_SIZE)); times.push(t0 + i * 100000); }
  const reference = sampleStates(times, knots, t0, N + 1, 0.1);
  const states = simulate(reference, init);
  const poses: number[][] = [];
  for (let k = 1; k <= 8; k++) {
    const o = k * 5 * STATE_SIZE;
    const rp = relativePose(ego, { x: reference[o + S.X] as number, y: reference[o + S.Y] as number, heading: reference[o + S.HEADING] as number });
    poses.push([rp.x, rp.y, rp.heading]);
  }
  return { states, reference, poses, proposalIndex: bestIdx };
}

function routeStartLaneId(world: ScoringWorld, ego: { x: number; y: number; heading: number }): string {
  const ids = world.map.lanesAt(ego.x, ego.y).filter((id) => world.routeLaneIds.has(id));
  if (ids[0]) return ids[0];
  return world.map.nearestLane(ego.x, ego.y, ego.heading, 1e6)?.lane.id ?? '';
}

export type { FrameObject };
