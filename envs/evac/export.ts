/**
 * Saves an episode's frames as an animated WebP or GIF with sharp (frames stacked as pages of one
 * tall raw image). Use it on `info.frames` (return_all_frames) or on the observed `full_image`s.
 *
 * @example
 * await saveEpisodeAnimation(frames, 'episode.webp', { fps: 10 });
 */
import { writeFile } from 'node:fs/promises';
import sharp from 'sharp';

import { Tensor } from '../../protocol/tensor.ts';

export interface AnimationOptions {
  /** 'webp' or 'gif'; default from the file extension (WebP unless it ends in .gif). */
  format?: 'webp' | 'gif';
  fps?: number;
  /** 0 loops forever. */
  loop?: number;
}

/** Writes the animation to `path`, or returns its bytes when `path` is null. Frames: uint8 [H,W,3] tensors, or one [T,H,W,3]. */
export async function saveEpisodeAnimation(frames: readonly Tensor[] | Tensor, path: string | null, opts: AnimationOptions = {}): Promise<Uint8Array> {
  const list = frames instanceof Tensor ? splitFrames(frames) : [...frames];
  if (list.length === 0) throw new Error('an animation needs at least one frame');
  const [H, W, Ch] = list[0]!.shape as [number, number, number];
  for (const f of list) {
    if (f.dtype !== 'uint8' || f.shape.length !== 3 || f.shape[0] !== H || f.shape[1] !== W || f.shape[2] !== Ch || (Ch !== 3 && Ch !== 4)) {
      throw new Error(`every frame must be uint8 [${H}, ${W}, 3|4] like the first; got ${f.dtype} [${f.shape.join(', ')}]`);
    }
  }
  const stacked = new Uint8Array(list.length * H * W * Ch);
  list.forEach((f, i) => stacked.set(f.data as Uint8Array, i * H * W * Ch));
  const format = opts.format ?? (path?.toLowerCase().endsWith('.gif') ? 'gif' : 'webp');
  const delay = Array(list.length).fill(Math.round(1000 / (opts.fps ?? 10)));
  const loop = opts.loop ?? 0;
  let img = sharp(stacked, { raw: { width: W, height: H * list.length, channels: Ch as 3 | 4, pageHeight: H } });
  img = format === 'gif' ? img.gif({ delay, loop }) : img.webp({ delay, loop, quality: 80 });
  const buf = await img.toBuffer();
  if (path) await writeFile(path, buf);
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}

function splitFrames(t: Tensor): Tensor<'uint8'>[] {
  if (t.dtype !== 'uint8' || t.shape.length !== 4) throw new Error(`expected uint8 frames [T, H, W, 3], got ${t.dtype} [${t.shape.join(', ')}]`);
  const [T, H, W, C] = t.shape as [number, number, number, number];
  const n = H * W * C;
  return Array.from({ length: T }, (_, i) => new Tensor('uint8', [H, W, C], (t.data as Uint8Array).subarray(i * n, (i + 1) * n)));
}
