import type { Command } from 'commander';

import { runConformance, targetFromUrl, UnknownEnvsError } from '../../conformance/suite.ts';
import type { CaseReport } from '../../conformance/suite.ts';

export function registerCheck(program: Command): void {
  program
    .command('check')
    .description('run the behavioural conformance suite against a gymwire server')
    .argument('<url>', 'ws://HOST:PORT')
    .option('--env <id...>', 'env ids to check (default: every env the server lists)')
    .option('--token <token>', 'auth token (also GYMWIRE_TOKEN)')
    .option('--filter <text>', 'only cases whose name contains this')
    .option('--max-steps <n>', 'random steps to try before giving up on an episode end', '600')
    .option('--json', 'print one JSON line per case')
    .action(async (url: string, opts: { env?: string[]; token?: string; filter?: string; maxSteps: string; json?: boolean }) => {
      const target = targetFromUrl(url, opts.token ?? process.env.GYMWIRE_TOKEN);
      const print = (r: CaseReport) => {
        if (opts.json) return void process.stdout.write(`${JSON.stringify(r)}\n`);
        const mark = r.status === 'pass' ? 'ok  ' : r.status === 'skip' ? 'skip' : 'FAIL';
        process.stdout.write(`${mark} ${r.env}  ${r.name} (${r.ms.toFixed(0)} ms)${r.message ? `\n       ${r.message}` : ''}\n`);
      };
      let reports: CaseReport[];
      try {
        reports = await runConformance(target, { envIds: opts.env, filter: opts.filter, maxSteps: Number(opts.maxSteps), onReport: print });
      } catch (err) {
        if (!(err instanceof UnknownEnvsError)) throw err;
        process.stderr.write(`gymwire check: ${err.message}\n`);
        process.exitCode = 2;
        return;
      }
      const failed = reports.filter((r) => r.status === 'fail').length;
      const skipped = reports.filter((r) => r.status === 'skip').length;
      process.stdout.write(`${reports.length - failed - skipped} passed, ${failed} failed, ${skipped} skipped\n`);
      process.exitCode = failed ? 1 : 0;
    });
}
