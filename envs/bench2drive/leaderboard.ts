/**
 * The files Bench2Drive's own tools read, built from gymwire route results: the leaderboard's
 * results JSON (`statistics_manager.py`'s `Results`: `_checkpoint.records` with `index` and
 * `save_name`, infractions as message strings, the `global_record` with infractions per km and
 * score standard deviations), one `metric_info.json` per route (the ego samples Bench2Drive's
 * agents log every tick) and a routes XML whose route ids match the records' `RouteScenario_<id>_rep0`.
 *
 * Layout (`writeLeaderboardOutput`'s caller writes it): `DIR/<results>.json`, `DIR/routes.xml`,
 * `DIR/<save_name>/metric_info.json`, so that `merge_route_json.py -f DIR`,
 * `efficiency_smoothness_benchmark.py -f DIR/merged.json -m DIR` and
 * `ability_benchmark.py -f DIR/routes.xml -r DIR/merged.json` run on it as they are.
 *
 * @example
 * const doc = leaderboardResults(routes, { totalRoutes: routes.length });
 * fs.writeFileSync('out/gymwire_expert.json', JSON.stringify(doc, null, 4));
 */
import type { MetricInfo } from './metrics.ts';
import type { ScenarioType } from './scenarios.ts';
import { ROUTE_IDS, buildScenario, parseRouteId } from './scenarios.ts';
import type { RouteRecord } from './scoring.ts';
import { ALL_INFRACTION_KEYS } from './scoring.ts';
import { buildRoute } from './sim.ts';

/** One evaluated route: gymwire's record, the ego samples of every tick and the wall-clock time. */
export interface EvaluatedRoute {
  record: RouteRecord;
  metricInfo: readonly MetricInfo[];
  /** Seconds of wall-clock time the route took (the leaderboard's `duration_system`). */
  durationSystem: number;
}

/** `ROUND_DIGITS` and `ROUND_DIGITS_SCORE` of `statistics_manager.py`. */
const ROUND_DIGITS = 3;
const ROUND_DIGITS_SCORE = 6;

/** Python's `round(v, digits)` on the exact binary value (ties, which need an exact half, are rare). */
function pyRound(v: number, digits: number): number {
  return Number(v.toFixed(digits));
}

/** The leaderboard's numeric route id of a gymwire route: its position in the full route set. */
export function leaderboardRouteNumber(routeId: string): number {
  const n = ROUTE_IDS.indexOf(routeId);
  if (n < 0) throw new Error(`unknown route ${JSON.stringify(routeId)}`);
  return n;
}

/** `RouteScenario_<id>_rep0`: what `sort_records` and `ability_benchmark.py` split on '_'. */
export function leaderboardRouteName(routeId: string): string {
  return `RouteScenario_${leaderboardRouteNumber(routeId)}_rep0`;
}

/**
 * The town name written for a route. gymwire builds one procedural town per route, and
 * `ability_benchmark.py` loads one map per town name, so each route gets its own name.
 */
export function leaderboardTownName(routeId: string): string {
  return `GymwireTown${leaderboardRouteNumber(routeId)}`;
}

const two = (n: number) => String(n).padStart(2, '0');

/**
 * `leaderboard_evaluator.py`'s save name: `<route>_<town>_<scenario>_<weather>_<%m_%d_%H_%M_%S>`.
 * gymwire has no weather, so the weather id is `None`, as `get_weather_id` returns for an unknown one.
 */
export function leaderboardSaveName(routeId: string, startedAt: Date): string {
  const d = startedAt;
  const stamp = `${two(d.getUTCMonth() + 1)}_${two(d.getUTCDate())}_${two(d.getUTCHours())}_${two(d.getUTCMinutes())}_${two(d.getUTCSeconds())}`;
  return `${leaderboardRouteName(routeId)}_${leaderboardTownName(routeId)}_${routeId}_None_${stamp}`;
}

/** A `RouteRecord` as `statistics_manager.py` serialises it (`vars(RouteRecord)`). */
export interface LeaderboardRecord {
  index: number;
  route_id: string;
  scenario_name: string;
  weather_id: null;
  save_name: string;
  status: string;
  num_infractions: number;
  infractions: Record<string, string[]>;
  scores: { score_route: number; score_penalty: number; score_composed: number };
  meta: { route_length: number; duration_game: number; duration_system: number };
  town_name: string;
}

export interface GlobalRecord {
  index: -1;
  route_id: -1;
  status: string;
  infractions: Record<string, number>;
  scores_mean: { score_composed: number; score_route: number; score_penalty: number };
  scores_std_dev: { score_composed: number; score_route: number; score_penalty: number };
  meta: { total_length: number; duration_game: number; duration_system: number; exceptions: [string, number, string][] };
}

export interface LeaderboardResults {
  _checkpoint: { global_record: GlobalRecord; progress: [number, number]; records: LeaderboardRecord[] };
  entry_status: 'Finished' | 'Crashed';
  eligible: boolean;
  sensors: string[];
  values: string[];
  labels: string[];
}

/** One route's leaderboard record (scenario name: the gymwire route id, like `ParkingCutIn_1`). */
export function leaderboardRecord(route: EvaluatedRoute, index: number, saveName: string): LeaderboardRecord {
  const r = route.record;
  const infractions: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(r.infractions)) infractions[k] = v.map((e) => e.message);
  return {
    index,
    route_id: leaderboardRouteName(r.route_id),
    scenario_name: r.route_id,
    weather_id: null,
    save_name: saveName,
    status: r.status,
    num_infractions: r.num_infractions,
    infractions,
    scores: { ...r.scores },
    meta: {
      route_length: r.meta.route_length,
      duration_game: r.meta.duration_game,
      duration_system: pyRound(route.durationSystem, ROUND_DIGITS),
    },
    town_name: leaderboardTownName(r.route_id),
  };
}

const SCORE_KEYS = ['score_composed', 'score_route', 'score_penalty'] as const;
const OUTSIDE_LANES = 'outside_route_lanes';

/** `compute_global_statistics` over the records (`totalRoutes`: the run's route count). */
export function globalRecord(records: readonly LeaderboardRecord[], totalRoutes: number): GlobalRecord {
  const infractionKeys = ALL_INFRACTION_KEYS;
  const g: GlobalRecord = {
    index: -1,
    route_id: -1,
    status: 'Perfect',
    infractions: Object.fromEntries(infractionKeys.map((k) => [k, 0])),
    scores_mean: { score_composed: 0, score_route: 0, score_penalty: 0 },
    scores_std_dev: { score_composed: 0, score_route: 0, score_penalty: 0 },
    meta: { total_length: 0, duration_game: 0, duration_system: 0, exceptions: [] },
  };
  for (const r of records) {
    for (const k of SCORE_KEYS) g.scores_mean[k] += r.scores[k] / totalRoutes;
    g.meta.total_length += r.meta.route_length;
    g.meta.duration_game += r.meta.duration_game;
    g.meta.duration_system += r.meta.duration_system;
    const result = r.status.includes('Failed') ? 'Failed' : r.status;
    if (result === 'Failed') {
      g.meta.exceptions.push([r.route_id, r.index, r.status]);
      g.status = 'Failed';
    } else if (g.status === 'Perfect' && result !== 'Perfect') g.status = result;
  }
  for (const k of SCORE_KEYS) g.scores_mean[k] = pyRound(g.scores_mean[k], ROUND_DIGITS_SCORE);
  if (totalRoutes !== 1) {
    for (const k of SCORE_KEYS) {
      let ss = 0;
      for (const r of records) ss += (r.scores[k] - g.scores_mean[k]) ** 2;
      g.scores_std_dev[k] = pyRound(Math.sqrt(ss / (totalRoutes - 1)), ROUND_DIGITS);
    }
  }
  // Infractions per km driven; outside-route-lanes is the metres in its message, in km, not per km.
  let km = 0;
  for (const r of records) {
    km += ((r.meta.route_length / 1000) * r.scores.score_route) / 100;
    for (const k of infractionKeys) {
      const list = r.infractions[k] ?? [];
      g.infractions[k]! += k === OUTSIDE_LANES ? (list.length ? Number(list[0]!.split(' ')[8]) / 1000 : 0) : list.length;
    }
  }
  km = Math.max(km, 0.001);
  for (const k of infractionKeys) g.infractions[k] = pyRound(k === OUTSIDE_LANES ? g.infractions[k]! : g.infractions[k]! / km, ROUND_DIGITS);
  return g;
}

/** `values`' labels, in the order `compute_global_statistics` writes them. */
export const GLOBAL_LABELS: readonly [string, string][] = [
  ['Avg. driving score', 'score_composed'],
  ['Avg. route completion', 'score_route'],
  ['Avg. infraction penalty', 'score_penalty'],
  ['Collisions with pedestrians', 'collisions_pedestrian'],
  ['Collisions with vehicles', 'collisions_vehicle'],
  ['Collisions with layout', 'collisions_layout'],
  ['Red lights infractions', 'red_light'],
  ['Stop sign infractions', 'stop_infraction'],
  ['Off-road infractions', 'outside_route_lanes'],
  ['Route deviations', 'route_dev'],
  ['Route timeouts', 'route_timeout'],
  ['Agent blocked', 'vehicle_blocked'],
  ['Yield emergency vehicles infractions', 'yield_emergency_vehicle_infractions'],
  ['Scenario timeouts', 'scenario_timeouts'],
  ['Min speed infractions', 'min_speed_infractions'],
];

/** Python's `str(float)` for the values list (`str(0.0)` is `0.0`, not `0`). */
function pyStr(v: number): string {
  return Number.isInteger(v) ? v.toFixed(1) : String(v);
}

/**
 * The leaderboard results document for routes evaluated in the order given (their `index`), as
 * `StatisticsManager` writes it at the end of a run (`entry_status` Finished, `progress` n of n).
 */
export function leaderboardResults(
  routes: readonly EvaluatedRoute[],
  opts: { totalRoutes?: number; startedAt?: readonly Date[]; sensors?: string[] } = {},
): LeaderboardResults {
  const records = routes.map((r, i) => leaderboardRecord(r, i, leaderboardSaveName(r.record.route_id, opts.startedAt?.[i] ?? new Date(0))));
  const total = opts.totalRoutes ?? routes.length;
  const g = globalRecord(records, total);
  const values = GLOBAL_LABELS.map(([, k]) => pyStr(k in g.scores_mean ? g.scores_mean[k as (typeof SCORE_KEYS)[number]] : (g.infractions[k] ?? 0)));
  return {
    _checkpoint: { global_record: g, progress: [routes.length, total], records },
    entry_status: 'Finished',
    eligible: true,
    sensors: opts.sensors ?? [],
    values,
    labels: GLOBAL_LABELS.map(([l]) => l),
  };
}

/** `metric_info.json` as Bench2Drive's agents dump it: `{ "<step>": sample, ... }`. */
export function metricInfoDocument(samples: readonly MetricInfo[]): Record<string, MetricInfo> {
  const out: Record<string, MetricInfo> = {};
  samples.forEach((s, i) => (out[String(i)] = s));
  return out;
}

const f1 = (v: number) => v.toFixed(1);
const xmlAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/**
 * A routes XML in the leaderboard's layout for the given gymwire routes: `<route id town>` with
 * the route's points every 2 m as `<waypoints><position x y z>`, and one `<scenario name type>`
 * with its trigger point at the route start. Coordinates are gymwire's (x east, y north, z 0).
 */
export function routesXml(routeIds: readonly string[]): string {
  const lines = ['<?xml version="1.0" encoding="UTF-8"?>', '<routes>'];
  for (const id of routeIds) {
    const { type, index } = parseRouteId(id);
    const sc = buildScenario(type as ScenarioType, index);
    const route = buildRoute(sc.town, sc.routeLanes, sc.startS, sc.endS);
    const pts = route.points.filter((_, i) => i % 2 === 0 || i === route.points.length - 1);
    const p0 = route.points[0]!;
    const p1 = route.points[1] ?? p0;
    const yawDeg = (Math.atan2(p1.y - p0.y, p1.x - p0.x) * 180) / Math.PI;
    lines.push(`   <route id="${leaderboardRouteNumber(id)}" town="${xmlAttr(leaderboardTownName(id))}">`, '      <waypoints>');
    for (const p of pts) lines.push(`         <position x="${f1(p.x)}" y="${f1(p.y)}" z="0.0" />`);
    lines.push(
      '      </waypoints>',
      '      <scenarios>',
      `         <scenario name="${xmlAttr(id)}" type="${xmlAttr(type)}">`,
      `            <trigger_point x="${f1(p0.x)}" y="${f1(p0.y)}" yaw="${f1(yawDeg)}" z="0.0" />`,
      '         </scenario>',
      '      </scenarios>',
      '   </route>',
    );
  }
  lines.push('</routes>', '');
  return lines.join('\n');
}

/** The junction box of each route's town, by leaderboard town name (for a CARLA-less map stand-in). */
export function townJunctions(routeIds: readonly string[]): Record<string, { x: number; y: number; half: number } | null> {
  const out: Record<string, { x: number; y: number; half: number } | null> = {};
  for (const id of routeIds) {
    const { type, index } = parseRouteId(id);
    out[leaderboardTownName(id)] = buildScenario(type as ScenarioType, index).town.junction;
  }
  return out;
}

/**
 * Every file of the output folder, by path relative to it: the results JSON (named after the
 * agent; the only JSON at the top, since `merge_route_json.py` merges every `*.json` there), the
 * routes XML and one `<save_name>/metric_info.json` per route.
 */
export function leaderboardFiles(
  agent: string,
  routes: readonly (EvaluatedRoute & { startedAt: Date })[],
  opts: { totalRoutes?: number; sensors?: string[] } = {},
): Map<string, string> {
  const results = leaderboardResults(routes, { ...opts, startedAt: routes.map((r) => r.startedAt) });
  const files = new Map<string, string>();
  files.set(`gymwire_${agent.replace(/[^A-Za-z0-9_-]/g, '_')}.json`, `${JSON.stringify(results, null, 4)}\n`);
  files.set('routes.xml', routesXml(routes.map((r) => r.record.route_id)));
  results._checkpoint.records.forEach((rec, i) => {
    files.set(`${rec.save_name}/metric_info.json`, `${JSON.stringify(metricInfoDocument(routes[i]!.metricInfo), null, 4)}\n`);
  });
  return files;
}
