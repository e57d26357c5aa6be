/**
 * The world-model runtime: one inference worker thread holding every ONNX session of the process,
 * created once per model directory and device and kept until {@link WorldModelRuntime.close}, and a
 * batcher that gathers chunk steps from all env sessions into one model run. A step waits at most
 * `batchWindowMs` for company (or less, once `maxBatch` requests are queued); steps that arrive while
 * a batch is running form the next batch. The main thread only copies inputs into one buffer and
 * posts it, so the event loop stays free while the model runs.
 *
 * `registerEvac` creates one runtime and closes over it; the server (or a test) calls `close()` to
 * release the sessions and end the worker. CUDA is used when asked for (`device: 'cuda'`, or the
 * environment variable GYMWIRE_EVAC_DEVICE=cuda) and available; otherwise the runtime logs once
 * that it fell back to the CPU.
 *
 * @example
 * const runtime = new WorldModelRuntime({ logger, batchWindowMs: 2, maxBatch: 32 });
 * const model = await runtime.load('envs/evac/assets/tiny-64');
 * const { frames, probs } = await model.step({ context, actions, pose, noise });
 * await runtime.close();
 */
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import type { Logger } from 'pino';
import { pino } from 'pino';

import type { ConfinePath } from '../core/data-roots.ts';
import type { Manifest, ModelDir, WorldModelInputs } from './contract.ts';
import { ThreadLink } from '../../runtime/thread-link.ts';
import { startModuleWorker } from '../core/threads.ts';
import { ModelContractError, checkSessions, fingerprintModelDir, readModelDir } from './contract.ts';
import type { WorkerRequest, WorkerResponse } from './protocol.ts';

export type Device = 'cpu' | 'cuda';

/** The worker's own error answer to a request (as opposed to the worker failing). */
class WorkerRefusal extends Error {}

export interface RuntimeOptions {
  logger?: Logger;
  /** Default device for models loaded without one; default GYMWIRE_EVAC_DEVICE or 'cpu'. */
  device?: Device;
  deviceId?: number;
  /** How long a chunk step waits for others to share its run (ms). Default 2. */
  batchWindowMs?: number;
  /** Most chunk steps in one run. Default 32. 1 disables batching. */
  maxBatch?: number;
  /** onnxruntime intra-op threads in the worker (default: one per core, at most 4); 0 lets onnxruntime choose. */
  threads?: number;
  /** How long one request to the worker (a load, a batch) may take (ms; default 5 min) before the worker is ended; its models' envs fail and later makes load again. */
  callTimeoutMs?: number;
}

/** A request to the worker and the buffers it hands over. */
interface Outgoing {
  msg: WorkerRequest;
  transfer: ArrayBuffer[];
}

/** How long one request to the world-model worker may take by default (ms). */
export const DEFAULT_WORLD_MODEL_TIMEOUT_MS = 300_000;

/** One env's chunk step: flat arrays in the shapes of the contract, without the batch axis. */
export interface ChunkRequest {
  /** uint8 [T,H,W,3], or its T frames [H,W,3] (copied once, straight into the batch) */
  context: Uint8Array | readonly Uint8Array[];
  /** float32 [C,A], already normalised */
  actions: Float32Array;
  /** float32 [8], the pose before the chunk */
  pose: Float32Array;
  /** float32 [...noise shape], or null when the model takes no noise */
  noise: Float32Array | null;
  /** float32 [T,8] the pose at each context frame; required when the model takes `context_poses` */
  contextPoses?: Float32Array | null;
  /** float32 [...latent shape] the state from the last chunk (zeros after reset); required when the model takes `latent` */
  latent?: Float32Array | null;
}

export interface ChunkResult {
  /** uint8 [C,H,W,3] */
  frames: Uint8Array;
  /** float32 [C] success probabilities */
  probs: Float32Array;
  /** float32 [C,8] poses from the action adapter, or null without one */
  poses: Float32Array | null;
  /** float32 [...latent shape] the state to carry into the next chunk, or null when the model has none */
  latent: Float32Array | null;
  /**
   * Says this step's views are no longer read. Once every step of a batch has released, the
   * batch's frame buffer is reused for a later batch (optional: an unreleased buffer is simply
   * left to the garbage collector). Recycling keeps megabytes of ArrayBuffers per batch from being
   * allocated on the main thread, whose external-memory GCs otherwise stall the event loop.
   */
  release(): void;
}

interface Pending {
  req: ChunkRequest;
  resolve(r: ChunkResult): void;
  reject(e: Error): void;
}

/** Counters for tests, benchmarks and metrics. */
export interface RuntimeStats {
  runs: number;
  steps: number;
  maxBatchSeen: number;
}

/** A loaded, contract-checked model: its manifest, the inputs it takes, and a batched `step`. */
export class LoadedWorldModel {
  readonly provider: Device;
  private queue: Pending[] = [];
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  /** Results of the last batch are still being handed out (see runBatch). */
  private resuming = false;
  private lastBatch = Infinity;
  /** Spare buffers by byte length: batch inputs returned by the worker, released frame outputs. */
  private readonly pool = new Map<number, ArrayBuffer[]>();
  /** Values per chunk step of each input. */
  private readonly sizes: { context: number; actions: number; pose: number; noise: number; contextPoses: number; latent: number };

  constructor(
    private readonly runtime: WorldModelRuntime,
    readonly key: string,
    readonly dir: ModelDir,
    readonly inputs: WorldModelInputs,
    provider: Device,
    /** The model directory's fingerprint when it loaded (see fingerprintModelDir). */
    readonly fingerprint: string,
  ) {
    this.provider = provider;
    const m = dir.manifest;
    this.sizes = {
      context: m.context.frames * m.height * m.width * 3,
      actions: m.chunk * m.action.dim,
      pose: 8,
      noise: inputs.noise ? inputs.noise.reduce((a, b) => a * b, 1) : 0,
      contextPoses: inputs.contextPoses ? m.context.frames * 8 : 0,
      latent: inputs.latent ? inputs.latent.reduce((a, b) => a * b, 1) : 0,
    };
  }

  get manifest(): Manifest {
    return this.dir.manifest;
  }

  /** Queues one chunk step; it runs with whatever else arrives within the batch window. */
  step(req: ChunkRequest): Promise<ChunkResult> {
    const { context, actions, pose } = this.sizes;
    let contextSize = 0;
    if (Array.isArray(req.context)) for (const f of req.context as readonly Uint8Array[]) contextSize += f.length;
    else contextSize = (req.context as Uint8Array).length;
    const wrong =
      req.noise && req.noise.length !== this.sizes.noise
        ? `noise has ${req.noise.length} values, the model needs ${this.sizes.noise}`
        : contextSize !== context
          ? `context has ${contextSize} values, the model needs ${context}`
          : req.actions.length !== actions
            ? `actions has ${req.actions.length} values, the model needs ${actions}`
            : req.pose.length !== pose
              ? `pose has ${req.pose.length} values, the model needs ${pose}`
              : (req.contextPoses?.length ?? 0) !== this.sizes.contextPoses
                ? `contextPoses has ${req.contextPoses?.length ?? 0} values, the model needs ${this.sizes.contextPoses}`
                : (req.latent?.length ?? 0) !== this.sizes.latent
                  ? `latent has ${req.latent?.length ?? 0} values, the model needs ${this.sizes.latent}`
                  : null;
    if (wrong) return Promise.reject(new Error(`chunk step ${wrong}`));
    return new Promise((resolve, reject) => {
      this.queue.push({ req, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.running) return;
    // Everyone from the last batch is back (or the batch is full): no reason to wait for the window.
    if (this.queue.length >= Math.min(this.runtime.maxBatch, this.lastBatch)) {
      this.flush();
      return;
    }
    // The window opens once every session of the last batch has its result: the sessions still
    // waiting for theirs cannot have come back yet, and a window that opened earlier split every
    // batch of 32 into two of about 16 (twice the runs, each paying the models' fixed cost).
    if (this.resuming) return;
    this.timer ??= setTimeout(() => this.flush(), this.runtime.batchWindowMs);
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.running || this.queue.length === 0) return;
    const batch = this.queue.splice(0, this.runtime.maxBatch);
    this.lastBatch = batch.length;
    this.running = true;
    this.runIsolated(batch)
      .catch((err: Error) => {
        for (const p of batch) p.reject(err);
      })
      .finally(() => {
        this.running = false;
        // Steps that queued during the run have waited long enough: run them now.
        if (this.queue.length > 0) this.flush();
      });
  }

  /**
   * Runs a batch; when onnxruntime refuses it (a runtime error in one session's inputs, say an index
   * out of range), runs its steps one by one, so only the sessions whose step fails on its own get
   * the error and the rest get their results. A worker that died fails everyone (no retry helps).
   */
  private async runIsolated(batch: Pending[]): Promise<void> {
    try {
      await this.runBatch(batch);
    } catch (err) {
      if (!(err instanceof WorkerRefusal)) throw err;
      if (batch.length === 1) throw new Error(`the world model ${this.manifest.name} failed on this session's chunk: ${err.message}`, { cause: err });
      this.runtime.logBatchRetry(this.manifest.name, batch.length, err.message);
      for (const p of batch) {
        await this.runBatch([p]).catch((e: Error) =>
          p.reject(
            e instanceof WorkerRefusal ? new Error(`the world model ${this.manifest.name} failed on this session's chunk: ${e.message}`, { cause: e }) : e,
          ),
        );
      }
    }
  }

  private async runBatch(batch: Pending[]): Promise<void> {
    const m = this.manifest;
    const B = batch.length;
    const sizes = this.sizes;
    const context = new Uint8Array(this.take(B * sizes.context));
    const actions = new Float32Array(this.take(B * sizes.actions * 4));
    const pose = new Float32Array(this.take(B * sizes.pose * 4));
    const noise = sizes.noise > 0 ? new Float32Array(this.take(B * sizes.noise * 4)) : null;
    const contextPoses = sizes.contextPoses > 0 ? new Float32Array(B * sizes.contextPoses) : null;
    const latent = sizes.latent > 0 ? new Float32Array(B * sizes.latent) : null;
    for (let i = 0; i < B; i++) {
      const req = batch[i]!.req;
      if (Array.isArray(req.context)) {
        let o = i * sizes.context;
        for (const f of req.context as readonly Uint8Array[]) {
          context.set(f, o);
          o += f.length;
        }
      } else context.set(req.context as Uint8Array, i * sizes.context);
      actions.set(req.actions, i * sizes.actions);
      pose.set(req.pose, i * sizes.pose);
      if (contextPoses && req.contextPoses) contextPoses.set(req.contextPoses, i * sizes.contextPoses);
      if (latent && req.latent) latent.set(req.latent, i * sizes.latent);
      // A step without noise for a model that takes some gets zeros.
      if (noise) {
        if (req.noise) noise.set(req.noise, i * sizes.noise);
        else noise.fill(0, i * sizes.noise, (i + 1) * sizes.noise);
      }
    }
    const msg: WorkerRequest = {
      id: 0,
      type: 'step',
      key: this.key,
      batch: B,
      chunk: m.chunk,
      height: m.height,
      width: m.width,
      contextFrames: m.context.frames,
      actionDim: m.action.dim,
      context,
      actions,
      pose,
      noise,
      noiseShape: this.inputs.noise ?? [],
      contextPoses,
      latent,
      latentShape: this.inputs.latent ?? [],
      out: this.pool.get(B * m.chunk * m.height * m.width * 3)?.pop() ?? null,
    };
    const transfer = [
      msg.context.buffer,
      msg.actions.buffer,
      msg.pose.buffer,
      ...(noise ? [noise.buffer] : []),
      ...(contextPoses ? [contextPoses.buffer] : []),
      ...(latent ? [latent.buffer] : []),
      ...(msg.out ? [msg.out] : []),
    ] as ArrayBuffer[];
    const res = await this.runtime.request(msg, transfer);
    if (res.type !== 'stepped') throw new Error(`worker answered ${res.type} to a step`);
    this.runtime.recordRun(B);
    this.give(res.spare);
    const frameLen = m.chunk * m.height * m.width * 3;
    let unreleased = B;
    const release = (): void => {
      if (--unreleased === 0) this.give(res.frames.buffer as ArrayBuffer);
    };
    // Sessions continue a few at a time, one event-loop turn per group: immediates queued together
    // all run in the same check phase, so resolving 32 sessions at once held the loop for their
    // whole bookkeeping (timers and other sockets waited behind it).
    const resolveFrom = (start: number): void => {
      const end = Math.min(B, start + RESOLVE_GROUP);
      for (let i = start; i < end; i++) {
        batch[i]!.resolve({
          frames: res.frames.subarray(i * frameLen, (i + 1) * frameLen),
          probs: res.probs.subarray(i * m.chunk, (i + 1) * m.chunk),
          poses: res.poses ? res.poses.subarray(i * m.chunk * 8, (i + 1) * m.chunk * 8) : null,
          latent: res.latent ? res.latent.slice(i * sizes.latent, (i + 1) * sizes.latent) : null,
          release: once(release),
        });
      }
      if (end < B) setImmediate(resolveFrom, end);
      else {
        this.resuming = false;
        // The sessions resumed above queue their next steps in this turn's microtasks; open the
        // window (or run) after those.
        setImmediate(() => {
          if (this.queue.length > 0) this.schedule();
        });
      }
    };
    this.resuming = true;
    setImmediate(resolveFrom, 0);
  }

  private take(bytes: number): ArrayBuffer {
    return this.pool.get(bytes)?.pop() ?? new ArrayBuffer(bytes);
  }

  private give(buffer: ArrayBuffer): void {
    const list = this.pool.get(buffer.byteLength) ?? [];
    // Two per size covers the batch in flight and the one being filled; more would only hoard.
    if (list.length < 2) list.push(buffer);
    this.pool.set(buffer.byteLength, list);
  }
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (!done) fn();
    done = true;
  };
}

/** Sessions resumed per event-loop turn after a batch (see runBatch). */
const RESOLVE_GROUP = 4;

export class WorldModelRuntime {
  readonly batchWindowMs: number;
  readonly maxBatch: number;
  readonly device: Device;
  readonly deviceId: number;
  readonly stats: RuntimeStats = { runs: 0, steps: 0, maxBatchSeen: 0 };
  private readonly logger: Logger;
  private readonly threads: number;
  /** The worker thread, its requests and their answers (runtime/thread-link.ts); models load again on a fresh one. */
  private readonly link: ThreadLink<Outgoing>;
  private readonly models = new Map<string, Promise<LoadedWorldModel>>();
  private fallbackLogged = false;
  private closed = false;
  /** Loads so far: each gets its own key in the worker, so a reloaded directory never reuses old sessions. */
  private generation = 0;

  constructor(opts: RuntimeOptions = {}) {
    this.logger = opts.logger ?? pino({ level: 'silent' });
    const envDevice = process.env.GYMWIRE_EVAC_DEVICE;
    this.device = opts.device ?? (envDevice === 'cuda' ? 'cuda' : 'cpu');
    this.deviceId = opts.deviceId ?? Number(process.env.GYMWIRE_EVAC_DEVICE_ID ?? 0);
    this.batchWindowMs = opts.batchWindowMs ?? 2;
    this.maxBatch = Math.max(1, opts.maxBatch ?? 32);
    // One intra-op thread per core: the worker disables the pool's spinning (worker.ts), so the
    // extra threads only run while a large op is split, and the main thread, idle while a batch
    // runs, lends its core (batches of 32 ran ~12% faster on 2 cores; single steps are not split).
    this.threads = opts.threads ?? Math.max(1, Math.min(4, availableParallelism()));
    this.link = new ThreadLink<Outgoing>({
      name: 'the world-model worker',
      start: () => {
        assertOnnxRuntimeInstalled();
        return startModuleWorker(new URL('./worker.ts', import.meta.url), import.meta.url);
      },
      send: (worker, id, { msg, transfer }) => worker.postMessage({ ...msg, id }, transfer),
      // The worker's own refusals are answers too (`ok: false` in the body): request() tells them apart.
      read: (message) => {
        const res = message as WorkerResponse;
        return typeof res !== 'object' || res === null || typeof res.id !== 'number' ? 'garbage' : { id: res.id, outcome: { ok: true, value: res } };
      },
      deadlineMs: opts.callTimeoutMs ?? DEFAULT_WORLD_MODEL_TIMEOUT_MS,
      // The worker is gone (or hung and ended): what waited on it failed, and models load again on a fresh one.
      onLost: (reason) => {
        this.models.clear();
        if (!this.closed) this.logger.error({ reason }, 'world-model worker failed');
      },
    });
  }

  /**
   * Loads (once) and checks a model directory; later calls with the same directory and device share
   * the sessions while the directory is unchanged. A directory rebuilt in place (its manifest or a
   * listed file changed) is loaded and checked again, and later envs get the new model; envs made
   * before keep the model they were made with. Throws ModelContractError for a missing file, a bad
   * hash or a contract mismatch.
   */
  load(dir: string, opts: { device?: Device; confine?: ConfinePath } = {}): Promise<LoadedWorldModel> {
    if (this.closed) return Promise.reject(new Error('the world-model runtime is closed'));
    const device = opts.device ?? this.device;
    const key = `${dir}|${device}`;
    const cached = this.models.get(key);
    if (!cached) return this.startLoad(dir, device, key, opts.confine);
    return cached.then(async (model) => {
      const now = await fingerprintModelDir(dir, { confine: opts.confine });
      if (now === model.fingerprint) return model;
      // Another make may have noticed first and started the reload.
      const current = this.models.get(key);
      if (current && current !== cached) return current;
      this.logger.info({ model: model.manifest.name, dir }, 'world-model directory changed since it loaded; loading it again for new envs');
      return this.startLoad(dir, device, key, opts.confine);
    });
  }

  private startLoad(dir: string, device: Device, key: string, confine?: ConfinePath): Promise<LoadedWorldModel> {
    const model = this.loadUncached(dir, device, `${key}#${++this.generation}`, confine);
    this.models.set(key, model);
    // A failed load is not cached, so fixing the directory and retrying works.
    model.catch(() => {
      if (this.models.get(key) === model) this.models.delete(key);
    });
    return model;
  }

  /** @internal */
  logBatchRetry(model: string, batch: number, reason: string): void {
    this.logger.warn({ model, batch, reason }, 'a world-model batch failed; running its chunk steps one by one so only the failing sessions fail');
  }

  private async loadUncached(dir: string, device: Device, key: string, confine?: ConfinePath): Promise<LoadedWorldModel> {
    // Fingerprint first: a change made while the files are read is then seen by the next make.
    const fingerprint = await fingerprintModelDir(dir, { confine });
    const modelDir = await readModelDir(dir, { confine });
    const res = await this.request({ id: 0, type: 'load', key, files: modelDir.files, device, deviceId: this.deviceId, threads: this.threads }).catch(
      (err: unknown) => {
        // The worker answered: onnxruntime refused the files, which is the model's fault, not the server's.
        if (err instanceof WorkerRefusal) throw new ModelContractError(`the ONNX files do not load: ${err.message}`);
        throw err;
      },
    );
    if (res.type !== 'loaded') throw new Error(`worker answered ${res.type} to a load`);
    if (res.fallback !== null && !this.fallbackLogged) {
      this.fallbackLogged = true;
      this.logger.warn({ model: modelDir.manifest.name, reason: res.fallback }, 'CUDA execution provider unavailable; world models run on the CPU');
    }
    const inputs = checkSessions(modelDir.manifest, res.meta);
    this.logger.info({ model: modelDir.manifest.name, provider: res.provider }, 'world model loaded');
    return new LoadedWorldModel(this, key, modelDir, inputs, res.provider, fingerprint);
  }

  /** @internal */
  recordRun(batch: number): void {
    this.stats.runs++;
    this.stats.steps += batch;
    this.stats.maxBatchSeen = Math.max(this.stats.maxBatchSeen, batch);
  }

  /** @internal Sends one message to the worker and waits for its answer. */
  async request(msg: WorkerRequest, transfer: ArrayBuffer[] = []): Promise<WorkerResponse & { ok: true }> {
    if (this.closed) throw new Error('the world-model runtime is closed');
    const res = await this.link.request<WorkerResponse>({ msg, transfer }, { what: msg.type });
    if (!res.ok) throw new WorkerRefusal(res.error);
    return res;
  }

  /** Releases every session and ends the worker; pending steps fail. Safe to call twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.link.started) await this.request({ id: 0, type: 'close' }).catch(() => undefined);
    this.closed = true;
    await this.link.close('the world-model runtime is closed');
    this.models.clear();
  }
}

/**
 * onnxruntime-node is an optional peer dependency of the package (its install script downloads CUDA
 * libraries unless told not to), so a default install lacks it: say how to add it, before the
 * worker fails to import it.
 */
function assertOnnxRuntimeInstalled(): void {
  try {
    createRequire(import.meta.url).resolve('onnxruntime-node');
  } catch {
    throw new Error(
      'the EVAC world-model env needs onnxruntime-node, an optional peer dependency of gymwire: ' +
        'install it next to gymwire with `ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node` (the variable skips its CUDA download; leave it out for CUDA)',
    );
  }
}
