/**
 * Rollouts that meet a failure end cleanly: a full disk (a part file on /dev/full, which fails every
 * write with ENOSPC, as a full disk does) keeps every finished part readable, removes the unfinished
 * one and closes the sessions; a server gone for good makes `gymwire rollout` exit non-zero with a
 * message.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { lstat, readFile, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connect } from '../../../client/ts/client.ts';
import { readDataset } from '../../../client/ts/dataset/reader.ts';
import { DatasetWriteError, TrajectoryWriter } from '../../../client/ts/dataset/writer.ts';
import type { DatasetManifest } from '../../../client/ts/dataset/writer.ts';
import { RandomPolicy } from '../../../client/ts/policy.ts';
import { Rollout } from '../../../client/ts/rollout/engine.ts';
import { CartPoleEnv } from '../../../envs/classic/cartpole.ts';
import { cartpoleServer, tempDir } from './helpers.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const ENV = 'gymwire/CartPole-v1';
const cartpole = new CartPoleEnv();
let tmp: Awaited<ReturnType<typeof tempDir>>;

beforeAll(async () => {
  tmp = await tempDir('gymwire-failures-');
});
afterAll(async () => {
  await tmp.cleanup();
});

describe('rollout failures', () => {
  it.skipIf(!existsSync('/dev/full'))(
    'ends cleanly on a full disk: finished parts readable, the unfinished one removed, sessions closed',
    async () => {
      const srv = await cartpoleServer();
      const client = await connect(srv.url);
      const dir = join(tmp.dir, 'full');
      try {
        const writer = await TrajectoryWriter.create(dir, {
          envId: ENV,
          observationSpace: cartpole.observationSpace,
          actionSpace: cartpole.actionSpace,
          rowsPerFile: 200,
          rowsPerBatch: 50,
        });
        // The second part file lands on a device that is always full.
        await symlink('/dev/full', join(dir, 'steps-00001.arrow'));
        const rollout = new Rollout({
          envId: ENV,
          targets: [{ client, url: srv.url, sessions: 8 }],
          policy: new RandomPolicy({ seed: 0 }),
          episodes: 100_000,
          seed: 0,
          writer,
        });
        const ran = await rollout.run().catch((e: unknown) => e);
        expect((ran as NodeJS.ErrnoException).code).toBe('ENOSPC');
        expect(srv.core.sessionCount).toBe(0);
        const closed = await writer.close({ policy: 'random' }).catch((e: unknown) => e);
        expect(closed).toBeInstanceOf(DatasetWriteError);
        expect((closed as DatasetWriteError).message).toMatch(/ENOSPC/);
        expect((closed as DatasetWriteError).kept).toEqual(['steps-00000.arrow']);
        expect((closed as DatasetWriteError).removed).toBe('steps-00001.arrow');
        await expect(lstat(join(dir, 'steps-00001.arrow'))).rejects.toThrow(/ENOENT/);
        // What is on disk is a dataset: the manifest, the table and the finished part agree.
        const ds = await readDataset(dir);
        expect(ds.manifest.steps_files).toEqual(['steps-00000.arrow']);
        expect(ds.steps.numRows).toBe(ds.manifest.counts.steps);
        expect(ds.steps.numRows).toBeGreaterThan(0);
        expect(ds.episodes.numRows).toBe(ds.manifest.counts.episodes);
        const files = ds.episodes.getChild('file')!.toArray() as string[];
        expect(new Set(files)).toEqual(new Set(['steps-00000.arrow']));
        const stepsPerEpisode = [...(ds.episodes.getChild('steps')!.toArray() as Int32Array)].reduce((a, b) => a + b, 0);
        expect(stepsPerEpisode).toBe(ds.steps.numRows);
      } finally {
        await client.close();
        await srv.close();
      }
    },
    60_000,
  );

  it('exits non-zero with a message when its server is gone for good', async () => {
    const srv = await cartpoleServer();
    const dir = join(tmp.dir, 'lost');
    const cli = spawn(
      process.execPath,
      [
        'bin/gymwire.js',
        'rollout',
        '--url',
        srv.url,
        '--env',
        ENV,
        '--sessions',
        '4',
        '--episodes',
        '1000000',
        '--out',
        dir,
        '--reconnect-timeout',
        '500',
        '--no-progress',
      ],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    cli.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((r) => cli.once('exit', (code) => r(code)));
    try {
      // Collecting: the sessions are made and stepping.
      while (srv.core.sessionCount < 4) await new Promise((r) => setTimeout(r, 50));
      await new Promise((r) => setTimeout(r, 300));
      // The server dies without a word (no shutdown event, no close frame) and never comes back.
      await srv.transport.close();
      expect(await exited).not.toBe(0);
      expect(stderr).toMatch(/lost the server at ws:\/\/127\.0\.0\.1:\d+/);
      // The episodes collected before are kept, as incomplete where they were cut.
      const manifest = JSON.parse(await readFile(join(dir, 'dataset.json'), 'utf8')) as DatasetManifest;
      expect(manifest.counts.episodes).toBeGreaterThan(0);
      expect(manifest.counts.incomplete).toBeGreaterThan(0);
    } finally {
      if (cli.exitCode === null) cli.kill('SIGKILL');
      await srv.close(100);
    }
  }, 120_000);
});
