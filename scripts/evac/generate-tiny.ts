/**
 * Generates the bundled tiny world models (64, 128 and 256 pixels) and their reset datasets into
 * envs/evac/assets/tiny-<size>/: world_model.onnx, reward.onnx, action_adapter.onnx, manifest.json
 * (with sha256 of every model file) and dataset/ (episodes.json + one PNG first frame each).
 * Everything is seeded; running it twice writes the same models.
 *
 *   npx tsx scripts/evac/generate-tiny.ts [--out DIR] [--sizes 64,128,256] [--episodes 16]
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';

import { Random } from '../../runtime/random.ts';
import { MANIFEST_FORMAT, sha256 } from '../../envs/evac/contract.ts';
import type { Manifest } from '../../envs/evac/contract.ts';
import { DATASET_FORMAT } from '../../envs/evac/dataset.ts';
import type { DatasetFile } from '../../envs/evac/dataset.ts';
import { buildTinyActionAdapter, buildTinyReward, buildTinyWorldModel } from '../../envs/evac/tiny/build.ts';
import { REST_Z, renderTiny } from '../../envs/evac/tiny/scene.ts';

export const TINY_SIZES = [64, 128, 256] as const;
const CHUNK = 8;
const CONTEXT = 4;
const TASKS = ['pick up the red block', 'lift the red block off the table', 'grasp the red block and raise it'];

export interface TinyEpisode {
  task: string;
  pose: number[];
  block: [number, number, number];
}

/** The seeded reset episodes shared by every resolution. */
export function tinyEpisodes(n: number, seed = 2025): TinyEpisode[] {
  const rng = new Random(seed);
  const out: TinyEpisode[] = [];
  while (out.length < n) {
    const ee = [rng.uniform(-0.3, 0.3), rng.uniform(-0.14, 0.14), rng.uniform(0.15, 0.3)];
    const block: [number, number, number] = [rng.integer(12, 53), rng.integer(6, 27), REST_Z];
    // Keep the block out from under the gripper so every episode needs a reach.
    const dx = block[0] - (32 + 64 * ee[0]!);
    const dy = block[1] - (16 + 64 * ee[1]!);
    if (Math.hypot(dx, dy) < 10) continue;
    out.push({ task: TASKS[rng.integer(0, TASKS.length)]!, pose: [...ee, 0, 0, 0, 1, -1], block });
  }
  return out;
}

export async function generateTiny(outRoot: string, sizes: readonly number[] = TINY_SIZES, episodes = 16): Promise<string[]> {
  const eps = tinyEpisodes(episodes);
  const dirs: string[] = [];
  for (const size of sizes) {
    const dir = join(outRoot, `tiny-${size}`);
    await mkdir(join(dir, 'dataset'), { recursive: true });
    const files = {
      world_model: buildTinyWorldModel({ size, chunk: CHUNK, contextFrames: CONTEXT }),
      reward: buildTinyReward(size),
      action_adapter: buildTinyActionAdapter(CHUNK),
    };
    const entries: Record<string, { path: string; sha256: string }> = {};
    for (const [key, bytes] of Object.entries(files)) {
      await writeFile(join(dir, `${key}.onnx`), bytes);
      entries[key] = { path: `${key}.onnx`, sha256: sha256(bytes) };
    }
    const dataset: DatasetFile = { format: DATASET_FORMAT, episodes: [] };
    for (const [i, ep] of eps.entries()) {
      const image = `ep_${String(i).padStart(3, '0')}.png`;
      const frame = renderTiny({ ee: ep.pose.slice(0, 3) as [number, number, number], gripperClosed: false, block: ep.block }, size);
      await sharp(frame, { raw: { width: size, height: size, channels: 3 } })
        .png({ compressionLevel: 9 })
        .toFile(join(dir, 'dataset', image));
      dataset.episodes.push({ image, task: ep.task, init_ee_pose: ep.pose.map((v) => Math.fround(v)) });
    }
    await writeFile(join(dir, 'dataset', 'episodes.json'), `${JSON.stringify(dataset, null, 1)}\n`);
    const manifest: Manifest = {
      format: MANIFEST_FORMAT,
      name: `gymwire-tiny-tabletop-${size}`,
      description: 'Hand-weighted tabletop world model: reach the red block, close the gripper, lift it.',
      height: size,
      width: size,
      chunk: CHUNK,
      context: { frames: CONTEXT, selection: 'last' },
      action: { dim: 7, low: Array(7).fill(-1), high: Array(7).fill(1) },
      reward: { threshold: 0.5, coefficient: 5, relative: true },
      maxEpisodeSteps: 256,
      files: entries as Manifest['files'],
      dataset: 'dataset',
    };
    await writeFile(join(dir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    dirs.push(dir);
  }
  return dirs;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const arg = (name: string) => {
    const i = process.argv.indexOf(name);
    return i >= 0 ? process.argv[i + 1] : undefined;
  };
  const out = arg('--out') ?? fileURLToPath(new URL('../../envs/evac/assets', import.meta.url));
  const sizes = (arg('--sizes') ?? TINY_SIZES.join(',')).split(',').map(Number);
  const dirs = await generateTiny(out, sizes, Number(arg('--episodes') ?? 16));
  for (const d of dirs) console.log(d);
}
