/**
 * Save/restore of a {@link World}'s dynamic state (for `getState`/`setState`), and the privileged
 * view a rule-based expert reads from info when the env is made with `privileged: true` (what
 * CARLA experts read from the simulator: actors, light states, route controls, lane layout).
 */
import { RouteTrack } from './criteria.ts';
import type { Actor, World } from './sim.ts';

const CRITERIA = ['collision', 'redLight', 'stopSign', 'outside', 'inRoute', 'completion', 'blocked', 'minSpeed', 'scenarioTimeout', 'yieldEv'] as const;
const SCALARS = ['time', 'tick', 'routeS', 'emergencyStart', 'status'] as const;

function plain(obj: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) {
    if (v instanceof RouteTrack) continue;
    out[k] = structuredClone(v);
  }
  return out;
}

export function snapshotWorld(w: World): Record<string, unknown> {
  const anyW = w as unknown as Record<string, unknown>;
  return {
    scalars: Object.fromEntries(SCALARS.map((k) => [k, anyW[k] ?? null])),
    routeIdx: anyW['routeIdx'],
    ego: { ...w.ego },
    actors: w.actors.map((a) => ({ ...a, path: [...a.path] })),
    lights: { phase: w.lights.phase, elapsed: w.lights.elapsed },
    rng: w.rng.getState(),
    fired: [...w.fired],
    metric: [...w.metric],
    criteria: Object.fromEntries(CRITERIA.map((k) => [k, plain(w[k])])),
  };
}

export function restoreWorld(w: World, s: Record<string, unknown>): void {
  const anyW = w as unknown as Record<string, unknown>;
  const scalars = s['scalars'] as Record<string, unknown>;
  for (const k of SCALARS) anyW[k] = scalars[k] ?? null;
  anyW['routeIdx'] = s['routeIdx'];
  Object.assign(w.ego, s['ego']);
  w.actors = (s['actors'] as Actor[]).map((a) => ({ ...a, path: [...a.path] }));
  const l = s['lights'] as { phase: number; elapsed: number };
  w.lights.phase = l.phase;
  w.lights.elapsed = l.elapsed;
  w.rng.setState(s['rng'] as number[]);
  w.fired = [...(s['fired'] as boolean[])];
  w.metric = [...(s['metric'] as number[])];
  const crit = s['criteria'] as Record<string, Record<string, unknown>>;
  for (const k of CRITERIA) {
    const target = w[k] as unknown as Record<string, unknown>;
    const saved = crit[k]!;
    for (const [key, v] of Object.entries(saved)) {
      if (Array.isArray(target[key]) && Array.isArray(v)) {
        const arr = target[key] as unknown[];
        arr.length = 0;
        arr.push(...structuredClone(v));
      } else target[key] = structuredClone(v);
    }
  }
}

export interface PrivilegedActor {
  id: number;
  kind: string;
  role: string;
  x: number;
  y: number;
  yaw: number;
  v: number;
  length: number;
  width: number;
}

export interface PrivilegedView {
  ego: { x: number; y: number; yaw: number; v: number };
  route_s: number;
  route_length: number;
  lane_width: number;
  speed_limit: number;
  left_lane: boolean;
  right_lane: boolean;
  junction: { x: number; y: number; half: number } | null;
  junction_entry_s: number | null;
  junction_exit_s: number | null;
  merge_s: number | null;
  controls: { kind: 'light' | 'stop'; s: number; state: string }[];
  actors: PrivilegedActor[];
}

/** The expert's view of the world: everything within 80 m, plus the route's lane layout and controls. */
export function privilegedView(w: World): PrivilegedView {
  const town = w.scenario.town;
  const r = w.route;
  let cur = 0;
  r.lanes.forEach((li, i) => {
    const startOnLane = i === 0 ? w.scenario.startS : (town.lanes[r.lanes[i - 1]!]!.nextS ?? 0);
    if (w.routeS >= r.laneStart[i]! + startOnLane) cur = i;
  });
  const lane = town.lanes[r.lanes[cur]!]!;
  const controls: PrivilegedView['controls'] = [];
  let merge: number | null = null;
  r.lanes.forEach((li, i) => {
    const l = town.lanes[li]!;
    const endS = r.laneStart[i]! + l.line.length;
    if (l.lightId !== null) {
      const light = town.lights.find((x) => x.id === l.lightId)!;
      controls.push({ kind: 'light', s: endS, state: w.lights.state(light.group) });
    }
    if (l.stopSignId !== null) controls.push({ kind: 'stop', s: endS, state: 'stop' });
    if (l.connector && !town.junction) merge = endS;
  });
  const actors: PrivilegedActor[] = [];
  for (const a of w.actors) {
    if (!a.alive) continue;
    if (Math.hypot(a.x - w.ego.x, a.y - w.ego.y) > 80) continue;
    actors.push({ id: a.id, kind: a.kind, role: a.role, x: a.x, y: a.y, yaw: a.yaw, v: a.v, length: a.length, width: a.width });
  }
  return {
    ego: { x: w.ego.x, y: w.ego.y, yaw: w.ego.yaw, v: w.ego.v },
    route_s: w.routeS,
    route_length: r.length,
    lane_width: lane.width,
    speed_limit: lane.speedLimit,
    left_lane: lane.left !== null,
    right_lane: lane.right !== null,
    junction: town.junction,
    junction_entry_s: r.junctionEntryS,
    junction_exit_s: r.junctionExitS,
    merge_s: merge,
    controls,
    actors,
  };
}
