/**
 * The route set: 14 of Bench2Drive's 44 scenario types, named as Bench2Drive names them and
 * covering its five abilities, with five seeded routes each (70 routes, ids `<Type>_<k>`). Each
 * route is about 150 m on a procedural town (junction or multi-lane road), with the scenario's
 * actors, triggers, and background traffic. A `dev` subset of 10 routes mirrors Bench2Drive's Dev10.
 *
 * @example
 * const sc = buildScenario('ParkedObstacle', 2);
 * ROUTE_IDS.length; // 70
 */
import { Random } from '../../runtime/random.ts';
import { ABILITIES, ABILITY_NAMES } from './metrics.ts';
import type { ActorSpec, Scenario, Trigger } from './sim.ts';
import type { ArmName, Town } from './town.ts';
import { buildJunctionTown, buildStraightTown } from './town.ts';

export const SCENARIO_TYPES = [
  'ParkedObstacle',
  'Accident',
  'ConstructionObstacle',
  'HazardAtSideLane',
  'DynamicObjectCrossing',
  'PedestrianCrossing',
  'OppositeVehicleRunningRedLight',
  'SignalizedJunctionLeftTurn',
  'NonSignalizedJunctionRightTurn',
  'HighwayCutIn',
  'MergerIntoSlowTrafficV2',
  'YieldToEmergencyVehicle',
  'VanillaSignalizedTurnEncounterRedLight',
  'VanillaNonSignalizedTurnEncounterStopsign',
] as const;
export type ScenarioType = (typeof SCENARIO_TYPES)[number];
export const ROUTES_PER_SCENARIO = 5;
export const ROUTE_IDS: readonly string[] = SCENARIO_TYPES.flatMap((t) => Array.from({ length: ROUTES_PER_SCENARIO }, (_, k) => `${t}_${k}`));
/** Ten routes, one per scenario family, for quick runs (`--routes dev`). */
export const DEV_ROUTE_IDS: readonly string[] = [
  'ParkedObstacle_0',
  'Accident_1',
  'HazardAtSideLane_2',
  'DynamicObjectCrossing_0',
  'OppositeVehicleRunningRedLight_1',
  'SignalizedJunctionLeftTurn_0',
  'NonSignalizedJunctionRightTurn_3',
  'HighwayCutIn_0',
  'YieldToEmergencyVehicle_1',
  'VanillaSignalizedTurnEncounterRedLight_2',
];

/** The abilities a scenario type belongs to (from `ability_benchmark.py`). */
export function abilitiesOf(type: string): string[] {
  return ABILITY_NAMES.filter((a) => ABILITIES[a]!.includes(type));
}

export class UnknownRouteError extends Error {
  override readonly name = 'UnknownRouteError';
}

export function parseRouteId(id: string): { type: ScenarioType; index: number } {
  const m = /^(.+)_(\d+)$/.exec(id);
  const type = m?.[1] as ScenarioType | undefined;
  const index = m ? Number(m[2]) : -1;
  if (!type || !SCENARIO_TYPES.includes(type) || index < 0 || index >= ROUTES_PER_SCENARIO) {
    throw new UnknownRouteError(
      `unknown route ${JSON.stringify(id)}; valid routes are <Type>_<0..${ROUTES_PER_SCENARIO - 1}> with Type one of ${SCENARIO_TYPES.join(', ')}`,
    );
  }
  return { type, index };
}

function hashSeed(type: string, index: number): number {
  let h = 2166136261;
  for (const ch of type) h = Math.imul(h ^ ch.charCodeAt(0), 16777619) >>> 0;
  return (h ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0;
}

const CAR = { length: 4.6, width: 2.0 } as const;

interface Base {
  town: Town;
  routeLanes: string[];
  startS: number;
  endS: number;
  /** Route metres from a lane s on the first lane. */
  rs: (laneS: number) => number;
}

function roadBase(rng: Random, opts: { ramp?: boolean; lanes?: number; speed?: number; egoLaneK?: number; onRamp?: boolean }): Base {
  const lanes = opts.lanes ?? 2;
  const w = rng.uniform(3.3, 3.7);
  const startS = rng.uniform(25, 40);
  const mergeX = startS + 75;
  const town = buildStraightTown({
    lanes,
    laneWidth: w,
    length: startS + 230,
    speedLimit: opts.speed ?? 11.1,
    ...(opts.ramp ? { ramp: { mergeX, length: 120 } } : {}),
  });
  if (opts.onRamp) {
    const ramp = town.lane('ramp');
    const conn = town.lane('ramp>fwd');
    const s0 = ramp.line.length - 70;
    const used = 70 + conn.line.length;
    return { town, routeLanes: ['ramp', 'ramp>fwd', `fwd_${lanes - 1}`], startS: s0, endS: mergeX + (150 - used), rs: (s) => s - s0 };
  }
  const k = opts.egoLaneK ?? lanes - 1;
  return { town, routeLanes: [`fwd_${k}`], startS, endS: startS + 150, rs: (s) => s - startS };
}

const OPPOSITE: Record<ArmName, ArmName> = { E: 'W', W: 'E', N: 'S', S: 'N' };
const LEFT_OF: Record<ArmName, ArmName> = { S: 'W', W: 'N', N: 'E', E: 'S' };
const RIGHT_OF: Record<ArmName, ArmName> = { S: 'E', E: 'N', N: 'W', W: 'S' };

function junctionBase(
  rng: Random,
  opts: { signalized: boolean; turn: 'S' | 'L' | 'R'; lanes?: number },
): Base & { lanes: number; w: number; k: number; toArm: ArmName; connector: string } {
  const lanes = opts.lanes ?? 2;
  const w = rng.uniform(3.3, 3.7);
  const town = buildJunctionTown({ lanes, laneWidth: w, armLength: 120, signalized: opts.signalized, speedLimit: 11.1, stopArms: ['N', 'S'] });
  const k = opts.turn === 'L' ? 0 : lanes - 1;
  const toArm: ArmName = opts.turn === 'S' ? 'N' : opts.turn === 'L' ? LEFT_OF.S : RIGHT_OF.S;
  const first = town.lane(`S_in_${k}`);
  const connector = `S${k}>${toArm}${k}`;
  const conn = town.lane(connector);
  const approach = rng.uniform(70, 82);
  const startS = first.line.length - approach;
  const endS = 150 - approach - conn.line.length;
  return { town, routeLanes: [first.id, connector, `${toArm}_out_${k}`], startS, endS, rs: (s) => s - startS, lanes, w, k, toArm, connector };
}

function scenario(type: ScenarioType, index: number, base: Base, rest: Partial<Scenario>, seed: number): Scenario {
  return {
    routeId: `${type}_${index}`,
    index,
    scenarioType: type,
    town: base.town,
    routeLanes: base.routeLanes,
    startS: base.startS,
    endS: base.endS,
    egoSpeed: 0,
    actors: [],
    triggers: [],
    backgroundVehicles: 16,
    lightPhase: 0,
    blocking: null,
    emergency: null,
    seed,
    ...rest,
  };
}

/** Builds route `index` (0..4) of a scenario type, deterministically. */
export function buildScenario(type: ScenarioType, index: number): Scenario {
  const seed = hashSeed(type, index);
  const rng = new Random(seed);
  switch (type) {
    case 'ParkedObstacle':
    case 'Accident':
    case 'ConstructionObstacle': {
      const b = roadBase(rng, {});
      const lane = b.routeLanes[0]!;
      const s0 = b.startS + rng.uniform(55, 70);
      const actors: ActorSpec[] = [];
      let endS: number;
      if (type === 'ParkedObstacle') {
        actors.push({ kind: 'vehicle', role: 'parked', ...CAR, lane, s: s0, d: -rng.uniform(0, 0.5) });
        endS = s0 + 3;
      } else if (type === 'Accident') {
        actors.push({ kind: 'vehicle', role: 'parked', ...CAR, lane, s: s0, d: -0.3 });
        actors.push({ kind: 'vehicle', role: 'parked', ...CAR, lane, s: s0 + 9, d: 0.1, yawOffset: 0.35 });
        actors.push({ kind: 'vehicle', role: 'parked', ...CAR, lane, s: s0 + 15, d: -0.2, yawOffset: -0.5 });
        endS = s0 + 18;
      } else {
        for (let i = 0; i < 4; i++) actors.push({ kind: 'static', role: 'parked', length: 0.4, width: 0.4, lane, s: s0 + i * 2, d: -1.6 + i * 0.9 });
        actors.push({ kind: 'static', role: 'parked', length: 1.0, width: 2.4, lane, s: s0 + 10, d: 0 });
        for (let i = 0; i < 4; i++) actors.push({ kind: 'static', role: 'parked', length: 0.4, width: 0.4, lane, s: s0 + 13 + i * 3, d: 1.2 });
        endS = s0 + 23;
      }
      return scenario(type, index, b, { actors, blocking: { startS: b.rs(s0) - 40, endS: b.rs(endS) + 5 } }, seed);
    }
    case 'HazardAtSideLane': {
      const b = roadBase(rng, {});
      const lane = b.routeLanes[0]!;
      const s0 = b.startS + rng.uniform(45, 60);
      const w = b.town.lane(lane).width;
      const v0 = rng.uniform(2.5, 3.5);
      const actors: ActorSpec[] = [
        { kind: 'bicycle', role: 'scenario', length: 1.8, width: 0.8, lane, s: s0, d: -(w / 2 - 0.7), v: v0, v0 },
        { kind: 'bicycle', role: 'scenario', length: 1.8, width: 0.8, lane, s: s0 + 7, d: -(w / 2 - 0.7), v: v0, v0 },
      ];
      return scenario(type, index, b, { actors, blocking: { startS: b.rs(s0) - 40, endS: Infinity, actor: 1 } }, seed);
    }
    case 'DynamicObjectCrossing': {
      const b = roadBase(rng, {});
      const laneId = b.routeLanes[0]!;
      const lane = b.town.lane(laneId);
      const s0 = b.startS + rng.uniform(60, 80);
      const w = lane.width;
      const p = lane.line.interpolate(s0 + 5);
      const nx = -Math.sin(p.heading),
        ny = Math.cos(p.heading);
      const off = -(w / 2 + 1.6);
      const speed = rng.uniform(1.8, 2.3);
      const lanes = 2;
      const actors: ActorSpec[] = [
        { kind: 'vehicle', role: 'parked', length: 5.2, width: 2.1, lane: laneId, s: s0, d: -(w / 2 + 1.3) },
        {
          kind: 'pedestrian',
          role: 'scenario',
          length: 0.6,
          width: 0.6,
          x: p.x + nx * off,
          y: p.y + ny * off,
          yaw: p.heading + Math.PI / 2,
          walk: [nx * speed, ny * speed],
          walkDistance: 2 * lanes * w + 4,
          active: false,
        },
      ];
      const triggers: Trigger[] = [{ atS: b.rs(s0 + 5) - rng.uniform(19, 23), activate: [1] }];
      return scenario(type, index, b, { actors, triggers }, seed);
    }
    case 'PedestrianCrossing':
    case 'OppositeVehicleRunningRedLight':
    case 'SignalizedJunctionLeftTurn':
    case 'VanillaSignalizedTurnEncounterRedLight': {
      const turn = type === 'SignalizedJunctionLeftTurn' ? 'L' : type === 'VanillaSignalizedTurnEncounterRedLight' ? (index % 2 === 0 ? 'R' : 'L') : 'S';
      const b = junctionBase(rng, { signalized: true, turn });
      const entry = b.rs(b.town.lane(b.routeLanes[0]!).line.length);
      const actors: ActorSpec[] = [];
      const triggers: Trigger[] = [];
      // Ego's light group (N-S) is 1; the phase starts on the other group's green.
      const lightPhase = rng.uniform(0, 6);
      if (type === 'VanillaSignalizedTurnEncounterRedLight') {
        triggers.push({ atS: entry - 45, light: { group: 1, state: 'red', duration: 12 } });
      } else {
        triggers.push({ atS: entry - 40, light: { group: 1, state: 'green', duration: type === 'SignalizedJunctionLeftTurn' ? 22 : 14 } });
      }
      if (type === 'PedestrianCrossing') {
        const half = b.town.junction!.half;
        const y = half + 4;
        const n = 2 + (index % 2);
        const speed = rng.uniform(1.4, 1.8);
        for (let i = 0; i < n; i++) {
          actors.push({
            kind: 'pedestrian',
            role: 'scenario',
            length: 0.6,
            width: 0.6,
            x: b.lanes * b.w + 2 + i * 0.9,
            y: y + i * 1.1,
            yaw: Math.PI,
            walk: [-speed, 0],
            walkDistance: 2 * b.lanes * b.w + 5,
            active: false,
          });
        }
        triggers.push({ atS: entry - 9, activate: actors.map((_, i) => i) });
      } else if (type === 'OppositeVehicleRunningRedLight') {
        const from: ArmName = index % 2 === 0 ? 'E' : 'W';
        const k = b.lanes - 1;
        const lane = b.town.lane(`${from}_in_${k}`);
        const dist = rng.uniform(26, 32);
        actors.push({
          kind: 'vehicle',
          role: 'scenario',
          ...CAR,
          lane: lane.id,
          s: lane.line.length - dist - 18,
          v: 12,
          v0: 12,
          runRed: true,
          active: false,
          path: [`${from}${k}>${OPPOSITE[from]}${k}`, `${OPPOSITE[from]}_out_${k}`],
        });
        triggers.push({ atS: entry - 27, activate: [0] });
      } else if (type === 'SignalizedJunctionLeftTurn') {
        let d = rng.uniform(15, 25);
        for (let i = 0; i < 4; i++) {
          const k = i % b.lanes;
          const lane = b.town.lane(`N_in_${k}`);
          actors.push({
            kind: 'vehicle',
            role: 'scenario',
            ...CAR,
            lane: lane.id,
            s: lane.line.length - d - 20,
            v: 9,
            v0: 10,
            active: false,
            path: [`N${k}>S${k}`, `S_out_${k}`],
          });
          d += rng.uniform(18, 26);
        }
        triggers.push({ atS: entry - 40, activate: actors.map((_, i) => i) });
      }
      return scenario(type, index, b, { actors, triggers, lightPhase, backgroundVehicles: 10 }, seed);
    }
    case 'NonSignalizedJunctionRightTurn':
    case 'VanillaNonSignalizedTurnEncounterStopsign': {
      const turn = type === 'NonSignalizedJunctionRightTurn' ? 'R' : index % 2 === 0 ? 'L' : 'R';
      const b = junctionBase(rng, { signalized: false, turn });
      const actors: ActorSpec[] = [];
      if (type === 'NonSignalizedJunctionRightTurn') {
        // A flow on the major road from the ego's left, heading into the ego's exit road.
        let d = rng.uniform(40, 55);
        for (let i = 0; i < 3; i++) {
          const k = b.lanes - 1;
          const lane = b.town.lane(`W_in_${k}`);
          actors.push({
            kind: 'vehicle',
            role: 'scenario',
            ...CAR,
            lane: lane.id,
            s: lane.line.length - d,
            v: 9,
            v0: 10,
            active: false,
            path: [`W${k}>E${k}`, `E_out_${k}`],
          });
          d += rng.uniform(20, 28);
        }
      }
      const entry = b.rs(b.town.lane(b.routeLanes[0]!).line.length);
      const triggers: Trigger[] = actors.length ? [{ atS: entry - 30, activate: actors.map((_, i) => i) }] : [];
      return scenario(type, index, b, { actors, triggers, backgroundVehicles: 12 }, seed);
    }
    case 'HighwayCutIn': {
      const b = roadBase(rng, { ramp: true, speed: 16.7 });
      const ramp = b.town.lane('ramp');
      const conn = b.town.lane('ramp>fwd');
      const mergeX = conn.line.interpolate(conn.line.length).x;
      const lead = rng.uniform(10, 16);
      // The cut-in car reaches the merge point when the ego is `lead` metres behind it.
      const trigS = mergeX - b.startS - 55;
      const s = Math.min(ramp.line.length - 2, ramp.line.length + conn.line.length - (11 / 12) * (55 - lead));
      const actors: ActorSpec[] = [
        { kind: 'vehicle', role: 'scenario', ...CAR, lane: 'ramp', s, v: 11, v0: 11, active: false, path: ['ramp>fwd', b.routeLanes[0]!] },
      ];
      return scenario(type, index, b, { actors, triggers: [{ atS: trigS, activate: [0] }], egoSpeed: 10, backgroundVehicles: 14 }, seed);
    }
    case 'MergerIntoSlowTrafficV2': {
      const b = roadBase(rng, { ramp: true, onRamp: true });
      const target = b.routeLanes[2]!;
      const conn = b.town.lane('ramp>fwd');
      const mergeX = conn.line.interpolate(conn.line.length).x;
      const actors: ActorSpec[] = [];
      let s = mergeX - rng.uniform(30, 40);
      for (let i = 0; i < 6; i++) {
        const v0 = rng.uniform(3.5, 5);
        actors.push({ kind: 'vehicle', role: 'scenario', ...CAR, lane: target, s, v: v0, v0 });
        s += rng.uniform(15, 21);
      }
      return scenario(type, index, b, { actors, backgroundVehicles: 10 }, seed);
    }
    case 'YieldToEmergencyVehicle': {
      const b = roadBase(rng, {});
      const lane = b.routeLanes[0]!;
      const trig = rng.uniform(20, 30);
      const actors: ActorSpec[] = [{ kind: 'vehicle', role: 'emergency', length: 5.4, width: 2.2, lane, s: b.startS - 8, v: 0, v0: 18, active: false }];
      return scenario(type, index, b, { actors, triggers: [{ atS: trig, activate: [0] }], emergency: { actor: 0, window: 25 }, backgroundVehicles: 12 }, seed);
    }
  }
}
