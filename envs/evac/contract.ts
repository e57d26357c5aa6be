/**
 * The world-model contract: what a model directory holds (`manifest.json`, `world_model.onnx`,
 * `reward.onnx`, optional `action_adapter.onnx`, a reset dataset) and how it is checked when it
 * loads. {@link readModelDir} checks the manifest, that every file exists and that its sha256 matches;
 * {@link checkSessions} checks the ONNX sessions' input/output metadata against the manifest and
 * names the tensor, the expected shape and dtype on a mismatch. docs/world-models.md is the prose
 * version of this file.
 *
 * @example
 * const dir = await readModelDir('envs/evac/assets/tiny-64');
 * checkSessions(dir.manifest, metadataFromWorker);
 */
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';

import type { ConfinePath } from '../core/data-roots.ts';

export const MANIFEST_FORMAT = 'gymwire.world-model/v1';

const Sha256 = z.string().regex(/^[0-9a-f]{64}$/, 'a lowercase hex sha256');
const FileEntry = z
  .object({
    path: z.string().min(1),
    sha256: Sha256,
    /** ONNX external data files (`model.onnx.data`, for models over 2 GB), each with its own hash. */
    external_data: z.array(z.object({ path: z.string().min(1), sha256: Sha256 }).strict()).optional(),
  })
  .strict();

export const ManifestSchema = z
  .object({
    format: z.literal(MANIFEST_FORMAT),
    name: z.string().min(1),
    description: z.string().optional(),
    height: z.number().int().positive(),
    width: z.number().int().positive(),
    /** Frames generated per step (RLinf `chunk`). */
    chunk: z.number().int().positive(),
    context: z
      .object({
        frames: z.number().int().positive(),
        /** `last`: the last k frames; `sparse`: EVAC's memory, history[floor(n*i/(k-1))] for i < k. */
        selection: z.enum(['last', 'sparse']),
      })
      .strict(),
    action: z
      .object({
        dim: z.number().int().positive(),
        low: z.array(z.number()),
        high: z.array(z.number()),
        /** The model sees (action - mean) / std. */
        mean: z.array(z.number()).optional(),
        std: z.array(z.number().positive()).optional(),
      })
      .strict(),
    reward: z
      .object({
        /** A frame succeeds when its probability is above this (0.5 matches torch.round). */
        threshold: z.number().min(0).max(1).default(0.5),
        coefficient: z.number().default(5),
        relative: z.boolean().default(true),
      })
      .strict(),
    /** Episode length in frames (RLinf counts elapsed steps in frames, chunk per step). */
    maxEpisodeSteps: z.number().int().positive(),
    files: z
      .object({
        world_model: FileEntry,
        reward: FileEntry,
        action_adapter: FileEntry.optional(),
      })
      .strict(),
    /** Reset dataset folder, relative to the model directory. */
    dataset: z.string().optional(),
  })
  .strict();
export type Manifest = z.infer<typeof ManifestSchema>;

/**
 * Why a JSON file does not read, without its content (V8's syntax errors quote the text near the
 * fault; the reason may reach a client).
 */
export function unreadableReason(err: unknown): string {
  if (err instanceof SyntaxError) return 'it is not valid JSON';
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'the file is missing';
  return (err as Error).message;
}

/** A model directory that refuses to load: the message says which file or tensor and what was expected. */
export class ModelContractError extends Error {
  override readonly name = 'ModelContractError';
}

export interface ModelDir {
  dir: string;
  manifest: Manifest;
  files: { world_model: string; reward: string; action_adapter: string | null };
  datasetDir: string | null;
}

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Reads and checks a model directory: manifest schema, files present, hashes matching. */
export async function readModelDir(dir: string, opts: { confine?: ConfinePath } = {}): Promise<ModelDir> {
  const confine = opts.confine ?? ((path: string) => path);
  const root = resolve(dir);
  const manifestPath = join(root, 'manifest.json');
  const manifestFile = confine(manifestPath);
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(manifestFile, 'utf8'));
  } catch (err) {
    throw new ModelContractError(`cannot read ${manifestPath}: ${unreadableReason(err)}`);
  }
  const parsed = ManifestSchema.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new ModelContractError(`${manifestPath} is not a ${MANIFEST_FORMAT} manifest: ${issues}`);
  }
  const manifest = parsed.data;
  const { dim, low, high, mean, std } = manifest.action;
  for (const [name, arr] of Object.entries({ low, high, mean, std })) {
    if (arr && arr.length !== dim) throw new ModelContractError(`${manifestPath}: action.${name} has ${arr.length} values, action.dim is ${dim}`);
  }
  for (let d = 0; d < dim; d++) {
    // A Box with low > high cannot be built by any client (Gymnasium raises), so refuse it here.
    if (!(low[d]! <= high[d]!)) throw new ModelContractError(`${manifestPath}: action.low[${d}] = ${low[d]} is above action.high[${d}] = ${high[d]}`);
  }
  const files: ModelDir['files'] = { world_model: '', reward: '', action_adapter: null };
  for (const key of ['world_model', 'reward', 'action_adapter'] as const) {
    const entry = manifest.files[key];
    if (!entry) continue;
    files[key] = await checkFile(root, confine, `model file ${key}`, `manifest.files.${key}`, entry);
    const listed = new Set<string>();
    for (const [i, data] of (entry.external_data ?? []).entries()) {
      const file = await checkFile(root, confine, `external data of ${key}`, `manifest.files.${key}.external_data[${i}]`, data);
      listed.add(file);
    }
    // onnxruntime reads external data by the name inside the model; the usual name is <model>.data.
    // An unlisted one would load unhashed, so it is refused rather than trusted.
    const conventional = `${files[key]}.data`;
    if (!listed.has(conventional) && (await stat(conventional).catch(() => null))) {
      throw new ModelContractError(
        `model file ${key} has external data ${conventional} that manifest.files.${key}.external_data does not list; add it with its sha256`,
      );
    }
  }
  let datasetDir: string | null = null;
  if (manifest.dataset) {
    datasetDir = confine(join(root, manifest.dataset));
    const st = await stat(datasetDir).catch(() => null);
    if (!st?.isDirectory()) throw new ModelContractError(`reset dataset folder ${datasetDir} (manifest.dataset) is missing`);
  }
  return { dir: root, manifest, files, datasetDir };
}

/**
 * What identifies a model directory's current content without hashing the models again: the
 * manifest's bytes and the size, mtime and inode of every file it lists. A directory rebuilt in
 * place (a new export, an edited manifest) gets a new fingerprint.
 */
export async function fingerprintModelDir(dir: string, opts: { confine?: ConfinePath } = {}): Promise<string> {
  const confine = opts.confine ?? ((path: string) => path);
  const root = resolve(dir);
  const text = await readFile(confine(join(root, 'manifest.json')), 'utf8').catch(() => '');
  const parts = [sha256(new TextEncoder().encode(text))];
  let listed: string[] = [];
  try {
    const files = (JSON.parse(text) as { files?: Record<string, { path?: unknown; external_data?: { path?: unknown }[] }> }).files ?? {};
    for (const entry of Object.values(files)) {
      listed.push(String(entry.path));
      for (const data of entry.external_data ?? []) listed.push(String(data.path));
    }
  } catch {
    listed = [];
  }
  for (const path of listed) {
    const st = await Promise.resolve()
      .then(() => stat(confine(join(root, path))))
      .catch(() => null);
    parts.push(st ? `${path}:${st.size}:${st.mtimeMs}:${st.ino}` : `${path}:missing`);
  }
  return parts.join('|');
}

async function checkFile(root: string, confine: ConfinePath, what: string, where: string, entry: { path: string; sha256: string }): Promise<string> {
  const path = join(root, entry.path);
  const file = confine(path);
  let bytes: Uint8Array;
  try {
    bytes = await readFile(file);
  } catch {
    throw new ModelContractError(`${what} is missing: ${path} (listed in ${where})`);
  }
  const actual = sha256(bytes);
  if (actual !== entry.sha256) {
    throw new ModelContractError(`${what} (${path}) has sha256 ${actual}, the manifest says ${entry.sha256}; regenerate it or fix the manifest`);
  }
  return file;
}

/** What a worker reports about one ONNX session (onnxruntime's inputMetadata/outputMetadata). */
export interface TensorMeta {
  name: string;
  type: string;
  shape: (number | string)[];
}
export interface SessionMeta {
  inputs: TensorMeta[];
  outputs: TensorMeta[];
}
export interface ModelMeta {
  world_model: SessionMeta;
  reward: SessionMeta;
  action_adapter: SessionMeta | null;
}

/** `null` in an expected shape is a free (batch) dimension; `'any'` accepts a fixed or free size. */
type Dim = number | null | 'any';
interface Expected {
  dtype: string;
  shape: Dim[];
  /** Batch-like free dimension: the model must leave it dynamic so sessions can be batched. */
  freeLeading?: boolean;
}

const fmt = (shape: readonly Dim[] | readonly (number | string)[]) =>
  `[${shape.map((d) => (d === null ? 'batch' : d === 'any' ? '*' : String(d))).join(', ')}]`;

function checkTensor(file: string, kind: 'input' | 'output', meta: TensorMeta | undefined, name: string, exp: Expected): void {
  const want = `${exp.dtype} ${fmt(exp.shape)}`;
  if (!meta) throw new ModelContractError(`${file}: ${kind} "${name}" is missing; expected ${want}`);
  const got = `${meta.type} ${fmt(meta.shape)}`;
  if (meta.type !== exp.dtype) throw new ModelContractError(`${file}: ${kind} "${name}" is ${got}; expected ${want} (dtype ${exp.dtype}, not ${meta.type})`);
  if (meta.shape.length !== exp.shape.length) {
    throw new ModelContractError(`${file}: ${kind} "${name}" has rank ${meta.shape.length} (${got}); expected ${want}`);
  }
  exp.shape.forEach((d, i) => {
    const actual = meta.shape[i]!;
    const dynamic = typeof actual === 'string' || actual < 0;
    if (d === null && !dynamic) {
      throw new ModelContractError(`${file}: ${kind} "${name}" has a fixed batch size ${actual} (${got}); expected ${want} with a dynamic batch dimension`);
    }
    if (typeof d === 'number' && !dynamic && actual !== d) {
      throw new ModelContractError(`${file}: ${kind} "${name}" has ${actual} at axis ${i} (${got}); expected ${want}`);
    }
  });
}

function checkNames(file: string, kind: 'input' | 'output', metas: TensorMeta[], allowed: string[]): void {
  for (const m of metas) {
    if (!allowed.includes(m.name))
      throw new ModelContractError(`${file}: unexpected ${kind} "${m.name}"; the contract allows ${allowed.map((a) => `"${a}"`).join(', ')}`);
  }
}

/** The optional inputs a world model declared; the env feeds exactly these. */
export interface WorldModelInputs {
  poses: boolean;
  /** Per-sample noise shape (without the batch axis), or null when the model takes no noise. */
  noise: number[] | null;
  /** Takes `context_poses` [B,T,8]: the pose at each context frame (the pose history). */
  contextPoses: boolean;
  /** Per-sample shape of the latent state carried between chunks (`latent` in, `next_latent` out), or null. */
  latent: number[] | null;
}

/** A float32 [batch, ...fixed dims] tensor's fixed dims, or a contract error naming it. */
function fixedTail(file: string, kind: 'input' | 'output', meta: TensorMeta): number[] {
  const want = `float32 [batch, ...fixed dims]`;
  if (meta.type !== 'float32') throw new ModelContractError(`${file}: ${kind} "${meta.name}" is ${meta.type}; expected ${want}`);
  const rest = meta.shape.slice(1);
  if (meta.shape.length < 2 || rest.some((d) => typeof d !== 'number' || d <= 0)) {
    throw new ModelContractError(`${file}: ${kind} "${meta.name}" has shape ${fmt(meta.shape)}; expected ${want}`);
  }
  checkTensor(file, kind, meta, meta.name, { dtype: 'float32', shape: [null, ...(rest as number[])] });
  return rest as number[];
}

/**
 * Checks the sessions' metadata against the manifest; throws {@link ModelContractError} naming
 * the file, the tensor and the expected dtype and shape.
 */
export function checkSessions(manifest: Manifest, meta: ModelMeta): WorldModelInputs {
  const { height: H, width: W, chunk: C } = manifest;
  const T = manifest.context.frames;
  const A = manifest.action.dim;
  const byName = (list: TensorMeta[], name: string) => list.find((m) => m.name === name);

  const wm = meta.world_model;
  checkNames('world_model.onnx', 'input', wm.inputs, ['context', 'actions', 'poses', 'noise', 'context_poses', 'latent']);
  checkTensor('world_model.onnx', 'input', byName(wm.inputs, 'context'), 'context', { dtype: 'uint8', shape: [null, T, H, W, 3] });
  checkTensor('world_model.onnx', 'input', byName(wm.inputs, 'actions'), 'actions', { dtype: 'float32', shape: [null, C, A] });
  const poses = byName(wm.inputs, 'poses');
  if (poses) {
    if (!meta.action_adapter) throw new ModelContractError('world_model.onnx takes "poses" but the model directory has no action_adapter.onnx to compute them');
    checkTensor('world_model.onnx', 'input', poses, 'poses', { dtype: 'float32', shape: [null, C, 8] });
  }
  const noiseMeta = byName(wm.inputs, 'noise');
  const noise = noiseMeta ? fixedTail('world_model.onnx', 'input', noiseMeta) : null;
  const contextPoses = byName(wm.inputs, 'context_poses');
  if (contextPoses) checkTensor('world_model.onnx', 'input', contextPoses, 'context_poses', { dtype: 'float32', shape: [null, T, 8] });
  checkNames('world_model.onnx', 'output', wm.outputs, ['frames', 'next_latent']);
  checkTensor('world_model.onnx', 'output', byName(wm.outputs, 'frames'), 'frames', { dtype: 'uint8', shape: [null, C, H, W, 3] });
  const latentIn = byName(wm.inputs, 'latent');
  const latentOut = byName(wm.outputs, 'next_latent');
  let latent: number[] | null = null;
  if (latentIn || latentOut) {
    if (!latentIn || !latentOut) {
      throw new ModelContractError(
        `world_model.onnx has ${latentIn ? 'input "latent" but no output "next_latent"' : 'output "next_latent" but no input "latent"'}; a latent state needs both, of the same shape`,
      );
    }
    latent = fixedTail('world_model.onnx', 'input', latentIn);
    checkTensor('world_model.onnx', 'output', latentOut, 'next_latent', { dtype: 'float32', shape: [null, ...latent] });
  }

  const rw = meta.reward;
  checkNames('reward.onnx', 'input', rw.inputs, ['frames']);
  checkTensor('reward.onnx', 'input', byName(rw.inputs, 'frames'), 'frames', { dtype: 'uint8', shape: [null, H, W, 3] });
  checkNames('reward.onnx', 'output', rw.outputs, ['prob']);
  checkTensor('reward.onnx', 'output', byName(rw.outputs, 'prob'), 'prob', { dtype: 'float32', shape: [null, 1] });

  const ad = meta.action_adapter;
  if (ad) {
    checkNames('action_adapter.onnx', 'input', ad.inputs, ['delta', 'pose']);
    checkTensor('action_adapter.onnx', 'input', byName(ad.inputs, 'delta'), 'delta', { dtype: 'float32', shape: [null, C, A] });
    checkTensor('action_adapter.onnx', 'input', byName(ad.inputs, 'pose'), 'pose', { dtype: 'float32', shape: [null, 8] });
    checkNames('action_adapter.onnx', 'output', ad.outputs, ['poses']);
    checkTensor('action_adapter.onnx', 'output', byName(ad.outputs, 'poses'), 'poses', { dtype: 'float32', shape: [null, C, 8] });
  }
  return { poses: Boolean(poses), noise, contextPoses: Boolean(contextPoses), latent };
}

/**
 * Which history frames form the context, for `n` frames so far: the last k, or EVAC's sparse memory.
 * `indexing: 'gymwire'` spreads k frames evenly from the first to the latest, floor((n-1)*i/(k-1));
 * `'rlinf'` is RLinf's EvacEnv (world_model_evac_env.py @bf41fc33c, lines 437-453): k-1 frames at
 * floor(n*i/(k-1)) for i < k-1, then the latest frame.
 */
export function contextIndices(selection: 'last' | 'sparse', k: number, n: number, indexing: 'gymwire' | 'rlinf' = 'gymwire'): number[] {
  if (selection === 'last') return Array.from({ length: k }, (_, i) => Math.max(0, n - k + i));
  const last = n - 1;
  if (k === 1) return [last];
  if (indexing === 'rlinf') return [...Array.from({ length: k - 1 }, (_, i) => Math.min(last, Math.floor((n * i) / (k - 1)))), last];
  return Array.from({ length: k }, (_, i) => Math.floor((last * i) / (k - 1)));
}
