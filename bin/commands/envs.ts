import type { Command } from 'commander';

import { defaultRegistry } from '../../envs/index.ts';
import { installedSimulators, missingSimulators, registerSimulators, WorkerPool } from '../../envs/hosted/index.ts';
import { stderrLogger } from './logger.ts';

export function registerEnvs(program: Command): void {
  program
    .command('envs')
    .description(
      "list the registered envs, and the simulator families (robosuite, Meta-World, LIBERO) that `serve` hosts: installed in the workers' Python or not",
    )
    .option('--json', 'print JSON')
    .option('--python-exe <path>', 'the Python whose simulator packages count (also GYMWIRE_PYTHON; default python3)')
    .action(async (opts: { json?: boolean; pythonExe?: string }) => {
      const registry = defaultRegistry();
      const python = opts.pythonExe ?? process.env.GYMWIRE_PYTHON ?? 'python3';
      const installed = await installedSimulators(python);
      // The pool starts no worker: registering only records the ids, as serve would.
      const pool = new WorkerPool({ python, size: 1, logger: stderrLogger('silent') });
      registerSimulators(registry, pool, installed);
      const envs = registry.list();
      const missing = missingSimulators(installed);
      await pool.close();
      await registry.close();
      if (opts.json) {
        const needsExtra = missing.map((m) => ({ id: m.id, description: m.description, needs: `pip install "gymwire[${m.extra}]"` }));
        process.stdout.write(`${JSON.stringify([...envs, ...needsExtra], null, 2)}\n`);
        return;
      }
      const width = Math.max(...envs.map((e) => e.id.length), ...missing.map((m) => m.id.length));
      for (const e of envs) process.stdout.write(`${e.id.padEnd(width)}  ${e.description}\n`);
      for (const m of missing) process.stdout.write(`${m.id.padEnd(width)}  (needs pip install "gymwire[${m.extra}]" in ${python}) ${m.description}\n`);
    });
}
