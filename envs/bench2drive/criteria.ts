/**
 * The CARLA leaderboard 2.0 evaluation criteria that Bench2Drive scores with
 * (`scenario_runner/.../atomic_criteria.py`, `timer.py`), reimplemented over plain inputs so they
 * can run inside the simulator and be unit-tested on constructed cases. Each criterion keeps its
 * own state, is updated once per 0.05 s tick, and appends {@link TrafficEvent}s; constants and the
 * order of checks follow the originals.
 *
 * @example
 * const c = new CollisionCriterion();
 * c.update({ time: 1, frame: 20, x: 0, y: 0, speed: 5 }, [{ id: 7, kind: 'vehicle' }]);
 * c.events.length; // 1
 */

import { segmentsIntersect } from '../driving/geometry.ts';

export const TrafficEventType = {
  COLLISION_STATIC: 'COLLISION_STATIC',
  COLLISION_VEHICLE: 'COLLISION_VEHICLE',
  COLLISION_PEDESTRIAN: 'COLLISION_PEDESTRIAN',
  TRAFFIC_LIGHT_INFRACTION: 'TRAFFIC_LIGHT_INFRACTION',
  STOP_INFRACTION: 'STOP_INFRACTION',
  OUTSIDE_ROUTE_LANES_INFRACTION: 'OUTSIDE_ROUTE_LANES_INFRACTION',
  MIN_SPEED_INFRACTION: 'MIN_SPEED_INFRACTION',
  YIELD_TO_EMERGENCY_VEHICLE: 'YIELD_TO_EMERGENCY_VEHICLE',
  SCENARIO_TIMEOUT: 'SCENARIO_TIMEOUT',
  ROUTE_DEVIATION: 'ROUTE_DEVIATION',
  VEHICLE_BLOCKED: 'VEHICLE_BLOCKED',
  ROUTE_COMPLETION: 'ROUTE_COMPLETION',
} as const;
export type TrafficEventTypeName = (typeof TrafficEventType)[keyof typeof TrafficEventType];

/** One event, with the time and place it happened (the leaderboard keeps only a message). */
export interface TrafficEvent {
  type: TrafficEventTypeName;
  time: number;
  frame: number;
  x: number;
  y: number;
  message: string;
  /** For the percentage-based criteria (outside route lanes, min speed). */
  percentage?: number;
  otherId?: number;
  otherKind?: ActorKind;
}

export type ActorKind = 'vehicle' | 'pedestrian' | 'static';

/** The ego's state as the criteria see it on one tick. */
export interface EgoSample {
  time: number;
  frame: number;
  x: number;
  y: number;
  speed: number;
  yaw?: number;
}

const r3 = (v: number): number => Math.round(v * 1000) / 1000;
const at = (e: EgoSample): string => `(x=${r3(e.x)}, y=${r3(e.y)}, z=0)`;

/** A polyline route with cumulative distances (`_accum_meters`) and per-point forward vectors. */
export class RouteTrack {
  readonly n: number;
  readonly accum: Float64Array;
  readonly fx: Float64Array;
  readonly fy: Float64Array;
  constructor(
    readonly xs: Float64Array,
    readonly ys: Float64Array,
  ) {
    const n = xs.length;
    if (n < 2) throw new Error('a route needs at least two points');
    this.n = n;
    this.accum = new Float64Array(n);
    this.fx = new Float64Array(n);
    this.fy = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      if (i > 0) this.accum[i] = this.accum[i - 1]! + Math.hypot(xs[i]! - xs[i - 1]!, ys[i]! - ys[i - 1]!);
      const a = Math.min(i, n - 2);
      const dx = xs[a + 1]! - xs[a]!;
      const dy = ys[a + 1]! - ys[a]!;
      const l = Math.hypot(dx, dy) || 1;
      this.fx[i] = dx / l;
      this.fy[i] = dy / l;
    }
  }
  get length(): number {
    return this.accum[this.n - 1]!;
  }
  static fromPoints(pts: readonly { x: number; y: number }[]): RouteTrack {
    return new RouteTrack(
      Float64Array.from(pts, (p) => p.x),
      Float64Array.from(pts, (p) => p.y),
    );
  }
}

/** Collision contacts of one tick: the other actor's id and what it is (0 = map layout). */
export interface Contact {
  id: number;
  kind: ActorKind;
}

/**
 * `CollisionTest`: collisions within 5 m of the last counted one, or with the same actor within
 * 5 s, count once; contacts while the ego is below 0.1 m/s are not its fault. Static map objects
 * (id 0) never set the same-actor filter.
 */
export class CollisionCriterion {
  static readonly COLLISION_RADIUS = 5;
  static readonly MAX_ID_TIME = 5;
  static readonly EPSILON = 0.1;
  readonly events: TrafficEvent[] = [];
  private lastId: number | null = null;
  private lastTime = 0;
  private lastLoc: { x: number; y: number } | null = null;

  /** Contacts reach the criterion as the collision sensor's callbacks do, then its update runs. */
  update(ego: EgoSample, contacts: readonly Contact[]): void {
    for (const c of contacts) this.count(ego, c);
    if (this.lastLoc && Math.hypot(ego.x - this.lastLoc.x, ego.y - this.lastLoc.y) > CollisionCriterion.COLLISION_RADIUS) this.lastLoc = null;
    if (this.lastId !== null && ego.time - this.lastTime > CollisionCriterion.MAX_ID_TIME) this.lastId = null;
  }

  private count(ego: EgoSample, c: Contact): void {
    if (this.lastId !== null && this.lastId === c.id) return;
    if (this.lastLoc && Math.hypot(ego.x - this.lastLoc.x, ego.y - this.lastLoc.y) <= CollisionCriterion.COLLISION_RADIUS) return;
    if (ego.speed < CollisionCriterion.EPSILON) return;
    this.lastTime = ego.time;
    this.lastLoc = { x: ego.x, y: ego.y };
    if (c.id !== 0) this.lastId = c.id;
    const type =
      c.kind === 'static'
        ? TrafficEventType.COLLISION_STATIC
        : c.kind === 'vehicle'
          ? TrafficEventType.COLLISION_VEHICLE
          : TrafficEventType.COLLISION_PEDESTRIAN;
    this.events.push({
      type,
      time: ego.time,
      frame: ego.frame,
      x: ego.x,
      y: ego.y,
      otherId: c.id,
      otherKind: c.kind,
      message: `Agent collided against object with type=${c.kind} and id=${c.id} at ${at(ego)}`,
    });
  }
}

/** A stop line of a traffic light: a lane waypoint (position, yaw, lane width) and its lane key. */
export interface StopLine {
  x: number;
  y: number;
  yaw: number;
  laneWidth: number;
  laneKey: string;
}
export interface LightView {
  id: number;
  x: number;
  y: number;
  red: boolean;
  stopLines: readonly StopLine[];
}

/**
 * `RunningRedLightTest`: a red light within 15 m counts as run when the ego's tail segment (from
 * 0.8 to 1 half-length + 1 m behind its centre) crosses a stop line of width 0.8 lane widths on the
 * lane the tail is in, driving the lane's way. One infraction per light in a row.
 */
export class RedLightCriterion {
  static readonly DISTANCE_LIGHT = 15;
  readonly events: TrafficEvent[] = [];
  private lastLightId: number | null = null;

  update(ego: EgoSample & { yaw: number; halfLength: number }, lights: readonly LightView[], laneKeyAt: (x: number, y: number) => string | null): void {
    const c = Math.cos(ego.yaw);
    const s = Math.sin(ego.yaw);
    const tcx = ego.x - 0.8 * ego.halfLength * c;
    const tcy = ego.y - 0.8 * ego.halfLength * s;
    const tfx = ego.x - (ego.halfLength + 1) * c;
    const tfy = ego.y - (ego.halfLength + 1) * s;
    for (const light of lights) {
      if (this.lastLightId === light.id) continue;
      if (Math.hypot(light.x - ego.x, light.y - ego.y) > RedLightCriterion.DISTANCE_LIGHT) continue;
      if (!light.red) continue;
      const tailKey = laneKeyAt(tfx, tfy);
      for (const wp of light.stopLines) {
        const wc = Math.cos(wp.yaw);
        const ws = Math.sin(wp.yaw);
        if (tailKey !== wp.laneKey || c * wc + s * ws <= 0) continue;
        const h = 0.4 * wp.laneWidth;
        if (segmentsIntersect(tcx, tcy, tfx, tfy, wp.x - h * ws, wp.y + h * wc, wp.x + h * ws, wp.y - h * wc)) {
          this.events.push({
            type: TrafficEventType.TRAFFIC_LIGHT_INFRACTION,
            time: ego.time,
            frame: ego.frame,
            x: wp.x,
            y: wp.y,
            otherId: light.id,
            message: `Agent ran a red light ${light.id} at (x=${r3(wp.x)}, y=${r3(wp.y)}, z=0)`,
          });
          this.lastLightId = light.id;
          break;
        }
      }
    }
  }
}

/** A stop sign's trigger volume: an oriented box on the lane before the stop line. */
export interface StopZone {
  id: number;
  x: number;
  y: number;
  yaw: number;
  halfLength: number;
  halfWidth: number;
}
export function insideZone(z: StopZone, x: number, y: number): boolean {
  const dx = x - z.x;
  const dy = y - z.y;
  const c = Math.cos(z.yaw);
  const s = Math.sin(z.yaw);
  return Math.abs(dx * c + dy * s) <= z.halfLength && Math.abs(-dx * s + dy * c) <= z.halfWidth;
}

/**
 * `RunningStopTest`: a stop sign becomes the target once its trigger volume is within 4 m ahead of
 * the ego (probed every 0.5 m); the ego must then drop below 0.1 m/s before it leaves the volume,
 * or it ran the stop.
 */
export class StopSignCriterion {
  static readonly PROXIMITY_THRESHOLD = 4.0;
  static readonly SPEED_THRESHOLD = 0.1;
  static readonly WAYPOINT_STEP = 0.5;
  readonly events: TrafficEvent[] = [];
  private target: StopZone | null = null;
  private stopCompleted = false;
  private affected = false;

  private probes(ego: EgoSample & { yaw: number }): { x: number; y: number }[] {
    const out: { x: number; y: number }[] = [];
    const c = Math.cos(ego.yaw);
    const s = Math.sin(ego.yaw);
    for (let d = 0; d <= StopSignCriterion.PROXIMITY_THRESHOLD + 1e-9; d += StopSignCriterion.WAYPOINT_STEP) out.push({ x: ego.x + d * c, y: ego.y + d * s });
    return out;
  }

  update(ego: EgoSample & { yaw: number }, zones: readonly StopZone[]): void {
    const probes = this.probes(ego);
    const touches = (z: StopZone) => probes.some((p) => insideZone(z, p.x, p.y));
    if (!this.target) {
      this.target = zones.find(touches) ?? null;
      return;
    }
    if (!this.stopCompleted && ego.speed < StopSignCriterion.SPEED_THRESHOLD) this.stopCompleted = true;
    if (!this.affected) {
      if (insideZone(this.target, ego.x, ego.y) || touches(this.target)) this.affected = true;
      return;
    }
    if (!touches(this.target)) {
      if (!this.stopCompleted && this.affected) {
        const z = this.target;
        this.events.push({
          type: TrafficEventType.STOP_INFRACTION,
          time: ego.time,
          frame: ego.frame,
          x: z.x,
          y: z.y,
          otherId: z.id,
          message: `Agent ran a stop with id=${z.id} at (x=${r3(z.x)}, y=${r3(z.y)}, z=0)`,
        });
      }
      this.target = null;
      this.stopCompleted = false;
      this.affected = false;
    }
  }
}

/** What the map says about the ego's position for the lanes criterion. */
export interface LaneStatus {
  /** Centre inside a driving lane (within half its width + 0.5 m). */
  onDrivingLane: boolean;
  /** Inside a junction (the lane check is skipped there). */
  inJunction: boolean;
  /** Angle between the lane's direction and the ego's yaw, degrees in [0, 180]. */
  laneAngleDeg: number;
}

/**
 * `OutsideRouteLanesTest`: route metres passed while off the driving lanes or in a lane driven the
 * wrong way (more than 120° from the ego's yaw, checked outside junctions) add up; at the end one
 * event carries the percentage of the completed route, which multiplies P by (1 − pct/100).
 */
export class OutsideRouteLanesCriterion {
  static readonly MAX_VEHICLE_ANGLE = 120;
  static readonly WINDOWS_SIZE = 3;
  readonly events: TrafficEvent[] = [];
  private index = 0;
  private outside = false;
  private wrongLane = false;
  wrongDistance = 0;
  totalDistance = 0;
  constructor(private readonly route: RouteTrack) {}

  update(ego: EgoSample, lane: LaneStatus): void {
    this.outside = !lane.onDrivingLane;
    if (!lane.inJunction) this.wrongLane = lane.laneAngleDeg > OutsideRouteLanesCriterion.MAX_VEHICLE_ANGLE;
    else this.wrongLane = false;
    const r = this.route;
    const end = Math.min(this.index + OutsideRouteLanesCriterion.WINDOWS_SIZE + 1, r.n);
    for (let i = this.index + 1; i < end; i++) {
      if ((ego.x - r.xs[i]!) * r.fx[i]! + (ego.y - r.ys[i]!) * r.fy[i]! > 0) {
        const d = Math.hypot(r.xs[i]! - r.xs[this.index]!, r.ys[i]! - r.ys[this.index]!);
        this.totalDistance += d;
        if (this.outside || this.wrongLane) this.wrongDistance += d;
        this.index = i;
      }
    }
  }

  /** The percentage so far (of the completed route), 0 when nothing was driven. */
  percentage(): number {
    return this.totalDistance > 0 ? (this.wrongDistance / this.totalDistance) * 100 : 0;
  }

  /** Emits the event at the end of the route, as the criterion's `terminate` does. */
  terminate(ego: EgoSample): void {
    if (this.wrongDistance > 0) {
      const pct = this.percentage();
      this.events.push({
        type: TrafficEventType.OUTSIDE_ROUTE_LANES_INFRACTION,
        time: ego.time,
        frame: ego.frame,
        x: ego.x,
        y: ego.y,
        percentage: pct,
        message: `Agent went outside its route lanes for about ${r3(this.wrongDistance)} meters (${Math.round(pct * 100) / 100}% of the completed route)`,
      });
      this.wrongDistance = 0;
    }
  }
}

/**
 * `InRouteTest`: deviation when the closest of the next 6 route points is 30 m away or more, or
 * when the route metres passed while 15 m or more off it exceed 30 % of the route.
 */
export class InRouteCriterion {
  static readonly MAX_ROUTE_PERCENTAGE = 30;
  static readonly WINDOWS_SIZE = 5;
  readonly events: TrafficEvent[] = [];
  private index = 0;
  private inSafeRoute = true;
  private outRouteDistance = 0;
  constructor(
    private readonly route: RouteTrack,
    readonly offroadMin = 15,
    readonly offroadMax = 30,
  ) {}

  /** Returns true when the route must end (deviation). */
  update(ego: EgoSample): boolean {
    const r = this.route;
    let offRoute = true;
    let best = Infinity;
    let closest = -1;
    const end = Math.min(this.index + InRouteCriterion.WINDOWS_SIZE + 1, r.n);
    for (let i = this.index; i < end; i++) {
      const d = Math.hypot(ego.x - r.xs[i]!, ego.y - r.ys[i]!);
      if (d <= best) {
        best = d;
        closest = i;
      }
    }
    if (closest === -1) return false;
    if (best < this.offroadMax) {
      offRoute = false;
      this.inSafeRoute = best < this.offroadMin;
    }
    if (this.index !== closest) {
      const nd = r.accum[closest]! - r.accum[this.index]!;
      if (!this.inSafeRoute) {
        this.outRouteDistance += nd;
        if ((100 * this.outRouteDistance) / r.length > InRouteCriterion.MAX_ROUTE_PERCENTAGE) offRoute = true;
      }
      this.index = closest;
    }
    if (offRoute) {
      this.events.push({
        type: TrafficEventType.ROUTE_DEVIATION,
        time: ego.time,
        frame: ego.frame,
        x: ego.x,
        y: ego.y,
        message: `Agent deviated from the route at ${at(ego)}`,
      });
    }
    return offRoute;
  }
}

/**
 * `RouteCompletionTest`: a route point counts as passed once (ego − point)·forward > 0, looking at
 * most 2 points ahead of the last passed one; R = accumulated metres to it over the route length.
 * R becomes 100 when it exceeds 99 % and the ego is within 10 m of the last point.
 */
export class RouteCompletionCriterion {
  static readonly PERCENTAGE_THRESHOLD = 99;
  static readonly WINDOWS_SIZE = 2;
  static readonly DISTANCE_THRESHOLD = 10;
  index = 0;
  percentage = 0;
  completed = false;
  constructor(private readonly route: RouteTrack) {}

  update(ego: EgoSample): number {
    const r = this.route;
    const end = Math.min(this.index + RouteCompletionCriterion.WINDOWS_SIZE + 1, r.n);
    for (let i = this.index; i < end; i++) {
      if ((ego.x - r.xs[i]!) * r.fx[i]! + (ego.y - r.ys[i]!) * r.fy[i]! > 0) {
        this.index = i;
        this.percentage = (100 * r.accum[i]!) / r.length;
      }
    }
    const last = r.n - 1;
    if (
      this.percentage > RouteCompletionCriterion.PERCENTAGE_THRESHOLD &&
      Math.hypot(ego.x - r.xs[last]!, ego.y - r.ys[last]!) < RouteCompletionCriterion.DISTANCE_THRESHOLD
    ) {
      this.completed = true;
      this.percentage = 100;
    }
    return this.percentage;
  }
}

/**
 * `ActorBlockedTest(min_speed 0.1, max_time 60)`: blocked once the ego has stayed below 0.1 m/s
 * for more than 60 s since it last moved (or since the criterion started).
 */
export class BlockedCriterion {
  readonly events: TrafficEvent[] = [];
  private lastValid: number | null = null;
  constructor(
    readonly minSpeed = 0.1,
    readonly maxTime = 60,
  ) {}

  update(ego: EgoSample): boolean {
    if (ego.speed < this.minSpeed && this.lastValid !== null) {
      if (ego.time - this.lastValid > this.maxTime) {
        this.events.push({
          type: TrafficEventType.VEHICLE_BLOCKED,
          time: ego.time,
          frame: ego.frame,
          x: ego.x,
          y: ego.y,
          message: `Agent got blocked at ${at(ego)}`,
        });
        return true;
      }
    } else this.lastValid = ego.time;
    return false;
  }
}

/** Python's `round(x, 2)`: nearest, ties to even. */
function roundHalfEven2(x: number): number {
  const y = x * 100;
  const f = Math.floor(y);
  const d = y - f;
  const n = d > 0.5 ? f + 1 : d < 0.5 ? f : f % 2 === 0 ? f : f + 1;
  return n / 100;
}

/**
 * `MinimumSpeedRouteTest` (Bench2Drive v0.0.4 @7ec25d1, the leaderboard's 20 checkpoints): a
 * checkpoint is recorded on the first tick whose route distance exceeds the last checkpoint's by
 * more than 1/20 of the route, before that tick's speeds are added. Between checkpoints it sums the
 * ego's speed and the mean speed of the background vehicles over the ticks that had any; each
 * checkpoint records round(ego / background × 100, 2), or 100 when no background speed was
 * measured. At the end, the partial checkpoint is recorded only past 95 % of the route.
 * Bench2Drive does not penalise these; they feed the Efficiency metric.
 */
export class MinSpeedCriterion {
  static readonly CHECKPOINTS = 20;
  static readonly WINDOWS_SIZE = 2;
  readonly events: TrafficEvent[] = [];
  private index = 0;
  private currentDist = 0;
  private egoSum = 0;
  private bgSum = 0;
  private points = 0;
  private readonly checkpointDist: number;
  constructor(private readonly route: RouteTrack) {
    this.checkpointDist = (route.accum[route.n - 1] as number) / MinSpeedCriterion.CHECKPOINTS;
  }

  update(ego: EgoSample, backgroundSpeeds: ArrayLike<number>): void {
    const r = this.route;
    const end = Math.min(this.index + MinSpeedCriterion.WINDOWS_SIZE + 1, r.n);
    for (let i = this.index; i < end; i++) {
      if ((ego.x - r.xs[i]!) * r.fx[i]! + (ego.y - r.ys[i]!) * r.fy[i]! > 0) this.index = i;
    }
    if (r.accum[this.index]! - this.currentDist > this.checkpointDist) {
      this.record(ego);
      this.currentDist = r.accum[this.index]!;
    }
    if (backgroundSpeeds.length > 0) {
      let m = 0;
      for (let i = 0; i < backgroundSpeeds.length; i++) m += backgroundSpeeds[i]!;
      this.bgSum += m / backgroundSpeeds.length;
      this.egoSum += ego.speed;
      this.points += 1;
    }
  }

  private record(ego: EgoSample): void {
    const pct = this.points > 0 && this.bgSum !== 0 ? roundHalfEven2((this.egoSum / this.points / (this.bgSum / this.points)) * 100) : 100;
    this.events.push({
      type: TrafficEventType.MIN_SPEED_INFRACTION,
      time: ego.time,
      frame: ego.frame,
      x: ego.x,
      y: ego.y,
      percentage: pct,
      message: `Average speed is ${pct}% of the surrounding traffic's one`,
    });
    this.egoSum = 0;
    this.bgSum = 0;
    this.points = 0;
  }

  terminate(ego: EgoSample): void {
    const r = this.route;
    if (r.accum[this.index]! / r.accum[r.n - 1]! > 0.95) this.record(ego);
  }
}

/**
 * `ScenarioTimeoutTest`: a blocking scenario (parked obstacle, accident, construction...) must be
 * passed within its timeout from the moment it triggers (Bench2Drive's scenarios use 240 s).
 */
export class ScenarioTimeoutCriterion {
  static readonly DEFAULT_TIMEOUT = 240;
  readonly events: TrafficEvent[] = [];
  private startTime: number | null = null;
  private done = false;
  constructor(readonly timeout = ScenarioTimeoutCriterion.DEFAULT_TIMEOUT) {}

  /** `triggered`: the scenario has started; `passed`: the ego got past it. */
  update(ego: EgoSample, triggered: boolean, passed: boolean): void {
    if (this.done) return;
    if (triggered && this.startTime === null) this.startTime = ego.time;
    if (this.startTime === null) return;
    if (passed) {
      this.done = true;
      return;
    }
    if (ego.time - this.startTime > this.timeout) {
      this.done = true;
      this.events.push({
        type: TrafficEventType.SCENARIO_TIMEOUT,
        time: ego.time,
        frame: ego.frame,
        x: ego.x,
        y: ego.y,
        message: 'Agent timed out a scenario',
      });
    }
  }
}

/**
 * `YieldToEmergencyVehicleTest`: when the emergency-vehicle scenario ends (or the route does), the
 * ego failed to yield if the emergency vehicle is not ahead of it along the route.
 */
export class YieldToEmergencyVehicleCriterion {
  readonly events: TrafficEvent[] = [];
  private done = false;

  /** `evAhead`: the EV's route progress is beyond the ego's. */
  finish(ego: EgoSample, evAhead: boolean): void {
    if (this.done) return;
    this.done = true;
    if (!evAhead)
      this.events.push({
        type: TrafficEventType.YIELD_TO_EMERGENCY_VEHICLE,
        time: ego.time,
        frame: ego.frame,
        x: ego.x,
        y: ego.y,
        message: `Agent failed to yield to an emergency vehicle at ${at(ego)}`,
      });
  }
  get finished(): boolean {
    return this.done;
  }
}

/**
 * The route timeout (`RouteTimeoutBehavior`): 300 s plus, per route segment, its length over
 * 0.1 × the speed limit (m/s) on it.
 */
export function routeTimeout(segments: readonly { length: number; speedLimit: number }[]): number {
  let t = 300;
  for (const s of segments) t += s.length / (0.1 * s.speedLimit);
  return t;
}
