import { cp, mkdtemp, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Manifest, ModelMeta } from '../../../envs/evac/contract.ts';
import { ModelContractError, checkSessions, contextIndices, readModelDir, sha256 } from '../../../envs/evac/contract.ts';
import { tinyModelDir } from '../../../envs/evac/index.ts';
import { WorldModelRuntime } from '../../../envs/evac/runtime.ts';
import { generateTiny } from '../../../scripts/evac/generate-tiny.ts';

let tmp: string;
const runtime = new WorldModelRuntime();

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'evac-contract-'));
});
afterAll(async () => {
  await runtime.close();
  await rm(tmp, { recursive: true, force: true });
});

async function copyTiny(name: string): Promise<string> {
  const dir = join(tmp, name);
  await cp(tinyModelDir(64), dir, { recursive: true });
  return dir;
}

async function editManifest(dir: string, edit: (m: Manifest) => void): Promise<void> {
  const path = join(dir, 'manifest.json');
  const m = JSON.parse(await readFile(path, 'utf8')) as Manifest;
  edit(m);
  await writeFile(path, JSON.stringify(m));
}

const meta = (): ModelMeta => ({
  world_model: {
    inputs: [
      { name: 'context', type: 'uint8', shape: ['B', 4, 64, 64, 3] },
      { name: 'actions', type: 'float32', shape: ['B', 8, 7] },
    ],
    outputs: [{ name: 'frames', type: 'uint8', shape: ['B', 8, 64, 64, 3] }],
  },
  reward: { inputs: [{ name: 'frames', type: 'uint8', shape: ['N', 64, 64, 3] }], outputs: [{ name: 'prob', type: 'float32', shape: ['N', 1] }] },
  action_adapter: null,
});

describe('model directory loading', () => {
  it('the bundled tiny models load and pass the contract', async () => {
    for (const size of [64, 128, 256] as const) {
      const model = await runtime.load(tinyModelDir(size));
      expect(model.manifest.height).toBe(size);
      expect(model.inputs).toEqual({ poses: true, noise: [8], contextPoses: false, latent: null });
    }
  });

  it('a missing file refuses to load and names it', async () => {
    const dir = await copyTiny('missing');
    await unlink(join(dir, 'reward.onnx'));
    await expect(readModelDir(dir)).rejects.toThrow(/model file reward is missing: .*reward\.onnx/);
    await expect(runtime.load(dir)).rejects.toThrow(ModelContractError);
  });

  it('a bad hash refuses to load and says which file', async () => {
    const dir = await copyTiny('hash');
    const path = join(dir, 'world_model.onnx');
    const bytes = await readFile(path);
    await writeFile(path, Buffer.concat([bytes, Buffer.from([0])]));
    await expect(readModelDir(dir)).rejects.toThrow(/model file world_model .* has sha256 [0-9a-f]{64}, the manifest says/);
  });

  it('a malformed manifest says which field', async () => {
    const dir = await copyTiny('schema');
    await editManifest(dir, (m) => {
      (m as { chunk: number }).chunk = 0;
    });
    await expect(readModelDir(dir)).rejects.toThrow(/manifest: chunk: /);
    await editManifest(dir, (m) => {
      m.chunk = 8;
      m.action.low = [-1];
    });
    await expect(readModelDir(dir)).rejects.toThrow(/action\.low has 1 values, action\.dim is 7/);
  });

  it('a manifest that disagrees with the ONNX sessions names the tensor and the expected shape', async () => {
    const dir = await copyTiny('mismatch');
    await editManifest(dir, (m) => {
      m.height = 128;
      m.width = 128;
    });
    await expect(runtime.load(dir)).rejects.toThrow(
      'world_model.onnx: input "context" has 64 at axis 2 (uint8 [B, 4, 64, 64, 3]); expected uint8 [batch, 4, 128, 128, 3]',
    );
    await editManifest(dir, (m) => {
      m.height = 64;
      m.width = 64;
      m.chunk = 4;
    });
    await expect(runtime.load(dir)).rejects.toThrow(/input "actions" has 8 at axis 1 .*expected float32 \[batch, 4, 7\]/);
  });
});

describe('checkSessions', () => {
  const manifest = (): Manifest => ({
    format: 'gymwire.world-model/v1',
    name: 'm',
    height: 64,
    width: 64,
    chunk: 8,
    context: { frames: 4, selection: 'last' },
    action: { dim: 7, low: Array(7).fill(-1), high: Array(7).fill(1) },
    reward: { threshold: 0.5, coefficient: 5, relative: true },
    maxEpisodeSteps: 256,
    files: { world_model: { path: 'a', sha256: '0'.repeat(64) }, reward: { path: 'b', sha256: '0'.repeat(64) } },
  });

  it('accepts a minimal conforming model (no poses, no noise)', () => {
    expect(checkSessions(manifest(), meta())).toEqual({ poses: false, noise: null, contextPoses: false, latent: null });
  });

  it('names wrong dtypes, fixed batch sizes, unknown and missing tensors', () => {
    const m = meta();
    m.world_model.inputs[0]!.type = 'float32';
    expect(() => checkSessions(manifest(), m)).toThrow(
      'world_model.onnx: input "context" is float32 [B, 4, 64, 64, 3]; expected uint8 [batch, 4, 64, 64, 3] (dtype uint8, not float32)',
    );
    const fixed = meta();
    fixed.reward.inputs[0]!.shape = [1, 64, 64, 3];
    expect(() => checkSessions(manifest(), fixed)).toThrow(/reward\.onnx: input "frames" has a fixed batch size 1 .*dynamic batch dimension/);
    const extra = meta();
    extra.world_model.inputs.push({ name: 'caption', type: 'string', shape: ['B'] });
    expect(() => checkSessions(manifest(), extra)).toThrow(/unexpected input "caption"/);
    const missing = meta();
    missing.reward.outputs = [];
    expect(() => checkSessions(manifest(), missing)).toThrow('reward.onnx: output "prob" is missing; expected float32 [batch, 1]');
    const poses = meta();
    poses.world_model.inputs.push({ name: 'poses', type: 'float32', shape: ['B', 8, 8] });
    expect(() => checkSessions(manifest(), poses)).toThrow(/takes "poses" but the model directory has no action_adapter\.onnx/);
    const noise = meta();
    noise.world_model.inputs.push({ name: 'noise', type: 'float32', shape: ['B', 'T', 4] });
    expect(() => checkSessions(manifest(), noise)).toThrow(/"noise" has shape \[B, T, 4\]; expected float32 \[batch, \.\.\.fixed dims\]/);
  });

  it('context selection: last-k and EVAC sparse memory indices', () => {
    expect(contextIndices('last', 4, 12)).toEqual([8, 9, 10, 11]);
    expect(contextIndices('sparse', 4, 13)).toEqual([0, 4, 8, 12]);
    expect(contextIndices('sparse', 4, 4)).toEqual([0, 1, 2, 3]);
  });
});

describe('generator', () => {
  it('regenerating the tiny models writes the committed bytes', async () => {
    const out = join(tmp, 'gen');
    await generateTiny(out, [64], 4);
    const fresh = JSON.parse(await readFile(join(out, 'tiny-64', 'manifest.json'), 'utf8')) as Manifest;
    const committed = JSON.parse(await readFile(join(tinyModelDir(64), 'manifest.json'), 'utf8')) as Manifest;
    expect(fresh.files).toEqual(committed.files);
    expect(sha256(await readFile(join(out, 'tiny-64', 'world_model.onnx')))).toBe(committed.files.world_model.sha256);
  });
});
