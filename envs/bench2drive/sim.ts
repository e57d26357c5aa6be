/**
 * The closed-loop Bench2Drive world at 20 Hz: the ego under throttle/steer/brake, reactive traffic
 * (IDM car following from the shared `envs/driving/idm.ts`, MOBIL lane changes, lights, stop
 * signs and yielding at unsignalised junctions), scripted scenario actors (parked and crashed cars,
 * construction, cyclists, pedestrians, cut-ins, red-light runners, an emergency vehicle), a light
 * cycle, and the leaderboard criteria running every tick. Collisions use the shared oriented-box
 * test; the ego cannot drive through what it hits (its move is undone and it stops).
 *
 * The world is plain data plus a {@link Scenario} it was built from, so `snapshot()`/`restore()`
 * reproduce the future exactly.
 *
 * @example
 * const world = new World(buildScenario('ParkedObstacle', 0), { backgroundVehicles: 30 });
 * world.step({ throttle: 0.5, steer: 0, brake: 0 });
 */
import { Random } from '../../runtime/random.ts';
import { boxCorners, convexIntersects } from '../driving/geometry.ts';
import { idmAcceleration } from '../driving/idm.ts';
import type { IdmParameters } from '../driving/idm.ts';
import { RoadOption, downsampleRoute, junctionOption } from './commands.ts';
import type { RoadOptionCode, RoutePoint } from './commands.ts';
import type { ActorKind, Contact, EgoSample, LightView, TrafficEvent } from './criteria.ts';
import {
  BlockedCriterion,
  CollisionCriterion,
  InRouteCriterion,
  MinSpeedCriterion,
  OutsideRouteLanesCriterion,
  RedLightCriterion,
  RouteCompletionCriterion,
  RouteTrack,
  ScenarioTimeoutCriterion,
  StopSignCriterion,
  YieldToEmergencyVehicleCriterion,
  routeTimeout,
} from './criteria.ts';
import type { MetricInfo } from './metrics.ts';
import { routeComfort } from './metrics.ts';
import type { RouteRecord } from './scoring.ts';
import { infractionPenalty, routeRecord } from './scoring.ts';
import type { LightState, Town, TownLane } from './town.ts';
import { LIGHT_TIMING } from './town.ts';
import type { Control, EgoState } from './vehicle.ts';
import { EGO, egoState, stepEgo } from './vehicle.ts';

export const DT = 0.05;
export const MAX_TICKS = 4000;

export type ActorRole = 'background' | 'scenario' | 'parked' | 'emergency';
export type ActorClass = 'vehicle' | 'bicycle' | 'pedestrian' | 'static';

/** How a scenario places an actor. Lane actors follow lanes; free actors walk or stand. */
export interface ActorSpec {
  kind: ActorClass;
  role: ActorRole;
  length: number;
  width: number;
  lane?: string;
  s?: number;
  /** Fixed lateral offset from the lane centre (left positive), e.g. a cyclist near the kerb. */
  d?: number;
  v?: number;
  v0?: number;
  /** Lanes to take after the current one (else random at each lane end). */
  path?: string[];
  x?: number;
  y?: number;
  yaw?: number;
  /** Heading relative to the lane (crashed cars stand askew). */
  yawOffset?: number;
  /** Walking velocity once active. */
  walk?: [number, number];
  /** Metres to walk before stopping. */
  walkDistance?: number;
  active?: boolean;
  runRed?: boolean;
  noLaneChange?: boolean;
}

export interface Trigger {
  /** Fires once the ego's route progress (m) reaches this. */
  atS: number;
  activate?: number[];
  light?: { group: 0 | 1; state: 'green' | 'red'; duration: number };
}

/** Everything that defines a route episode; rebuilt deterministically from the route id. */
export interface Scenario {
  routeId: string;
  index: number;
  scenarioType: string;
  town: Town;
  routeLanes: string[];
  startS: number;
  endS: number;
  egoSpeed: number;
  actors: ActorSpec[];
  triggers: Trigger[];
  backgroundVehicles: number;
  lightPhase: number;
  /** Route metres where a blocking scenario starts and where it is passed (or the actor to pass). */
  blocking: { startS: number; endS: number; actor?: number } | null;
  /** Index (in `actors`) of the emergency vehicle, and the time after activation when its test ends. */
  emergency: { actor: number; window: number } | null;
  seed: number;
}

export interface Actor {
  id: number;
  kind: ActorClass;
  role: ActorRole;
  length: number;
  width: number;
  lane: number;
  s: number;
  d: number;
  dFixed: number;
  v: number;
  v0: number;
  path: number[];
  x: number;
  y: number;
  yaw: number;
  yawOffset: number;
  wx: number;
  wy: number;
  walkLeft: number;
  active: boolean;
  runRed: boolean;
  noLaneChange: boolean;
  stopDone: boolean;
  stopWait: number;
  mobilTimer: number;
  alive: boolean;
}

const IDM: IdmParameters = { a: 1.5, b: 3.0, T: 1.3, s0: 2.0, delta: 4 };
const MOBIL = { gain: 0.2, maxBraking: 2.0, interval: 1.0 } as const;
const KIND: Record<ActorClass, ActorKind> = { vehicle: 'vehicle', bicycle: 'vehicle', pedestrian: 'pedestrian', static: 'static' };
const LIGHT_DURATIONS = [LIGHT_TIMING.green, LIGHT_TIMING.yellow, LIGHT_TIMING.allRed, LIGHT_TIMING.green, LIGHT_TIMING.yellow, LIGHT_TIMING.allRed];

/** Two light groups cycling green → yellow → all-red; scenarios may force a phase. */
export class LightController {
  phase = 0;
  elapsed = 0;
  constructor(offset: number) {
    this.advance(offset);
  }
  advance(dt: number): void {
    this.elapsed += dt;
    for (let guard = 0; guard < 100 && this.elapsed >= LIGHT_DURATIONS[this.phase]!; guard++) {
      this.elapsed -= LIGHT_DURATIONS[this.phase]!;
      this.phase = (this.phase + 1) % 6;
    }
  }
  state(group: 0 | 1): LightState {
    const p = this.phase - group * 3;
    return p === 0 ? 'green' : p === 1 ? 'yellow' : 'red';
  }
  /** Holds `group` green (or red, by greening the other group) for at least `duration` s. */
  force(group: 0 | 1, state: 'green' | 'red', duration: number): void {
    const g = state === 'green' ? group : ((1 - group) as 0 | 1);
    this.phase = g * 3;
    this.elapsed = LIGHT_TIMING.green - duration;
  }
}

export interface WorldOptions {
  /** Overrides the scenario's number of background vehicles. */
  backgroundVehicles?: number;
}

/** The per-tick record the env turns into obs and info. */
export interface TickResult {
  events: TrafficEvent[];
  done: boolean;
  status: 'running' | 'completed' | 'deviation' | 'blocked' | 'timeout' | 'tickRuntime';
}

/** A route of the world: dense 1 m points with their RoadOption, and its junction fraction. */
export interface RoutePlan {
  points: RoutePoint[];
  track: RouteTrack;
  lanes: number[];
  /** Route metres of each lane start along the route. */
  laneStart: number[];
  plan: RoutePoint[];
  junctionCompletion: number | null;
  junctionEntryS: number | null;
  junctionExitS: number | null;
  length: number;
  speedLimit: number;
}

export function buildRoute(town: Town, laneIds: readonly string[], startS: number, endS: number): RoutePlan {
  const lanes = laneIds.map((id) => town.lane(id));
  const points: RoutePoint[] = [];
  const laneStart: number[] = [];
  let acc = 0;
  let entry: number | null = null;
  let exit: number | null = null;
  lanes.forEach((l, i) => {
    const s0 = i === 0 ? startS : i > 0 && lanes[i - 1]!.nextS ? lanes[i - 1]!.nextS : 0;
    const s1 = i === lanes.length - 1 ? endS : l.line.length;
    laneStart.push(acc - s0);
    let option: RoadOptionCode = RoadOption.LANEFOLLOW;
    if (l.connector && town.junction) {
      const h0 = l.line.interpolate(0).heading;
      const h1 = l.line.interpolate(l.line.length).heading;
      option = junctionOption(h1 - h0);
      entry = acc;
      exit = acc + (s1 - s0);
    }
    for (let s = s0; s < s1 - 1e-9; s += 1) {
      const p = l.line.interpolate(s);
      points.push({ x: p.x, y: p.y, option });
    }
    acc += s1 - s0;
    if (i === lanes.length - 1) {
      const p = l.line.interpolate(s1);
      points.push({ x: p.x, y: p.y, option });
    }
  });
  const track = RouteTrack.fromPoints(points);
  let jc: number | null = null;
  if (town.junction) {
    const j = town.junction;
    const idx = points.findIndex((p) => Math.abs(p.x - j.x) <= j.half && Math.abs(p.y - j.y) <= j.half);
    if (idx >= 0) jc = (idx + 1 + 8) / points.length;
  }
  const ids = downsampleRoute(points, 50);
  return {
    points,
    track,
    lanes: lanes.map((l) => l.idx),
    laneStart,
    plan: ids.map((i) => points[i]!),
    junctionCompletion: jc,
    junctionEntryS: entry,
    junctionExitS: exit,
    length: track.length,
    speedLimit: lanes[0]!.speedLimit,
  };
}

function newActor(id: number, spec: ActorSpec, town: Town): Actor {
  const lane = spec.lane ? town.lane(spec.lane).idx : -1;
  return {
    id,
    kind: spec.kind,
    role: spec.role,
    length: spec.length,
    width: spec.width,
    lane,
    s: spec.s ?? 0,
    d: 0,
    dFixed: spec.d ?? 0,
    v: spec.v ?? 0,
    v0: spec.v0 ?? 0,
    path: (spec.path ?? []).map((p) => town.lane(p).idx),
    x: spec.x ?? 0,
    y: spec.y ?? 0,
    yaw: spec.yaw ?? 0,
    yawOffset: spec.yawOffset ?? 0,
    wx: spec.walk?.[0] ?? 0,
    wy: spec.walk?.[1] ?? 0,
    walkLeft: spec.walkDistance ?? Infinity,
    active: spec.active ?? true,
    runRed: spec.runRed ?? false,
    noLaneChange: spec.noLaneChange ?? spec.role !== 'background',
    stopDone: false,
    stopWait: 0,
    mobilTimer: (id % 20) * 0.05,
    alive: true,
  };
}

const isLaneActor = (a: Actor) => a.lane >= 0;
const moving = (a: Actor) => a.role !== 'parked' && a.kind !== 'static';

export class World {
  readonly scenario: Scenario;
  readonly route: RoutePlan;
  readonly timeout: number;
  ego: EgoState;
  actors: Actor[] = [];
  time = 0;
  tick = 0;
  lights: LightController;
  rng: Random;
  fired: boolean[];
  routeS = 0;
  private routeIdx = 0;
  emergencyStart: number | null = null;
  // criteria
  collision = new CollisionCriterion();
  redLight = new RedLightCriterion();
  stopSign = new StopSignCriterion();
  outside: OutsideRouteLanesCriterion;
  inRoute: InRouteCriterion;
  completion: RouteCompletionCriterion;
  blocked = new BlockedCriterion();
  minSpeed: MinSpeedCriterion;
  scenarioTimeout = new ScenarioTimeoutCriterion();
  yieldEv = new YieldToEmergencyVehicleCriterion();
  metric: number[] = [];
  status: TickResult['status'] = 'running';
  lastContacts: Contact[] = [];
  private readonly occ: number[][];
  private egoLanes: { lane: number; s: number; d: number }[] = [];
  private walkerLanes: { lane: number; s: number; actor: number }[] = [];

  constructor(scenario: Scenario, opts: WorldOptions = {}) {
    this.scenario = scenario;
    const town = scenario.town;
    this.route = buildRoute(town, scenario.routeLanes, scenario.startS, scenario.endS);
    this.timeout = routeTimeout([{ length: this.route.length, speedLimit: this.route.speedLimit }]);
    const first = town.lane(scenario.routeLanes[0]!);
    const p = first.line.interpolate(scenario.startS);
    this.ego = egoState(p.x, p.y, p.heading, scenario.egoSpeed);
    this.rng = new Random(scenario.seed);
    this.lights = new LightController(scenario.lightPhase);
    this.fired = scenario.triggers.map(() => false);
    this.outside = new OutsideRouteLanesCriterion(this.route.track);
    this.inRoute = new InRouteCriterion(this.route.track);
    this.completion = new RouteCompletionCriterion(this.route.track);
    this.minSpeed = new MinSpeedCriterion(this.route.track);
    this.occ = town.lanes.map(() => []);
    scenario.actors.forEach((spec, i) => this.actors.push(newActor(i + 1, spec, town)));
    this.spawnBackground(opts.backgroundVehicles ?? scenario.backgroundVehicles);
    for (const a of this.actors) this.placeActor(a);
  }

  private spawnBackground(n: number): void {
    const town = this.scenario.town;
    const candidates = town.lanes.filter((l) => !l.connector && l.dir !== 'ramp');
    const occupied: { lane: number; s: number }[] = this.actors.filter(isLaneActor).map((a) => ({ lane: a.lane, s: a.s }));
    const egoLane = this.route.lanes[0]!;
    let placed = 0;
    for (let attempt = 0; attempt < n * 20 && placed < n; attempt++) {
      const lane = candidates[this.rng.integer(0, candidates.length)]!;
      const s = this.rng.uniform(5, lane.line.length - 10);
      if (occupied.some((o) => o.lane === lane.idx && Math.abs(o.s - s) < 14)) continue;
      if (lane.idx === egoLane && Math.abs(s - this.scenario.startS) < 25) continue;
      const pose = lane.line.interpolate(s);
      if (Math.hypot(pose.x - this.ego.x, pose.y - this.ego.y) < 12) continue;
      const v0 = lane.speedLimit * this.rng.uniform(0.7, 0.95);
      const a = newActor(this.actors.length + 1, { kind: 'vehicle', role: 'background', length: 4.6, width: 2.0, lane: lane.id, s, v: v0 * 0.8, v0 }, town);
      this.actors.push(a);
      occupied.push({ lane: lane.idx, s });
      placed++;
    }
  }

  private placeActor(a: Actor): void {
    if (!isLaneActor(a)) return;
    const l = this.scenario.town.lanes[a.lane]!;
    const p = l.line.interpolate(a.s);
    const off = a.d + a.dFixed;
    a.x = p.x - Math.sin(p.heading) * off;
    a.y = p.y + Math.cos(p.heading) * off;
    a.yaw = p.heading + a.yawOffset;
  }

  lightViews(): LightView[] {
    return this.scenario.town.lights.map((l) => ({ id: l.id, x: l.x, y: l.y, red: this.lights.state(l.group) === 'red', stopLines: l.stopLines }));
  }

  private laneKeyAt = (x: number, y: number): string | null => {
    const ids = this.scenario.town.map.lanesAt(x, y);
    let best: string | null = null;
    for (const id of ids) {
      if (!this.scenario.town.lane(id).connector) return id;
      best = id;
    }
    return best;
  };

  private computeEgoLanes(): void {
    const town = this.scenario.town;
    const out: { lane: number; s: number; d: number }[] = [];
    const c = Math.cos(this.ego.yaw),
      s = Math.sin(this.ego.yaw);
    const probes = [
      [this.ego.x, this.ego.y],
      [this.ego.x + c * 2.2 + s * 0.9, this.ego.y + s * 2.2 - c * 0.9],
      [this.ego.x + c * 2.2 - s * 0.9, this.ego.y + s * 2.2 + c * 0.9],
    ] as const;
    for (const [px, py] of probes) {
      for (const id of town.map.lanesAt(px, py)) {
        const lane = town.lane(id);
        if (out.some((o) => o.lane === lane.idx)) continue;
        const pr = lane.line.project(this.ego.x, this.ego.y);
        out.push({ lane: lane.idx, s: pr.s, d: pr.d });
      }
    }
    this.egoLanes = out;
  }

  private computeWalkerLanes(): void {
    const town = this.scenario.town;
    this.walkerLanes.length = 0;
    this.actors.forEach((a, i) => {
      if (a.kind !== 'pedestrian' || !a.alive) return;
      for (const id of town.map.lanesAt(a.x, a.y)) {
        const lane = town.lane(id);
        this.walkerLanes.push({ lane: lane.idx, s: lane.line.project(a.x, a.y).s, actor: i });
      }
    });
  }

  /** Gap and speed of what is ahead of lane actor `i` (vehicles, the ego, walkers, stop lines). */
  private leader(i: number): { gap: number; v: number } {
    const a = this.actors[i]!;
    const town = this.scenario.town;
    const lane = town.lanes[a.lane]!;
    let gap = Infinity;
    let lv = 0;
    const consider = (g: number, v: number) => {
      if (g < gap) {
        gap = g;
        lv = v;
      }
    };
    const next = a.path[0] ?? (lane.next.length === 1 ? lane.next[0]! : -1);
    const rest = lane.line.length - a.s;
    for (const j of this.occ[a.lane]!) {
      if (j === i) continue;
      const b = this.actors[j]!;
      if (b.s > a.s) consider(b.s - a.s - (a.length + b.length) / 2, b.v);
    }
    if (next >= 0 && rest < 60) {
      const entry = lane.nextS;
      for (const j of this.occ[next]!) {
        const b = this.actors[j]!;
        if (b.s >= entry) consider(rest + b.s - entry - (a.length + b.length) / 2, b.v);
      }
    }
    for (const e of this.egoLanes) {
      if (Math.abs(e.d) > town.lanes[e.lane]!.width / 2 + 0.6) continue;
      if (e.lane === a.lane && e.s > a.s - 0.5) consider(e.s - a.s - (a.length + EGO.length) / 2, this.ego.v);
      else if (e.lane === next && e.s > lane.nextS - 0.5 && rest < 60) consider(rest + e.s - lane.nextS - (a.length + EGO.length) / 2, this.ego.v);
    }
    for (const w of this.walkerLanes) {
      if (w.lane === a.lane && w.s > a.s) consider(w.s - a.s - a.length / 2 - 1, 0);
      else if (w.lane === next && rest < 40) consider(rest + w.s - a.length / 2 - 1, 0);
    }
    const stopAt = rest - a.length / 2 - 1;
    if (lane.lightId !== null && !a.runRed) {
      const light = town.lights.find((l) => l.id === lane.lightId)!;
      const st = this.lights.state(light.group);
      if (st === 'red' || (st === 'yellow' && stopAt > (a.v * a.v) / (2 * 3.5))) consider(stopAt, 0);
    }
    if (lane.stopSignId !== null && !a.stopDone) {
      if (a.v < 0.1 && stopAt < 3) {
        a.stopWait += DT;
        if (a.stopWait > 1 && this.junctionClearFor(i)) a.stopDone = true;
        else consider(stopAt, 0);
      } else consider(stopAt, 0);
    }
    return { gap, v: lv };
  }

  /** A stop-sign approach may go when nothing is in the junction or coming along the major road soon. */
  private junctionClearFor(i: number): boolean {
    const town = this.scenario.town;
    const j = town.junction;
    if (!j) return true;
    const inBox = (x: number, y: number) => Math.abs(x - j.x) <= j.half + 1 && Math.abs(y - j.y) <= j.half + 1;
    if (inBox(this.ego.x, this.ego.y) || (this.approachTime(this.ego.x, this.ego.y, this.ego.v) < 4 && this.routeS < (this.route.junctionEntryS ?? 0)))
      return false;
    for (let k = 0; k < this.actors.length; k++) {
      if (k === i) continue;
      const b = this.actors[k]!;
      if (!b.alive || !b.active || !isLaneActor(b) || b.kind === 'pedestrian') continue;
      const lane = town.lanes[b.lane]!;
      if (lane.connector) return false;
      if (lane.dir === 'in' && lane.stopSignId === null && b.v > 1 && (lane.line.length - b.s) / b.v < 4.5) return false;
    }
    return true;
  }

  private approachTime(x: number, y: number, v: number): number {
    const j = this.scenario.town.junction;
    if (!j) return Infinity;
    const dist = Math.max(0, Math.max(Math.abs(x - j.x), Math.abs(y - j.y)) - j.half);
    return v > 0.5 ? dist / v : Infinity;
  }

  private chooseNext(a: Actor, lane: TownLane): number {
    if (a.path.length) return a.path.shift()!;
    if (lane.next.length === 0) return -1;
    return lane.next[this.rng.integer(0, lane.next.length)]!;
  }

  private mobil(i: number, accCur: number): void {
    const a = this.actors[i]!;
    const town = this.scenario.town;
    const lane = town.lanes[a.lane]!;
    if (lane.connector || lane.line.length - a.s < 45 || Math.abs(a.d) > 0.1) return;
    for (const side of [lane.left, lane.right]) {
      if (side === null) continue;
      let leadGap = Infinity,
        leadV = 0,
        follGap = Infinity,
        follV = 0;
      for (const j of this.occ[side]!) {
        const b = this.actors[j]!;
        const g = b.s - a.s;
        if (g >= 0) {
          if (g - (a.length + b.length) / 2 < leadGap) {
            leadGap = g - (a.length + b.length) / 2;
            leadV = b.v;
          }
        } else if (-g - (a.length + b.length) / 2 < follGap) {
          follGap = -g - (a.length + b.length) / 2;
          follV = b.v;
        }
      }
      for (const e of this.egoLanes) {
        if (e.lane !== side) continue;
        const g = e.s - a.s;
        if (g > -15 && g < 25) return;
      }
      if (leadGap < 2 || follGap < 2) continue;
      const accNew = idmAcceleration(IDM, { v: a.v, v0: a.v0, gap: leadGap, leadV });
      const follNew = Number.isFinite(follGap) ? idmAcceleration(IDM, { v: follV, v0: follV + 2, gap: follGap, leadV: a.v }) : 0;
      if (follNew < -MOBIL.maxBraking) continue;
      if (accNew - accCur > MOBIL.gain) {
        const w = lane.width;
        a.d = side === lane.left ? -w : w;
        a.lane = side;
        return;
      }
    }
  }

  private updateActors(): void {
    const town = this.scenario.town;
    for (const l of this.occ) l.length = 0;
    this.actors.forEach((a, i) => {
      if (a.alive && isLaneActor(a)) this.occ[a.lane]!.push(i);
    });
    this.computeWalkerLanes();
    for (let i = 0; i < this.actors.length; i++) {
      const a = this.actors[i]!;
      if (!a.alive) continue;
      if (!isLaneActor(a)) {
        if (a.kind === 'pedestrian' && a.active && a.walkLeft > 0) {
          const sp = Math.hypot(a.wx, a.wy);
          a.x += a.wx * DT;
          a.y += a.wy * DT;
          a.walkLeft -= sp * DT;
          a.v = sp;
          if (sp > 0) a.yaw = Math.atan2(a.wy, a.wx);
        } else a.v = 0;
        continue;
      }
      if (!a.active || !moving(a)) {
        a.v = 0;
        continue;
      }
      const { gap, v: lv } = this.leader(i);
      let acc = idmAcceleration(IDM, { v: a.v, v0: a.v0, gap, leadV: lv });
      if (Number.isFinite(gap) && a.v > 0) {
        const need = -(a.v * a.v) / (2 * Math.max(gap - 0.3, 0.05));
        if (need < -IDM.b) acc = Math.max(-8, Math.min(acc, need));
      }
      a.v = Math.max(0, a.v + acc * DT);
      a.s += a.v * DT;
      if (a.d !== 0) {
        const step = 1.2 * DT;
        a.d = Math.abs(a.d) <= step ? 0 : a.d - Math.sign(a.d) * step;
      }
      let lane = town.lanes[a.lane]!;
      for (let guard = 0; guard < 4 && a.s > lane.line.length; guard++) {
        const next = this.chooseNext(a, lane);
        if (next < 0) {
          this.respawn(a);
          break;
        }
        a.s = a.s - lane.line.length + lane.nextS;
        a.lane = next;
        a.stopDone = false;
        a.stopWait = 0;
        lane = town.lanes[next]!;
      }
      if (a.role === 'background' && !a.noLaneChange) {
        a.mobilTimer -= DT;
        if (a.mobilTimer <= 0) {
          a.mobilTimer = MOBIL.interval;
          this.mobil(i, acc);
        }
      }
      this.placeActor(a);
    }
  }

  /** Background vehicles leaving the map re-enter at a free lane start away from the ego. */
  private respawn(a: Actor): void {
    if (a.role !== 'background') {
      a.alive = false;
      return;
    }
    const town = this.scenario.town;
    const starts = town.lanes.filter((l) => (l.dir === 'in' || l.dir === 'fwd' || l.dir === 'bwd') && l.stopSignId === null);
    for (let attempt = 0; attempt < 10; attempt++) {
      const l = starts[this.rng.integer(0, starts.length)]!;
      const p = l.line.interpolate(0);
      if (Math.hypot(p.x - this.ego.x, p.y - this.ego.y) < 40) continue;
      if (this.occ[l.idx]!.some((j) => this.actors[j]!.s < 12)) continue;
      a.lane = l.idx;
      a.s = 0;
      a.d = 0;
      a.path = [];
      a.v = a.v0 * 0.8;
      return;
    }
    a.alive = false;
  }

  private contacts(): Contact[] {
    const ego = boxCorners({ x: this.ego.x, y: this.ego.y, heading: this.ego.yaw, length: EGO.length, width: EGO.width });
    const out: Contact[] = [];
    for (const a of this.actors) {
      if (!a.alive) continue;
      const r = (EGO.length + a.length) / 2 + 1;
      const dx = a.x - this.ego.x,
        dy = a.y - this.ego.y;
      if (dx * dx + dy * dy > r * r) continue;
      if (convexIntersects(ego, boxCorners({ x: a.x, y: a.y, heading: a.yaw, length: a.length, width: a.width }))) out.push({ id: a.id, kind: KIND[a.kind] });
    }
    return out;
  }

  /** Route progress (m) of a point, searched near the ego's index. */
  private updateRouteS(): void {
    const t = this.route.track;
    let best = Infinity;
    let bi = this.routeIdx;
    const lo = Math.max(0, this.routeIdx - 5),
      hi = Math.min(t.n - 1, this.routeIdx + 30);
    for (let i = lo; i <= hi; i++) {
      const d = (t.xs[i]! - this.ego.x) ** 2 + (t.ys[i]! - this.ego.y) ** 2;
      if (d < best) {
        best = d;
        bi = i;
      }
    }
    this.routeIdx = bi;
    const along = (this.ego.x - t.xs[bi]!) * t.fx[bi]! + (this.ego.y - t.ys[bi]!) * t.fy[bi]!;
    this.routeS = Math.max(0, Math.min(t.length, t.accum[bi]! + along));
  }

  /** Route progress of a world point near the route (used for the emergency vehicle). */
  routeProgressOf(x: number, y: number): number {
    const t = this.route.track;
    let best = Infinity;
    let bi = 0;
    for (let i = 0; i < t.n; i += 1) {
      const d = (t.xs[i]! - x) ** 2 + (t.ys[i]! - y) ** 2;
      if (d < best) {
        best = d;
        bi = i;
      }
    }
    return t.accum[bi]! + (x - t.xs[bi]!) * t.fx[bi]! + (y - t.ys[bi]!) * t.fy[bi]!;
  }

  private fireTriggers(): void {
    this.scenario.triggers.forEach((tr, k) => {
      if (this.fired[k] || this.routeS < tr.atS) return;
      this.fired[k] = true;
      for (const idx of tr.activate ?? []) {
        const a = this.actors[idx];
        if (!a) continue;
        a.active = true;
        a.v = a.role === 'emergency' ? a.v0 * 0.8 : a.v0;
        if (a.role === 'emergency') this.emergencyStart = this.time;
      }
      if (tr.light) this.lights.force(tr.light.group, tr.light.state, tr.light.duration);
    });
  }

  private laneStatus(): { onDrivingLane: boolean; inJunction: boolean; laneAngleDeg: number } {
    const town = this.scenario.town;
    const j = town.junction;
    const inJunction = !!j && Math.abs(this.ego.x - j.x) <= j.half && Math.abs(this.ego.y - j.y) <= j.half;
    let best: { d: number; angle: number } | null = null;
    for (const e of this.egoLanes) {
      const lane = town.lanes[e.lane]!;
      if (Math.abs(e.d) > lane.width / 2 + 0.5) continue;
      const h = lane.line.interpolate(e.s).heading;
      const ang = (Math.abs(Math.atan2(Math.sin(h - this.ego.yaw), Math.cos(h - this.ego.yaw))) * 180) / Math.PI;
      if (!best || Math.abs(e.d) < best.d) best = { d: Math.abs(e.d), angle: ang };
    }
    return { onDrivingLane: best !== null || inJunction, inJunction, laneAngleDeg: best?.angle ?? 0 };
  }

  private sample(): EgoSample & { yaw: number } {
    return { time: this.time, frame: this.tick, x: this.ego.x, y: this.ego.y, speed: this.ego.v, yaw: this.ego.yaw };
  }

  /** One 0.05 s tick under the given control. */
  step(control: Control): TickResult {
    if (this.status !== 'running') return { events: [], done: true, status: this.status };
    const before = this.eventLists().map((l) => l.length);
    this.tick += 1;
    this.time = this.tick * DT;
    this.lights.advance(DT);
    const prev = { x: this.ego.x, y: this.ego.y, yaw: this.ego.yaw, v: this.ego.v };
    stepEgo(this.ego, control, DT);
    this.updateRouteS();
    this.fireTriggers();
    this.computeEgoLanes();
    this.updateActors();
    const contacts = this.contacts();
    const hitSpeed = this.ego.v;
    if (contacts.length) {
      this.ego.x = prev.x;
      this.ego.y = prev.y;
      this.ego.yaw = prev.yaw;
      this.ego.aLon = -prev.v / DT;
      this.ego.v = 0;
      for (const c of contacts) {
        const a = this.actors.find((x) => x.id === c.id);
        if (a && a.kind === 'pedestrian') {
          a.walkLeft = 0;
          a.v = 0;
        }
      }
    }
    this.lastContacts = contacts;
    const s = this.sample();
    this.collision.update({ ...s, speed: hitSpeed }, contacts);
    this.redLight.update({ ...s, halfLength: EGO.length / 2 }, this.lightViews(), this.laneKeyAt);
    this.stopSign.update(s, this.scenario.town.stopSigns);
    this.outside.update(s, this.laneStatus());
    const bg: number[] = [];
    for (const a of this.actors) if (a.role === 'background' && a.alive) bg.push(a.v);
    this.minSpeed.update(s, bg);
    this.completion.update(s);
    const deviated = this.inRoute.update(s);
    const blocked = this.blocked.update(s);
    const b = this.scenario.blocking;
    if (b) {
      const endS = b.actor !== undefined ? this.routeProgressOf(this.actors[b.actor]!.x, this.actors[b.actor]!.y) + 5 : b.endS;
      this.scenarioTimeout.update(s, this.routeS >= b.startS, this.routeS >= endS);
    }
    const em = this.scenario.emergency;
    if (em && this.emergencyStart !== null && !this.yieldEv.finished) {
      const ev = this.actors[em.actor]!;
      const evS = this.routeProgressOf(ev.x, ev.y);
      if (evS > this.routeS + 5) this.yieldEv.finish(s, true);
      else if (this.time - this.emergencyStart > em.window) this.yieldEv.finish(s, false);
    }
    this.recordMetric();
    if (this.completion.completed) this.status = 'completed';
    else if (deviated) this.status = 'deviation';
    else if (blocked) this.status = 'blocked';
    else if (this.time > this.timeout) this.status = 'timeout';
    else if (this.tick >= MAX_TICKS) this.status = 'tickRuntime';
    if (this.status !== 'running') this.finish();
    const fresh: TrafficEvent[] = [];
    this.eventLists().forEach((l, i) => {
      for (let k = before[i]!; k < l.length; k++) fresh.push(l[k]!);
    });
    return { events: fresh, done: this.status !== 'running', status: this.status };
  }

  private finish(): void {
    const s = this.sample();
    this.outside.terminate(s);
    this.minSpeed.terminate(s);
    const em = this.scenario.emergency;
    if (em && this.emergencyStart !== null && !this.yieldEv.finished) {
      const ev = this.actors[em.actor]!;
      this.yieldEv.finish(s, this.routeProgressOf(ev.x, ev.y) > this.routeS);
    }
  }

  private recordMetric(): void {
    const e = this.ego;
    const c = Math.cos(e.yaw),
      s = Math.sin(e.yaw);
    const ax = e.aLon * c - e.aLat * s;
    const ay = e.aLon * s + e.aLat * c;
    this.metric.push(ax, ay, (e.yawRate * 180) / Math.PI, c, s, e.x, e.y, e.yaw);
  }

  /** The `metric_info` sample of tick k (CARLA conventions: angular velocity in deg/s). */
  metricInfo(k: number): MetricInfo {
    const m = this.metric;
    const o = k * 8;
    const c = m[o + 3]!,
      s = m[o + 4]!;
    return {
      acceleration: [m[o]!, m[o + 1]!, 0],
      angular_velocity: [0, 0, m[o + 2]!],
      forward_vector: [c, s, 0],
      right_vector: [s, -c, 0],
      location: [m[o + 5]!, m[o + 6]!, 0],
      rotation: [0, 0, (m[o + 7]! * 180) / Math.PI],
    };
  }

  comfort(): number {
    const n = this.metric.length / 8;
    return routeComfort(Array.from({ length: n }, (_, k) => this.metricInfo(k)));
  }

  private eventLists(): TrafficEvent[][] {
    return [
      this.collision.events,
      this.redLight.events,
      this.stopSign.events,
      this.outside.events,
      this.minSpeed.events,
      this.scenarioTimeout.events,
      this.yieldEv.events,
      this.inRoute.events,
      this.blocked.events,
    ];
  }

  /** Every event so far, in time order. */
  allEvents(): TrafficEvent[] {
    return this.eventLists()
      .flat()
      .sort((a, b) => a.frame - b.frame);
  }

  /** P now, counting the outside-lanes percentage so far. */
  penalty(): number {
    let p = 1;
    for (const l of this.eventLists()) p *= infractionPenalty(l);
    if (this.status === 'running') p *= 1 - this.outside.percentage() / 100;
    return p;
  }

  record(): RouteRecord {
    const failure = this.status === 'timeout' ? 'timeout' : this.status === 'tickRuntime' ? 'tickRuntime' : null;
    return routeRecord({
      route_id: this.scenario.routeId,
      scenario_name: this.scenario.scenarioType,
      town_name: this.scenario.town.name,
      routeCompletion: this.completion.percentage,
      targetReached: this.completion.completed,
      events: this.allEvents(),
      failure,
      routeLength: this.route.length,
      duration: this.time,
      junctionCompletion: this.route.junctionCompletion,
    });
  }
}
