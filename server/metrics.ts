/**
 * Prometheus metrics for one server (its own prom-client registry: no global state).
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export class ServerMetrics {
  readonly registry = new Registry();
  readonly openSessions = new Gauge({ name: 'gymwire_open_sessions', help: 'Open sessions', labelNames: ['env_id'], registers: [this.registry] });
  readonly connections = new Gauge({ name: 'gymwire_connections', help: 'Open client connections', registers: [this.registry] });
  readonly steps = new Counter({ name: 'gymwire_steps_total', help: 'Env steps taken (batched steps count each session)', labelNames: ['env_id'], registers: [this.registry] });
  readonly resets = new Counter({ name: 'gymwire_resets_total', help: 'Env resets', labelNames: ['env_id'], registers: [this.registry] });
  readonly stepLatency = new Histogram({
    name: 'gymwire_step_latency_seconds',
    help: 'Time inside the server for one step request (a batch counts once)',
    labelNames: ['env_id'],
    buckets: [0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
    registers: [this.registry],
  });
  readonly errors = new Counter({ name: 'gymwire_errors_total', help: 'Error answers by code', labelNames: ['code'], registers: [this.registry] });
  readonly requests = new Counter({ name: 'gymwire_requests_total', help: 'Requests by type', labelNames: ['type'], registers: [this.registry] });
}
