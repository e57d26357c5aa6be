/**
 * Runs an agent over the Bench2Drive route set and aggregates the results the way Bench2Drive's
 * scripts do: Driving Score and Success Rate over the route-set size, Efficiency, Comfortness and
 * the multi-ability table. Works against any env with the Gymnasium shape (a local
 * `Bench2DriveEnv` or a `RemoteEnv` from the TS client), made by the async factory you pass.
 *
 * @example
 * const report = await evaluateBench2Drive({
 *   makeEnv: (kwargs) => client.make('gymwire/Bench2Drive-v0', kwargs),
 *   agent: makeAgent('expert'), routes: 'dev', onProgress: (done, total) => bar.update(done),
 * });
 */
import { Tensor } from '../../protocol/tensor.ts';
import type { Agent } from './agents.ts';
import type { AbilityTable, MetricInfo } from './metrics.ts';
import { abilityTable, comfortness, drivingScore, efficiency, successRate } from './metrics.ts';
import { DEV_ROUTE_IDS, ROUTE_IDS } from './scenarios.ts';
import type { RouteRecord } from './scoring.ts';

/** The slice of an env the evaluator uses (a RemoteEnv and a local env both fit). */
export interface EvalEnv {
  reset(opts?: {
    seed?: number | null;
    options?: Record<string, unknown> | null;
  }): Promise<{ obs: unknown; info: Record<string, unknown> }> | { obs: unknown; info: Record<string, unknown> };
  step(
    action: unknown,
  ):
    | Promise<{ obs: unknown; reward: number; terminated: boolean; truncated: boolean; info: Record<string, unknown> }>
    | { obs: unknown; reward: number; terminated: boolean; truncated: boolean; info: Record<string, unknown> };
  close?(): unknown;
}

export interface EvalOptions {
  makeEnv(kwargs: Record<string, unknown>): Promise<EvalEnv> | EvalEnv;
  agent: Agent;
  routes?: 'all' | 'dev' | readonly string[];
  /** Extra make kwargs (background_vehicles, cameras...). */
  kwargs?: Record<string, unknown>;
  onProgress?(done: number, total: number, last: RouteRecord): void;
  seed?: number;
  /** Keep every tick's `metric_info` sample per route (for Bench2Drive's own tools; see leaderboard.ts). */
  keepMetricInfo?: boolean;
}

export interface EvalReport {
  agent: string;
  routes: number;
  driving_score: number;
  success_rate: number;
  efficiency: number | null;
  comfortness: number;
  ability: AbilityTable;
  records: RouteRecord[];
  comfort_per_route: number[];
  /** Per route: every tick's `metric_info` sample (empty unless `keepMetricInfo`), wall-clock seconds, start time. */
  routes_detail: { metric_info: MetricInfo[]; duration_system: number; started_at: Date }[];
}

/** Evaluates `agent` on every route (one env, reset per route with `route_id`). */
export async function evaluateBench2Drive(o: EvalOptions): Promise<EvalReport> {
  const ids = o.routes === undefined || o.routes === 'all' ? ROUTE_IDS : o.routes === 'dev' ? DEV_ROUTE_IDS : o.routes;
  const env = await o.makeEnv({ ...o.agent.makeKwargs, ...(o.kwargs ?? {}) });
  const records: RouteRecord[] = [];
  const comfort: number[] = [];
  const detail: EvalReport['routes_detail'] = [];
  try {
    for (const [i, id] of ids.entries()) {
      const startedAt = new Date();
      const t0 = performance.now();
      const samples: MetricInfo[] = [];
      const reset = await env.reset({ seed: (o.seed ?? 0) + i, options: { route_id: id } });
      o.agent.reset(reset.info);
      let obs = reset.obs as Record<string, unknown>;
      let info = reset.info;
      for (let t = 0; t < 5000; t++) {
        const action = Tensor.from('float32', [3], o.agent.act(obs, info));
        const r = await env.step(action);
        obs = r.obs as Record<string, unknown>;
        info = r.info;
        if (o.keepMetricInfo && info['metric_info']) samples.push(info['metric_info'] as unknown as MetricInfo);
        if (r.terminated || r.truncated) break;
      }
      const rec = info['record'] as RouteRecord | undefined;
      if (!rec) throw new Error(`route ${id} did not end within 5000 steps`);
      records.push(rec);
      comfort.push(Number(info['comfort'] ?? 0));
      detail.push({ metric_info: samples, duration_system: (performance.now() - t0) / 1000, started_at: startedAt });
      o.onProgress?.(i + 1, ids.length, rec);
    }
  } finally {
    await env.close?.();
  }
  return {
    agent: o.agent.name,
    routes: ids.length,
    driving_score: drivingScore(records, ids.length),
    success_rate: successRate(records, ids.length),
    efficiency: efficiency(records),
    comfortness: comfortness(comfort),
    ability: abilityTable(records),
    records,
    comfort_per_route: comfort,
    routes_detail: detail,
  };
}

/** A plain-text summary: the headline metrics, the ability table and the failed routes. */
export function formatReport(r: EvalReport): string {
  const f = (v: number | null, d = 2) => (v === null ? 'n/a' : v.toFixed(d));
  const lines = [
    `Bench2Drive-v0, agent ${r.agent}, ${r.routes} routes`,
    `  Driving Score  ${f(r.driving_score)}`,
    `  Success Rate   ${f(r.success_rate * 100)} %`,
    `  Efficiency     ${f(r.efficiency)}`,
    `  Comfortness    ${f(r.comfortness * 100)} %`,
    '  Multi-ability (success %):',
    ...Object.entries(r.ability.abilities).map(
      ([k, v]) => `    ${k.padEnd(16)} ${v === null ? 'n/a' : (v * 100).toFixed(2)}  (${r.ability.counts[k]![0]}/${r.ability.counts[k]![1]})`,
    ),
    `    ${'Mean'.padEnd(16)} ${(r.ability.mean * 100).toFixed(2)}`,
  ];
  const failed = r.records.filter((x) => x.status !== 'Perfect' && x.status !== 'Completed');
  if (failed.length)
    lines.push(
      '  Failed routes:',
      ...failed.map((x) => `    ${x.route_id}: ${x.status} (R ${x.scores.score_route.toFixed(1)}, P ${x.scores.score_penalty.toFixed(3)})`),
    );
  return lines.join('\n');
}
