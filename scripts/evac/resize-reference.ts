/**
 * Writes test/gpu/evac_resize_reference.json: what `resizeLikeRLinf` (envs/evac/resize.ts) makes of a
 * fixed 40x56 frame at a few sizes, for test/gpu/evac_resize_check.py to compare with PyTorch's own
 * `F.interpolate` chain as RLinf's EvacEnv runs it (on the CPU and, when present, on CUDA).
 *
 *   npx tsx scripts/evac/resize-reference.ts
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { resizeLikeRLinf } from '../../envs/evac/resize.ts';

export const SOURCE = { height: 40, width: 56 };
export const SIZES: [number, number][] = [
  [40, 56],
  [64, 64],
  [32, 32],
];

/** Pixel (y, x, c) = (7y + 3x + 50c + 11) mod 256, as the fixture of the importer test. */
export function sourceFrame(): Uint8Array {
  const { height: H, width: W } = SOURCE;
  const out = new Uint8Array(H * W * 3);
  for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) for (let c = 0; c < 3; c++) out[(y * W + x) * 3 + c] = (7 * y + 3 * x + 50 * c + 11) % 256;
  return out;
}

export function resizeReference(): { source: typeof SOURCE; outputs: { height: number; width: number; hex: string }[] } {
  const src = sourceFrame();
  return {
    source: SOURCE,
    outputs: SIZES.map(([h, w]) => ({ height: h, width: w, hex: Buffer.from(resizeLikeRLinf(src, SOURCE.height, SOURCE.width, h, w)).toString('hex') })),
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(fileURLToPath(new URL('../../test/gpu/evac_resize_reference.json', import.meta.url)), `${JSON.stringify(resizeReference())}\n`);
}
