// The ONNX policy's inference thread. onnxruntime-node's run() blocks the thread it runs on, so the
// session lives here and the rollout's event loop keeps stepping envs meanwhile. Plain JS so that it
// loads under node, tsx and vitest alike. One session per worker, created once and reused
// (onnxruntime-node leaks memory when sessions are created and released repeatedly).
//
// Batches travel through shared memory, not messages: the caller writes the stacked inputs into
// `input`, bumps ctrl[REQ] and wakes this thread (a futex, Atomics.wait); the outputs come back in
// `output` with ctrl[RES] bumped and the caller's Atomics.waitAsync woken. A message round trip
// costs two structured clones and two event-loop wake-ups per batch, which for a small MLP is most
// of the inference time. Messages remain for setup, new buffers (the loop pauses) and close.
import { performance } from 'node:perf_hooks';
import { TextEncoder } from 'node:util';
import { parentPort, workerData } from 'node:worker_threads';
import * as ort from 'onnxruntime-node';

const { path, device, deviceId, threads } = workerData;

// ctrl: Int32Array over a SharedArrayBuffer; keep these in sync with onnx.ts. Two slots, so the
// caller can write batch k+1 while batch k runs and this thread goes straight on to it.
const REQ = 0; // last request number posted by the caller (request k uses slot k & 1)
const RES = 1; // last request number answered here
const slotBase = (slot) => 2 + 4 * slot;
const OP = 0; // per slot: what the request asks: RUN, PAUSE (leave the loop for a message) or CLOSE
const STATUS = 1; // per slot: OK, ERROR (message in the slot's output) or TOO_SMALL (bytes needed in NEED)
const ROWS = 2; // per slot: batch size
const NEED = 3;
const OP_RUN = 0,
  OP_PAUSE = 1,
  OP_CLOSE = 2;
const OK = 0,
  ERROR = 1,
  TOO_SMALL = 2;
// Output header: per output [typeCode, byteOffset, byteLength, ndims, d0..d3] Int32s, then data.
const HEADER_INTS = 8;
const TYPES = ['float32', 'float64', 'int64', 'int32', 'uint8', 'int8', 'int16', 'uint16', 'bool'];

async function create() {
  const base = { intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all' };
  if (device === 'cuda') {
    try {
      const session = await ort.InferenceSession.create(path, { ...base, executionProviders: [{ name: 'cuda', deviceId }] });
      return { session, provider: 'cuda', fallback: null };
    } catch (err) {
      // No automatic fallback exists: asking for CUDA without its libraries throws at creation.
      const session = await ort.InferenceSession.create(path, { ...base, executionProviders: ['cpu'] });
      return { session, provider: 'cpu', fallback: String(err && err.message ? err.message : err) };
    }
  }
  const session = await ort.InferenceSession.create(path, { ...base, executionProviders: ['cpu'] });
  return { session, provider: 'cpu', fallback: null };
}

const meta = (list, names) =>
  names.map((name, i) => {
    const m = list?.[i];
    return { name, type: m?.type ?? null, shape: m?.shape ? m.shape.map((d) => (typeof d === 'number' && d >= 0 ? d : String(d))) : null };
  });

const errorText = (err) => String(err && err.message ? err.message : err);

const ARRAYS = {
  int64: BigInt64Array,
  float32: Float32Array,
  float64: Float64Array,
  int32: Int32Array,
  uint8: Uint8Array,
  int8: Int8Array,
  int16: Int16Array,
  uint16: Uint16Array,
};

/**
 * Median microseconds of one run on a batch of `rows` zeros, or null when an input has a symbolic
 * dimension past the batch one or a type this cannot fill. The caller decides from it whether the
 * model is cheap enough to run on its own thread.
 */
async function probe(rows) {
  const feeds = {};
  const inputs = meta(session.inputMetadata, session.inputNames);
  for (const input of inputs) {
    const Ctor = ARRAYS[input.type ?? 'float32'];
    const dims = input.shape?.slice(1);
    if (!Ctor || !dims || dims.some((d) => typeof d !== 'number')) return null;
    feeds[input.name] = new ort.Tensor(input.type ?? 'float32', new Ctor(rows * dims.reduce((a, b) => a * b, 1)), [rows, ...dims]);
  }
  // Runs for at most ~100 ms, so a heavy model does not hold up loading (it is measured once, cold).
  const times = [];
  const start = performance.now();
  for (let i = 0; i < 40; i++) {
    const t0 = performance.now();
    await session.run(feeds);
    times.push((performance.now() - t0) * 1000);
    if (performance.now() - start > 100) break;
  }
  const warm = times.length > 10 ? times.slice(10) : times.slice(-1);
  warm.sort((a, b) => a - b);
  return warm[warm.length >> 1];
}

let session = null;
try {
  const made = await create();
  session = made.session;
  let probeUs = null;
  if (workerData.probeRows > 0 && made.provider === 'cpu') {
    try {
      probeUs = await probe(workerData.probeRows);
    } catch {
      probeUs = null;
    }
  }
  parentPort.postMessage({
    type: 'ready',
    provider: made.provider,
    fallback: made.fallback,
    probeUs,
    inputs: meta(session.inputMetadata, session.inputNames),
    outputs: meta(session.outputMetadata, session.outputNames),
  });
} catch (err) {
  parentPort.postMessage({ type: 'failed', message: errorText(err) });
}

/** Runs one batch from shared memory and writes the answer back; never throws. */
async function answer(shared, slot) {
  const { ctrl, feeds } = shared;
  const base = slotBase(slot);
  const rows = ctrl[base + ROWS];
  const inAt = slot * shared.inStride;
  const outAt = slot * shared.outStride;
  const output = shared.output;
  try {
    const named = {};
    for (const f of feeds) {
      // ORT's binding wants ordinary memory: copy the rows out of the shared buffer.
      const view = new ARRAYS[f.type](shared.input, inAt + f.byteOffset, rows * f.per);
      named[f.input] = new ort.Tensor(f.type, view.slice(), [rows, ...f.shape]);
    }
    const result = await session.run(named);
    const names = session.outputNames;
    const header = new Int32Array(output, outAt, names.length * HEADER_INTS);
    let offset = Math.ceil((names.length * HEADER_INTS * 4) / 8) * 8;
    const placed = names.map((name) => {
      const t = result[name];
      if (t.dims.length > 4) throw new Error(`model output '${name}' has ${t.dims.length} dimensions; the ONNX policy reads at most 4`);
      const bytes = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
      const at = offset;
      offset += Math.ceil(bytes.byteLength / 8) * 8;
      return { t, bytes, at };
    });
    if (offset > shared.outStride) {
      ctrl[base + NEED] = offset;
      ctrl[base + STATUS] = TOO_SMALL;
      return;
    }
    const out = new Uint8Array(output, outAt, shared.outStride);
    placed.forEach(({ t, bytes, at }, i) => {
      out.set(bytes, at);
      const h = i * HEADER_INTS;
      header[h] = TYPES.indexOf(t.type);
      header[h + 1] = at;
      header[h + 2] = bytes.byteLength;
      header[h + 3] = t.dims.length;
      for (let d = 0; d < 4; d++) header[h + 4 + d] = t.dims[d] ?? 0;
    });
    ctrl[base + STATUS] = OK;
  } catch (err) {
    const text = new TextEncoder().encode(errorText(err)).subarray(0, Math.max(0, shared.outStride - 4));
    new DataView(output, outAt).setInt32(0, text.byteLength, true);
    new Uint8Array(output, outAt + 4).set(text);
    ctrl[base + STATUS] = ERROR;
  }
}

/** Serves batches in order until the caller pauses (new buffers follow as a message) or closes. */
async function serve(shared) {
  const { ctrl } = shared;
  // The request number when the buffers were sent: requests may already be waiting.
  let served = shared.seq;
  for (;;) {
    Atomics.wait(ctrl, REQ, served);
    const seq = (served + 1) | 0;
    const base = slotBase(seq & 1);
    const op = ctrl[base + OP];
    if (op === OP_RUN) await answer(shared, seq & 1);
    else ctrl[base + STATUS] = OK;
    served = seq;
    Atomics.store(ctrl, RES, seq);
    Atomics.notify(ctrl, RES);
    if (op === OP_CLOSE) {
      await session?.release();
      parentPort.close();
      return;
    }
    if (op === OP_PAUSE) return;
  }
}

parentPort.on('message', async (msg) => {
  if (msg.type === 'close') {
    await session?.release();
    parentPort.close();
    return;
  }
  if (msg.type === 'shared') {
    await serve({ ...msg, ctrl: new Int32Array(msg.ctrl) });
  }
});
