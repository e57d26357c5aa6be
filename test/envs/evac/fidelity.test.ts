/**
 * The EVAC env's edges and its RLinf-compatible options: non-finite model outputs, runtime failures
 * of one session inside a batch, the latent state and pose history carried between chunks, model
 * folders rebuilt in place, manifest checks, the CUDA-fallback warning through the server's logger,
 * and the make options that reproduce RLinf's EvacEnv (world_model_evac_env.py @bf41fc33c).
 */
import { cpSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';

import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';

import type { Tensor } from '../../../protocol/tensor.ts';
import { DataRoots } from '../../../envs/core/data-roots.ts';
import type { Env } from '../../../envs/core/env.ts';
import { InvalidActionError } from '../../../envs/core/env.ts';
import { Registry } from '../../../envs/core/registry.ts';
import { defaultRegistry } from '../../../envs/index.ts';
import { contextIndices, readModelDir, sha256 } from '../../../envs/evac/contract.ts';
import type { EvacObs } from '../../../envs/evac/env.ts';
import { EVAC_ENV_ID, registerEvac, tinyModelDir } from '../../../envs/evac/index.ts';
import { EpisodeDrawGroup, NumpyLegacyRandom } from '../../../envs/evac/numpy-draw.ts';
import { bilinearLikeTorch } from '../../../envs/evac/resize.ts';
import { scriptedChunk } from '../../../envs/evac/tiny/policy.ts';
import type { WorldModelRuntime } from '../../../envs/evac/runtime.ts';
import { evacOptions } from '../../../bin/commands/serve.ts';
import { resizeReference } from '../../../scripts/evac/resize-reference.ts';
import { chunkTensor } from './helpers.ts';
import { PROBE, writeProbeModel } from './probe-model.ts';

const root = realpathSync(mkdtempSync(join(tmpdir(), 'gymwire-evac-fidelity-')));
const probeDir = await writeProbeModel(join(root, 'probe'));
const runtimes: WorldModelRuntime[] = [];
afterAll(async () => {
  for (const r of runtimes) await r.close();
  rmSync(root, { recursive: true, force: true });
});

function logSink(): { logger: pino.Logger; lines: { level: number; msg: string; env?: string }[] } {
  const lines: { level: number; msg: string; env?: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as { level: number; msg: string });
      cb();
    },
  });
  return { logger: pino({ level: 'info' }, sink), lines };
}

/** A registry serving `root`, with batches of exactly `maxBatch` steps (the window is long). */
function registry(maxBatch: number, logger?: pino.Logger): Registry {
  const reg = new Registry({ dataRoots: new DataRoots([root]), logger });
  runtimes.push(registerEvac(reg, { maxBatch, batchWindowMs: 200, logger }));
  return reg;
}

/** A probe chunk whose first row is `first` (a[0], a[1], a[2], a[3]) and whose other rows are zero. */
function probeChunk(first: [number, number, number, number]): Tensor<'float32'> {
  const rows = Array.from({ length: PROBE.chunk }, (_, t) => (t === 0 ? [...first, 0, 0, 0] : [first[0], first[1], 0, 0, 0, 0, 0]));
  return chunkTensor(rows);
}

const pixel = (obs: unknown) => [...(obs as EvacObs).full_image.data.subarray(0, 3)];

async function probeEnvs(reg: Registry, n: number, kwargs: Record<string, unknown> = {}): Promise<Env[]> {
  const envs = await Promise.all(Array.from({ length: n }, () => reg.make(EVAC_ENV_ID, { model_dir: 'probe', ...kwargs })));
  await Promise.all(envs.map((env) => env.reset({ seed: 0 })));
  return envs;
}

describe('non-finite model outputs', () => {
  it('fail only the session whose output is NaN, naming the model file and the output', async () => {
    const reg = registry(4);
    const envs = await probeEnvs(reg, 4);
    const results = await Promise.allSettled([
      envs[0]!.step(probeChunk([-1, 0, 0, 0])), // red 0: reward sqrt(-0.01)
      envs[1]!.step(probeChunk([-0.5, -1, 0, 0])), // adapter sqrt(-0.5)
      envs[2]!.step(probeChunk([-0.5, 0, -1, 0])), // next_latent 0 * log(0)
      envs[3]!.step(probeChunk([-0.5, 0, 0, 0])),
    ]);
    const reason = (i: number) => (results[i] as PromiseRejectedResult).reason as Error;
    expect(reason(0).name).toBe('WorldModelOutputError');
    expect(reason(0).message).toMatch(/^reward\.onnx \(model probe\) returned NaN in output "prob"/);
    expect(reason(1).message).toMatch(/^action_adapter\.onnx \(model probe\) returned NaN in output "poses"/);
    expect(reason(2).message).toMatch(/^world_model\.onnx \(model probe\) returned NaN in output "next_latent"/);
    expect(results[3]!.status).toBe('fulfilled');
    // The failed step left the session as it was: the next good step starts from latent 0.
    const again = await envs[0]!.step(probeChunk([-0.5, 0, 0, 0]));
    expect(pixel(again.obs)).toEqual([30, 100, 7]);
  });
});

describe('a runtime failure inside a batch', () => {
  it('fails that session only; the others of the batch get their results', async () => {
    const { logger, lines } = logSink();
    const reg = registry(3, logger);
    const envs = await probeEnvs(reg, 3);
    const results = await Promise.allSettled([
      envs[0]!.step(probeChunk([-0.5, 0, 0, 0])),
      envs[1]!.step(probeChunk([-0.5, 0, 0, 1])), // indexes past the model's table: onnxruntime refuses the run
      envs[2]!.step(probeChunk([0, 0, 0, 0])),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(((results[1] as PromiseRejectedResult).reason as Error).message).toMatch(
      /^the world model probe failed on this session's chunk: .*out of data bounds/,
    );
    expect(pixel((results[0] as PromiseFulfilledResult<{ obs: unknown }>).value.obs)).toEqual([30, 100, 7]);
    expect(pixel((results[2] as PromiseFulfilledResult<{ obs: unknown }>).value.obs)).toEqual([60, 100, 7]);
    expect(lines.some((l) => l.level === 40 && /batch failed; running its chunk steps one by one/.test(l.msg))).toBe(true);
  });
});

describe('latent state and pose history between chunks', () => {
  it('carries next_latent into the next chunk, feeds the context frames’ poses, and restarts both at reset', async () => {
    const reg = registry(1);
    const [env] = await probeEnvs(reg, 1);
    const a = probeChunk([-0.5, 0, 0, 0]); // x moves by -0.05 per frame
    const seen: number[][] = [];
    for (let k = 0; k < 3; k++) seen.push(pixel((await env!.step(a)).obs));
    // red: 30 + 10 x latent; green: 100 + 100 x (sum of the 4 context poses' x).
    expect(seen).toEqual([
      [30, 100, 7],
      [40, 50, 7],
      [50, 0, 7],
    ]);
    const state = await env!.getState!();
    const next = pixel((await env!.step(a)).obs);
    await env!.setState!(state);
    expect(pixel((await env!.step(a)).obs)).toEqual(next);
    await env!.reset({ seed: 1 });
    expect(pixel((await env!.step(a)).obs)).toEqual([30, 100, 7]);
  });
});

describe('manifest checks', () => {
  function copy(name: string): string {
    const dir = join(root, name);
    cpSync(probeDir, dir, { recursive: true });
    return dir;
  }
  interface ManifestJson {
    action: { low: number[] };
    files: { world_model: { external_data?: { path: string; sha256: string }[] } };
  }
  const edit = (dir: string, change: (m: ManifestJson) => void) => {
    const path = join(dir, 'manifest.json');
    const m = JSON.parse(readFileSync(path, 'utf8')) as ManifestJson;
    change(m);
    writeFileSync(path, JSON.stringify(m));
  };

  it('refuses low above high, naming the dimension', async () => {
    const dir = copy('bounds');
    edit(dir, (m) => (m.action.low[2] = 2));
    await expect(readModelDir(dir)).rejects.toThrow(/action\.low\[2\] = 2 is above action\.high\[2\] = 1/);
  });

  it('hashes ONNX external data: an unlisted .onnx.data or a wrong hash refuses, a listed one loads', async () => {
    const dir = copy('external');
    const data = Buffer.from('weights');
    writeFileSync(join(dir, 'world_model.onnx.data'), data);
    await expect(readModelDir(dir)).rejects.toThrow(/external data .*world_model\.onnx\.data that manifest\.files\.world_model\.external_data does not list/);
    edit(dir, (m) => (m.files.world_model.external_data = [{ path: 'world_model.onnx.data', sha256: '0'.repeat(64) }]));
    await expect(readModelDir(dir)).rejects.toThrow(
      /external data of world_model \(.*world_model\.onnx\.data\) has sha256 [0-9a-f]{64}, the manifest says 0{64}/,
    );
    edit(dir, (m) => (m.files.world_model.external_data = [{ path: 'world_model.onnx.data', sha256: sha256(data) }]));
    await expect(readModelDir(dir)).resolves.toMatchObject({ manifest: { name: 'probe' } });
  });
});

describe('a model folder rebuilt in place', () => {
  it('is loaded again for envs made after the change; envs made before keep their model', async () => {
    const dir = join(root, 'rebuilt');
    cpSync(tinyModelDir(64), dir, { recursive: true });
    const reg = registry(8);
    const before = await reg.make(EVAC_ENV_ID, { model_dir: 'rebuilt' });
    expect(before.metadata.model).toBe('gymwire-tiny-tabletop-64');
    const path = join(dir, 'manifest.json');
    const manifest = JSON.parse(readFileSync(path, 'utf8')) as { name: string; reward: { threshold: number } };
    writeFileSync(path, JSON.stringify({ ...manifest, name: 'rebuilt-v2' }));
    const after = await reg.make(EVAC_ENV_ID, { model_dir: 'rebuilt' });
    expect(after.metadata.model).toBe('rebuilt-v2');
    await before.reset({ seed: 0 });
    await expect(before.step(chunkTensor(Array.from({ length: 8 }, () => [0, 0, 0, 0, 0, 0, -1])))).resolves.toBeDefined();
    // A rebuild that breaks the folder refuses the next make.
    writeFileSync(join(dir, 'reward.onnx'), Buffer.from('not a model'));
    await expect(reg.make(EVAC_ENV_ID, { model_dir: 'rebuilt' })).rejects.toThrow(/model_dir: the data there does not load/);
  });
});

describe('the CUDA fallback warning', () => {
  it('reaches the logger the server gives defaultRegistry', async () => {
    const { logger, lines } = logSink();
    const reg = defaultRegistry({ logger, evac: { device: 'cuda' } });
    try {
      const env = await reg.make(EVAC_ENV_ID);
      const warnings = lines.filter((l) => l.level === 40 && /CUDA execution provider unavailable/.test(l.msg));
      if (env.metadata.provider === 'cpu') {
        expect(warnings).toHaveLength(1);
        expect(warnings[0]!.env).toBe('evac');
      } else expect(warnings).toHaveLength(0);
    } finally {
      await reg.close();
    }
  });
});

describe('RLinf-compatible options', () => {
  it("context_indexing 'rlinf': k-1 frames at floor(n*i/(k-1)), then the latest", () => {
    expect(contextIndices('sparse', 4, 12, 'rlinf')).toEqual([0, 4, 8, 11]);
    expect(contextIndices('sparse', 4, 20, 'rlinf')).toEqual([0, 6, 13, 19]);
    expect(contextIndices('sparse', 4, 20, 'gymwire')).toEqual([0, 6, 12, 19]);
    expect(contextIndices('sparse', 4, 4, 'rlinf')).toEqual([0, 1, 2, 3]);
  });

  it("numpy's legacy choice without replacement, as numpy 2.4 draws it", () => {
    // np.random.seed(s); np.random.choice(n, size=k, replace=False), twice.
    const cases: [number, number, number, number[], number[]][] = [
      [0, 10, 4, [2, 8, 4, 9], [3, 5, 1, 2]],
      [1, 16, 8, [3, 13, 7, 2, 6, 10, 4, 1], [8, 3, 13, 9, 0, 6, 1, 7]],
      [12345, 100, 16, [69, 33, 86, 60, 20, 49, 63, 42, 88, 35, 28, 4, 78, 13, 51, 9], [27, 49, 96, 34, 50, 95, 82, 70, 92, 22, 9, 71, 80, 88, 20, 63]],
      [4294967295, 7, 7, [1, 5, 0, 6, 4, 2, 3], [3, 4, 5, 0, 1, 2, 6]],
      [7, 1000, 5, [778, 334, 271, 802, 216], [562, 11, 731, 106, 234]],
    ];
    for (const [seed, n, k, first, second] of cases) {
      const rng = new NumpyLegacyRandom(seed);
      expect(rng.choiceWithoutReplacement(n, k)).toEqual(first);
      expect(rng.choiceWithoutReplacement(n, k)).toEqual(second);
    }
    expect(() => new EpisodeDrawGroup(3, 4)).toThrow(/3 episodes; a draw of 4 distinct/);
  });

  it('episode_draw: the envs of one worker take distinct episodes, round after round, seeded as RLinf seeds', async () => {
    const reg = registry(8);
    const envs = await Promise.all([0, 1, 2, 3].map((rank) => reg.make(EVAC_ENV_ID, { episode_draw: { group: 'worker-a', rank, size: 4 } })));
    const draw = async (seed?: number) => Promise.all(envs.map(async (env) => (await env.reset({ seed })).info.episode_index));
    expect(await draw(0)).toEqual([1, 6, 8, 9]); // np.random.seed(0); choice(16, 4, replace=False)
    expect(await draw()).toEqual([2, 14, 12, 9]); // the next draw of the same stream
    expect(await draw(3)).toEqual([7, 13, 4, 1]);
    await expect(reg.make(EVAC_ENV_ID, { episode_draw: { group: 'g', rank: 0, size: 17 } })).rejects.toThrow(/above the reset dataset's 16 episodes/);
    await expect(reg.make(EVAC_ENV_ID, { episode_draw: { group: 'g', rank: 4, size: 4 } })).rejects.toThrow(/rank must be below size/);
  });

  it("reset_resize 'rlinf': PyTorch's bilinear (align_corners=False) and RLinf's truncation to uint8", async () => {
    // The example of torch.nn.Upsample(scale_factor=2, mode='bilinear') in PyTorch's documentation.
    const up = bilinearLikeTorch(Float32Array.from([1, 2, 3, 4]), 2, 2, 1, 4, 4);
    expect([...up]).toEqual([1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4]);
    const reg = registry(8);
    const sharpEnv = await reg.make(EVAC_ENV_ID, { resolution: 128 });
    const rlinfEnv = await reg.make(EVAC_ENV_ID, { resolution: 128, reset_resize: 'rlinf' });
    const a = (await sharpEnv.reset({ options: { episode_index: 0 } })).obs as EvacObs;
    const b = (await rlinfEnv.reset({ options: { episode_index: 0 } })).obs as EvacObs;
    // Same size, so no resize: RLinf's float round trip (x/255 -> [-1,1] -> *255, truncated) lowers some values by one.
    let lowered = 0;
    a.full_image.data.forEach((v, i) => {
      const w = b.full_image.data[i]!;
      expect(v - w === 0 || v - w === 1).toBe(true);
      if (v !== w) lowered++;
    });
    expect(lowered).toBeGreaterThan(0);
  });

  it('the PyTorch check’s reference bytes (test/gpu/evac_resize_check.py) are what resize.ts makes now', () => {
    const committed = JSON.parse(readFileSync(new URL('../../gpu/evac_resize_reference.json', import.meta.url), 'utf8')) as unknown;
    expect(committed).toEqual(resizeReference());
  });

  it('ignore_terminations: a success is reported, and the episode goes on to max_episode_steps', async () => {
    const reg = registry(8);
    const env = await reg.make(EVAC_ENV_ID, { ignore_terminations: true, max_episode_steps: 200 });
    let obs = (await env.reset({ seed: 0, options: { episode_index: 0 } })).obs as EvacObs;
    let successAt = -1;
    for (let k = 0; k < 25; k++) {
      const s = await env.step(chunkTensor(scriptedChunk(obs.full_image.data, obs.state.data, 64, 8)));
      obs = s.obs as EvacObs;
      expect(s.terminated).toBe(false);
      if (s.info.success && successAt < 0) {
        successAt = k;
        expect((s.info.terminations as Tensor<'bool'>).data[7]).toBe(1);
      }
      if (s.truncated) {
        expect(s.info.elapsed_steps).toBe(200);
        break;
      }
    }
    expect(successAt).toBeGreaterThanOrEqual(0);
  });

  it("out_of_range_actions: 'refuse' errs, 'clip' acts as the bound, 'pass' hands the value on", async () => {
    const reg = registry(8);
    const over = chunkTensor(Array.from({ length: 8 }, () => [1.5, 0, 0, 0, 0, 0, -1]));
    const atBound = chunkTensor(Array.from({ length: 8 }, () => [1, 0, 0, 0, 0, 0, -1]));
    const run = async (kwargs: Record<string, unknown>, action: Tensor<'float32'>) => {
      const env = await reg.make(EVAC_ENV_ID, kwargs);
      await env.reset({ seed: 0, options: { episode_index: 0 } });
      return (await env.step(action)).obs as EvacObs;
    };
    await expect(run({}, over)).rejects.toThrow(InvalidActionError);
    await expect(run({}, over)).rejects.toThrow(/out_of_range_actions/);
    const clipped = await run({ out_of_range_actions: 'clip' }, over);
    expect([...clipped.state.data]).toEqual([...(await run({}, atBound)).state.data]);
    const passed = await run({ out_of_range_actions: 'pass' }, over);
    expect(passed.state.data[0]).toBeGreaterThan(clipped.state.data[0]!);
  });
});

describe('serve flags', () => {
  it('parse into the runtime options, and the default model serves makes that name none', async () => {
    expect(evacOptions({ evacBatchSize: '32', evacBatchWindow: '2ms' })).toEqual({
      defaultModelDir: undefined,
      maxBatch: 32,
      batchWindowMs: 2,
      threads: undefined,
      device: undefined,
    });
    expect(evacOptions({ evacModelDir: probeDir, evacBatchSize: '4', evacBatchWindow: '1s', evacThreads: '2', evacDevice: 'cuda' })).toEqual({
      defaultModelDir: probeDir,
      maxBatch: 4,
      batchWindowMs: 1000,
      threads: 2,
      device: 'cuda',
    });
    expect(() => evacOptions({ evacBatchSize: '0', evacBatchWindow: '2ms' })).toThrow(/--evac-batch-size must be at least 1/);
    expect(() => evacOptions({ evacBatchSize: '1', evacBatchWindow: '2ms', evacDevice: 'tpu' })).toThrow(/--evac-device must be cpu or cuda/);
    const reg = defaultRegistry({ evac: evacOptions({ evacModelDir: probeDir, evacBatchSize: '4', evacBatchWindow: '2ms' }) });
    try {
      expect((await reg.make(EVAC_ENV_ID)).metadata.model).toBe('probe');
      expect((await reg.make(EVAC_ENV_ID, { resolution: 64 })).metadata.model).toBe('gymwire-tiny-tabletop-64');
    } finally {
      await reg.close();
    }
  });

  it('a default model that does not load is reported to the client without its path, and logged with it', async () => {
    const { logger, lines } = logSink();
    const missing = join(root, 'no-such-model');
    const reg = defaultRegistry({ logger, evac: { defaultModelDir: missing } });
    try {
      const err = (await reg.make(EVAC_ENV_ID).catch((e: unknown) => e)) as Error;
      expect(err.message).toBe("the server's default world model does not load; the server's log has the reason");
      expect(err.message).not.toContain(missing);
      expect(lines.some((l) => l.level === 50 && /--evac-model-dir/.test(l.msg))).toBe(true);
    } finally {
      await reg.close();
    }
  });
});
