import type { Command } from 'commander';

import { runConformance, targetFromUrl, TargetUnusableError, UnknownEnvsError } from '../../conformance/suite.ts';
import type { CaseReport, ConformanceTarget } from '../../conformance/suite.ts';
import { ServeFailedError, startServed } from '../../conformance/served.ts';
import type { ServedServer } from '../../conformance/served.ts';

interface CheckOptions {
  env?: string[];
  token?: string;
  filter?: string;
  maxSteps: string;
  helloWait: string;
  serve?: string;
  serveWait: string;
  json?: boolean;
}

export function registerCheck(program: Command): void {
  program
    .command('check')
    .description('run the behavioural conformance suite against a gymwire server')
    .argument('[url]', 'ws://HOST:PORT (with --serve, optional when the command has {port})')
    .option('--env <id...>', 'env ids to check (default: every env the server lists)')
    .option('--token <token>', 'auth token (also GYMWIRE_TOKEN)')
    .option('--filter <text>', 'only cases whose name contains this')
    .option('--max-steps <n>', 'random steps to try before giving up on an episode end', '600')
    .option('--hello-wait <ms>', 'how long to wait for the server to drop a connection that never says hello (its --hello-timeout and slack)', '8000')
    .option(
      '--serve <command>',
      'start the server with this shell command ({port} becomes a free port), run the lifecycle cases (limits, idle timeout, /healthz, SIGTERM) too, and stop it at the end',
    )
    .option('--serve-wait <ms>', 'how long the --serve command may take to listen', '30000')
    .option('--json', 'print one JSON line per case')
    .action(async (url: string | undefined, opts: CheckOptions) => {
      let served: ServedServer | null = null;
      if (opts.serve) {
        try {
          served = await startServed(opts.serve, { url, waitMs: Number(opts.serveWait) });
        } catch (err) {
          if (!(err instanceof ServeFailedError)) throw err;
          process.stderr.write(`gymwire check: ${err.message}\n`);
          return exit(2);
        }
        url = served.url;
      }
      if (!url) {
        process.stderr.write('gymwire check: give the server URL (ws://HOST:PORT), or --serve "<command>" to start one\n');
        return exit(2);
      }
      const target: ConformanceTarget = { ...targetFromUrl(url, opts.token ?? process.env.GYMWIRE_TOKEN), ...(served ? { lifecycle: served.lifecycle } : {}) };
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
        await served?.dispose();
        if (!(err instanceof UnknownEnvsError) && !(err instanceof TargetUnusableError)) throw err;
        process.stderr.write(`gymwire check: ${err.message}\n`);
        return exit(2);
      }
      if (served) {
        await served.dispose();
        process.stdout.write(`the served server exited (${await served.exited})\n`);
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
