/**
 * `gymwire eval navsim --agent NAME --split synthetic-test [--navsim-version 1|2] [--json] [--url ws://...]`:
 * runs a baseline agent against a gymwire server (a local one on a free port by default), with a
 * progress bar, and prints a NAVSIM-like table of the mean score and every sub-metric.
 */
import { SingleBar, Presets } from 'cli-progress';
import type { Command } from 'commander';

import type { EnvLike } from '../../envs/navsim/eval.ts';
import { evaluateNavsim, formatTable } from '../../envs/navsim/eval.ts';
import type { SplitName } from '../../envs/navsim/generator.ts';
import { SPLITS } from '../../envs/navsim/generator.ts';
import { connectToTarget } from './target.ts';
import { refuseVersionFlag } from './version-flag.ts';

export function registerEvalNavsim(evalCommand: Command): void {
  const navsim = evalCommand.command('navsim');
  // `--version` was the NAVSIM version's spelling once; it is gymwire's own flag, so name the new one.
  refuseVersionFlag(
    navsim,
    "eval navsim takes the NAVSIM version as --navsim-version 1|2 (gymwire --version, before any subcommand, prints gymwire's version)",
  );
  navsim
    .description('score a NAVSIM agent (constant-velocity, pdm-closed, human) on a split; prints PDMS / EPDMS and sub-metrics')
    .requiredOption('--agent <name>', 'constant-velocity | pdm-closed | human')
    .option('--split <split>', 'synthetic-test | synthetic-train', 'synthetic-test')
    .option('--navsim-version <v>', '1 (PDMS) or 2 (EPDMS)', '1')
    .option('--url <url>', 'ws://HOST:PORT of a running server (default: start one locally)')
    .option('--token <token>', 'auth token (also GYMWIRE_TOKEN)')
    .option('--limit <n>', 'only the first n scenes')
    .option('--concurrency <n>', 'parallel sessions', '2')
    .option('--json', 'print the report as JSON (per-scene rows included)')
    .action(
      async (opts: {
        agent: string;
        split: string;
        navsimVersion: string;
        url?: string;
        token?: string;
        limit?: string;
        concurrency: string;
        json?: boolean;
      }) => {
        if (!(opts.split in SPLITS)) throw new Error(`unknown split '${opts.split}' (known: ${Object.keys(SPLITS).join(', ')})`);
        const version = opts.navsimVersion === '2' ? 2 : opts.navsimVersion === '1' ? 1 : null;
        if (version === null) throw new Error(`--navsim-version must be 1 or 2, got ${opts.navsimVersion}`);
        const target = await connectToTarget(opts.url, opts.token);
        const client = target.client;
        const bar = opts.json
          ? null
          : new SingleBar({ format: 'navsim {bar} {value}/{total} scenes | mean {mean}', hideCursor: true, stream: process.stderr }, Presets.shades_classic);
        let sum = 0;
        try {
          const report = await evaluateNavsim({
            makeEnv: async () => (await client.make(`gymwire/NavsimEnv-v${version}`, { split: opts.split })) as unknown as EnvLike,
            agent: opts.agent,
            split: opts.split as SplitName,
            version,
            limit: opts.limit ? Number(opts.limit) : undefined,
            concurrency: Number(opts.concurrency),
            onProgress: (done, total, row) => {
              sum += row.score;
              if (!bar) return;
              if (done === 1) bar.start(total, 0, { mean: '-' });
              bar.update(done, { mean: (sum / done).toFixed(3) });
            },
          });
          bar?.stop();
          process.stdout.write(opts.json ? `${JSON.stringify(report)}\n` : `${formatTable(report)}\n`);
        } finally {
          bar?.stop();
          await target.close();
        }
      },
    );
}
