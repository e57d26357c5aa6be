/**
 * Procedural towns for Bench2Drive routes, built on the shared lane-graph map (`envs/driving/map.ts`):
 * a four-arm junction of two-way multi-lane roads (signalised with two light groups, or controlled
 * by stop signs on the minor arms), or a straight multi-lane road with an optional on-ramp. Lanes
 * are sampled every metre; junction connectors are cubic Bézier curves. Driving is on the right.
 *
 * @example
 * const town = buildJunctionTown({ lanes: 2, laneWidth: 3.5, armLength: 120, signalized: true, speedLimit: 11 });
 * town.lane('S_in_0').next; // connector indices leaving the south arm's inner lane
 */
import type { Coords } from '../driving/geometry.ts';
import { Polyline } from '../driving/geometry.ts';
import type { LaneData, MapData } from '../driving/map.ts';
import { DrivingMap } from '../driving/map.ts';
import type { StopLine, StopZone } from './criteria.ts';

export interface TownLane {
  idx: number;
  id: string;
  line: Polyline;
  width: number;
  speedLimit: number;
  connector: boolean;
  /** Arm and direction for junction towns ('in' toward the centre, 'out' away from it). */
  arm: string | null;
  dir: 'in' | 'out' | 'fwd' | 'bwd' | 'ramp' | 'conn';
  next: number[];
  /** Arc length on the next lane where traffic enters it (0 except where a ramp joins mid-lane). */
  nextS: number;
  left: number | null;
  right: number | null;
  /** Index among the lanes of its carriageway, 0 next to the centre line. */
  k: number;
  lightId: number | null;
  stopSignId: number | null;
}

export interface TrafficLight {
  id: number;
  /** Light groups alternate: 0 (E–W) and 1 (N–S). */
  group: 0 | 1;
  x: number;
  y: number;
  stopLines: StopLine[];
}

export const LIGHT_TIMING = { green: 10, yellow: 3, allRed: 1 } as const;
export type LightState = 'green' | 'yellow' | 'red';

/** State of a light group at time t, with a phase offset (s) chosen per route. */
export function lightState(group: 0 | 1, t: number, offset: number): LightState {
  const half = LIGHT_TIMING.green + LIGHT_TIMING.yellow + LIGHT_TIMING.allRed;
  const cycle = 2 * half;
  let local = (t + offset - group * half) % cycle;
  if (local < 0) local += cycle;
  if (local < LIGHT_TIMING.green) return 'green';
  if (local < LIGHT_TIMING.green + LIGHT_TIMING.yellow) return 'yellow';
  return 'red';
}

export interface Town {
  name: string;
  map: DrivingMap;
  lanes: TownLane[];
  lights: TrafficLight[];
  stopSigns: StopZone[];
  /** Junction box centre and half size, or null for a plain road. */
  junction: { x: number; y: number; half: number } | null;
  signalized: boolean;
  lane(id: string): TownLane;
}

const ARMS = { E: 0, N: Math.PI / 2, W: Math.PI, S: -Math.PI / 2 } as const;
export type ArmName = keyof typeof ARMS;

function sampleLine(x0: number, y0: number, x1: number, y1: number): Coords {
  const len = Math.hypot(x1 - x0, y1 - y0);
  const n = Math.max(2, Math.ceil(len) + 1);
  const c = new Float64Array(2 * n);
  for (let i = 0; i < n; i++) {
    c[2 * i] = x0 + ((x1 - x0) * i) / (n - 1);
    c[2 * i + 1] = y0 + ((y1 - y0) * i) / (n - 1);
  }
  return c;
}

function sampleBezier(p0: [number, number], h0: number, p3: [number, number], h3: number): Coords {
  const chord = Math.hypot(p3[0] - p0[0], p3[1] - p0[1]);
  const k = chord * 0.42;
  const p1 = [p0[0] + k * Math.cos(h0), p0[1] + k * Math.sin(h0)];
  const p2 = [p3[0] - k * Math.cos(h3), p3[1] - k * Math.sin(h3)];
  const n = Math.max(3, Math.ceil(chord * 1.3));
  const c = new Float64Array(2 * (n + 1));
  for (let i = 0; i <= n; i++) {
    const t = i / n;
    const a = (1 - t) ** 3,
      b = 3 * (1 - t) ** 2 * t,
      d = 3 * (1 - t) * t * t,
      e = t ** 3;
    c[2 * i] = a * p0[0] + b * p1[0]! + d * p2[0]! + e * p3[0];
    c[2 * i + 1] = a * p0[1] + b * p1[1]! + d * p2[1]! + e * p3[1];
  }
  return c;
}

function lanePolygon(line: Polyline, width: number): number[][] {
  const c = line.coords;
  const n = line.size;
  const left: number[][] = [];
  const right: number[][] = [];
  for (let i = 0; i < n; i++) {
    const h = line.segmentHeading(Math.min(i, n - 2));
    const nx = -Math.sin(h),
      ny = Math.cos(h);
    left.push([c[2 * i]! + (nx * width) / 2, c[2 * i + 1]! + (ny * width) / 2]);
    right.push([c[2 * i]! - (nx * width) / 2, c[2 * i + 1]! - (ny * width) / 2]);
  }
  return [...left, ...right.reverse()];
}

class TownBuilder {
  readonly lanes: TownLane[] = [];
  private readonly byId = new Map<string, number>();
  add(l: Omit<TownLane, 'idx' | 'next' | 'nextS' | 'left' | 'right' | 'lightId' | 'stopSignId'>): TownLane {
    const lane: TownLane = { ...l, idx: this.lanes.length, next: [], nextS: 0, left: null, right: null, lightId: null, stopSignId: null };
    this.lanes.push(lane);
    this.byId.set(lane.id, lane.idx);
    return lane;
  }
  get(id: string): TownLane {
    const i = this.byId.get(id);
    if (i === undefined) throw new Error(`no lane ${id}`);
    return this.lanes[i]!;
  }
  has(id: string): boolean {
    return this.byId.has(id);
  }
  link(a: TownLane, b: TownLane): void {
    a.next.push(b.idx);
  }
  finish(
    name: string,
    lights: TrafficLight[],
    stopSigns: StopZone[],
    junction: Town['junction'],
    signalized: boolean,
    junctionPolygon: number[][] | null,
  ): Town {
    const lanes = this.lanes;
    const pts = (l: TownLane) => Array.from({ length: l.line.size }, (_, i) => [l.line.coords[2 * i]!, l.line.coords[2 * i + 1]!]);
    const laneData: LaneData[] = lanes.map((l) => ({
      id: l.id,
      roadblock_id: `rb_${l.id}`,
      polygon: lanePolygon(l.line, l.width),
      centerline: pts(l),
      speed_limit_mps: l.speedLimit,
      incoming: lanes.filter((o) => o.next.includes(l.idx)).map((o) => o.id),
      outgoing: l.next.map((i) => lanes[i]!.id),
      left_neighbour: l.left === null ? null : lanes[l.left]!.id,
      right_neighbour: l.right === null ? null : lanes[l.right]!.id,
    }));
    const data: MapData = {
      name,
      roadblocks: laneData.map((l, i) => ({
        id: l.roadblock_id,
        kind: lanes[i]!.connector ? 'roadblock_connector' : 'roadblock',
        polygon: l.polygon,
        incoming: [],
        outgoing: [],
      })),
      lanes: laneData,
      intersections: junctionPolygon ? [{ id: 'junction', polygon: junctionPolygon }] : [],
      carparks: [],
      drivable_areas: [],
      stop_signs: stopSigns.map((z) => ({ id: String(z.id), polygon: zonePolygon(z), lane_ids: lanes.filter((l) => l.stopSignId === z.id).map((l) => l.id) })),
    };
    const map = new DrivingMap(data);
    const byId = this.byId;
    return {
      name,
      map,
      lanes,
      lights,
      stopSigns,
      junction,
      signalized,
      lane: (id: string) => {
        const i = byId.get(id);
        if (i === undefined) throw new Error(`no lane ${id} in ${name}`);
        return lanes[i]!;
      },
    };
  }
}

function zonePolygon(z: StopZone): number[][] {
  const c = Math.cos(z.yaw),
    s = Math.sin(z.yaw);
  return [
    [z.x + c * z.halfLength - s * z.halfWidth, z.y + s * z.halfLength + c * z.halfWidth],
    [z.x - c * z.halfLength - s * z.halfWidth, z.y - s * z.halfLength + c * z.halfWidth],
    [z.x - c * z.halfLength + s * z.halfWidth, z.y - s * z.halfLength - c * z.halfWidth],
    [z.x + c * z.halfLength + s * z.halfWidth, z.y + s * z.halfLength - c * z.halfWidth],
  ];
}

export interface JunctionTownOptions {
  lanes: number;
  laneWidth: number;
  armLength: number;
  signalized: boolean;
  speedLimit: number;
  /** Arms with stop signs when not signalised (the minor road). */
  stopArms?: ArmName[];
}

/**
 * A four-arm junction at the origin. Arm lanes: `${arm}_in_${k}` (toward the centre) and
 * `${arm}_out_${k}`; connectors `${from}${k}>${to}${k'}`: straight from every lane, left turns from
 * the inner lane, right turns from the outer lane.
 */
export function buildJunctionTown(o: JunctionTownOptions): Town {
  const b = new TownBuilder();
  const w = o.laneWidth;
  const half = o.lanes * w + 2.5;
  const armNames = Object.keys(ARMS) as ArmName[];
  for (const arm of armNames) {
    const th = ARMS[arm];
    const ux = Math.cos(th),
      uy = Math.sin(th);
    const nx = -uy,
      ny = ux;
    for (let k = 0; k < o.lanes; k++) {
      const off = (k + 0.5) * w;
      // Incoming lanes drive toward the centre with the arm's left normal on their right.
      const ix = nx * off,
        iy = ny * off;
      b.add({
        id: `${arm}_in_${k}`,
        line: new Polyline(sampleLine(ix + ux * (half + o.armLength), iy + uy * (half + o.armLength), ix + ux * half, iy + uy * half)),
        width: w,
        speedLimit: o.speedLimit,
        connector: false,
        arm,
        dir: 'in',
        k,
      });
      b.add({
        id: `${arm}_out_${k}`,
        line: new Polyline(sampleLine(-ix + ux * half, -iy + uy * half, -ix + ux * (half + o.armLength), -iy + uy * (half + o.armLength))),
        width: w,
        speedLimit: o.speedLimit,
        connector: false,
        arm,
        dir: 'out',
        k,
      });
    }
    for (let k = 0; k < o.lanes; k++) {
      for (const d of ['in', 'out'] as const) {
        const l = b.get(`${arm}_${d}_${k}`);
        l.left = k > 0 ? b.get(`${arm}_${d}_${k - 1}`).idx : null;
        l.right = k < o.lanes - 1 ? b.get(`${arm}_${d}_${k + 1}`).idx : null;
      }
    }
  }
  const turnTarget = (arm: ArmName, turn: 'S' | 'L' | 'R'): ArmName => {
    const idx = armNames.indexOf(arm);
    // Arms in CCW order E, N, W, S. Coming in from `arm` and going straight leaves by the opposite arm.
    const off = turn === 'S' ? 2 : turn === 'L' ? 3 : 1;
    return armNames[(idx + off) % 4]!;
  };
  for (const arm of armNames) {
    for (let k = 0; k < o.lanes; k++) {
      const from = b.get(`${arm}_in_${k}`);
      const turns: ('S' | 'L' | 'R')[] = ['S'];
      if (k === 0) turns.push('L');
      if (k === o.lanes - 1) turns.push('R');
      for (const t of turns) {
        const toArm = turnTarget(arm, t);
        const to = b.get(`${toArm}_out_${k}`);
        const p0 = from.line.interpolate(from.line.length);
        const p3 = to.line.interpolate(0);
        const coords = t === 'S' ? sampleLine(p0.x, p0.y, p3.x, p3.y) : sampleBezier([p0.x, p0.y], p0.heading, [p3.x, p3.y], p3.heading);
        const conn = b.add({
          id: `${arm}${k}>${toArm}${k}`,
          line: new Polyline(coords),
          width: w,
          speedLimit: o.speedLimit,
          connector: true,
          arm: null,
          dir: 'conn',
          k,
        });
        b.link(from, conn);
        b.link(conn, to);
      }
    }
  }
  const lights: TrafficLight[] = [];
  const stopSigns: StopZone[] = [];
  for (const arm of armNames) {
    const th = ARMS[arm];
    const ux = Math.cos(th),
      uy = Math.sin(th);
    const nx = -uy,
      ny = ux;
    const yaw = th + Math.PI;
    if (o.signalized) {
      const id = lights.length + 1;
      const light: TrafficLight = {
        id,
        group: arm === 'E' || arm === 'W' ? 0 : 1,
        x: ux * half + nx * (o.lanes * w + 1),
        y: uy * half + ny * (o.lanes * w + 1),
        stopLines: [],
      };
      for (let k = 0; k < o.lanes; k++) {
        const l = b.get(`${arm}_in_${k}`);
        const end = l.line.interpolate(l.line.length);
        light.stopLines.push({ x: end.x, y: end.y, yaw, laneWidth: w, laneKey: l.id });
        l.lightId = id;
      }
      lights.push(light);
    } else if (o.stopArms?.includes(arm)) {
      const id = 100 + stopSigns.length;
      const mid = (o.lanes * w) / 2;
      stopSigns.push({ id, x: ux * (half + 1.5) + nx * mid, y: uy * (half + 1.5) + ny * mid, yaw, halfLength: 1.5, halfWidth: mid });
      for (let k = 0; k < o.lanes; k++) b.get(`${arm}_in_${k}`).stopSignId = id;
    }
  }
  const jp = [
    [half, half],
    [-half, half],
    [-half, -half],
    [half, -half],
  ];
  return b.finish(`Town_junction_${o.lanes}x${o.signalized ? 'sig' : 'stop'}`, lights, stopSigns, { x: 0, y: 0, half }, o.signalized, jp);
}

export interface StraightTownOptions {
  lanes: number;
  laneWidth: number;
  length: number;
  speedLimit: number;
  /** An on-ramp joining the outer forward lane at `mergeX` after running `length` metres beside it. */
  ramp?: { mergeX: number; length: number };
}

/**
 * A straight two-way road along +x from 0 to `length`: forward lanes `fwd_${k}` (k = 0 next to the
 * centre line, y < 0), backward lanes `bwd_${k}`, and optionally `ramp` merging into the outer
 * forward lane through the connector `ramp>fwd`.
 */
export function buildStraightTown(o: StraightTownOptions): Town {
  const b = new TownBuilder();
  const w = o.laneWidth;
  for (let k = 0; k < o.lanes; k++) {
    const y = -(k + 0.5) * w;
    b.add({
      id: `fwd_${k}`,
      line: new Polyline(sampleLine(0, y, o.length, y)),
      width: w,
      speedLimit: o.speedLimit,
      connector: false,
      arm: null,
      dir: 'fwd',
      k,
    });
    b.add({
      id: `bwd_${k}`,
      line: new Polyline(sampleLine(o.length, -y, 0, -y)),
      width: w,
      speedLimit: o.speedLimit,
      connector: false,
      arm: null,
      dir: 'bwd',
      k,
    });
  }
  for (let k = 0; k < o.lanes; k++) {
    for (const d of ['fwd', 'bwd'] as const) {
      const l = b.get(`${d}_${k}`);
      l.left = k > 0 ? b.get(`${d}_${k - 1}`).idx : null;
      l.right = k < o.lanes - 1 ? b.get(`${d}_${k + 1}`).idx : null;
    }
  }
  if (o.ramp) {
    const outer = b.get(`fwd_${o.lanes - 1}`);
    const y = -(o.lanes + 0.5) * w;
    const x1 = o.ramp.mergeX - 25;
    const ramp = b.add({
      id: 'ramp',
      line: new Polyline(sampleLine(x1 - o.ramp.length, y, x1, y)),
      width: w,
      speedLimit: o.speedLimit,
      connector: false,
      arm: null,
      dir: 'ramp',
      k: o.lanes,
    });
    const target = outer.line.interpolate(o.ramp.mergeX);
    const conn = b.add({
      id: 'ramp>fwd',
      line: new Polyline(sampleBezier([x1, y], 0, [target.x, target.y], 0)),
      width: w,
      speedLimit: o.speedLimit,
      connector: true,
      arm: null,
      dir: 'conn',
      k: o.lanes,
    });
    b.link(ramp, conn);
    // The connector joins the outer lane mid-way: vehicles continue on it at s = mergeX.
    conn.next.push(outer.idx);
    conn.nextS = o.ramp.mergeX;
  }
  return b.finish(`Town_road_${o.lanes}${o.ramp ? '_ramp' : ''}`, [], [], null, false, null);
}
