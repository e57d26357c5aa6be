import type { Command } from 'commander';

import { registerEvalBench2Drive } from './eval-bench2drive.ts';
import { registerEvalNavsim } from './eval-navsim.ts';

/** `gymwire eval <benchmark>`: each driving benchmark adds its own subcommand. */
export function registerEval(program: Command): Command {
  const evalCommand = program.command('eval').description('run a baseline agent through a benchmark against a server (a local one by default)');
  registerEvalNavsim(evalCommand);
  registerEvalBench2Drive(evalCommand);
  return evalCommand;
}
