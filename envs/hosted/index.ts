/**
 * Serving envs from outside the package: Python Gymnasium envs run by a worker pool, and TS/JS
 * plugins. `gymwire serve --gym ID --python module:callable --plugin ./file.ts` calls
 * {@link hostEnvs}; a program embedding the server can call it on its own registry.
 *
 * @example
 * const registry = defaultRegistry();
 * await hostEnvs(registry, { gym: ['CartPole-v1'], logger });
 * const server = await startServer({ registry, port: 0 });
 * // ... later: await server.close(); await registry.close();  (closes the worker pool too)
 */
import type { Logger } from 'pino';

import type { Registry } from '../core/registry.ts';
import { PythonWorkerMetrics } from './metrics.ts';
import { loadPlugin } from './plugins.ts';
import { WorkerPool } from './pool.ts';
import { registerHostedEnvs } from './register.ts';
import { installedSimulators, registerSimulators, SIMULATOR_CALL_TIMEOUT_MS } from './simulators.ts';

export interface HostEnvsOptions {
  gym?: readonly string[];
  python?: readonly { target: string; id?: string }[];
  plugins?: readonly string[];
  /** Check every observation a Python env returns against its space before any conversion (serve --check). */
  check?: boolean;
  /** How long each plugin's import and register() may take (ms; default 30 s). */
  pluginTimeoutMs?: number;
  /** The Python interpreter; default $GYMWIRE_PYTHON or python3. */
  pythonExe?: string;
  /** Python worker processes at most; default one per core. */
  workers?: number;
  /** How long one call of a Python env may take before it is abandoned and its session lost (ms). */
  workerTimeoutMs?: number;
  /** Abandoned calls still running on one worker before it is recycled (default 16). */
  maxAbandonedCalls?: number;
  /** Serve the simulator families installed in the workers' Python (simulators.ts); default true. */
  simulators?: boolean;
  logger: Logger;
}

/** Registers the hosted and plugin envs; returns the pool when Python envs are hosted (the registry closes it). */
export async function hostEnvs(registry: Registry, opts: HostEnvsOptions): Promise<WorkerPool | null> {
  for (const plugin of opts.plugins ?? []) {
    const ids = await loadPlugin(registry, plugin, opts.pluginTimeoutMs);
    opts.logger.info({ plugin, envs: ids }, 'plugin registered envs');
  }
  const metrics = new PythonWorkerMetrics(registry);
  if (opts.simulators ?? true) await hostSimulators(registry, opts, metrics);
  if (!opts.gym?.length && !opts.python?.length) return null;
  const pool = registry.closes(
    new WorkerPool({
      python: opts.pythonExe,
      size: opts.workers,
      callTimeoutMs: opts.workerTimeoutMs,
      maxAbandonedCalls: opts.maxAbandonedCalls,
      logger: opts.logger,
    }),
  );
  metrics.watch(pool, 'python');
  try {
    const ids = await registerHostedEnvs(registry, pool, { gym: opts.gym, python: opts.python, check: opts.check });
    opts.logger.info({ envs: ids, python: pool.python, workers: pool.size }, 'hosting python envs');
  } catch (err) {
    await pool.close();
    throw err;
  }
  return pool;
}

/** Registers the installed simulator families with a pool of their own (closed with the registry). */
async function hostSimulators(registry: Registry, opts: HostEnvsOptions, metrics: PythonWorkerMetrics): Promise<void> {
  const python = opts.pythonExe ?? process.env.GYMWIRE_PYTHON ?? 'python3';
  const installed = await installedSimulators(python);
  if (installed.size === 0) return;
  const callTimeoutMs = Math.max(opts.workerTimeoutMs ?? 0, SIMULATOR_CALL_TIMEOUT_MS);
  const pool = registry.closes(new WorkerPool({ python, size: opts.workers, callTimeoutMs, maxAbandonedCalls: opts.maxAbandonedCalls, logger: opts.logger }));
  metrics.watch(pool, 'simulators');
  const ids = registerSimulators(registry, pool, installed);
  opts.logger.info({ envs: ids, python, versions: Object.fromEntries(installed) }, 'serving simulators');
}

export { HostedEnv, makeHostedEnv } from './env.ts';
export type { HostedTarget } from './env.ts';
export { loadPlugin } from './plugins.ts';
export type { RegisterPlugin } from './plugins.ts';
export { defaultPoolSize, WorkerPool } from './pool.ts';
export { gymEnvId, pythonEnvId, registerHostedEnvs } from './register.ts';
export { failureError, workerLostError } from './errors.ts';
export type { WorkerFailure } from './errors.ts';
export { DEFAULT_MAX_ABANDONED_CALLS, PythonWorker } from './worker.ts';
export { PythonWorkerMetrics } from './metrics.ts';
export { installedSimulators, missingSimulators, registerSimulators, SIMULATOR_SPECS } from './simulators.ts';
export type { SimulatorFamily } from './simulators.ts';
export { hostTorchWorldModel, TORCH_WORLD_MODEL_ENV_ID, TorchWorldModelKwargsSchema } from './world-model.ts';
export type { TorchWorldModelOptions } from './world-model.ts';
