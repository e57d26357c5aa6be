// The ONNX policy's inference thread. onnxruntime-node's run() blocks the thread it runs on, so the
// session lives here and the rollout's event loop keeps stepping envs meanwhile. Plain JS so that it
// loads under node, tsx and vitest alike. One session per worker, created once and reused
// (onnxruntime-node leaks memory when sessions are created and released repeatedly).
import { parentPort, workerData } from 'node:worker_threads';
import * as ort from 'onnxruntime-node';

const { path, device, deviceId, threads } = workerData;

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

let session = null;
try {
  const made = await create();
  session = made.session;
  parentPort.postMessage({
    type: 'ready',
    provider: made.provider,
    fallback: made.fallback,
    inputs: meta(session.inputMetadata, session.inputNames),
    outputs: meta(session.outputMetadata, session.outputNames),
  });
} catch (err) {
  parentPort.postMessage({ type: 'failed', message: String(err && err.message ? err.message : err) });
}

parentPort.on('message', async (msg) => {
  if (msg.type === 'close') {
    await session?.release();
    parentPort.close();
    return;
  }
  try {
    const feeds = {};
    for (const [name, t] of Object.entries(msg.feeds)) feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
    const result = await session.run(feeds);
    const outputs = {};
    const transfer = new Set();
    for (const [name, t] of Object.entries(result)) {
      outputs[name] = { type: t.type, dims: [...t.dims], data: t.data };
      if (t.data && t.data.buffer instanceof ArrayBuffer) transfer.add(t.data.buffer);
    }
    try {
      parentPort.postMessage({ type: 'result', id: msg.id, outputs }, [...transfer]);
    } catch {
      parentPort.postMessage({ type: 'result', id: msg.id, outputs });
    }
  } catch (err) {
    parentPort.postMessage({ type: 'error', id: msg.id, message: String(err && err.message ? err.message : err) });
  }
});
