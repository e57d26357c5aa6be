import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';

import sharp from 'sharp';
import { describe, expect, it } from 'vitest';

import { registerRollout, runRolloutCommand } from '../../../bin/commands/rollout.ts';
import type { RolloutCliOptions } from '../../../bin/commands/rollout.ts';
import { readDataset } from '../../../client/ts/dataset/reader.ts';
import { cartpoleServer, tempDir } from './helpers.ts';
import { Command } from 'commander';

function sink(): { stream: Writable; text(): string } {
  let buf = '';
  return {
    stream: new Writable({
      write(chunk: Buffer, _enc, cb) {
        buf += chunk.toString();
        cb();
      },
    }),
    text: () => buf,
  };
}

describe('gymwire rollout', () => {
  it('registers its options on the program', () => {
    const program = new Command();
    registerRollout(program);
    const cmd = program.commands.find((c) => c.name() === 'rollout')!;
    for (const flag of ['--url', '--env', '--policy', '--sessions', '--episodes', '--out', '--preview', '--images', '--groups', '--busy-poll-us']) {
      expect(cmd.options.some((o) => o.long === flag)).toBe(true);
    }
  });

  it('collects a dataset, prints a summary table and writes an animated WebP preview', async () => {
    const srv = await cartpoleServer();
    const tmp = await tempDir('gymwire-cli-');
    const out = sink();
    try {
      const dir = join(tmp.dir, 'ds');
      const opts: RolloutCliOptions = {
        url: [srv.url],
        env: 'gymwire/CartPole-v1',
        kwargs: '{}',
        policy: 'random',
        device: 'cpu',
        sessions: '8',
        episodes: '12',
        out: dir,
        images: 'raw',
        groups: '2',
        seed: '0',
        onStop: 'keep',
        preview: true,
        previewEpisodes: '2',
        progress: false,
      };
      const summary = await runRolloutCommand(opts, out.stream);
      expect(summary.episodes).toBe(12);
      expect(out.text()).toMatch(/episodes complete\s+\|\s+12/);
      expect(out.text()).toMatch(/preview\s+\|.*preview\.webp/);
      const ds = await readDataset(dir);
      expect(ds.manifest.counts.episodes).toBe(12);
      expect(ds.manifest.policy).toBe('random');
      const meta = await sharp(await readFile(join(dir, 'preview.webp')), { animated: true }).metadata();
      expect(meta.format).toBe('webp');
      expect(meta.pages).toBeGreaterThan(5);
      expect((await stat(join(dir, 'preview.webp'))).size).toBeGreaterThan(100);
      await expect(runRolloutCommand({ ...opts, policy: 'nonsense' }, out.stream)).rejects.toThrow(/unknown policy "nonsense"/);
      // The same --out again: refused, the first dataset intact; --overwrite replaces it.
      await expect(runRolloutCommand({ ...opts, preview: undefined }, out.stream)).rejects.toThrow(/already holds a dataset.*--overwrite/);
      expect((await readDataset(dir)).manifest.counts.episodes).toBe(12);
      expect((await runRolloutCommand({ ...opts, preview: undefined, episodes: '3', overwrite: true }, out.stream)).episodes).toBe(3);
      expect((await readDataset(dir)).manifest.counts.episodes).toBe(3);
      await expect(runRolloutCommand({ ...opts, out: undefined, preview: undefined, kwargs: '{oops' }, out.stream)).rejects.toThrow(
        /--kwargs must be a JSON object/,
      );
      await expect(runRolloutCommand({ ...opts, out: undefined, preview: undefined, busyPollUs: 'soon' }, out.stream)).rejects.toThrow(
        /--busy-poll-us must be 'auto' or a number/,
      );
      expect((await runRolloutCommand({ ...opts, out: undefined, preview: undefined, episodes: '2', busyPollUs: '0' }, out.stream)).episodes).toBe(2);
      // A NAVSIM baseline handed in by the CLI as a policy: one-step episodes scored by the env.
      const nav = await runRolloutCommand(
        {
          ...opts,
          env: 'gymwire/NavsimEnv-v1',
          policy: 'navsim:constant-velocity',
          sessions: '2',
          episodes: '4',
          out: join(tmp.dir, 'nav'),
          preview: undefined,
        },
        out.stream,
      );
      expect(nav).toMatchObject({ episodes: 4, steps: 4, incomplete: 0 });
      expect(nav.meanReturn).toBeGreaterThan(0);
      await expect(runRolloutCommand({ ...opts, policy: 'navsim:constant-velocity', out: undefined, preview: undefined }, out.stream)).rejects.toThrow(
        /needs a NAVSIM observation/,
      );
    } finally {
      await srv.close();
      await tmp.cleanup();
    }
  });
});
