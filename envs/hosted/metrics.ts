/**
 * The Python worker pools' counts on the server's /metrics: calls abandoned at their deadline,
 * workers started again, and abandoned calls still running (what `--max-abandoned-calls` bounds).
 * Read from the pools when /metrics is scraped; one label per pool (`python`: --gym and --python
 * envs; `simulators`: robosuite, Meta-World, LIBERO).
 *
 * @example
 * const metrics = new PythonWorkerMetrics(registry); // on the /metrics of servers of `registry` once a pool is watched
 * metrics.watch(pool, 'python');
 */
import { Counter, Gauge, Registry as PromRegistry } from 'prom-client';

import type { Registry } from '../core/registry.ts';
import type { WorkerPool } from './pool.ts';

export class PythonWorkerMetrics {
  readonly registry = new PromRegistry();
  private readonly pools: { pool: WorkerPool; name: string }[] = [];

  constructor(private readonly envRegistry: Registry) {
    const pools = this.pools;
    new Counter({
      name: 'gymwire_python_abandoned_calls_total',
      help: 'Hosted Python env calls abandoned at their deadline (--worker-timeout); each lost its session',
      labelNames: ['pool'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const p of pools) this.inc({ pool: p.name }, p.pool.abandonedCalls);
      },
    });
    new Counter({
      name: 'gymwire_python_worker_restarts_total',
      help: 'Python workers started again after one was lost (crashed, killed, or recycled over abandoned calls)',
      labelNames: ['pool'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const p of pools) this.inc({ pool: p.name }, p.pool.restarts);
      },
    });
    new Gauge({
      name: 'gymwire_python_stuck_calls',
      help: 'Abandoned calls still running in the live Python workers (a worker with more than --max-abandoned-calls is recycled)',
      labelNames: ['pool'],
      registers: [this.registry],
      collect() {
        for (const p of pools) this.set({ pool: p.name }, p.pool.stuckCalls);
      },
    });
  }

  /** Counts `pool` under the label `name`. */
  watch(pool: WorkerPool, name: string): void {
    if (this.pools.length === 0) this.envRegistry.exposeMetrics(this.registry);
    this.pools.push({ pool, name });
  }
}
