/**
 * Per-route scoring as Bench2Drive's `statistics_manager.py` does it: the infraction penalty P is
 * the product of one coefficient per event (outside-route-lanes multiplies by 1 − pct/100, min
 * speed is recorded but unused), the score is R·P, and the status is Perfect, Completed, or
 * `Failed - <reason>`. Infractions are listed under the leaderboard's keys, each with its message,
 * time and place.
 *
 * @example
 * const rec = routeRecord({ routeCompletion: 100, targetReached: true, events: [], failure: null });
 * rec.scores.score_composed; // 100
 */
import type { TrafficEvent, TrafficEventTypeName } from './criteria.ts';
import { TrafficEventType } from './criteria.ts';

/** Fixed coefficients (`PENALTY_VALUE_DICT`). */
export const PENALTY_VALUE: Readonly<Partial<Record<TrafficEventTypeName, number>>> = {
  COLLISION_PEDESTRIAN: 0.5,
  COLLISION_VEHICLE: 0.6,
  COLLISION_STATIC: 0.65,
  TRAFFIC_LIGHT_INFRACTION: 0.7,
  STOP_INFRACTION: 0.8,
  SCENARIO_TIMEOUT: 0.7,
  YIELD_TO_EMERGENCY_VEHICLE: 0.7,
};

/** Percentage coefficients (`PENALTY_PERC_DICT`): [value, kind]. */
export const PENALTY_PERC: Readonly<Partial<Record<TrafficEventTypeName, [number, 'increases' | 'decreases' | 'unused']>>> = {
  OUTSIDE_ROUTE_LANES_INFRACTION: [0, 'increases'],
  MIN_SPEED_INFRACTION: [0.7, 'unused'],
};

/** `PENALTY_NAME_DICT`, plus `route_timeout`. */
export const INFRACTION_KEYS: Readonly<Partial<Record<TrafficEventTypeName, string>>> = {
  COLLISION_STATIC: 'collisions_layout',
  COLLISION_PEDESTRIAN: 'collisions_pedestrian',
  COLLISION_VEHICLE: 'collisions_vehicle',
  TRAFFIC_LIGHT_INFRACTION: 'red_light',
  STOP_INFRACTION: 'stop_infraction',
  OUTSIDE_ROUTE_LANES_INFRACTION: 'outside_route_lanes',
  MIN_SPEED_INFRACTION: 'min_speed_infractions',
  YIELD_TO_EMERGENCY_VEHICLE: 'yield_emergency_vehicle_infractions',
  SCENARIO_TIMEOUT: 'scenario_timeouts',
  ROUTE_DEVIATION: 'route_dev',
  VEHICLE_BLOCKED: 'vehicle_blocked',
};
export const ALL_INFRACTION_KEYS: readonly string[] = [...Object.values(INFRACTION_KEYS), 'route_timeout'] as string[];

/** One infraction as reported in info: the leaderboard's message plus when and where. */
export interface InfractionEntry {
  message: string;
  time: number;
  frame: number;
  x: number;
  y: number;
}

/** A route result shaped like a leaderboard `RouteRecord` (messages kept with time and place). */
export interface RouteRecord {
  route_id: string;
  scenario_name: string;
  town_name: string;
  status: string;
  num_infractions: number;
  infractions: Record<string, InfractionEntry[]>;
  scores: { score_route: number; score_penalty: number; score_composed: number };
  meta: { route_length: number; duration_game: number };
  /** The ability table's junction rule needs the route fraction at the first junction + 8 m. */
  junction_completion: number | null;
}

/** The penalty multiplier of one event (1 for events that carry none). */
export function penaltyFactor(e: Pick<TrafficEvent, 'type' | 'percentage'>): number {
  const v = PENALTY_VALUE[e.type];
  if (v !== undefined) return v;
  const p = PENALTY_PERC[e.type];
  if (p) {
    const pct = e.percentage ?? 0;
    if (p[1] === 'decreases') return 1 - (1 - p[0]) * (1 - pct / 100);
    if (p[1] === 'increases') return 1 - ((1 - p[0]) * pct) / 100;
  }
  return 1;
}

/** P for a list of events. */
export function infractionPenalty(events: readonly Pick<TrafficEvent, 'type' | 'percentage'>[]): number {
  let p = 1;
  for (const e of events) p *= penaltyFactor(e);
  return p;
}

const round = (v: number, digits: number): number => {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
};

/** Route statuses; failures carry the leaderboard's messages (plus the 4000-tick cap). */
export const FAILURE = {
  deviation: 'Agent deviated from the route',
  blocked: 'Agent got blocked',
  timeout: 'Agent timed out',
  tickRuntime: 'TickRuntime',
} as const;

export interface RouteOutcome {
  route_id?: string;
  scenario_name?: string;
  town_name?: string;
  routeCompletion: number;
  targetReached: boolean;
  events: readonly TrafficEvent[];
  /** A failure that ended the route, or null. `route timeout` also lists a `route_timeout` entry. */
  failure: keyof typeof FAILURE | null;
  routeLength?: number;
  duration?: number;
  junctionCompletion?: number | null;
}

/** `compute_route_statistics` for one route. */
export function routeRecord(o: RouteOutcome): RouteRecord {
  const infractions: Record<string, InfractionEntry[]> = {};
  for (const k of ALL_INFRACTION_KEYS) infractions[k] = [];
  let penalty = 1;
  let failure: string = o.failure ? FAILURE[o.failure] : '';
  for (const e of o.events) {
    const key = INFRACTION_KEYS[e.type];
    if (!key) continue;
    penalty *= penaltyFactor(e);
    if (e.type === TrafficEventType.ROUTE_DEVIATION) failure = FAILURE.deviation;
    else if (e.type === TrafficEventType.VEHICLE_BLOCKED) failure = FAILURE.blocked;
    infractions[key]!.push({ message: e.message, time: e.time, frame: e.frame, x: e.x, y: e.y });
  }
  if (o.failure === 'timeout') {
    const last = o.events.at(-1);
    infractions['route_timeout']!.push({
      message: 'Route timeout.',
      time: o.duration ?? last?.time ?? 0,
      frame: last?.frame ?? 0,
      x: last?.x ?? 0,
      y: last?.y ?? 0,
    });
    failure = FAILURE.timeout;
  }
  if (o.failure === 'tickRuntime') failure = FAILURE.tickRuntime;
  const scoreRoute = o.targetReached ? 100 : o.routeCompletion;
  const num = Object.values(infractions).reduce((a, l) => a + l.length, 0);
  const reached = scoreRoute >= 100;
  const status = reached ? (num > 0 ? 'Completed' : 'Perfect') : failure ? `Failed - ${failure}` : 'Failed';
  return {
    route_id: o.route_id ?? '',
    scenario_name: o.scenario_name ?? '',
    town_name: o.town_name ?? '',
    status,
    num_infractions: num,
    infractions,
    scores: { score_route: round(scoreRoute, 6), score_penalty: round(penalty, 6), score_composed: round(Math.max(scoreRoute * penalty, 0), 6) },
    meta: { route_length: round(o.routeLength ?? 0, 3), duration_game: round(o.duration ?? 0, 3) },
    junction_completion: o.junctionCompletion ?? null,
  };
}
