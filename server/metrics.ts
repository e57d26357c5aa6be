/**
 * Prometheus metrics for one server (its own prom-client registry: no global state).
 *
 * The per-request counters and the step-latency histogram are counted in plain numbers on the hot
 * path and handed to prom-client when /metrics is scraped: prom-client hashes the label set on
 * every `inc`/`observe` (~0.5 us per step in all, a few percent of a CartPole round trip).
 */
import { Counter, Gauge, Registry } from 'prom-client';
import type { MetricObjectWithValues, MetricValueWithName } from 'prom-client';

import { CONFORMANCE_CLIENT_NAME } from '../protocol/messages.ts';
import type { BusyPoller } from '../runtime/busy-poll.ts';

/** Counts kept per label value and added to a prom-client counter at scrape time. */
class LocalCounts {
  private readonly counts = new Map<string, { n: number }>();

  /** The cell for one label value; hold on to it and bump `n`. */
  cell(label: string): { n: number } {
    let c = this.counts.get(label);
    if (!c) this.counts.set(label, (c = { n: 0 }));
    return c;
  }

  entries(): IterableIterator<[string, { n: number }]> {
    return this.counts.entries();
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
/** Episode returns across envs: NAVSIM's [0, 1], Bench2Drive's ~100, CartPole's 500, negatives too. */
const RETURN_BUCKETS = [-1000, -100, -10, -1, 0, 0.25, 0.5, 0.75, 1, 10, 50, 100, 200, 500, 1000];
const LENGTH_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000];

/** One env's histogram: per-bucket (not cumulative) counts, the sum and the count. */
export class HistogramCells {
  readonly buckets: Float64Array;
  sum = 0;
  count = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.buckets = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    let i = 0;
    while (i < this.bounds.length && value > this.bounds[i]!) i++;
    this.buckets[i]!++;
    this.sum += value;
    this.count++;
  }
}

/** A Prometheus histogram per env, read straight from the cells at scrape time. */
class PerEnvHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly perEnv = new Map<string, HistogramCells>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
  ) {}

  cells(envId: string): HistogramCells {
    let c = this.perEnv.get(envId);
    if (!c) this.perEnv.set(envId, (c = new HistogramCells(this.bounds)));
    return c;
  }

  get(): Omit<MetricObjectWithValues<MetricValueWithName<string>>, 'collect'> {
    const values: MetricValueWithName<string>[] = [];
    for (const [envId, c] of this.perEnv) {
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
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

/** How an episode ended: Gymnasium's two signals. */
export type EpisodeEnd = 'terminated' | 'truncated';

/** What one env's sessions count when an episode ends. */
export interface EpisodeCells {
  returns: HistogramCells;
  lengths: HistogramCells;
  ended: Record<EpisodeEnd, { n: number }>;
}

/** What a session bumps on its hot path. */
export interface SessionCells {
  steps: { n: number };
  resets: { n: number };
  latency: HistogramCells;
  episodes: EpisodeCells;
}

export class ServerMetrics {
  readonly registry = new Registry();
  private readonly stepCounts = new LocalCounts();
  private readonly resetCounts = new LocalCounts();
  private readonly requestCounts = new LocalCounts();
  readonly openSessions = new Gauge({ name: 'gymwire_open_sessions', help: 'Open sessions', labelNames: ['env_id'], registers: [this.registry] });
  readonly connections = new Gauge({ name: 'gymwire_connections', help: 'Open client connections', registers: [this.registry] });
  readonly slowReaders = new Counter({
    name: 'gymwire_slow_reader_closes_total',
    help: 'Connections closed because their client left more than --max-outbound-bytes unread for --outbound-drain-timeout',
    registers: [this.registry],
  });
  readonly slowViewerStreams = new Counter({
    name: 'gymwire_viewer_slow_streams_closed_total',
    help: 'Viewer event streams closed because their reader left more than --viewer-max-backlog unread for --outbound-drain-timeout',
    registers: [this.registry],
  });
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
  private readonly stepLatency = new PerEnvHistogram(
    'gymwire_step_latency_seconds',
    'Time inside the server for one step request (a batch counts once)',
    LATENCY_BUCKETS,
  );
  private readonly episodeReturn = new PerEnvHistogram('gymwire_episode_return', 'Summed reward of each finished episode', RETURN_BUCKETS);
  private readonly episodeLength = new PerEnvHistogram('gymwire_episode_length_steps', 'Steps of each finished episode', LENGTH_BUCKETS);
  private readonly endCounts = new LocalCounts();
  private readonly episodesEnded: Counter = new Counter({
    name: 'gymwire_episodes_total',
    help: 'Finished episodes by env and how they ended (terminated, truncated)',
    labelNames: ['env_id', 'reason'],
    registers: [this.registry],
    collect: () => {
      for (const [key, c] of this.endCounts.entries()) {
        if (c.n === 0) continue;
        const [envId, reason] = JSON.parse(key) as [string, string];
        this.episodesEnded.inc({ env_id: envId, reason }, c.n);
        c.n = 0;
      }
    },
  });
  readonly errors = new Counter({ name: 'gymwire_errors_total', help: 'Error answers by code', labelNames: ['code'], registers: [this.registry] });
  readonly conformanceErrors = new Counter({
    name: 'gymwire_conformance_errors_total',
    help: 'Error answers by code to clients that said hello as the conformance suite (its deliberate probes)',
    labelNames: ['code'],
    registers: [this.registry],
  });

  /** Counts an error answer, apart when the connection's client is the conformance suite. */
  countError(code: string, clientName: string | undefined): void {
    (clientName === CONFORMANCE_CLIENT_NAME ? this.conformanceErrors : this.errors).inc({ code });
  }
  private readonly requests: Counter = new Counter({
    name: 'gymwire_requests_total',
    help: 'Requests by type',
    labelNames: ['type'],
    registers: [this.registry],
    collect: () => this.requestCounts.flushInto(this.requests, 'type'),
  });

  constructor() {
    this.registry.registerMetric(this.stepLatency as never);
    this.registry.registerMetric(this.episodeReturn as never);
    this.registry.registerMetric(this.episodeLength as never);
  }

  /** Exports how the server polls its sockets (runtime/busy-poll.ts), read at scrape time. */
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
    const ended = (reason: EpisodeEnd) => this.endCounts.cell(JSON.stringify([envId, reason]));
    return {
      steps: this.stepCounts.cell(envId),
      resets: this.resetCounts.cell(envId),
      latency: this.stepLatency.cells(envId),
      episodes: {
        returns: this.episodeReturn.cells(envId),
        lengths: this.episodeLength.cells(envId),
        ended: { terminated: ended('terminated'), truncated: ended('truncated') },
      },
    };
  }

  /** The cell counting requests of one type. */
  requestCell(type: string): { n: number } {
    return this.requestCounts.cell(type);
  }
}
