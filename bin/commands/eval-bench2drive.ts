/**
 * `gymwire eval bench2drive --agent NAME [--routes all|dev|ID,...] [--json] [--out DIR] [--url ws://...]`:
 * drives a baseline agent (expert | naive) over the Bench2Drive-v0 route set against a gymwire
 * server (a local one on a free port by default), with a progress bar, and prints Driving Score,
 * Success Rate, Efficiency, Comfortness and the multi-ability table. `--out` also writes the files
 * Bench2Drive's own tools read (envs/bench2drive/leaderboard.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { Presets, SingleBar } from 'cli-progress';
import type { Command } from 'commander';

import { AGENTS, makeAgent } from '../../envs/bench2drive/agents.ts';
import type { EvalEnv, EvalReport } from '../../envs/bench2drive/eval.ts';
import { evaluateBench2Drive, formatReport } from '../../envs/bench2drive/eval.ts';
import { leaderboardFiles } from '../../envs/bench2drive/leaderboard.ts';
import { parseRouteId } from '../../envs/bench2drive/scenarios.ts';
import { connectToTarget } from './target.ts';

export function registerEvalBench2Drive(evalCommand: Command): void {
  evalCommand
    .command('bench2drive')
    .description('drive an agent over the Bench2Drive-v0 routes; prints DS, SR, Efficiency, Comfortness and the multi-ability table')
    .requiredOption('--agent <name>', AGENTS.join(' | '))
    .option('--routes <set>', 'all (70 routes) | dev (10 routes) | comma-separated route ids (ParkedObstacle_0,...)', 'all')
    .option('--background <n>', 'background vehicles per route (default: per scenario)')
    .option('--url <url>', 'ws://HOST:PORT of a running server (default: start one locally)')
    .option('--token <token>', 'auth token (also GYMWIRE_TOKEN)')
    .option('--json', 'print the report as JSON (per-route records included)')
    .option('--out <dir>', "write Bench2Drive's leaderboard results JSON, routes.xml and per-route metric_info.json into DIR")
    .action(async (opts: { agent: string; routes: string; background?: string; url?: string; token?: string; json?: boolean; out?: string }) => {
      const routes = opts.routes === 'all' || opts.routes === 'dev' ? opts.routes : opts.routes.split(',').map((id) => id.trim());
      if (Array.isArray(routes)) for (const id of routes) parseRouteId(id); // an unknown id fails here, naming the valid ones
      const agent = makeAgent(opts.agent);
      const target = await connectToTarget(opts.url, opts.token);
      const client = target.client;
      const bar = opts.json
        ? null
        : new SingleBar(
            { format: 'bench2drive {bar} {value}/{total} routes | DS {ds} | {route}', hideCursor: true, stream: process.stderr },
            Presets.shades_classic,
          );
      let sum = 0;
      try {
        const report = await evaluateBench2Drive({
          makeEnv: async (kwargs) => (await client.make('gymwire/Bench2Drive-v0', kwargs)) as unknown as EvalEnv,
          agent,
          routes,
          kwargs: opts.background !== undefined ? { background_vehicles: Number(opts.background) } : {},
          keepMetricInfo: opts.out !== undefined,
          onProgress: (done, total, rec) => {
            sum += rec.scores.score_composed;
            if (!bar) return;
            if (done === 1) bar.start(total, 0, { ds: '-', route: '' });
            bar.update(done, { ds: (sum / done).toFixed(2), route: `${rec.route_id}: ${rec.status}` });
          },
        });
        bar?.stop();
        if (opts.out !== undefined) writeLeaderboardFolder(opts.out, report);
        const { routes_detail: _detail, ...summary } = report;
        process.stdout.write(opts.json ? `${JSON.stringify(summary)}\n` : `${formatReport(report)}\n`);
      } finally {
        bar?.stop();
        await target.close();
      }
    });
}

function writeLeaderboardFolder(dir: string, report: EvalReport): void {
  const routes = report.records.map((record, i) => {
    const d = report.routes_detail[i]!;
    return { record, metricInfo: d.metric_info, durationSystem: d.duration_system, startedAt: d.started_at };
  });
  for (const [rel, text] of leaderboardFiles(report.agent, routes)) {
    const path = join(dir, rel);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  }
}
