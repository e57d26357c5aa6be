/**
 * Prometheus metrics for one server (its own prom-client registry: no global state).
 *
 * The per-request counters and the step-latency histogram are counted in plain numbers on the hot
 * path and handed to prom-client when /metrics is scraped: prom-client hashes the label set on
 * every `inc`/`observe` (~0.5 us per step in all, a few percent of a CartPole round trip).
 */
import { Counter, Gauge, Registry } from 'prom-client';
import type { MetricObjectWithValues, MetricValueWithName } from 'prom-client';

import type { BusyPoller } from '../protocol/busy-poll.ts';

/** Counts kept per label value and added to a prom-client counter at scrape time. */
class LocalCounts {
  private readonly counts = new Map<string, { n: number }>();

  /** The cell for one label value; hold on to it and bump `n`. */
  cell(label: string): { n: number } {
    let c = this.counts.get(label);
    if (!c) this.counts.set(label, (c = { n: 0 }));
    return c;
  }

  flushInto(counter: Counter, labelName: string): void {
    for (const [label, c] of this.counts) {
      if (c.n === 0) continue;
      counter.inc({ [labelName]: label }, c.n);
      c.n = 0;
    }
  }
}

const LATENCY_BUCKETS = [0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5];

/** One env's latency histogram: per-bucket (not cumulative) counts, the sum and the count. */
export class LatencyCells {
  readonly buckets = new Float64Array(LATENCY_BUCKETS.length + 1);
  sum = 0;
  count = 0;

  observe(seconds: number): void {
    let i = 0;
    while (i < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[i]!) i++;
    this.buckets[i]!++;
    this.sum += seconds;
    this.count++;
  }
}

/** A Prometheus histogram of step latency per env, read straight from the cells at scrape time. */
class StepLatencyHistogram {
  readonly name = 'gymwire_step_latency_seconds';
  readonly help = 'Time inside the server for one step request (a batch counts once)';
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly perEnv = new Map<string, LatencyCells>();

  cells(envId: string): LatencyCells {
    let c = this.perEnv.get(envId);
    if (!c) this.perEnv.set(envId, (c = new LatencyCells()));
    return c;
  }

  get(): Omit<MetricObjectWithValues<MetricValueWithName<string>>, 'collect'> {
    const values: MetricValueWithName<string>[] = [];
    for (const [envId, c] of this.perEnv) {
      let cumulative = 0;
      LATENCY_BUCKETS.forEach((le, i) => {
        cumulative += c.buckets[i]!;
        values.push({ metricName: `${this.name}_bucket`, labels: { le, env_id: envId }, value: cumulative });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf', env_id: envId }, value: c.count });
      values.push({ metricName: `${this.name}_sum`, labels: { env_id: envId }, value: c.sum });
      values.push({ metricName: `${this.name}_count`, labels: { env_id: envId }, value: c.count });
    }
    return { name: this.name, help: this.help, type: this.type as never, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.perEnv.clear();
  }
}

/** What a session bumps on its hot path. */
export interface SessionCells {
  steps: { n: number };
  resets: { n: number };
  latency: LatencyCells;
}

export class ServerMetrics {
  readonly registry = new Registry();
  private readonly stepCounts = new LocalCounts();
  private readonly resetCounts = new LocalCounts();
  private readonly requestCounts = new LocalCounts();
  readonly openSessions = new Gauge({ name: 'gymwire_open_sessions', help: 'Open sessions', labelNames: ['env_id'], registers: [this.registry] });
  readonly connections = new Gauge({ name: 'gymwire_connections', help: 'Open client connections', registers: [this.registry] });
  private readonly steps: Counter = new Counter({
    name: 'gymwire_steps_total',
    help: 'Env steps taken (batched steps count each session)',
    labelNames: ['env_id'],
    registers: [this.registry],
    collect: () => this.stepCounts.flushInto(this.steps, 'env_id'),
  });
  private readonly resets: Counter = new Counter({
    name: 'gymwire_resets_total',
    help: 'Env resets',
    labelNames: ['env_id'],
    registers: [this.registry],
    collect: () => this.resetCounts.flushInto(this.resets, 'env_id'),
  });
  private readonly stepLatency = new StepLatencyHistogram();
  readonly errors = new Counter({ name: 'gymwire_errors_total', help: 'Error answers by code', labelNames: ['code'], registers: [this.registry] });
  private readonly requests: Counter = new Counter({
    name: 'gymwire_requests_total',
    help: 'Requests by type',
    labelNames: ['type'],
    registers: [this.registry],
    collect: () => this.requestCounts.flushInto(this.requests, 'type'),
  });

  constructor() {
    this.registry.registerMetric(this.stepLatency as never);
  }

  /** Exports how the server polls its sockets (protocol/busy-poll.ts), read at scrape time. */
  watchPoller(poller: BusyPoller): void {
    new Gauge({
      name: 'gymwire_busy_poll_window_microseconds',
      help: 'Socket polling window opened after each answer (adaptive: where it stands; 0: closed)',
      registers: [this.registry],
      collect() {
        this.set(poller.window);
      },
    });
    new Gauge({
      name: 'gymwire_busy_poll_resting',
      help: '1 while adaptive polling rests because a trial found it did not shorten the gaps between answers and requests',
      registers: [this.registry],
      collect() {
        this.set(poller.resting ? 1 : 0);
      },
    });
    let counted = 0;
    new Counter({
      name: 'gymwire_busy_poll_turns_total',
      help: 'Event-loop turns spent polling the sockets instead of sleeping',
      registers: [this.registry],
      collect() {
        this.inc(poller.turns - counted);
        counted = poller.turns;
      },
    });
  }

  /** The cells one env's sessions count into (shared by every session of that env). */
  forEnv(envId: string): SessionCells {
    return { steps: this.stepCounts.cell(envId), resets: this.resetCounts.cell(envId), latency: this.stepLatency.cells(envId) };
  }

  /** The cell counting requests of one type. */
  requestCell(type: string): { n: number } {
    return this.requestCounts.cell(type);
  }
}
