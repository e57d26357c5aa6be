import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';

import { Tensor } from '../../../protocol/tensor.ts';
import { Registry } from '../../../envs/core/registry.ts';
import type { EvacObs } from '../../../envs/evac/env.ts';
import { saveEpisodeAnimation } from '../../../envs/evac/export.ts';
import { EVAC_ENV_ID, registerEvac } from '../../../envs/evac/index.ts';
import { filled } from './helpers.ts';

const registry = new Registry();
const runtime = registerEvac(registry);
let tmp = '';
afterAll(async () => {
  await runtime.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('saveEpisodeAnimation', () => {
  it('writes an episode as animated WebP and GIF, one page per frame', async () => {
    const env = await registry.make(EVAC_ENV_ID, { return_all_frames: true });
    const { obs } = await env.reset({ seed: 2 });
    const frames: Tensor[] = [(obs as EvacObs).full_image];
    for (let k = 0; k < 2; k++) {
      const s = await env.step(filled(0.5, k === 0 ? -1 : 1));
      const all = s.info.frames as Tensor<'uint8'>;
      for (let t = 0; t < 8; t++) frames.push(new Tensor('uint8', [64, 64, 3], all.data.subarray(t * 64 * 64 * 3, (t + 1) * 64 * 64 * 3)));
    }
    tmp = await mkdtemp(join(tmpdir(), 'evac-anim-'));
    const webp = join(tmp, 'episode.webp');
    await saveEpisodeAnimation(frames, webp, { fps: 8 });
    const meta = await sharp(await readFile(webp), { animated: true }).metadata();
    expect(meta.format).toBe('webp');
    expect(meta.pages).toBe(17);
    expect(meta.pageHeight).toBe(64);
    expect(meta.delay?.[0]).toBe(125);

    const gif = await saveEpisodeAnimation(new Tensor('uint8', [3, 64, 64, 3], Buffer.concat(frames.slice(0, 3).map((f) => f.data as Uint8Array))), null, {
      format: 'gif',
    });
    const gmeta = await sharp(gif, { animated: true }).metadata();
    expect(gmeta.format).toBe('gif');
    expect(gmeta.pages).toBe(3);
  });

  it('refuses frames of different shapes', async () => {
    const a = new Tensor('uint8', [4, 4, 3], new Uint8Array(48));
    const b = new Tensor('uint8', [5, 4, 3], new Uint8Array(60));
    await expect(saveEpisodeAnimation([a, b], null)).rejects.toThrow(/every frame must be uint8 \[4, 4, 3\|4\]/);
  });
});
