import type { Command } from 'commander';

import { defaultRegistry } from '../../envs/index.ts';

export function registerEnvs(program: Command): void {
  program
    .command('envs')
    .description('list the registered envs')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) => {
      const envs = defaultRegistry().list();
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(envs, null, 2)}\n`);
        return;
      }
      const width = Math.max(...envs.map((e) => e.id.length));
      for (const e of envs) process.stdout.write(`${e.id.padEnd(width)}  ${e.description}\n`);
    });
}
