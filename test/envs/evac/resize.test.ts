/**
 * `reset_resize: 'rlinf'` against PyTorch itself: test/envs/evac/fixtures/torch-resize.json holds
 * what torch 2.10's CPU kernels made of RLinf's reset chain (scripts/evac/torch_resize_reference.py,
 * AVX2 build and the portable build), and envs/evac/resize.ts must give the same float32 bits and
 * the same bytes. client/python/tests/test_evac_resize_torch.py compares against torch live.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';

import { DataRoots } from '../../../envs/core/data-roots.ts';
import { Registry } from '../../../envs/core/registry.ts';
import { DATASET_FORMAT } from '../../../envs/evac/dataset.ts';
import type { EvacObs } from '../../../envs/evac/env.ts';
import { EVAC_ENV_ID, registerEvac } from '../../../envs/evac/index.ts';
import { bilinearLikeTorch, fma32, torchBilinearKernel } from '../../../envs/evac/resize.ts';
import type { WorldModelRuntime } from '../../../envs/evac/runtime.ts';
import type { ResizeCase } from '../../../scripts/evac/resize-cases.ts';
import { runCase, sourceFrame } from '../../../scripts/evac/resize-cases.ts';

interface FixtureCase extends ResizeCase {
  resized_sha256: string;
  observed_sha256: string;
  observed_base64?: string;
}

const fixture = JSON.parse(readFileSync(new URL('fixtures/torch-resize.json', import.meta.url), 'utf8')) as {
  torch: string;
  cpu_capability: string;
  cases: FixtureCase[];
};

const label = (c: FixtureCase) =>
  `${c.source.kind} ${c.source.height}x${c.source.width} -> ${c.size[0]}x${c.size[1]}, ${c.threads} thread(s), ${c.kernels ?? 'fused'} kernels`;

describe(`PyTorch ${fixture.torch} (${fixture.cpu_capability} and DEFAULT builds)`, () => {
  it('covers down- and upscales, the sizes EVAC models use, odd sizes and both of its kernels', () => {
    const sizes = new Set(fixture.cases.map((c) => c.size[0]));
    for (const s of [32, 64, 128, 256]) expect(sizes.has(s)).toBe(true);
    expect(fixture.cases.some((c) => c.size[0] > c.source.height)).toBe(true);
    expect(fixture.cases.some((c) => c.size[0] < c.source.height)).toBe(true);
    expect(fixture.cases.some((c) => c.size[0] % 2 === 1 && c.size[1] % 2 === 1)).toBe(true);
    const kernels = new Set(fixture.cases.map((c) => `${torchBilinearKernel(3, c.size[0], c.size[1], c.threads)} ${c.kernels ?? 'fused'}`));
    expect([...kernels].sort()).toEqual(['channels-last fused', 'channels-last unfused', 'separable fused', 'separable unfused']);
  });

  for (const c of fixture.cases) {
    it(`${label(c)}: same float32 frame and same bytes`, () => {
      const ours = runCase(c);
      if (c.observed_base64 !== undefined) {
        const theirs = Buffer.from(c.observed_base64, 'base64');
        const mine = Buffer.from(ours.observed_base64, 'base64');
        expect(mine.length).toBe(theirs.length);
        expect(mine.filter((v, i) => v !== theirs[i]).length, 'bytes that differ from PyTorch').toBe(0);
      }
      expect(ours.resized_sha256, 'SHA-256 of the resized float32 frame').toBe(c.resized_sha256);
      expect(ours.observed_sha256, 'SHA-256 of the uint8 observation').toBe(c.observed_sha256);
    });
  }
});

describe('fma32', () => {
  it('rounds a * b + c once, where rounding the double sum to float32 would round twice', () => {
    // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 lies exactly between two float32 values; +-2^-60 decides.
    const a = 1 + 2 ** -12;
    expect(fma32(a, a, 2 ** -60)).toBe(1 + 2 ** -11 + 2 ** -23);
    expect(fma32(a, a, -(2 ** -60))).toBe(1 + 2 ** -11);
    expect(Math.fround(a * a + 2 ** -60)).toBe(1 + 2 ** -11); // the double sum loses the 2^-60 first
    expect(fma32(-a, a, -(2 ** -60))).toBe(-(1 + 2 ** -11 + 2 ** -23));
    expect(fma32(3, 5, 7)).toBe(22);
    expect(fma32(Math.fround(0.1), 10, -1)).toBe(Math.fround(Math.fround(0.1) * 10 - 1)); // exact in a double: one rounding either way
  });
});

describe('bilinearLikeTorch', () => {
  it('follows PyTorch in choosing its kernel: channels-last for small outputs, one thread, or more than 3 channels', () => {
    expect(torchBilinearKernel(3, 64, 64, 8)).toBe('channels-last'); // 64 + 64 <= 128
    expect(torchBilinearKernel(3, 64, 65, 8)).toBe('separable');
    expect(torchBilinearKernel(3, 256, 256, 1)).toBe('channels-last');
    expect(torchBilinearKernel(1, 256, 256, 1)).toBe('separable');
    expect(torchBilinearKernel(4, 256, 256, 8)).toBe('channels-last');
  });

  it('refuses channel counts whose PyTorch loop it does not reproduce', () => {
    expect(() => bilinearLikeTorch(new Float32Array(8 * 4), 2, 2, 8, 4, 4)).toThrow(/8 channels; 1 to 7/);
  });

  it('keeps a frame of the same size as it is (RLinf does not call F.interpolate then)', () => {
    const rgb = sourceFrame({ height: 9, width: 7, kind: 'noise', seed: 1 });
    const x = Float32Array.from(rgb, (v) => Math.fround(v / 255));
    expect(bilinearLikeTorch(x, 9, 7, 3, 9, 7)).toEqual(x);
  });
});

describe("the env's reset_resize", () => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'gymwire-evac-resize-')));
  const runtimes: WorldModelRuntime[] = [];
  afterAll(async () => {
    for (const r of runtimes) await r.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("'rlinf' and 'rlinf-1-thread' serve PyTorch's first observation of a PNG reset frame (224x224 to the 128x128 model)", async () => {
    const cases = fixture.cases.filter((c) => c.source.height === 224 && c.size[0] === 128 && (c.kernels ?? 'fused') === 'fused');
    expect(cases.map((c) => c.threads).sort()).toEqual([1, 2]);
    const source = cases[0]!.source;
    mkdirSync(join(root, 'frames'));
    await sharp(sourceFrame(source), { raw: { width: source.width, height: source.height, channels: 3 } })
      .png()
      .toFile(join(root, 'frames/ep_000.png'));
    const episodes = [{ image: 'ep_000.png', task: 'fixture frame', init_ee_pose: [0, 0, 0.2, 0, 0, 0, 1, -1] }];
    writeFileSync(join(root, 'frames/episodes.json'), JSON.stringify({ format: DATASET_FORMAT, episodes }));
    const reg = new Registry({ dataRoots: new DataRoots([root]) });
    runtimes.push(registerEvac(reg));
    const observed: Record<string, string> = {};
    for (const resize of ['rlinf', 'rlinf-1-thread']) {
      const env = await reg.make(EVAC_ENV_ID, { resolution: 128, dataset_dir: 'frames', reset_resize: resize });
      const { obs } = await env.reset({ options: { episode_index: 0 } });
      observed[resize] = createHash('sha256')
        .update((obs as EvacObs).full_image.data)
        .digest('hex');
      await env.close?.();
    }
    expect(observed.rlinf).toBe(cases.find((c) => c.threads === 2)!.observed_sha256);
    expect(observed['rlinf-1-thread']).toBe(cases.find((c) => c.threads === 1)!.observed_sha256);
    expect(observed.rlinf).not.toBe(observed['rlinf-1-thread']); // PyTorch's two kernels round differently here
  });
});
