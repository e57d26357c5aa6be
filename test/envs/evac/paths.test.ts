/**
 * EVAC's model_dir and dataset_dir through the registry: confined to the data roots (and the
 * bundled assets), every file a manifest or dataset names held to the same roots, and data that
 * does not load reported as the client's fault without its path or content.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';

import { DataPathError, DataRoots } from '../../../envs/core/data-roots.ts';
import { Registry } from '../../../envs/core/registry.ts';
import { sha256 } from '../../../envs/evac/contract.ts';
import { GraphBuilder } from '../../../envs/evac/onnx/writer.ts';
import { EVAC_ENV_ID, registerEvac, tinyModelDir } from '../../../envs/evac/index.ts';

const base = realpathSync(mkdtempSync(join(tmpdir(), 'gymwire-evac-paths-')));
const root = join(base, 'root');
const outside = join(base, 'outside');
mkdirSync(root);
mkdirSync(outside);
cpSync(tinyModelDir(64), join(root, 'tiny'), { recursive: true });
writeFileSync(join(outside, 'secret.txt'), 'SECRET-CONTENT');

/** A copy of the tiny model with `change` applied to its manifest (and files). */
function variant(name: string, change: (manifest: Record<string, unknown>, dir: string) => void): string {
  const dir = join(root, name);
  cpSync(join(root, 'tiny'), dir, { recursive: true });
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Record<string, unknown>;
  change(manifest, dir);
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest));
  return name;
}
const files = (m: Record<string, unknown>) => m.files as Record<string, { path: string; sha256: string }>;

const notJson = variant('not-json', () => {});
writeFileSync(join(root, notJson, 'manifest.json'), 'root:x:0:0:SECRET-CONTENT');
const fileOutside = variant('file-outside', (m) => (files(m).reward!.path = '../../outside/secret.txt'));
const linkedOut = variant('linked-out', (_m, dir) => {
  rmSync(join(dir, 'reward.onnx'));
  symlinkSync(join(outside, 'secret.txt'), join(dir, 'reward.onnx'));
});
const garbageOnnx = variant('garbage-onnx', (m, dir) => {
  const bytes = Buffer.from('SECRET-CONTENT, not an ONNX model');
  writeFileSync(join(dir, 'world_model.onnx'), bytes);
  files(m).world_model!.sha256 = sha256(bytes);
});
const datasetOutside = variant('dataset-outside', (m) => (m.dataset = '../../outside'));
const noDataset = variant('no-dataset', (m) => {
  delete m.dataset;
  m.name = 'SECRET-NAME';
});
// A model's author's mistakes (the folder is inside an allowed root, so the author is told).
const renamedInput = variant('renamed-input', (m, dir) => {
  // "context" renamed everywhere in the graph (same length, so the protobuf stays valid).
  const path = join(dir, 'world_model.onnx');
  const bytes = Buffer.from(readFileSync(path).toString('latin1').replaceAll('context', 'ctx_img'), 'latin1');
  writeFileSync(path, bytes);
  files(m).world_model!.sha256 = sha256(bytes);
});
const wrongHeight = variant('wrong-height', (m) => (m.height = 128));
const staticBatch = variant('static-batch', (m, dir) => {
  const g = new GraphBuilder();
  const frames = g.input('frames', 'uint8', [1, 64, 64, 3]);
  const sum = g.op('ReduceSum', [g.op('Cast', [frames], { to: 1 }), g.i64([1, 2, 3])], { keepdims: 0 });
  g.output(g.op('Reshape', [sum, g.i64([1, 1])]), 'prob', 'float32', [1, 1]);
  const bytes = g.toModel({ graphName: 'static_batch_reward' });
  writeFileSync(join(dir, 'reward.onnx'), bytes);
  files(m).reward!.sha256 = sha256(bytes);
});
const missingFile = variant('missing-file', (_m, dir) => rmSync(join(dir, 'reward.onnx')));
// Datasets on their own: a broken one and one whose image links outside.
cpSync(join(tinyModelDir(64), 'dataset'), join(root, 'broken-dataset'), { recursive: true });
writeFileSync(join(root, 'broken-dataset', 'episodes.json'), '{"format": "SECRET-CONTENT"}');
cpSync(join(tinyModelDir(64), 'dataset'), join(root, 'linked-dataset'), { recursive: true });
rmSync(join(root, 'linked-dataset', 'ep_000.png'));
symlinkSync(join(outside, 'secret.txt'), join(root, 'linked-dataset', 'ep_000.png'));

/** What the server's log says about refused data (the reason the client is not told). */
const logged: string[] = [];
const registry = new Registry({ dataRoots: new DataRoots([root]), logger: pino({ level: 'warn' }, { write: (line: string) => logged.push(line) }) });
const runtime = registerEvac(registry, { batchWindowMs: 1 });
const bare = new Registry();
const bareRuntime = registerEvac(bare, { runtime });
afterAll(async () => {
  await runtime.close();
  await bareRuntime.close();
  rmSync(base, { recursive: true, force: true });
});

const OUTSIDE =
  'the path is outside the data roots this server allows (gymwire serve --data-root DIR); give a path relative to a data root, or an absolute one inside it';
const NOT_A_MODEL = 'model_dir: the data there does not load as a gymwire world model (docs/world-models.md): ';

async function failure(reg: Registry, kwargs: Record<string, unknown>): Promise<Error> {
  try {
    await reg.make(EVAC_ENV_ID, kwargs);
  } catch (err) {
    expect(err).toBeInstanceOf(DataPathError);
    expect((err as Error).message).not.toMatch(/SECRET|gymwire-evac-paths/);
    return err as Error;
  }
  throw new Error(`${JSON.stringify(kwargs)} loaded`);
}

describe('EvacWorldModel-v0 model_dir and dataset_dir', () => {
  it('loads a model inside a data root by relative or absolute path, and the bundled ones by name', async () => {
    for (const model_dir of ['tiny', join(root, 'tiny'), 'tiny-128']) {
      const env = await registry.make(EVAC_ENV_ID, { model_dir });
      expect((await env.reset({ seed: 1 })).obs).toMatchObject({ full_image: { shape: [model_dir === 'tiny-128' ? 128 : 64, expect.any(Number), 3] } });
    }
    // Without data roots, only the bundled assets.
    expect(await bare.make(EVAC_ENV_ID, { model_dir: tinyModelDir(64) })).toBeDefined();
    expect((await failure(bare, { model_dir: join(root, 'tiny') })).message).toBe(`model_dir: ${OUTSIDE}`);
  }, 60_000);

  it('refuses paths outside the data roots with one message, whether they exist or not', async () => {
    const messages = new Set<string>();
    for (const model_dir of [outside, '/etc', '/no/such/dir', '../outside', 'tiny/../../outside'])
      messages.add((await failure(registry, { model_dir })).message);
    for (const dataset_dir of [outside, '/no/such/dir']) messages.add((await failure(registry, { dataset_dir })).message.replace('dataset_dir', 'model_dir'));
    expect([...messages]).toEqual([`model_dir: ${OUTSIDE}`]);
  });

  it('holds the files a manifest names to the data roots', async () => {
    expect((await failure(registry, { model_dir: fileOutside })).message).toBe('model_dir: the data names a file outside the data roots this server allows');
    expect((await failure(registry, { model_dir: linkedOut })).message).toBe('model_dir: the data names a file outside the data roots this server allows');
    expect((await failure(registry, { model_dir: datasetOutside })).message).toBe('model_dir: the data names a file outside the data roots this server allows');
  });

  it('reports a model that does not load as the client’s fault, without its content', async () => {
    expect((await failure(registry, { model_dir: notJson })).message).toBe(`${NOT_A_MODEL}cannot read manifest.json: it is not valid JSON`);
    expect(logged.at(-1)).toMatch(/is not valid JSON/);
    // onnxruntime refusing the file is the model's fault too.
    expect((await failure(registry, { model_dir: garbageOnnx })).message).toMatch(
      new RegExp(`^${NOT_A_MODEL.replace(/[()]/g, '\\$&')}the ONNX files do not load`),
    );
    expect(logged.at(-1)).toMatch(/the ONNX files do not load/);
  });

  it('tells the author of a model inside a data root what is wrong: file, input, expected, found', async () => {
    expect((await failure(registry, { model_dir: renamedInput })).message).toBe(
      `${NOT_A_MODEL}world_model.onnx: unexpected input "ctx_img"; the contract allows "context", "actions", "poses", "noise", "context_poses", "latent"`,
    );
    expect((await failure(registry, { model_dir: wrongHeight })).message).toBe(
      `${NOT_A_MODEL}world_model.onnx: input "context" has 64 at axis 2 (uint8 [B, 4, 64, 64, 3]); expected uint8 [batch, 4, 128, 64, 3]`,
    );
    expect((await failure(registry, { model_dir: staticBatch })).message).toBe(
      `${NOT_A_MODEL}reward.onnx: input "frames" has a fixed batch size 1 (uint8 [1, 64, 64, 3]); expected uint8 [batch, 64, 64, 3] with a dynamic batch dimension`,
    );
    expect((await failure(registry, { model_dir: missingFile })).message).toBe('model_dir: the data names a file that does not exist (reward.onnx)');
  });

  it('holds a dataset_dir and its images to the data roots', async () => {
    expect((await failure(registry, { dataset_dir: 'broken-dataset' })).message).toBe(
      'dataset_dir: the data there does not load as a gymwire reset dataset (docs/world-models.md): episodes.json is not a gymwire.evac-reset/v1 file: ' +
        'format: Invalid input: expected "gymwire.evac-reset/v1"; episodes: Invalid input: expected array, received undefined',
    );
    expect((await failure(registry, { dataset_dir: 'linked-dataset' })).message).toBe(
      'dataset_dir: the data names a file outside the data roots this server allows',
    );
    const env = await registry.make(EVAC_ENV_ID, { dataset_dir: join(root, 'tiny', 'dataset') });
    expect((await env.reset({ seed: 0 })).info).toMatchObject({ episode_index: expect.any(Number) });
    // A model without a dataset of its own takes one from dataset_dir; the error quotes nothing of the manifest.
    await expect(registry.make(EVAC_ENV_ID, { model_dir: noDataset })).rejects.toThrow(
      /^the model has no reset dataset \(manifest.dataset\); pass dataset_dir$/,
    );
    expect(await registry.make(EVAC_ENV_ID, { model_dir: noDataset, dataset_dir: 'tiny/dataset' })).toBeDefined();
  });
});
