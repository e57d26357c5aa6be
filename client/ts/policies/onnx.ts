/**
 * An ONNX policy on onnxruntime-node. The model runs in a worker thread (ORT's `run` blocks the
 * thread it is called on), on one session created at load and reused for every batch. Observations
 * of all sessions in a call are stacked into one batch. A model so small that a batch of 64 runs in
 * less time than a trip to the worker and back costs (`thread: 'auto'`, the default, times it at
 * load) runs on the caller's thread instead: blocking it for those microseconds costs less than the
 * hop's two wake-ups and keeps the cores for the envs and the server.
 *
 * The model contract (docs/policies.md; the Python SDK's `OnnxPolicy` follows the same one):
 * - Inputs by name, `[N, ...]`: a Box observation feeds the model's single input; a Dict feeds each
 *   input from the observation key of the same name, or from the key `inputs` maps it to
 *   (`{ route_command: 'command' }`; nested keys as `rgb/CAM_FRONT`). Box leaves take a float input
 *   or their own dtype; Discrete leaves (a navigation command) an int64, int32 or float input of
 *   shape `[N]` or `[N, 1]`, holding the value itself.
 * - Outputs by name: `logits [N, n]` for a Discrete action space (sampled with the seeded
 *   generator, or argmax with `greedy`; log-probs from the log-softmax); for a Box one, `action
 *   [N, ...]`, or `mean [N, ...]` with `log_std` (`[N, ...]` or state-independent `[...]`), sampled
 *   here from the seeded generator (the mean with `greedy`), clipped to the bounds, log-prob of the
 *   sample; optionally `value [N]`/`[N, 1]` and `log_prob [N]`. Every other output is an extra,
 *   one row per observation.
 * - The batch dimension is symbolic, or one fixed size on every input: then batches run in chunks
 *   of that size (the last padded). `load` refuses inputs that disagree, before any session opens.
 * `check` compares the rest with the env's spaces before the rollout starts. `device: 'cuda'` uses
 * the CUDA provider when its libraries load and otherwise falls back to CPU with a warning;
 * `provider` says which one runs.
 *
 * @example
 * const policy = await OnnxPolicy.load('cartpole-mlp.onnx', { device: 'cpu' });
 * policy.check({ observationSpace, actionSpace });
 * const { actions, logProbs, values } = await policy.act(observations, { sessions });
 * await policy.close();
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

import type { InferenceSession, Tensor as OrtTensor } from 'onnxruntime-node';

import { Random } from '../../../runtime/random.ts';
import { spaceToString } from '../../../protocol/spaces.ts';
import type { BoxSpace, Space } from '../../../protocol/spaces.ts';
import { Tensor } from '../../../protocol/tensor.ts';
import type { DType } from '../../../protocol/tensor.ts';
import { PolicyMismatchError } from '../policy.ts';
import type { ActContext, Policy, PolicyOutput, PolicySpaces } from '../policy.ts';

export interface OnnxPolicyOptions {
  /** 'cpu' (default) or 'cuda' (falls back to CPU, logged once, when CUDA cannot be loaded). */
  device?: 'cpu' | 'cuda';
  deviceId?: number;
  /** ORT intra-op threads (default 1: the worker is already off the main thread). */
  threads?: number;
  /**
   * Where inference runs: 'worker' (a worker thread), 'main' (the caller's thread; CPU only) or
   * 'auto' (default): the caller's thread when the CPU provider runs a batch of 64 in under
   * {@link INLINE_BELOW_US} µs at load, else the worker.
   */
  thread?: 'auto' | 'worker' | 'main';
  /** Argmax instead of sampling for Discrete actions. */
  greedy?: boolean;
  /** Seed of the action sampler. */
  seed?: number;
  /** Model input name -> observation key (`a/b` for a nested Dict), for inputs not named after their key. */
  inputs?: Record<string, string>;
  /** Where the CUDA fallback is reported (a pino logger fits). */
  logger?: { warn(obj: object, msg: string): void };
}

export interface OnnxValueMeta {
  name: string;
  type: string | null;
  /** Numbers for fixed dims, strings for symbolic ones; null when ORT does not say. */
  shape: (number | string)[] | null;
}

interface WorkerTensor {
  type: string;
  dims: number[];
  data: ArrayLike<number | bigint>;
}

type WorkerMessage =
  | { type: 'ready'; provider: string; fallback: string | null; probeUs: number | null; inputs: OnnxValueMeta[]; outputs: OnnxValueMeta[] }
  | { type: 'failed'; message: string };

/**
 * `thread: 'auto'` runs a model on the caller's thread when a batch of {@link PROBE_ROWS} takes less
 * than this. A trip to the worker and back (Atomics.notify, the worker's wake-up, its notify and the
 * caller's wake-up) measured 30-45 µs of latency on a 2-core machine, with CPU spent on both
 * threads; a 4-64-2 MLP runs a batch of 64 in about 15 µs.
 */
export const INLINE_BELOW_US = 50;
const PROBE_ROWS = 64;

/** The session when the model runs on the caller's thread. */
interface Inline {
  session: InferenceSession;
  Tensor: typeof OrtTensor;
}

/** Node 20 has Atomics.waitAsync; TypeScript's ES2023 lib does not declare it yet. */
interface AtomicsWaitAsync {
  waitAsync(array: Int32Array, index: number, value: number): { async: false; value: string } | { async: true; value: Promise<string> };
}

// The shared control block and output header; keep in sync with onnx-worker.mjs.
// ctrl: request number posted, request number answered, then per slot (request k uses slot k & 1):
// operation, status, batch rows, bytes needed.
const [REQ, RES] = [0, 1] as const;
const slotBase = (slot: number) => 2 + 4 * slot;
const [OP, STATUS, ROWS, NEED] = [0, 1, 2, 3] as const;
const [OP_RUN, OP_PAUSE, OP_CLOSE] = [0, 1, 2] as const;
const [ERROR, TOO_SMALL] = [1, 2] as const;
const HEADER_INTS = 8;
const OUT_TYPES = ['float32', 'float64', 'int64', 'int32', 'uint8', 'int8', 'int16', 'uint16', 'bool'];
type ArrayCtor = new (buffer: ArrayBuffer, byteOffset: number, length: number) => ArrayLike<number | bigint> & { buffer: ArrayBufferLike };
const OUT_ARRAYS: Partial<Record<string, ArrayCtor & { BYTES_PER_ELEMENT: number }>> = {
  float32: Float32Array,
  float64: Float64Array,
  int64: BigInt64Array,
  int32: Int32Array,
  uint8: Uint8Array,
  int8: Int8Array,
  int16: Int16Array,
  uint16: Uint16Array,
  bool: Uint8Array,
};

const FLOAT_INPUTS = new Set(['float32', 'float64']);
const DISCRETE_INPUTS = new Set(['int64', 'int32', 'float32', 'float64']);
/** Outputs the contract reads; every other output is an extra. */
const KNOWN_OUTPUTS = new Set(['logits', 'action', 'mean', 'log_std', 'value', 'log_prob']);
const LOG_SQRT_2PI = 0.5 * Math.log(2 * Math.PI);
type TypedRow = { [i: number]: number | bigint };
const TYPED: Partial<Record<string, (new (buffer: ArrayBufferLike, byteOffset: number, length: number) => TypedRow) & { BYTES_PER_ELEMENT: number }>> = {
  int64: BigInt64Array,
  float32: Float32Array,
  float64: Float64Array,
  uint8: Uint8Array,
  int8: Int8Array,
  int16: Int16Array,
  uint16: Uint16Array,
  int32: Int32Array,
};

/** The feed plan: which observation leaf fills which model input, with what element type. */
interface Feed {
  input: string;
  /** Path of keys into a Dict observation; empty for a Box observation. */
  key: readonly string[];
  type: string;
  shape: readonly number[];
  /** A Discrete leaf: a number per observation rather than a tensor. */
  scalar: boolean;
}

export class OnnxPolicy implements Policy {
  readonly name: string;
  private readonly ctrl = new Int32Array(new SharedArrayBuffer(16 * 4));
  private input: SharedArrayBuffer | null = null;
  private output: SharedArrayBuffer | null = null;
  /** Rows each slot holds, and the slots' byte strides. */
  private capacity = 0;
  private inStride = 0;
  private outStride = 0;
  private outputHint = 0;
  private sharing = false;
  /** Last request number posted; batches are posted one after another through `posting` (on the caller's thread: the last run asked for). */
  private posted = 0;
  private posting: Promise<unknown> = Promise.resolve();
  /** Per slot: settles once the answer in it has been read, so the slot may be written again. */
  private readonly read: Promise<unknown>[] = [Promise.resolve(), Promise.resolve()];
  private waiters = 0;
  private readonly dead = new Set<(err: Error) => void>();
  private feeds: Feed[] | null = null;
  private actionKind: { kind: 'discrete'; n: number; start: number } | { kind: 'box'; space: BoxSpace } | { kind: 'gaussian'; space: BoxSpace } | null = null;
  /** The model's fixed batch size, or null when its batch dimension is symbolic. */
  readonly fixedBatch: number | null;
  private readonly rng: Random;
  private closed = false;

  private constructor(
    /** Null when the model runs on the caller's thread. */
    private readonly worker: Worker | null,
    private readonly inline: Inline | null,
    readonly path: string,
    /** The execution provider in use: 'cpu' or 'cuda'. */
    readonly provider: string,
    readonly inputs: readonly OnnxValueMeta[],
    readonly outputs: readonly OnnxValueMeta[],
    private readonly opts: OnnxPolicyOptions,
    /** Median µs of a batch of 64 measured at load (null: not measured). */
    readonly probeUs: number | null,
  ) {
    this.name = `onnx:${path.split('/').pop()}`;
    this.rng = new Random(opts.seed ?? 0);
    this.fixedBatch = batchDimension(path, inputs, outputs);
    worker?.on('error', (err) => this.failAll(err));
    worker?.on('exit', (code) => this.failAll(new Error(`the ONNX worker exited (${code})`)));
    worker?.unref();
  }

  /** The device inference actually runs on ('cpu' or 'cuda'): the provider ORT created the session with. */
  get device(): string {
    return this.provider;
  }

  /** Where inference runs: 'worker' or 'main' (the caller's thread). */
  get thread(): 'worker' | 'main' {
    return this.inline ? 'main' : 'worker';
  }

  /**
   * Loads the model in a fresh worker thread (which also times it, for `thread: 'auto'`) and, when
   * it is to run on the caller's thread, again here; throws when ORT cannot load it.
   */
  static async load(path: string, opts: OnnxPolicyOptions = {}): Promise<OnnxPolicy> {
    const thread = opts.thread ?? 'auto';
    assertOnnxRuntimeInstalled();
    const worker = new Worker(new URL('./onnx-worker.mjs', import.meta.url), {
      workerData: {
        path,
        device: opts.device ?? 'cpu',
        deviceId: opts.deviceId ?? 0,
        threads: opts.threads ?? 1,
        probeRows: thread === 'auto' ? PROBE_ROWS : 0,
      },
    });
    const ready = await new Promise<WorkerMessage>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    if (ready.type !== 'ready') {
      await worker.terminate();
      throw new Error(`cannot load ONNX model ${path}: ${ready.type === 'failed' ? ready.message : 'unexpected worker reply'}`);
    }
    try {
      batchDimension(path, ready.inputs, ready.outputs);
    } catch (err) {
      worker.postMessage({ type: 'close' });
      await worker.terminate();
      throw err;
    }
    if (ready.fallback !== null) {
      opts.logger?.warn({ model: path, reason: ready.fallback }, 'CUDA execution provider unavailable; running the ONNX policy on CPU');
    }
    const inline = ready.provider === 'cpu' && (thread === 'main' || (thread === 'auto' && ready.probeUs !== null && ready.probeUs < INLINE_BELOW_US));
    if (!inline) return new OnnxPolicy(worker, null, path, ready.provider, ready.inputs, ready.outputs, opts, ready.probeUs);
    // The worker releases its session before it exits (ORT leaks sessions it does not release).
    const exited = new Promise((r) => worker.once('exit', r));
    worker.postMessage({ type: 'close' });
    await Promise.race([exited, new Promise((r) => setTimeout(r, 2000).unref())]);
    await worker.terminate();
    const ort = await import('onnxruntime-node');
    const session = await ort.InferenceSession.create(path, {
      intraOpNumThreads: opts.threads ?? 1,
      interOpNumThreads: 1,
      graphOptimizationLevel: 'all',
      executionProviders: ['cpu'],
    });
    return new OnnxPolicy(null, { session, Tensor: ort.Tensor }, path, ready.provider, ready.inputs, ready.outputs, opts, ready.probeUs);
  }

  /** Matches the model's inputs and outputs with the env's spaces; throws naming the first mismatch. */
  check(spaces: PolicySpaces): void {
    this.feeds = this.planFeeds(spaces.observationSpace);
    this.actionKind = this.planActions(spaces.actionSpace);
  }

  async act(observations: readonly unknown[], _ctx?: ActContext): Promise<PolicyOutput> {
    const feeds = this.feeds;
    const action = this.actionKind;
    if (!feeds || !action) throw new PolicyMismatchError(`${this.name}: act() called before check()`);
    const b = this.fixedBatch;
    if (b === null || observations.length === b) return this.decode(await this.infer(observations, feeds), observations.length, action);
    // A fixed-batch model: chunks of b rows, the last one padded with copies of its last row.
    const chunks: Promise<Record<string, WorkerTensor>>[] = [];
    for (let at = 0; at < observations.length; at += b) {
      const rows = observations.slice(at, at + b);
      while (rows.length < b) rows.push(rows[rows.length - 1]);
      chunks.push(this.infer(rows, feeds));
    }
    const decoded: PolicyOutput[] = [];
    for (const [i, chunk] of chunks.entries()) decoded.push(this.decode(await chunk, Math.min(b, observations.length - i * b), action));
    return concatOutputs(decoded);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.inline) {
      // Runs already asked for finish first (they run in order, so the last one is the one to wait for).
      await this.posting;
      await this.inline.session.release();
      return;
    }
    const worker = this.worker;
    if (!worker) return;
    const exited = new Promise((r) => worker.once('exit', r));
    // Keep the process alive until the worker has released its session and exited.
    worker.ref();
    const bounded = (p: Promise<unknown>) => Promise.race([p, new Promise((r) => setTimeout(r, 2000).unref())]);
    await bounded(Promise.all([this.posting, ...this.read]));
    if (this.sharing) {
      // No answer to wait for: the worker exits.
      this.post(OP_CLOSE, 0);
    } else worker.postMessage({ type: 'close' });
    await bounded(exited);
    await worker.terminate();
  }

  // -------------------------------------------------------------------------------------------

  /**
   * Posts the batch (in call order) and reads its answer. Two slots: the next batch is written and
   * posted while this one runs, so the worker goes from one straight to the next.
   */
  private async infer(observations: readonly unknown[], feeds: Feed[]): Promise<Record<string, WorkerTensor>> {
    if (this.inline) return this.inferInline(this.inline, observations, feeds);
    const posted = this.posting.then(() => this.write(observations, feeds));
    this.posting = posted.catch(() => {});
    const { seq, done } = await posted;
    try {
      await this.answered(seq);
      const base = slotBase(seq & 1);
      const status = this.ctrl[base + STATUS];
      const outAt = (seq & 1) * this.outStride;
      if (status === TOO_SMALL) {
        // The outputs came out larger than their metadata let us expect: grow and ask again.
        this.outputHint = Math.max(this.outputHint, this.ctrl[base + NEED]!);
        done();
        return await this.infer(observations, feeds);
      }
      if (status === ERROR) {
        const len = new DataView(this.output!, outAt).getInt32(0, true);
        throw new Error(`${this.name}: inference failed: ${new TextDecoder().decode(new Uint8Array(this.output!, outAt + 4, len).slice())}`);
      }
      const header = new Int32Array(this.output!, outAt, this.outputs.length * HEADER_INTS);
      const result: Record<string, WorkerTensor> = {};
      this.outputs.forEach((o, i) => {
        const h = i * HEADER_INTS;
        const type = OUT_TYPES[header[h]!] ?? 'float32';
        const bytes = new Uint8Array(this.output!, outAt + header[h + 1]!, header[h + 2]!).slice();
        const Ctor = OUT_ARRAYS[type] ?? Float32Array;
        const data = new Ctor(bytes.buffer, 0, bytes.byteLength / Ctor.BYTES_PER_ELEMENT);
        result[o.name] = { type, dims: Array.from(header.subarray(h + 4, h + 4 + header[h + 3]!)), data };
      });
      return result;
    } finally {
      done();
    }
  }

  /** Runs the batch on this thread (ORT defers the run to a setImmediate, so calls keep their order). */
  private async inferInline(inline: Inline, observations: readonly unknown[], feeds: Feed[]): Promise<Record<string, WorkerTensor>> {
    if (this.closed) throw new Error(`${this.name} is closed`);
    const n = observations.length;
    const named: Record<string, OrtTensor> = {};
    for (const feed of feeds) {
      const per = feed.shape.reduce((a, b) => a * b, 1);
      const Ctor = TYPED[feed.type]!;
      const data = new Ctor(new ArrayBuffer(n * per * Ctor.BYTES_PER_ELEMENT), 0, n * per);
      this.stack(observations, feed, per, data);
      named[feed.input] = new inline.Tensor(feed.type as 'float32', data as unknown as Float32Array, [n, ...feed.shape]);
    }
    const running = inline.session.run(named);
    this.posting = running.catch(() => {});
    const out = await running;
    const result: Record<string, WorkerTensor> = {};
    for (const o of this.outputs) {
      const t = out[o.name];
      if (t) result[o.name] = { type: t.type, dims: [...t.dims], data: t.data as ArrayLike<number | bigint> };
    }
    return result;
  }

  /** Copies one feed of every observation into `out`, row after row. */
  private stack(observations: readonly unknown[], feed: Feed, per: number, out: TypedRow): void {
    const big = feed.type === 'int64';
    const where = feed.key.length ? ` '${feed.key.join('/')}'` : '';
    for (let i = 0; i < observations.length; i++) {
      let o: unknown = observations[i];
      for (const k of feed.key) o = (o as Record<string, unknown> | null | undefined)?.[k];
      if (feed.scalar) {
        const v = typeof o === 'bigint' ? Number(o) : o;
        if (typeof v !== 'number' || !Number.isInteger(v))
          throw new PolicyMismatchError(`${this.name}: observation${where} of session ${i} is not a Discrete value`);
        out[i] = big ? BigInt(v) : v;
        continue;
      }
      const t = o as Tensor;
      if (!(t instanceof Tensor) || t.size !== per) {
        throw new PolicyMismatchError(`${this.name}: observation${where} of session ${i} is not a tensor of ${per} elements`);
      }
      const src = t.data as ArrayLike<number | bigint>;
      for (let k = 0; k < per; k++) out[i * per + k] = big ? BigInt(src[k]!) : Number(src[k]);
    }
  }

  /** Waits for the batch's slot, writes the stacked observations into it and posts it. */
  private async write(observations: readonly unknown[], feeds: Feed[]): Promise<{ seq: number; done: () => void }> {
    if (this.closed) throw new Error(`${this.name} is closed`);
    const n = observations.length;
    await this.ensureBuffers(n, feeds);
    const seq = (this.posted + 1) | 0;
    const slot = seq & 1;
    await this.read[slot];
    let done = () => {};
    this.read[slot] = new Promise<void>((r) => (done = r));
    const inAt = slot * this.inStride;
    let offset = 0;
    for (const feed of feeds) {
      const per = feed.shape.reduce((a, b) => a * b, 1);
      const Ctor = TYPED[feed.type]!;
      const out = new Ctor(this.input!, inAt + offset, n * per);
      offset += Math.ceil((this.capacity * per * Ctor.BYTES_PER_ELEMENT) / 8) * 8;
      try {
        this.stack(observations, feed, per, out);
      } catch (err) {
        done();
        throw err;
      }
    }
    this.post(OP_RUN, n);
    return { seq, done };
  }

  /** Posts the next request number with its slot's operation and wakes the worker. */
  private post(op: number, rows: number): number {
    const seq = (this.posted + 1) | 0;
    const base = slotBase(seq & 1);
    this.ctrl[base + OP] = op;
    this.ctrl[base + ROWS] = rows;
    this.posted = seq;
    Atomics.store(this.ctrl, REQ, seq);
    Atomics.notify(this.ctrl, REQ);
    return seq;
  }

  /** Bytes a slot's outputs take for a batch of n, from the model's metadata (symbolic dims taken as n). */
  private outputBytes(n: number): number {
    let bytes = this.outputs.length * HEADER_INTS * 4 + 8;
    for (const o of this.outputs)
      bytes += Math.ceil(((o.shape ?? [n, 64]).reduce<number>((a, d) => a * (typeof d === 'number' ? Math.max(1, d) : n), 1) * 8) / 8) * 8 + 8;
    return Math.max(bytes, this.outputHint, 1024);
  }

  /**
   * Gives the worker larger shared buffers when a batch needs them: once every posted batch is
   * answered, the worker's loop pauses for the message carrying them. Called in posting order.
   */
  private async ensureBuffers(n: number, feeds: Feed[]): Promise<void> {
    if (this.input && n <= this.capacity && this.outputBytes(n) <= this.outStride) return;
    if (this.sharing) {
      await Promise.all(this.read);
      await this.answered(this.post(OP_PAUSE, 0));
    }
    this.capacity = Math.max(n * 2, this.capacity, 16);
    this.inStride = feeds.reduce((a, f) => a + Math.ceil((this.capacity * f.shape.reduce((x, y) => x * y, 1) * TYPED[f.type]!.BYTES_PER_ELEMENT) / 8) * 8, 0);
    this.outStride = Math.max(this.outStride, this.outputBytes(this.capacity));
    this.input = new SharedArrayBuffer(2 * this.inStride);
    this.output = new SharedArrayBuffer(2 * this.outStride);
    let offset = 0;
    const layout = feeds.map((f) => {
      const per = f.shape.reduce((a, b) => a * b, 1);
      const byteOffset = offset;
      offset += Math.ceil((this.capacity * per * TYPED[f.type]!.BYTES_PER_ELEMENT) / 8) * 8;
      return { input: f.input, type: f.type, shape: f.shape, per, byteOffset };
    });
    this.worker!.postMessage({
      type: 'shared',
      ctrl: this.ctrl.buffer,
      input: this.input,
      output: this.output,
      inStride: this.inStride,
      outStride: this.outStride,
      feeds: layout,
      seq: this.posted,
    });
    this.sharing = true;
  }

  /** Resolves once request `seq` is answered (rejects if the worker dies first). */
  private async answered(seq: number): Promise<void> {
    for (;;) {
      const res = Atomics.load(this.ctrl, RES);
      if (((res - seq) | 0) >= 0) return;
      const waited = (Atomics as unknown as AtomicsWaitAsync).waitAsync(this.ctrl, RES, res);
      if (!waited.async) continue;
      // A pending waitAsync does not keep the event loop alive; the worker's handle does, while we wait.
      if (this.waiters++ === 0) this.worker!.ref();
      let reject = (_: Error) => {};
      const died = new Promise<never>((_, r) => (reject = r));
      this.dead.add(reject);
      try {
        await Promise.race([waited.value, died]);
      } finally {
        this.dead.delete(reject);
        if (--this.waiters === 0) this.worker!.unref();
      }
    }
  }

  private failAll(err: Error): void {
    for (const reject of this.dead) reject(err);
    this.dead.clear();
    this.closed = true;
  }

  private planFeeds(space: Space): Feed[] {
    const mapping = this.opts.inputs ?? {};
    const inputNames = this.inputs.map((i) => i.name).join(', ');
    for (const name of Object.keys(mapping)) {
      if (!this.inputs.some((i) => i.name === name))
        throw new PolicyMismatchError(`the inputs option maps '${name}', which is not a model input (the model has: ${inputNames})`, { input: name });
    }
    const leaf = (input: OnnxValueMeta, key: string[], s: Space): Feed => {
      const where = `model input '${input.name}'${key.length ? ` (observation key '${key.join('/')}')` : ''}`;
      const type = input.type ?? 'float32';
      if (s.type === 'discrete') {
        if (!DISCRETE_INPUTS.has(type))
          throw new PolicyMismatchError(`${where} has element type ${type}; a Discrete observation feeds int64, int32 or float inputs`, { input: input.name });
        const dims = input.shape?.slice(1) ?? [1];
        if (dims.length > 1 || (dims.length === 1 && typeof dims[0] === 'number' && dims[0] !== 1)) {
          throw new PolicyMismatchError(`${where} has shape [${input.shape!.join(', ')}] but a Discrete observation is one value: [N] or [N, 1]`, {
            input: input.name,
            expected: ['N', 1],
            got: input.shape,
          });
        }
        return { input: input.name, key, type, shape: dims.length === 0 ? [] : [1], scalar: true };
      }
      if (s.type !== 'box')
        throw new PolicyMismatchError(`${where}: ONNX policies take Box and Discrete observations, the env gives ${spaceToString(s)}`, {
          input: input.name,
        });
      if (!TYPED[type]) throw new PolicyMismatchError(`${where} has element type ${type}, which the ONNX policy cannot feed`, { input: input.name });
      if (!FLOAT_INPUTS.has(type) && type !== s.dtype) {
        throw new PolicyMismatchError(`${where} expects ${type} but the observation is ${s.dtype}; only float inputs accept a conversion`, {
          input: input.name,
          expected: type,
          got: s.dtype,
        });
      }
      if (input.shape) {
        const dims = input.shape.slice(1);
        const fits = dims.length === s.shape.length && dims.every((d, i) => typeof d !== 'number' || d === s.shape[i]);
        if (!fits) {
          throw new PolicyMismatchError(
            `${where} has shape [${input.shape.join(', ')}] but the observation is [${s.shape.join(', ')}] (expected [N, ${s.shape.join(', ')}])`,
            { input: input.name, expected: input.shape, got: s.shape },
          );
        }
      }
      return { input: input.name, key, type, shape: s.shape, scalar: false };
    };
    if (space.type === 'dict') {
      return this.inputs.map((input) => {
        const key = (mapping[input.name] ?? input.name).split('/');
        let sub: Space | undefined = space;
        for (const k of key) sub = sub?.type === 'dict' ? sub.spaces[k] : undefined;
        if (!sub)
          throw new PolicyMismatchError(
            `model input '${input.name}' names no observation key${mapping[input.name] ? ` (mapped to '${mapping[input.name]}')` : ''}; the env has: ${Object.keys(space.spaces).join(', ')}; map inputs to keys with the inputs option`,
            { input: input.name },
          );
        return leaf(input, key, sub);
      });
    }
    if (this.inputs.length !== 1) {
      throw new PolicyMismatchError(`the model has ${this.inputs.length} inputs (${inputNames}) but the observation is one ${spaceToString(space)}`);
    }
    return [leaf(this.inputs[0]!, [], space)];
  }

  private planActions(space: Space): NonNullable<OnnxPolicy['actionKind']> {
    const out = (name: string) => this.outputs.find((o) => o.name === name);
    const names = this.outputs.map((o) => o.name).join(', ');
    if (space.type === 'discrete') {
      const logits = out('logits');
      if (!logits)
        throw new PolicyMismatchError(`a Discrete(${space.n}) action space needs a model output named 'logits' [N, ${space.n}]; the model has: ${names}`);
      const last = logits.shape?.[logits.shape.length - 1];
      if (typeof last === 'number' && last !== space.n) {
        throw new PolicyMismatchError(`model output 'logits' has ${last} actions but the action space is Discrete(${space.n})`, {
          expected: space.n,
          got: last,
        });
      }
      return { kind: 'discrete', n: space.n, start: space.start };
    }
    if (space.type === 'box') {
      const head = out('action') ?? out('mean');
      if (!head)
        throw new PolicyMismatchError(
          `a Box action space needs a model output named 'action' [N, ${space.shape.join(', ')}], or 'mean' with 'log_std'; the model has: ${names}`,
        );
      const dims = head.shape?.slice(1);
      if (dims && (dims.length !== space.shape.length || dims.some((d, i) => typeof d === 'number' && d !== space.shape[i]))) {
        throw new PolicyMismatchError(`model output '${head.name}' has shape [${head.shape!.join(', ')}] but the action space is [${space.shape.join(', ')}]`);
      }
      if (head.name === 'action') return { kind: 'box', space };
      const logStd = out('log_std');
      if (!logStd)
        throw new PolicyMismatchError(
          `model output 'mean' needs a 'log_std' output (state-independent [${space.shape.join(', ')}] or [N, ...]); the model has: ${names}`,
        );
      const per = space.shape.reduce((a, b) => a * b, 1);
      const size = logStd.shape?.reduce<number>((a, d) => a * (typeof d === 'number' ? d : 1), 1);
      if (size !== undefined && size !== per) {
        throw new PolicyMismatchError(`model output 'log_std' has shape [${logStd.shape!.join(', ')}]; it must hold ${per} values per row, like 'mean'`);
      }
      return { kind: 'gaussian', space };
    }
    throw new PolicyMismatchError(`ONNX policies produce Discrete or Box actions; the env wants ${spaceToString(space)}`);
  }

  private decode(outputs: Record<string, WorkerTensor>, n: number, action: NonNullable<OnnxPolicy['actionKind']>): PolicyOutput {
    const result: PolicyOutput = { actions: new Array<unknown>(n) };
    const value = outputs['value'];
    if (value) result.values = toFloat64(value.data, n);
    const given = outputs['log_prob'];
    if (action.kind === 'discrete') {
      const data = outputs['logits']!.data;
      const k = action.n;
      const logProbs = new Float64Array(n);
      const row = new Float64Array(k);
      for (let i = 0; i < n; i++) {
        let max = -Infinity;
        for (let c = 0; c < k; c++) max = Math.max(max, (row[c] = Number(data[i * k + c])));
        let sum = 0;
        for (let c = 0; c < k; c++) sum += Math.exp(row[c]! - max);
        const logZ = max + Math.log(sum);
        let a = 0;
        if (this.opts.greedy) {
          for (let c = 1; c < k; c++) if (row[c]! > row[a]!) a = c;
        } else {
          let u = this.rng.random();
          for (a = 0; a < k - 1; a++) {
            u -= Math.exp(row[a]! - logZ);
            if (u < 0) break;
          }
        }
        logProbs[i] = row[a]! - logZ;
        result.actions[i] = action.start + a;
      }
      result.logProbs = logProbs;
    } else if (action.kind === 'gaussian') {
      const mean = outputs['mean']!.data;
      const logStd = outputs['log_std']!.data;
      const per = action.space.shape.reduce((a, b) => a * b, 1);
      const shared = logStd.length === per;
      const low = action.space.low.toNumbers() as number[];
      const high = action.space.high.toNumbers() as number[];
      const logProbs = new Float64Array(n);
      for (let i = 0; i < n; i++) {
        const values = new Array<number>(per);
        let logProb = 0;
        for (let k = 0; k < per; k++) {
          const ls = Number(logStd[shared ? k : i * per + k]);
          const eps = this.opts.greedy ? 0 : this.rng.normal();
          logProb += -0.5 * eps * eps - ls - LOG_SQRT_2PI;
          // The env gets the sample clipped to the bounds; the log-prob is the unclipped sample's.
          values[k] = Math.min(high[k]!, Math.max(low[k]!, Number(mean[i * per + k]) + Math.exp(ls) * eps));
        }
        logProbs[i] = logProb;
        result.actions[i] = Tensor.from(action.space.dtype as DType, action.space.shape, values);
      }
      result.logProbs = logProbs;
    } else {
      const data = outputs['action']!.data;
      const per = action.space.shape.reduce((a, b) => a * b, 1);
      for (let i = 0; i < n; i++) {
        result.actions[i] = Tensor.from(
          action.space.dtype as DType,
          action.space.shape,
          Array.from({ length: per }, (_, k) => Number(data[i * per + k])),
        );
      }
    }
    if (given) result.logProbs = toFloat64(given.data, n);
    const extras = extraRows(outputs, n);
    if (extras) (result as WithExtras).extras = extras;
    return result;
  }
}

/** The first n elements as float64 (a [N] or [N, 1] output holds one per row). */
function toFloat64(data: ArrayLike<number | bigint>, n: number): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = Number(data[i]);
  return out;
}

/**
 * onnxruntime-node is an optional peer dependency of the package (its install script downloads CUDA
 * libraries unless told not to): say how to add it, before the worker fails to import it.
 */
function assertOnnxRuntimeInstalled(): void {
  try {
    createRequire(import.meta.url).resolve('onnxruntime-node');
  } catch {
    throw new Error(
      'ONNX policies need onnxruntime-node, an optional peer dependency of gymwire: ' +
        'install it next to gymwire with `ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node` (the variable skips its CUDA download; leave it out for CUDA)',
    );
  }
}

/**
 * The model's fixed batch size, or null when every input's batch dimension is symbolic; throws when
 * inputs disagree, or an output's fixed batch dimension differs from the inputs' (checked at load,
 * before any session is opened).
 */
function batchDimension(path: string, inputs: readonly OnnxValueMeta[], outputs: readonly OnnxValueMeta[]): number | null {
  const fixed = [...new Set(inputs.map((i) => i.shape?.[0]).filter((d): d is number => typeof d === 'number'))];
  const symbolic = inputs.filter((i) => !i.shape || typeof i.shape[0] !== 'number').map((i) => i.name);
  if (fixed.length > 1 || (fixed.length === 1 && symbolic.length > 0)) {
    throw new PolicyMismatchError(
      `ONNX model ${path}: its inputs disagree on the batch dimension (${inputs.map((i) => `${i.name} [${i.shape?.join(', ') ?? '?'}]`).join(', ')}); export it with one dynamic batch axis`,
    );
  }
  const batch = fixed[0] ?? null;
  if (batch !== null && batch < 1) throw new PolicyMismatchError(`ONNX model ${path}: batch dimension ${batch} is not a size`);
  for (const o of outputs) {
    const first = o.shape?.[0];
    if (!KNOWN_OUTPUTS.has(o.name) || o.name === 'log_std' || typeof first !== 'number' || first === batch) continue;
    throw new PolicyMismatchError(
      batch === null
        ? `ONNX model ${path}: output '${o.name}' has a fixed batch dimension ${first} but the inputs' is dynamic; export every output with the dynamic batch axis`
        : `ONNX model ${path}: output '${o.name}' has batch dimension ${first} but its inputs take ${batch}`,
    );
  }
  return batch;
}

/** PolicyOutput with its per-row extras (named outputs the contract does not read). */
type WithExtras = PolicyOutput & { extras?: Record<string, readonly (number | Tensor)[]> };

/** The outputs the contract does not read, one row per observation: a number for `[N]`, else a Tensor of the row's shape. */
function extraRows(outputs: Record<string, WorkerTensor>, n: number): Record<string, (number | Tensor)[]> | null {
  const names = Object.keys(outputs).filter((name) => !KNOWN_OUTPUTS.has(name));
  if (!names.length) return null;
  const extras: Record<string, (number | Tensor)[]> = {};
  for (const name of names) {
    const t = outputs[name]!;
    const shape = t.dims.slice(1);
    const per = shape.reduce((a, b) => a * b, 1);
    const dtype = t.type === 'float32' ? 'float32' : 'float64';
    extras[name] = Array.from({ length: n }, (_, i) =>
      shape.length === 0
        ? Number(t.data[i])
        : Tensor.from(
            dtype,
            shape,
            Array.from({ length: per }, (_, k) => Number(t.data[i * per + k])),
          ),
    );
  }
  return extras;
}

/** Joins the outputs of consecutive chunks of one batch. */
function concatOutputs(parts: PolicyOutput[]): PolicyOutput {
  const cat = (key: 'logProbs' | 'values') => (parts.every((p) => p[key]) ? Float64Array.from(parts.flatMap((p) => Array.from(p[key]!))) : undefined);
  const out: PolicyOutput = { actions: parts.flatMap((p) => p.actions) };
  const logProbs = cat('logProbs');
  const values = cat('values');
  if (logProbs) out.logProbs = logProbs;
  if (values) out.values = values;
  const first = (parts[0] as WithExtras | undefined)?.extras;
  if (first) (out as WithExtras).extras = Object.fromEntries(Object.keys(first).map((k) => [k, parts.flatMap((p) => (p as WithExtras).extras?.[k] ?? [])]));
  return out;
}
