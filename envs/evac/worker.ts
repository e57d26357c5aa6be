/**
 * The inference thread of a {@link WorldModelRuntime}: it owns every onnxruntime session of the
 * process (onnxruntime-node leaks when sessions are created and freed repeatedly, and its `run`
 * blocks whichever thread calls it, so neither may live on the main thread). Messages: `load`
 * creates a model's sessions once and reports their metadata; `step` runs adapter, world model and
 * reward for a whole batch; `close` releases everything.
 */
import { parentPort } from 'node:worker_threads';
import * as ort from 'onnxruntime-node';

import type { ModelMeta, SessionMeta } from './contract.ts';
import type { WorkerRequest, WorkerResponse } from './protocol.ts';

interface Sessions {
  world: ort.InferenceSession;
  reward: ort.InferenceSession;
  adapter: ort.InferenceSession | null;
  inputs: Set<string>;
}

const models = new Map<string, Sessions>();
const port = parentPort!;

function describe(session: ort.InferenceSession): SessionMeta {
  const conv = (list: readonly ort.InferenceSession.ValueMetadata[]) =>
    list.map((m) => (m.isTensor ? { name: m.name, type: m.type as string, shape: [...m.shape] } : { name: m.name, type: 'non-tensor', shape: [] }));
  return { inputs: conv(session.inputMetadata), outputs: conv(session.outputMetadata) };
}

async function create(path: string, options: ort.InferenceSession.SessionOptions): Promise<ort.InferenceSession> {
  return ort.InferenceSession.create(path, options);
}

async function load(msg: Extract<WorkerRequest, { type: 'load' }>): Promise<WorkerResponse> {
  const base: ort.InferenceSession.SessionOptions = { graphOptimizationLevel: 'all' };
  if (msg.threads > 0) base.intraOpNumThreads = msg.threads;
  // A spinning pool thread keeps its core busy for a while after every split op: with batches
  // arriving every few ms, that took the core from the event loop and made the tiny model 2-4x
  // slower on 2 cores. Parked threads cost a wake-up per split op and nothing between runs.
  base.extra = { session: { intra_op: { allow_spinning: '0' } } };
  let provider: 'cpu' | 'cuda' = 'cpu';
  let fallback: string | null = null;
  let options: ort.InferenceSession.SessionOptions = { ...base, executionProviders: ['cpu'] };
  if (msg.device === 'cuda') {
    const cuda: ort.InferenceSession.SessionOptions = { ...base, executionProviders: [{ name: 'cuda', deviceId: msg.deviceId }] };
    // The probe's failure is reported once through the runtime's logger; keep onnxruntime's own stderr quiet.
    const probe: ort.InferenceSession.SessionOptions = { ...cuda, logSeverityLevel: 4 };
    try {
      // Probe with the reward model: onnxruntime-node throws at session creation when the CUDA
      // provider libraries are not installed, and never falls back by itself.
      await (await create(msg.files.reward, probe)).release();
      options = cuda;
      provider = 'cuda';
    } catch (err) {
      fallback = (err as Error).message.split('\n')[0] ?? String(err);
    }
  }
  const world = await create(msg.files.world_model, options);
  const reward = await create(msg.files.reward, options);
  const adapter = msg.files.action_adapter ? await create(msg.files.action_adapter, options) : null;
  models.set(msg.key, { world, reward, adapter, inputs: new Set(world.inputNames) });
  const meta: ModelMeta = { world_model: describe(world), reward: describe(reward), action_adapter: adapter ? describe(adapter) : null };
  return { id: msg.id, ok: true, type: 'loaded', meta, provider, fallback };
}

async function step(msg: Extract<WorkerRequest, { type: 'step' }>): Promise<{ res: WorkerResponse; transfer: ArrayBuffer[] }> {
  const m = models.get(msg.key);
  if (!m) throw new Error(`model ${msg.key} is not loaded in this worker`);
  const { batch: B, chunk: C, height: H, width: W, contextFrames: T, actionDim: A } = msg;
  const actions = new ort.Tensor('float32', msg.actions, [B, C, A]);
  // Outputs go straight into buffers this thread owns, so they can be transferred to the main
  // thread (onnxruntime's own output buffers cannot be, and copying them cost ~1.4 ms per batch).
  const framesData = msg.out ? new Uint8Array(msg.out) : new Uint8Array(B * C * H * W * 3);
  const probData = new Float32Array(B * C);
  const posesData = m.adapter ? new Float32Array(B * C * 8) : null;
  let poses: ort.Tensor | null = null;
  if (m.adapter && posesData) {
    poses = new ort.Tensor('float32', posesData, [B, C, 8]);
    await m.adapter.run({ delta: actions, pose: new ort.Tensor('float32', msg.pose, [B, 8]) }, { poses });
  }
  const feeds: Record<string, ort.Tensor> = {
    context: new ort.Tensor('uint8', msg.context, [B, T, H, W, 3]),
    actions,
  };
  if (m.inputs.has('poses') && poses) feeds.poses = poses;
  if (m.inputs.has('noise') && msg.noise) feeds.noise = new ort.Tensor('float32', msg.noise, [B, ...msg.noiseShape]);
  if (m.inputs.has('context_poses') && msg.contextPoses) feeds.context_poses = new ort.Tensor('float32', msg.contextPoses, [B, T, 8]);
  const fetches: Record<string, ort.Tensor> = { frames: new ort.Tensor('uint8', framesData, [B, C, H, W, 3]) };
  const latentData = m.inputs.has('latent') && msg.latent ? new Float32Array(msg.latent.length) : null;
  if (latentData && msg.latent) {
    feeds.latent = new ort.Tensor('float32', msg.latent, [B, ...msg.latentShape]);
    fetches.next_latent = new ort.Tensor('float32', latentData, [B, ...msg.latentShape]);
  }
  await m.world.run(feeds, fetches);
  await m.reward.run({ frames: new ort.Tensor('uint8', framesData, [B * C, H, W, 3]) }, { prob: new ort.Tensor('float32', probData, [B * C, 1]) });
  // The context buffer goes back too, for the main thread's next batch.
  const spare = msg.context.buffer as ArrayBuffer;
  const res: WorkerResponse = { id: msg.id, ok: true, type: 'stepped', frames: framesData, probs: probData, poses: posesData, latent: latentData, spare };
  const transfer = [framesData.buffer, probData.buffer, ...(posesData ? [posesData.buffer] : []), ...(latentData ? [latentData.buffer] : []), spare];
  return { res, transfer };
}

async function closeAll(): Promise<void> {
  for (const m of models.values()) {
    await m.world.release();
    await m.reward.release();
    await m.adapter?.release();
  }
  models.clear();
}

port.on('message', (msg: WorkerRequest) => {
  void (async () => {
    try {
      if (msg.type === 'load') port.postMessage(await load(msg));
      else if (msg.type === 'step') {
        const { res, transfer } = await step(msg);
        port.postMessage(res, transfer);
      } else {
        await closeAll();
        port.postMessage({ id: msg.id, ok: true, type: 'closed' } satisfies WorkerResponse);
      }
    } catch (err) {
      port.postMessage({ id: msg.id, ok: false, error: (err as Error).message } satisfies WorkerResponse);
    }
  })();
});
