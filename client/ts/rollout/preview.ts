/**
 * Preview frames for `gymwire rollout --preview`: the first camera-like image in an observation
 * (a uint8 [H,W,3|4] tensor, or the last frame of a [T,H,W,3] stack), and an animated WebP of
 * collected frames (sharp, one page per frame).
 *
 * @example
 * const frame = findImage(obs);            // Tensor<'uint8'> [H, W, 3] or null
 * await writeAnimatedWebp('preview.webp', frames, { fps: 10 });
 */
import { writeFile } from 'node:fs/promises';

import sharp from 'sharp';

import type { Space } from '../../../protocol/spaces.ts';
import { Tensor } from '../../../protocol/tensor.ts';

/** The first RGB(A) image found in a value, depth-first in key order (camera before BEV in most envs). */
export function findImage(value: unknown, depth = 0): Tensor | null {
  if (value instanceof Tensor) {
    if (value.dtype !== 'uint8') return null;
    const s = value.shape;
    if (s.length === 3 && (s[2] === 3 || s[2] === 4)) return value;
    if (s.length === 4 && (s[3] === 3 || s[3] === 4)) {
      const per = s[1]! * s[2]! * s[3]!;
      return new Tensor('uint8', s.slice(1), (value.data as Uint8Array).subarray((s[0]! - 1) * per, s[0]! * per));
    }
    return null;
  }
  if (depth > 4 || value === null || typeof value !== 'object' || value instanceof Uint8Array) return null;
  for (const v of Array.isArray(value) ? value : Object.values(value)) {
    const found = findImage(v, depth + 1);
    if (found) return found;
  }
  return null;
}

/** True when some leaf of the space is a uint8 RGB(A) image or a stack of them. */
export function spaceHasImage(space: Space): boolean {
  if (space.type === 'box') {
    const s = space.shape;
    return space.dtype === 'uint8' && (s.length === 3 || s.length === 4) && (s[s.length - 1] === 3 || s[s.length - 1] === 4);
  }
  if (space.type === 'dict') return Object.values(space.spaces).some(spaceHasImage);
  if (space.type === 'tuple') return space.spaces.some(spaceHasImage);
  return false;
}

/** Writes frames (uint8 [H,W,3|4], any sizes) as a looping animated WebP, scaled to the first frame's size (at most `maxWidth` wide). */
export async function writeAnimatedWebp(
  path: string,
  frames: readonly Tensor[],
  opts: { fps?: number; maxWidth?: number; quality?: number } = {},
): Promise<{ frames: number; width: number; height: number; bytes: number }> {
  if (frames.length === 0) throw new Error('no frames to write');
  const first = frames[0]!;
  const scale = Math.min(1, (opts.maxWidth ?? 320) / first.shape[1]!);
  const width = Math.max(1, Math.round(first.shape[1]! * scale));
  const height = Math.max(1, Math.round(first.shape[0]! * scale));
  const pages = await Promise.all(
    frames.map((f) =>
      sharp(Buffer.from(f.bytes()), { raw: { width: f.shape[1]!, height: f.shape[0]!, channels: f.shape[2] as 3 | 4 } })
        .removeAlpha()
        .resize(width, height, { fit: 'fill' })
        .raw()
        .toBuffer(),
    ),
  );
  const strip = Buffer.concat(pages);
  const delay = Math.round(1000 / (opts.fps ?? 10));
  const out = await sharp(strip, { raw: { width, height: height * frames.length, channels: 3, pageHeight: height } })
    .webp({ loop: 0, delay: frames.map(() => delay), quality: opts.quality ?? 70 })
    .toBuffer();
  await writeFile(path, out);
  return { frames: frames.length, width, height, bytes: out.byteLength };
}
