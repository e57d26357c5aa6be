/**
 * Torch world models as an env family: `gymwire serve --torch-world-model module:callable` registers
 * `gymwire/TorchWorldModel-v0`, whose sessions run in a Python worker of their own
 * (client/python/src/gymwire/worldmodel: the contract, the batcher, the env).
 *
 * Why one worker of its own: all sessions of a model must reach one batcher, and that batcher must
 * hold the weights on the device, since a forward pass only stacks tensors of one process. The
 * shared pool spreads sessions over workers (one per core), which would split the batch and copy
 * the weights per worker; so the family starts a pool of size 1. Calls the server makes in one tick
 * reach that worker as one frame, and the worker holds frames for the batch window, so steps from
 * every connection share forward passes.
 *
 * Steps answer with `info.world_model` (the batch's size, queue wait, forward time, device and
 * device memory), which this module turns into Prometheus histograms on the server's /metrics. The
 * worker's typed errors become wire codes: a memory budget past at make is ENV_ERR_MEMORY_BUDGET, a
 * bad action chunk ENV_ERR_INVALID_ACTION; a NaN output fails that session's step with
 * ENV_ERR_ENV_FAILURE and leaves its state as it was.
 *
 * @example
 * await hostTorchWorldModel(registry, { model: 'gymwire.worldmodel.models:tiny_world_model', logger });
 * const env = await registry.make('gymwire/TorchWorldModel-v0', {});
 */
import type { Logger } from 'pino';
import { Gauge, Histogram, Registry as PromRegistry } from 'prom-client';
import { z } from 'zod';

import type { Env, ResetOptions, ResetResult, StepResult } from '../core/env.ts';
import { InvalidActionError } from '../core/env.ts';
import type { Registry } from '../core/registry.ts';
import { ProtocolError } from '../../protocol/errors.ts';
import type { HostedEnv } from './env.ts';
import { makeHostedEnv } from './env.ts';
import { WorkerPool } from './pool.ts';

export const TORCH_WORLD_MODEL_ENV_ID = 'gymwire/TorchWorldModel-v0';

/** The Python env every session builds (client/python/src/gymwire/worldmodel/env.py). */
const ENV_TARGET = { kind: 'callable' as const, path: 'gymwire.worldmodel:TorchWorldModelEnv' };

export interface TorchWorldModelOptions {
  /** `module:callable` returning the torch.nn.Module (docs/world-models.md, "Torch world models"). */
  model: string;
  /** Keyword arguments for the callable (the operator's, never a client's). */
  modelKwargs?: Record<string, unknown>;
  /** Env id; default gymwire/TorchWorldModel-v0. */
  id?: string;
  /** 'auto' (CUDA when torch sees one, else the CPU), 'cpu' or 'cuda[:N]'. */
  device?: string;
  /** Steps in one forward pass at most (1: no batching). */
  maxBatch?: number;
  /** How long the first queued step waits for others to join its batch (ms). */
  batchWindowMs?: number;
  /** Device memory the model may use with all its sessions; default: the card's memory on CUDA, none on the CPU. */
  memoryBudgetBytes?: number;
  pythonExe?: string;
  /** How long a forward pass may take before the worker counts as hung (ms). */
  workerTimeoutMs?: number;
  logger: Logger;
}

export const TorchWorldModelKwargsSchema = z
  .object({
    render_mode: z.enum(['rgb_array']).nullable().optional(),
    return_all_frames: z.boolean().optional().describe("Put the chunk's frames in info.frames (uint8 [chunk,H,W,3])"),
    max_episode_steps: z.number().int().positive().optional().describe('Episode length in frames; default the model spec’s'),
  })
  .strict();
export type TorchWorldModelKwargs = z.infer<typeof TorchWorldModelKwargsSchema>;

/** What the worker reports with each step (gymwire/worldmodel/host.py `ModelHost._run`). */
interface BatchStats {
  batch: number;
  batch_size: number;
  forward_ms: number;
  queue_ms: number;
  device: string;
  memory_bytes: number;
}

/** The family's histograms and gauges, exposed on /metrics through the env registry. */
class WorldModelMetrics {
  readonly registry = new PromRegistry();
  private readonly batchSize = new Histogram({
    name: 'gymwire_world_model_batch_size',
    help: 'Sessions stepped in one forward pass of a world model',
    labelNames: ['env_id'],
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
    registers: [this.registry],
  });
  private readonly queueWait = new Histogram({
    name: 'gymwire_world_model_queue_wait_seconds',
    help: 'How long a step waited for its batch to start',
    labelNames: ['env_id'],
    buckets: [0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1],
    registers: [this.registry],
  });
  private readonly forward = new Histogram({
    name: 'gymwire_world_model_forward_seconds',
    help: 'Time of one batched forward pass, outputs copied back',
    labelNames: ['env_id'],
    buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5],
    registers: [this.registry],
  });
  private readonly memory = new Gauge({
    name: 'gymwire_world_model_device_memory_bytes',
    help: 'Device memory the world model holds (CUDA: torch allocator; CPU: the estimate its budget counts)',
    labelNames: ['env_id', 'device'],
    registers: [this.registry],
  });
  private readonly deviceInfo = new Gauge({
    name: 'gymwire_world_model_device_info',
    help: 'The device a world model runs on (1 per env id and device)',
    labelNames: ['env_id', 'device'],
    registers: [this.registry],
  });
  /** The last batch number counted: one step of each batch counts its size and forward time. */
  private lastBatch = 0;

  constructor(private readonly envId: string) {}

  device(device: string): void {
    this.deviceInfo.set({ env_id: this.envId, device }, 1);
  }

  observe(stats: BatchStats): void {
    this.queueWait.observe({ env_id: this.envId }, stats.queue_ms / 1000);
    // Batch numbers rise; the steps of one batch come back together, so a new number is a new batch.
    if (stats.batch <= this.lastBatch) return;
    this.lastBatch = stats.batch;
    this.batchSize.observe({ env_id: this.envId }, stats.batch_size);
    this.forward.observe({ env_id: this.envId }, stats.forward_ms / 1000);
    this.memory.set({ env_id: this.envId, device: stats.device }, stats.memory_bytes);
  }
}

/** The worker's typed errors as the wire's codes (errors.ts passes the Python type in details.error). */
function mapError(err: unknown): never {
  if (err instanceof ProtocolError && err.code === 'ENV_ERR_ENV_FAILURE') {
    const type = (err.details as { error?: string } | undefined)?.error;
    if (type === 'WorldModelMemoryError') throw new ProtocolError('ENV_ERR_MEMORY_BUDGET', err.message, { error: type });
    if (type === 'InvalidActionError') throw new InvalidActionError(err.message);
  }
  throw err;
}

/** A hosted world-model session: the hosted env, with its batch figures counted and its errors typed. */
class TorchWorldModelEnv implements Env {
  constructor(
    private readonly hosted: HostedEnv,
    private readonly metrics: WorldModelMetrics,
  ) {}

  get observationSpace() {
    return this.hosted.observationSpace;
  }
  get actionSpace() {
    return this.hosted.actionSpace;
  }
  get metadata() {
    return this.hosted.metadata;
  }
  get renderMode() {
    return this.hosted.renderMode;
  }

  reset(opts?: ResetOptions): Promise<ResetResult> {
    return this.hosted.reset(opts).catch(mapError);
  }

  async step(action: unknown): Promise<StepResult> {
    const result = await this.hosted.step(action).catch(mapError);
    const stats = (result.info as { world_model?: BatchStats }).world_model;
    if (stats) this.metrics.observe(stats);
    return result;
  }

  render() {
    return this.hosted.render();
  }

  close(): Promise<void> {
    return this.hosted.close();
  }
}

/** Registers a torch world model; returns its worker pool (closed with the registry). */
export async function hostTorchWorldModel(registry: Registry, opts: TorchWorldModelOptions): Promise<WorkerPool> {
  const id = opts.id ?? TORCH_WORLD_MODEL_ENV_ID;
  const maxBatch = opts.maxBatch ?? 32;
  const windowMs = opts.batchWindowMs ?? 2;
  if (!Number.isInteger(maxBatch) || maxBatch < 1) throw new Error(`the world-model batch size must be at least 1, got ${maxBatch}`);
  if (!(windowMs >= 0)) throw new Error(`the world-model batch window must be 0 ms or more, got ${windowMs}`);
  const pool = registry.closes(new WorkerPool({ python: opts.pythonExe, size: 1, callTimeoutMs: opts.workerTimeoutMs, logger: opts.logger }));
  // The model's module must import at start-up (torch, the user's package), with Python's own message if not.
  await pool
    .any()
    .call({ op: 'describe', target: { kind: 'callable', path: opts.model } }, id)
    .catch((err: unknown) => {
      throw new Error(`cannot host ${id}: ${err instanceof Error ? err.message : String(err)}`);
    });
  const operator = {
    model: opts.model,
    model_kwargs: opts.modelKwargs ?? {},
    device: opts.device ?? 'auto',
    max_batch: maxBatch,
    window_ms: windowMs,
    memory_budget_bytes: opts.memoryBudgetBytes ?? null,
  };
  // Load the model now (weights, the contract check, the memory probe), so a broken model stops the
  // start-up with Python's message and the first client does not wait for the load.
  const probe = await makeHostedEnv(pool, ENV_TARGET, operator, id).catch((err: unknown) => {
    throw new Error(`cannot host ${id}: ${err instanceof Error ? err.message : String(err)}`);
  });
  await probe.close();
  const metrics = new WorldModelMetrics(id);
  registry.exposeMetrics(metrics.registry);
  registry.register<TorchWorldModelKwargs>({
    id,
    description: `Torch world model ${opts.model}: context frames and an action chunk in, the chunk's frames and rewards out; steps of all sessions batched`,
    kwargsSchema: TorchWorldModelKwargsSchema,
    tags: ['world-model', 'torch', 'python'],
    entryPoint: async (kwargs) => {
      const hosted = await makeHostedEnv(pool, ENV_TARGET, { ...kwargs, ...operator }, id).catch(mapError);
      metrics.device(String(hosted.metadata.device));
      return new TorchWorldModelEnv(hosted, metrics);
    },
  });
  opts.logger.info({ env: id, model: opts.model, device: operator.device, maxBatch, windowMs }, 'hosting a torch world model');
  return pool;
}
