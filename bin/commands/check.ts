import type { Command } from 'commander';

import { runConformance, targetFromUrl, TargetUnusableError, UnknownEnvsError } from '../../conformance/suite.ts';
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
    .option('--hello-wait <ms>', 'how long to wait for the server to drop a connection that never says hello (its --hello-timeout and slack)', '8000')
    .option('--json', 'print one JSON line per case')
    .action(async (url: string, opts: { env?: string[]; token?: string; filter?: string; maxSteps: string; helloWait: string; json?: boolean }) => {
      const target = targetFromUrl(url, opts.token ?? process.env.GYMWIRE_TOKEN);
      const print = (r: CaseReport) => {
        if (opts.json) return void process.stdout.write(`${JSON.stringify(r)}\n`);
        const mark = r.status === 'pass' ? 'ok  ' : r.status === 'skip' ? 'skip' : 'FAIL';
        process.stdout.write(`${mark} ${r.env}  ${r.name} (${r.ms.toFixed(0)} ms)${r.message ? `\n       ${r.message}` : ''}\n`);
      };
      let reports: CaseReport[];
      try {
        reports = await runConformance(target, {
          envIds: opts.env,
          filter: opts.filter,
          maxSteps: Number(opts.maxSteps),
          helloWaitMs: Number(opts.helloWait),
          onReport: print,
        });
      } catch (err) {
        if (!(err instanceof UnknownEnvsError) && !(err instanceof TargetUnusableError)) throw err;
        process.stderr.write(`gymwire check: ${err.message}\n`);
        return exit(2);
      }
      const failed = reports.filter((r) => r.status === 'fail').length;
      const skipped = reports.filter((r) => r.status === 'skip').length;
      process.stdout.write(`${reports.length - failed - skipped} passed, ${failed} failed, ${skipped} skipped\n`);
      exit(failed ? 1 : 0);
    });
}

/** A server that misbehaves may leave a socket open that would keep the process alive: the verdict ends it. */
function exit(code: number): void {
  process.exitCode = code;
  process.stdout.write('', () => process.exit(code));
}
