/**
 * Seeded procedural NAVSIM scenes in gymwire's scene format: straight and curved roads with two
 * same-direction lanes and an oncoming lane, optional signalised junctions (red or green), lead
 * vehicles (moving, slowing or stopped), static obstacles, oncoming traffic, pedestrians on the
 * verge and cyclists. Background agents move on fixed tracks (replayed non-reactively); the logged
 * human drives with IDM behind the lead / stop line along the lane centre. Scenes are generated on
 * demand from (split, index), so the splits are fixed and nothing large is stored.
 *
 * @example
 * const scene = generateScene('synthetic-test', 17);
 */
import { Random } from '../../runtime/random.ts';
import type { AgentData } from '../driving/agents.ts';
import { IDM_PDM_CLOSED, idmAcceleration } from '../driving/idm.ts';
import type { LaneData, MapData } from '../driving/map.ts';
import type { Scene } from './scene.ts';

export const SPLITS = { 'synthetic-train': { size: 400, seed: 1000 }, 'synthetic-test': { size: 240, seed: 2000 } } as const;
export type SplitName = keyof typeof SPLITS;

export const SCENARIOS = [
  'straight',
  'curve',
  'lead_vehicle',
  'stopped_traffic',
  'static_obstacle',
  'junction_red',
  'junction_green',
  'pedestrians',
  'oncoming',
] as const;
export type Scenario = (typeof SCENARIOS)[number];

const LANE_W = 3.5;
const ROAD_LEN = 300;

/** Road reference line: arc length -> pose, for a straight (k = 0) or constant-curvature road. */
function refPose(s: number, k: number): [number, number, number] {
  if (Math.abs(k) < 1e-9) return [s, 0, 0];
  return [Math.sin(k * s) / k, (1 - Math.cos(k * s)) / k, k * s];
}

function lateral(s: number, d: number, k: number): [number, number] {
  const [x, y, h] = refPose(s, k);
  return [x - Math.sin(h) * d, y + Math.cos(h) * d];
}

function line(s0: number, s1: number, d: number, k: number, reverse = false): number[][] {
  const pts: number[][] = [];
  const n = Math.max(2, Math.ceil(Math.abs(s1 - s0) / 2) + 1);
  for (let i = 0; i < n; i++) pts.push(lateral(s0 + ((s1 - s0) * i) / (n - 1), d, k));
  return reverse ? pts.reverse() : pts;
}

function strip(s0: number, s1: number, dRight: number, dLeft: number, k: number): number[][] {
  return [...line(s0, s1, dRight, k), ...line(s0, s1, dLeft, k, true)];
}

interface Layout {
  map: MapData;
  route: string[];
  egoLanes: string[];
  junction: { s0: number; s1: number; connector: string } | null;
}

/** Lanes: 'r0' (ego, right), 'r1' (left, same direction), 'o' (oncoming), in segments. */
function buildMap(k: number, junction: boolean, speedLimit: number): Layout {
  const segs: [number, number][] = junction
    ? [
        [0, 130],
        [130, 150],
        [150, ROAD_LEN],
      ]
    : [
        [0, 150],
        [150, ROAD_LEN],
      ];
  const roadblocks: MapData['roadblocks'] = [];
  const lanes: LaneData[] = [];
  const intersections: MapData['intersections'] = [];
  const prefix = (i: number): string => (junction && i === 1 ? 'j' : 's');
  const route: string[] = [];
  const egoLanes: string[] = [];
  segs.forEach(([s0, s1], i) => {
    const conn = junction && i === 1;
    const fwd = `${prefix(i)}${i}`;
    const opp = `${prefix(i)}${i}_opp`;
    const kind = conn ? 'roadblock_connector' : 'roadblock';
    roadblocks.push({
      id: fwd,
      kind,
      polygon: strip(s0, s1, -LANE_W, LANE_W, k),
      incoming: i > 0 ? [`${prefix(i - 1)}${i - 1}`] : [],
      outgoing: i < segs.length - 1 ? [`${prefix(i + 1)}${i + 1}`] : [],
    });
    roadblocks.push({ id: opp, kind, polygon: strip(s0, s1, LANE_W, 2 * LANE_W, k), incoming: [], outgoing: [] });
    route.push(fwd);
    for (const [name, d] of [
      ['r0', -LANE_W / 2],
      ['r1', LANE_W / 2],
    ] as const) {
      const id = `${fwd}_${name}`;
      if (name === 'r0') egoLanes.push(id);
      lanes.push({
        id,
        roadblock_id: fwd,
        polygon: strip(s0, s1, d - LANE_W / 2, d + LANE_W / 2, k),
        centerline: line(s0, s1, d, k),
        speed_limit_mps: speedLimit,
        incoming: i > 0 ? [`${prefix(i - 1)}${i - 1}_${name}`] : [],
        outgoing: i < segs.length - 1 ? [`${prefix(i + 1)}${i + 1}_${name}`] : [],
        left_boundary: line(s0, s1, d + LANE_W / 2, k),
        right_boundary: line(s0, s1, d - LANE_W / 2, k),
        left_neighbour: name === 'r0' ? `${fwd}_r1` : null,
        right_neighbour: name === 'r1' ? `${fwd}_r0` : null,
      });
    }
    lanes.push({
      id: `${opp}_o`,
      roadblock_id: opp,
      polygon: strip(s0, s1, LANE_W, 2 * LANE_W, k),
      centerline: line(s0, s1, 1.5 * LANE_W, k, true),
      speed_limit_mps: speedLimit,
      incoming: [],
      outgoing: [],
    });
    if (conn) intersections.push({ id: 'junction', polygon: strip(s0, s1, -LANE_W - 2, 2 * LANE_W + 2, k) });
  });
  const crosswalks = junction ? [{ id: 'xwalk', polygon: strip(126, 130, -LANE_W, 2 * LANE_W, k) }] : [];
  return {
    map: {
      name: junction ? 'junction' : Math.abs(k) > 0 ? 'curve' : 'straight',
      roadblocks,
      lanes,
      intersections,
      carparks: [],
      drivable_areas: [],
      crosswalks,
    },
    route,
    egoLanes,
    junction: junction ? { s0: 130, s1: 150, connector: 'j1_r0' } : null,
  };
}

/** An agent driving along the road at lateral offset d from s0 with speed profile v(t). */
function laneAgent(
  token: string,
  type: AgentData['type'],
  dims: [number, number, number],
  k: number,
  s0: number,
  d: number,
  v: (t: number) => number,
  dir = 1,
  tMin = -1.5,
): AgentData {
  const states: number[][] = [];
  let s = s0;
  // Integrate backwards for history then forwards.
  const back: number[] = [];
  for (let t = 0; t > tMin - 1e-9; t -= 0.1) back.push(t);
  let sb = s0;
  const hist: number[][] = [];
  for (let i = 1; i < back.length; i++) {
    sb -= dir * v(back[i] as number) * 0.1;
    hist.push([back[i] as number, sb]);
  }
  hist.reverse();
  const pose = (tt: number, ss: number): number[] => {
    const [x, y] = lateral(ss, d, k);
    const h = refPose(ss, k)[2] + (dir < 0 ? Math.PI : 0);
    const sp = v(tt);
    return [Math.round(tt * 10) / 10, x, y, Math.atan2(Math.sin(h), Math.cos(h)), sp * Math.cos(h), sp * Math.sin(h)];
  };
  for (const [tt, ss] of hist) states.push(pose(tt as number, ss as number));
  // 9 s of future: 5 s for v1 scoring plus the 4 s offset of v2's stage-2 follow-ups.
  for (let i = 0; i <= 90; i++) {
    const t = i * 0.1;
    states.push(pose(t, s));
    s += dir * v(t) * 0.1;
  }
  return { token, type, length: dims[0], width: dims[1], height: dims[2], states };
}

/** Generates scene `index` of `split`. Deterministic. */
export function generateScene(split: SplitName, index: number): Scene {
  const cfg = SPLITS[split];
  const rng = new Random(cfg.seed + index);
  const scenario = SCENARIOS[index % SCENARIOS.length] as Scenario;
  const curved = scenario === 'curve' || (scenario !== 'junction_red' && scenario !== 'junction_green' && rng.random() < 0.6);
  const k = curved ? (rng.random() < 0.5 ? -1 : 1) / rng.uniform(70, 150) : 0;
  const junction = scenario === 'junction_red' || scenario === 'junction_green';
  const speedLimit = [11.2, 13.4, 15.6][rng.integer(0, 3)] as number;
  const layout = buildMap(k, junction, speedLimit);
  const egoS = junction ? rng.uniform(70, 100) : rng.uniform(40, 70);
  const egoV = scenario === 'stopped_traffic' ? rng.uniform(3, 8) : rng.uniform(6, Math.min(13, speedLimit));
  const agents: AgentData[] = [];
  const car = (): [number, number, number] => [rng.uniform(4.2, 5.0), rng.uniform(1.8, 2.0), rng.uniform(1.5, 1.8)];
  // Human's longitudinal obstacle: position along s of the rear of whatever it must stay behind.
  let leadS: ((t: number) => number) | null = null;
  let leadV: (t: number) => number = () => 0;

  if (scenario === 'lead_vehicle' || scenario === 'straight' || scenario === 'curve' || rng.random() < 0.3) {
    const v0 = egoV * rng.uniform(0.2, 0.8);
    const gap = 8 + egoV * 0.8 + (egoV - v0) ** 2 / 5 + rng.uniform(0, 10);
    const brake = scenario === 'lead_vehicle' && rng.random() < 0.5 ? rng.uniform(0.5, 1.5) : 0;
    const v = (t: number) => Math.max(0, v0 - brake * Math.max(0, t));
    const dims = car();
    agents.push(laneAgent('lead', 'vehicle', dims, k, egoS + gap, -LANE_W / 2, v));
    const st0 = egoS + gap;
    leadS = (t) => {
      let s = st0;
      for (let tt = 0; tt < t - 1e-9; tt += 0.1) s += v(tt) * 0.1;
      return s - dims[0] / 2;
    };
    leadV = v;
  }
  if (scenario === 'stopped_traffic') {
    const gap = 12 + (egoV * egoV) / 4 + rng.uniform(0, 8);
    for (let i = 0; i < 3; i++) agents.push(laneAgent(`queue_${i}`, 'vehicle', car(), k, egoS + gap + i * 7, -LANE_W / 2, () => 0));
    leadS = () => egoS + gap - 2.4;
    leadV = () => 0;
  }
  if (scenario === 'static_obstacle' || rng.random() < 0.3) {
    const s = egoS + rng.uniform(15, 50);
    agents.push(laneAgent('cone_0', 'traffic_cone', [0.5, 0.5, 0.8], k, s, LANE_W / 2 + rng.uniform(-0.5, 0.8), () => 0));
    agents.push(laneAgent('barrier_0', 'barrier', [2.0, 0.6, 1.0], k, s + 4, LANE_W + 1.2, () => 0));
  }
  if (scenario === 'oncoming' || rng.random() < 0.5) {
    const n = rng.integer(1, 4);
    for (let i = 0; i < n; i++) {
      const sp = rng.uniform(6, speedLimit);
      agents.push(laneAgent(`oncoming_${i}`, 'vehicle', car(), k, egoS + rng.uniform(20, 120), 1.5 * LANE_W, () => sp, -1));
    }
  }
  if (scenario === 'pedestrians' || rng.random() < 0.3) {
    const n = rng.integer(1, 4);
    for (let i = 0; i < n; i++) {
      const sp = rng.uniform(0.8, 1.6);
      agents.push(
        laneAgent(
          `ped_${i}`,
          'pedestrian',
          [0.6, 0.6, 1.75],
          k,
          egoS + rng.uniform(5, 60),
          -LANE_W - rng.uniform(1.5, 3),
          () => sp,
          rng.random() < 0.5 ? 1 : -1,
        ),
      );
    }
    if (rng.random() < 0.5) {
      const sp = rng.uniform(3, 5);
      agents.push(laneAgent('cyclist', 'bicycle', [1.8, 0.6, 1.7], k, egoS + rng.uniform(20, 50), LANE_W / 2, () => sp));
    }
  }
  if (rng.random() < 0.4) {
    const sp = rng.uniform(6, speedLimit);
    agents.push(laneAgent('left_lane', 'vehicle', car(), k, egoS + rng.uniform(-15, -8), LANE_W / 2, () => sp));
  }
  const trafficLights: Scene['traffic_lights'] = [];
  if (layout.junction) {
    const red = scenario === 'junction_red';
    trafficLights.push({ t: 0, red: red ? ['j1_r0', 'j1_r1'] : [], green: red ? [] : ['j1_r0', 'j1_r1'] });
    if (red) {
      const stop = layout.junction.s0 - 1.0;
      const prev = leadS;
      leadS = prev ? (t) => Math.min(prev(t), stop) : () => stop;
      leadV = () => 0;
    }
  }
  // The human: IDM along the ego lane centre behind the obstacle (front bumper = s + 4.049).
  const front = 4.049;
  const poses: number[][] = [];
  let s = egoS,
    v = egoV;
  const speeds: number[] = [];
  for (let i = 1; i <= 40; i++) {
    const t = (i - 1) * 0.1;
    const gap = leadS ? leadS(t) - (s + front) : Infinity;
    const target = speedLimit * 0.9;
    const a = idmAcceleration({ ...IDM_PDM_CLOSED, a: 1.2, b: 3.5, T: 1.2, s0: 2.0 }, { v, v0: target, gap: Math.max(gap, 0.1), leadV: leadV(t) });
    v = Math.max(0, v + a * 0.1);
    s += v * 0.1;
    speeds.push(v);
    if (i % 5 === 0) poses.push([s, v]);
  }
  const [ex, ey, eh] = (() => {
    const [x, y] = lateral(egoS, -LANE_W / 2, k);
    return [x, y, refPose(egoS, k)[2]];
  })();
  const toLocal = (ss: number): number[] => {
    const [x, y] = lateral(ss, -LANE_W / 2, k);
    const h = refPose(ss, k)[2];
    const dx = x - ex,
      dy = y - ey;
    return [Math.cos(eh) * dx + Math.sin(eh) * dy, -Math.sin(eh) * dx + Math.cos(eh) * dy, Math.atan2(Math.sin(h - eh), Math.cos(h - eh))];
  };
  const history = [-1.5, -1.0, -0.5].map((t) => {
    const ss = egoS + egoV * t;
    const [x, y] = lateral(ss, -LANE_W / 2, k);
    return { t, x, y, heading: refPose(ss, k)[2], vx: egoV, vy: 0, ax: 0, ay: 0, steering_angle: Math.atan(3.089 * k), yaw_rate: egoV * k };
  });
  const lookAhead = lateral(egoS + 20, -LANE_W / 2, k);
  const latOff = -Math.sin(eh) * (lookAhead[0] - ex) + Math.cos(eh) * (lookAhead[1] - ey);
  const command = latOff >= 2 ? [1, 0, 0, 0] : latOff <= -2 ? [0, 0, 1, 0] : [0, 1, 0, 0];
  return {
    format: 'gymwire-navsim-scene/1',
    name: `${split}/${String(index).padStart(4, '0')}-${scenario}`,
    description: `synthetic ${scenario} scene`,
    timestamp_us: 1_000_000_000 + index * 10_000_000,
    scene_type: 'synthetic',
    map: layout.map as Scene['map'],
    route_roadblock_ids: layout.route,
    traffic_lights: trafficLights,
    ego: { x: ex, y: ey, heading: eh, vx: egoV, vy: 0, ax: 0, ay: 0, steering_angle: Math.atan(3.089 * k), yaw_rate: egoV * k },
    ego_history: history,
    agents: agents as Scene['agents'],
    human_trajectory: { interval_length: 0.5, poses: poses.map((p) => toLocal(p[0] as number) as [number, number, number]) },
    driving_command: command as [number, number, number, number],
  };
}

/** Number of scenes in a split. */
export function splitSize(split: SplitName): number {
  return SPLITS[split].size;
}
