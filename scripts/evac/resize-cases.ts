/**
 * gymwire's side of the PyTorch resize comparison: the source frames of
 * scripts/evac/torch_resize_reference.py (same hash, same pixels) and what envs/evac/resize.ts
 * makes of them. test/envs/evac/resize.test.ts imports it; the torch-marked pytest
 * (client/python/tests/test_evac_resize_torch.py) runs it as a command:
 *
 *   echo '[{"source":{"height":40,"width":56,"kind":"ramp","seed":4},"size":[64,64],"threads":2}]' \
 *     | npx tsx scripts/evac/resize-cases.ts
 *
 * prints one JSON array: per case the SHA-256 of the resized float32 frame, the SHA-256 of the uint8
 * observation and the observation's bytes (base64).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { resizedLikeRLinf, resizeLikeRLinf } from '../../envs/evac/resize.ts';

export interface SourceSpec {
  height: number;
  width: number;
  kind: 'noise' | 'ramp';
  seed: number;
}

export interface ResizeCase {
  source: SourceSpec;
  size: [number, number];
  threads: number;
  /** PyTorch's CPU kernel build the case ran on (scripts/evac/torch_resize_reference.py `KERNELS`); default fused. */
  kernels?: 'fused' | 'unfused';
}

export interface ResizeResult {
  resized_sha256: string;
  observed_sha256: string;
  observed_base64: string;
}

/** Chris Wellons' lowbias32 hash (the Python script's `lowbias32`). */
export function lowbias32(v: number): number {
  let x = v >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d) >>> 0;
  x ^= x >>> 15;
  x = Math.imul(x, 0x846ca68b) >>> 0;
  x ^= x >>> 16;
  return x >>> 0;
}

/** The uint8 [height, width, 3] frame `source_frame` in the Python script makes. */
export function sourceFrame({ height, width, kind, seed }: SourceSpec): Uint8Array {
  const out = new Uint8Array(height * width * 3);
  const key = lowbias32(seed);
  for (let y = 0, i = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      for (let c = 0; c < 3; c++, i++) {
        const h = lowbias32((i ^ key) >>> 0);
        out[i] = kind === 'noise' ? h >>> 24 : (3 * y + 2 * x + 85 * c + (h >>> 29)) % 256;
      }
    }
  }
  return out;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** Resizes one case as `reset_resize: 'rlinf'` does. */
export function runCase({ source, size: [outH, outW], threads, kernels }: ResizeCase): ResizeResult {
  const rgb = sourceFrame(source);
  const options = { torchThreads: threads, torchKernels: kernels };
  const resized = resizedLikeRLinf(rgb, source.height, source.width, outH, outW, options);
  const observed = resizeLikeRLinf(rgb, source.height, source.width, outH, outW, options);
  return {
    resized_sha256: sha256(new Uint8Array(resized.buffer, resized.byteOffset, resized.byteLength)), // little-endian hosts, as the fixture
    observed_sha256: sha256(observed),
    observed_base64: Buffer.from(observed).toString('base64'),
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const cases = JSON.parse(readFileSync(0, 'utf8')) as ResizeCase[];
  process.stdout.write(`${JSON.stringify(cases.map(runCase))}\n`);
}
