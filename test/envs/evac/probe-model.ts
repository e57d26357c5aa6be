/**
 * A small world model for tests of the env's edges, built with the repo's ONNX writer: 8x8 frames,
 * chunk 4, context 4 ('last'), with a latent state and the pose history as inputs. Every pixel of a
 * chunk is one colour, read back by the tests:
 * - red   = round((a[0][0] + 1) * 60 + 10 * latent[0]); next_latent = latent + [1, 0 * log(a[0][2] + 1)]
 *   (so a[0][2] = -1 makes next_latent[1] NaN);
 * - green = round(100 * sum of the context poses' x + 100);
 * - blue  = 7 + table[int((a[0][3] + 1) * 1.5)] with a 3-entry table, so a[0][3] = 1 indexes out of
 *   range and onnxruntime fails the run (a runtime failure of that session's inputs only).
 * reward.onnx: prob = sqrt(red / 255 - 0.01): NaN when red is 0 (a[0][0] = -1 at latent 0), above
 * 0.5 from red 67. action_adapter.onnx: x advances by 0.1 x delta[0] per frame; delta[1] < -0.5 makes
 * the poses NaN.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';

import { MANIFEST_FORMAT, sha256 } from '../../../envs/evac/contract.ts';
import type { Manifest } from '../../../envs/evac/contract.ts';
import { DATASET_FORMAT } from '../../../envs/evac/dataset.ts';
import { GraphBuilder } from '../../../envs/evac/onnx/writer.ts';

export const PROBE = { size: 8, chunk: 4, context: 4 } as const;

function worldModel(): Uint8Array {
  const { size: S, chunk: C, context: T } = PROBE;
  const g = new GraphBuilder();
  const context = g.input('context', 'uint8', ['B', T, S, S, 3]);
  const actions = g.input('actions', 'float32', ['B', C, 7]);
  const ctxPoses = g.input('context_poses', 'float32', ['B', T, 8]);
  const latent = g.input('latent', 'float32', ['B', 2]);
  const firstAction = (d: number) => g.op('Reshape', [g.op('Slice', [actions, g.i64([0, d]), g.i64([1, d + 1]), g.i64([1, 2])]), g.i64([-1, 1])]);
  const a0 = firstAction(0);
  const a2 = firstAction(2);
  const a3 = firstAction(3);
  const latent0 = g.op('Slice', [latent, g.i64([0]), g.i64([1]), g.i64([1])]);
  const red = g.op('Add', [g.op('Mul', [g.op('Add', [a0, g.f32(1)]), g.f32(60)]), g.op('Mul', [latent0, g.f32(10)])]);
  const poseX = g.op('ReduceSum', [g.op('Slice', [ctxPoses, g.i64([0]), g.i64([1]), g.i64([2])]), g.i64([1])], { keepdims: 0 });
  const green = g.op('Add', [g.op('Mul', [poseX, g.f32(100)]), g.f32(100)]);
  const index = g.op('Reshape', [g.op('Cast', [g.op('Mul', [g.op('Add', [a3, g.f32(1)]), g.f32(1.5)])], { to: 7 }), g.i64([-1])]);
  const blue = g.op('Add', [g.op('Reshape', [g.op('Gather', [g.f32([0, 0, 0]), index], { axis: 0 }), g.i64([-1, 1])]), g.f32(7)]);
  // Context enters the graph so the input is used: plus 0 x its first byte.
  const ctxByte = g.op('Cast', [g.op('Slice', [g.op('Reshape', [context, g.i64([0, -1])]), g.i64([0]), g.i64([1]), g.i64([1])])], { to: 1 });
  const zero = g.op('Mul', [ctxByte, g.f32(0)]);
  const rgb = g.op('Add', [g.op('Concat', [red, green, blue], { axis: 1 }), zero]);
  const pixel = g.op('Cast', [g.op('Clip', [g.op('Round', [rgb]), g.f32(0), g.f32(255)])], { to: 2 });
  const frames = g.op('Expand', [g.op('Reshape', [pixel, g.i64([-1, 1, 1, 1, 3])]), g.i64([1, C, S, S, 3])]);
  g.output(frames, 'frames', 'uint8', ['B', C, S, S, 3]);
  const one = g.op('Add', [g.op('Mul', [a2, g.f32(0)]), g.f32(1)]);
  const poison = g.op('Mul', [g.op('Log', [g.op('Add', [a2, g.f32(1)])]), g.f32(0)]);
  g.output(g.op('Add', [latent, g.op('Concat', [one, poison], { axis: 1 })]), 'next_latent', 'float32', ['B', 2]);
  return g.toModel();
}

function reward(): Uint8Array {
  const S = PROBE.size;
  const g = new GraphBuilder();
  const frames = g.input('frames', 'uint8', ['N', S, S, 3]);
  const red = g.op('Cast', [g.op('Reshape', [g.op('Slice', [frames, g.i64([0, 0, 0]), g.i64([1, 1, 1]), g.i64([1, 2, 3])]), g.i64([-1, 1])])], { to: 1 });
  g.output(g.op('Sqrt', [g.op('Sub', [g.op('Div', [red, g.f32(255)]), g.f32(0.01)])]), 'prob', 'float32', ['N', 1]);
  return g.toModel();
}

function adapter(): Uint8Array {
  const C = PROBE.chunk;
  const g = new GraphBuilder();
  const delta = g.input('delta', 'float32', ['B', C, 7]);
  const pose = g.input('pose', 'float32', ['B', 8]);
  const dim = (d: number) => g.op('Slice', [delta, g.i64([d]), g.i64([d + 1]), g.i64([2])]);
  const steps = g.op('Mul', [g.op('CumSum', [dim(0), g.i32([1], [])]), g.f32([0.1, 0, 0, 0, 0, 0, 0, 0])]);
  const poison = g.op('Mul', [g.op('Sqrt', [g.op('Add', [dim(1), g.f32(0.5)])]), g.f32(0)]);
  const poses = g.op('Add', [g.op('Add', [g.op('Unsqueeze', [pose, g.i64([1])]), steps]), poison]);
  g.output(poses, 'poses', 'float32', ['B', C, 8]);
  return g.toModel();
}

/** Writes the probe model directory (with a two-episode reset dataset) under `dir`. */
export async function writeProbeModel(dir: string): Promise<string> {
  await mkdir(join(dir, 'dataset'), { recursive: true });
  const files = { world_model: worldModel(), reward: reward(), action_adapter: adapter() };
  const entries: Record<string, { path: string; sha256: string }> = {};
  for (const [key, bytes] of Object.entries(files)) {
    await writeFile(join(dir, `${key}.onnx`), bytes);
    entries[key] = { path: `${key}.onnx`, sha256: sha256(bytes) };
  }
  const S = PROBE.size;
  for (const i of [0, 1]) {
    await sharp(new Uint8Array(S * S * 3).fill(20 * (i + 1)), { raw: { width: S, height: S, channels: 3 } })
      .png()
      .toFile(join(dir, 'dataset', `ep_${i}.png`));
  }
  const pose = [0, 0, 0, 0, 0, 0, 1, -1];
  const episodes = [0, 1].map((i) => ({ image: `ep_${i}.png`, task: `probe ${i}`, init_ee_pose: pose }));
  await writeFile(join(dir, 'dataset', 'episodes.json'), JSON.stringify({ format: DATASET_FORMAT, episodes }));
  const manifest: Manifest = {
    format: MANIFEST_FORMAT,
    name: 'probe',
    height: S,
    width: S,
    chunk: PROBE.chunk,
    context: { frames: PROBE.context, selection: 'last' },
    action: { dim: 7, low: Array(7).fill(-1), high: Array(7).fill(1) },
    reward: { threshold: 0.5, coefficient: 5, relative: true },
    maxEpisodeSteps: 64,
    files: entries as Manifest['files'],
    dataset: 'dataset',
  };
  await writeFile(join(dir, 'manifest.json'), JSON.stringify(manifest, null, 2));
  return dir;
}
