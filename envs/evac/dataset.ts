/**
 * The reset dataset: a folder with `episodes.json` and one first frame per episode (PNG or JPEG),
 * EVAC's reset contract (first frame, task text, initial end-effector pose [x, y, z, qx, qy, qz,
 * qw, gripper]). Frames are decoded once with sharp and resized to the model's resolution when they
 * differ (bilinear, as RLinf resizes).
 *
 * @example
 * const episodes = await readResetDataset('envs/evac/assets/tiny-64/dataset', 64, 64);
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { z } from 'zod';

import { ModelContractError, unreadableReason } from './contract.ts';
import { resizeLikeRLinf } from './resize.ts';
import type { ConfinePath } from '../core/data-roots.ts';

export const DATASET_FORMAT = 'gymwire.evac-reset/v1';

export const DatasetSchema = z
  .object({
    format: z.literal(DATASET_FORMAT),
    episodes: z
      .array(
        z
          .object({
            image: z.string().regex(/\.(png|jpe?g)$/i, 'a .png or .jpg file name'),
            task: z.string(),
            init_ee_pose: z.array(z.number()).length(8),
          })
          .strict(),
      )
      .min(1),
  })
  .strict();
export type DatasetFile = z.infer<typeof DatasetSchema>;

export interface ResetEpisode {
  task: string;
  /** [x, y, z, qx, qy, qz, qw, gripper] */
  initPose: number[];
  /** uint8 [H,W,3] */
  frame: Uint8Array;
}

/** How reset frames reach the model's size (the `reset_resize` kwarg). */
export type ResetResize = 'sharp' | 'rlinf' | 'rlinf-1-thread';

/**
 * `opts.confine`: where the loader may read (a server's data roots for a client-named folder).
 * `opts.resize`: `sharp` (bilinear, the default), `rlinf` (RLinf's float32 bilinear and uint8
 * truncation as PyTorch's CPU kernels compute them with more than one thread, resize.ts) or
 * `rlinf-1-thread` (the same on one torch thread, where PyTorch picks its other kernel for some
 * sizes); with `sharp`, a frame already at the model's size is decoded as is.
 */
export async function readResetDataset(
  dir: string,
  height: number,
  width: number,
  opts: { confine?: ConfinePath; resize?: ResetResize } = {},
): Promise<ResetEpisode[]> {
  const confine = opts.confine ?? ((p: string) => p);
  const path = join(dir, 'episodes.json');
  const file = confine(path);
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new ModelContractError(`cannot read reset dataset ${path}: ${unreadableReason(err)}`);
  }
  const parsed = DatasetSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ModelContractError(`${path} is not a ${DATASET_FORMAT} file: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  return Promise.all(
    parsed.data.episodes.map(async (ep) => {
      const file = join(dir, ep.image);
      const decode = (img: ReturnType<typeof sharp>) =>
        img
          .raw()
          .toBuffer({ resolveWithObject: true })
          .catch((err: Error) => {
            throw new ModelContractError(`cannot decode reset frame ${file}: ${err.message}`);
          });
      const image = sharp(confine(file)).removeAlpha();
      if (opts.resize === 'rlinf' || opts.resize === 'rlinf-1-thread') {
        const { data, info } = await decode(image);
        const rgb = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
        const torchThreads = opts.resize === 'rlinf' ? 2 : 1;
        return { task: ep.task, initPose: ep.init_ee_pose, frame: resizeLikeRLinf(rgb, info.height, info.width, height, width, { torchThreads }) };
      }
      const { data } = await decode(image.resize(width, height, { fit: 'fill', kernel: 'linear' }));
      return { task: ep.task, initPose: ep.init_ee_pose, frame: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
    }),
  );
}
