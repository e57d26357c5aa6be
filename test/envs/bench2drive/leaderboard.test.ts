/**
 * `gymwire eval bench2drive --out DIR` must be readable by Bench2Drive's own tools as they are
 * (Bench2Drive v0.0.4 @7ec25d1). Their code cannot ship here, so this checks every field and shape
 * they read, citing the line that reads it, and that the numbers they compute from the files equal
 * gymwire's. (Run by hand on this output, the three scripts print the same Efficiency, Smoothness
 * and ability table; docs/envs/bench2drive.md says how.)
 */
import { describe, expect, it } from 'vitest';

import { makeAgent } from '../../../envs/bench2drive/agents.ts';
import { Bench2DriveEnv } from '../../../envs/bench2drive/env.ts';
import { evaluateBench2Drive } from '../../../envs/bench2drive/eval.ts';
import type { LeaderboardResults } from '../../../envs/bench2drive/leaderboard.ts';
import { globalRecord, leaderboardFiles, leaderboardRecord, routesXml } from '../../../envs/bench2drive/leaderboard.ts';
import type { MetricInfo } from '../../../envs/bench2drive/metrics.ts';
import { comfortness, efficiency, routeComfort } from '../../../envs/bench2drive/metrics.ts';
import { routeRecord } from '../../../envs/bench2drive/scoring.ts';

const ROUTES = ['VanillaSignalizedTurnEncounterRedLight_3', 'DynamicObjectCrossing_0', 'HighwayCutIn_0'];

async function evaluated() {
  const rep = await evaluateBench2Drive({
    makeEnv: (k) => new Bench2DriveEnv(k),
    agent: makeAgent('naive'),
    routes: ROUTES,
    keepMetricInfo: true,
  });
  const routes = rep.records.map((record, i) => ({
    record,
    metricInfo: rep.routes_detail[i]!.metric_info,
    durationSystem: rep.routes_detail[i]!.duration_system,
    startedAt: rep.routes_detail[i]!.started_at,
  }));
  return { rep, files: leaderboardFiles('naive', routes) };
}

describe("the output folder Bench2Drive's tools read", () => {
  it('has the fields merge_route_json.py, efficiency_smoothness_benchmark.py and ability_benchmark.py read, and they compute our numbers', async () => {
    const { rep, files } = await evaluated();
    // merge_route_json.py:7 globs FOLDER/*.json: exactly one results file at the top level.
    const topJson = [...files.keys()].filter((p) => p.endsWith('.json') && !p.includes('/'));
    expect(topJson).toEqual(['gymwire_naive.json']);
    const doc = JSON.parse(files.get(topJson[0]!)!) as LeaderboardResults;
    // merge_route_json.py:15 data['_checkpoint']['records'].
    const records = doc._checkpoint.records;
    expect(records).toHaveLength(ROUTES.length);
    for (const rd of records) {
      // :17 rd.pop('index'); :19 rd['scores']['score_composed']; :20 rd['status']; :22 rd['infractions'].items() with len(v).
      expect(Number.isInteger(rd.index)).toBe(true);
      expect(typeof rd.scores.score_composed).toBe('number');
      expect(typeof rd.status).toBe('string');
      for (const v of Object.values(rd.infractions)) {
        expect(Array.isArray(v)).toBe(true);
        for (const m of v) expect(typeof m).toBe('string');
      }
      // :31 sorted by rd['route_id']; statistics_manager.py:227-228 int(route_id.split('_')[1]), int(route_id.split('_rep')[-1]).
      expect(rd.route_id).toMatch(/^RouteScenario_\d+_rep0$/);
      // efficiency_smoothness_benchmark.py:243 os.path.join(metric_dir, record["save_name"], 'metric_info.json').
      const mi = files.get(`${rd.save_name}/metric_info.json`);
      expect(mi).toBeDefined();
      // :253-259 for k, v in json_data.items(): v["acceleration"], ... v["rotation"]; :81-84 v[0], v[1], a[2].
      const samples = Object.values(JSON.parse(mi!) as Record<string, MetricInfo>);
      expect(samples.length).toBeGreaterThan(20);
      for (const s of samples.slice(0, 3))
        for (const k of ['acceleration', 'angular_velocity', 'forward_vector', 'right_vector', 'location', 'rotation'] as const) {
          expect(s[k]).toHaveLength(3);
          for (const x of s[k]) expect(Number.isFinite(x)).toBe(true);
        }
      // :263 record["infractions"]["min_speed_infractions"]; :268 re.search(r"\b\d+\.?\d*%", ...) must match each.
      for (const m of rd.infractions['min_speed_infractions']!) expect(m).toMatch(/\b\d+\.?\d*%/);
      // ability_benchmark.py:148-150 infractions["stop_infraction"], infractions["red_light"], scores["score_route"].
      expect(rd.infractions['stop_infraction']).toBeDefined();
      expect(rd.infractions['red_light']).toBeDefined();
      expect(typeof rd.scores.score_route).toBe('number');
    }
    // Efficiency and Smoothness as the script computes them from these files equal the report's.
    expect(
      efficiency(
        records.map((r) => ({
          infractions: Object.fromEntries(Object.entries(r.infractions).map(([k, v]) => [k, v.map((message) => ({ message }))])),
        })) as never,
      ),
    ).toBeCloseTo(rep.efficiency!, 10);
    const smooth = records.map((r) => routeComfort(Object.values(JSON.parse(files.get(`${r.save_name}/metric_info.json`)!) as Record<string, MetricInfo>)));
    expect(comfortness(smooth)).toBeCloseTo(rep.comfortness, 12);

    // ability_benchmark.py:53-57 record['route_id'].split('_')[1] == the XML route's id; :101-112 route id, town,
    // scenarios/scenario type; :48-51 waypoints/position x, y, z.
    const xml = files.get('routes.xml')!;
    const xmlRoutes = [...xml.matchAll(/<route id="(\d+)" town="([^"]+)">([\s\S]*?)<\/route>/g)];
    expect(xmlRoutes.map((m) => m[1]).sort()).toEqual(records.map((r) => r.route_id.split('_')[1]).sort());
    for (const [, id, town, body] of xmlRoutes) {
      const rd = records.find((r) => r.route_id.split('_')[1] === id)!;
      expect(town).toBe(rd.town_name);
      const type = /<scenarios>\s*<scenario name="([^"]+)" type="([^"]+)">/.exec(body!);
      expect(type?.[1]).toBe(rd.scenario_name);
      expect(rep.records.find((r) => r.route_id === rd.scenario_name)!.scenario_name).toBe(type?.[2]);
      const positions = [...body!.matchAll(/<position x="(-?[\d.]+)" y="(-?[\d.]+)" z="(-?[\d.]+)" \/>/g)];
      expect(positions.length).toBeGreaterThan(10);
    }
    // The red-light route failed Traffic_Signs: the ability script takes its junction branch (:128).
    const red = records.find((r) => r.scenario_name === ROUTES[0])!;
    expect(red.infractions['red_light']).toHaveLength(1);
  }, 60_000);

  it("computes the global record as statistics_manager.py's compute_global_statistics does", () => {
    const a = routeRecord({
      route_id: 'ParkedObstacle_0',
      scenario_name: 'ParkedObstacle',
      routeCompletion: 100,
      targetReached: true,
      events: [],
      failure: null,
      routeLength: 200,
      duration: 30,
    });
    const b = routeRecord({
      route_id: 'Accident_1',
      scenario_name: 'Accident',
      routeCompletion: 50,
      targetReached: false,
      failure: null,
      routeLength: 400,
      duration: 60,
      events: [
        { type: 'COLLISION_VEHICLE', message: 'Agent collided against object with type=vehicle and id=3 at (x=1, y=2, z=0)', time: 10, frame: 200, x: 1, y: 2 },
        {
          type: 'OUTSIDE_ROUTE_LANES_INFRACTION',
          percentage: 5,
          message: 'Agent went outside its route lanes for about 12.5 meters (5% of the completed route)',
          time: 20,
          frame: 400,
          x: 3,
          y: 4,
        },
      ],
    });
    const recs = [
      leaderboardRecord({ record: a, metricInfo: [], durationSystem: 1.23456 }, 0, 's0'),
      leaderboardRecord({ record: b, metricInfo: [], durationSystem: 2 }, 1, 's1'),
    ];
    const g = globalRecord(recs, 2);
    const composed = [a.scores.score_composed, b.scores.score_composed];
    const mean = (composed[0]! + composed[1]!) / 2;
    expect(g.scores_mean.score_composed).toBeCloseTo(mean, 6);
    expect(g.scores_std_dev.score_composed).toBeCloseTo(Math.sqrt((composed[0]! - mean) ** 2 + (composed[1]! - mean) ** 2), 3);
    // km driven = 0.2 * 1 + 0.4 * 0.5 = 0.4: one vehicle collision is 2.5 per km; outside lanes is 12.5 m in km.
    expect(g.infractions['collisions_vehicle']).toBe(2.5);
    expect(g.infractions['outside_route_lanes']).toBe(0.013);
    expect(g.meta.total_length).toBe(600);
    expect(g.meta.duration_system).toBeCloseTo(3.235, 9);
    expect(g.status).toBe('Failed');
    expect(g.meta.exceptions).toEqual([['RouteScenario_6_rep0', 1, b.status]]);
    expect(recs[1]!.infractions['outside_route_lanes']![0]!.split(' ')[8]).toBe('12.5');
  });

  it('writes a routes XML with numeric ids, one town per route and the scenario type', () => {
    const xml = routesXml(['ParkedObstacle_0', 'HighwayCutIn_4']);
    expect(xml).toMatch(/<route id="0" town="GymwireTown0">/);
    expect(xml).toMatch(/<route id="49" town="GymwireTown49">/);
    expect(xml).toMatch(/<scenario name="HighwayCutIn_4" type="HighwayCutIn">/);
  });
});
