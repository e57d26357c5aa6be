/**
 * The `gymwire` command line: serve, envs, check, eval, rollout, mcp.
 */
import { Command } from 'commander';

import { GYMWIRE_VERSION } from '../protocol/version.ts';
import { registerCheck } from './commands/check.ts';
import { registerEnvs } from './commands/envs.ts';
import { registerEval } from './commands/eval.ts';
import { registerMcp } from './commands/mcp.ts';
import { registerRollout } from './commands/rollout.ts';
import { registerServe } from './commands/serve.ts';
import { versionFlagBeforeSubcommandsOnly } from './commands/version-flag.ts';

export function buildProgram(): Command {
  const program = new Command('gymwire').description('Gymnasium-compatible environments over WebSockets').version(GYMWIRE_VERSION).showHelpAfterError();
  registerServe(program);
  registerEnvs(program);
  registerCheck(program);
  registerMcp(program);
  registerEval(program);
  registerRollout(program);
  versionFlagBeforeSubcommandsOnly(program);
  return program;
}

export async function main(argv: string[]): Promise<void> {
  // `gymwire envs | head` closes stdout early: that is the reader's choice, not an error.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
  });
  try {
    await buildProgram().parseAsync(argv);
  } catch (err) {
    // Usage and connection errors are for a person: the message, not a stack trace (GYMWIRE_DEBUG=1 shows it).
    process.stderr.write(`gymwire: ${err instanceof Error ? err.message : String(err)}\n`);
    if (process.env.GYMWIRE_DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
    process.exitCode = 1;
  }
}
