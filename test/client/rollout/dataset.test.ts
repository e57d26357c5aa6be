import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connect } from '../../../client/ts/client.ts';
import { decodeColumn, readDataset } from '../../../client/ts/dataset/reader.ts';
import { DatasetExistsError, TrajectoryWriter } from '../../../client/ts/dataset/writer.ts';
import type { EpisodeRecord, StepRecord } from '../../../client/ts/dataset/writer.ts';
import { RandomPolicy } from '../../../client/ts/policy.ts';
import { Rollout } from '../../../client/ts/rollout/engine.ts';
import { CartPoleEnv } from '../../../envs/classic/cartpole.ts';
import { box, dict, discrete, text } from '../../../protocol/spaces.ts';
import { Tensor } from '../../../protocol/tensor.ts';
import { cartpoleServer, sessionSteps, tempDir } from './helpers.ts';

let tmp: Awaited<ReturnType<typeof tempDir>>;
beforeAll(async () => {
  tmp = await tempDir('gymwire-dataset-');
});
afterAll(() => tmp.cleanup());

const obsSpace = dict({
  camera: box({ low: 0, high: 255, shape: [48, 64, 3], dtype: 'uint8' }),
  state: box({ low: -1, high: 1, shape: [2, 3], dtype: 'float64' }),
  mission: text(32),
});

function image(k: number): Tensor {
  return Tensor.from(
    'uint8',
    [48, 64, 3],
    Array.from({ length: 48 * 64 * 3 }, (_, i) => (i * 7 + k * 13) % 256),
  );
}

function episode(id: number, n: number, status: EpisodeRecord['status']): EpisodeRecord {
  const steps: StepRecord[] = Array.from({ length: n }, (_, t) => ({
    obs: { camera: image(id * 100 + t), state: Tensor.from('float64', [2, 3], [t, -t, 0.5, Infinity, 0, 1]), mission: `go ${t}` },
    action: t % 3,
    reward: t * 0.5,
    terminated: status === 'terminated' && t === n - 1,
    truncated: status === 'truncated' && t === n - 1,
    logProb: t === 0 ? null : -0.5,
    value: 1.25,
    info: { t, big: 2n ** 60n, tensor: Tensor.from('int32', [2], [1, 2]), final_obs: 'dropped' },
    sessionStep: t,
    ...(status !== 'incomplete' && t === n - 1 ? { finalObs: { camera: image(999), state: Tensor.zeros('float64', [2, 3]), mission: 'end' } } : {}),
  }));
  return { id, session: `s${id}`, server: 'ws://x', seed: id === 0 ? 42 : null, status, reason: status === 'incomplete' ? 'stopped' : null, steps };
}

describe('TrajectoryWriter', () => {
  it('writes Dict observations as per-leaf columns with metadata; PNG images round-trip exactly', async () => {
    const dir = join(tmp.dir, 'dict');
    const writer = await TrajectoryWriter.create(dir, {
      envId: 'test/Dict-v0',
      observationSpace: obsSpace,
      actionSpace: discrete(3),
      images: 'png',
      rowsPerFile: 8,
    });
    writer.add(episode(0, 5, 'terminated'));
    writer.add(episode(1, 4, 'truncated'));
    writer.add(episode(2, 3, 'incomplete'));
    const manifest = await writer.close({ policy: 'test' });
    expect(manifest.steps_files).toEqual(['steps-00000.arrow', 'steps-00001.arrow']);
    expect(manifest.counts).toMatchObject({ steps: 12, episodes: 3, terminated: 1, truncated: 1, incomplete: 1 });
    expect(manifest.columns['obs.camera']).toEqual({ encoding: 'png', dtype: 'uint8', shape: [48, 64, 3] });
    const ds = await readDataset(dir);
    const names = ds.steps.schema.fields.map((f) => f.name);
    expect(names).toEqual(
      expect.arrayContaining(['obs.camera', 'obs.state', 'obs.mission', 'final_obs.camera', 'action', 'reward', 'log_prob', 'value', 'info', 'session_step']),
    );
    const field = ds.steps.schema.fields.find((f) => f.name === 'obs.state')!;
    expect(Object.fromEntries(field.metadata)).toEqual({ 'gymwire.encoding': 'raw', 'gymwire.dtype': 'float64', 'gymwire.shape': '[2,3]' });
    expect(ds.steps.schema.metadata.get('gymwire.format')).toBe('gymwire.trajectories');
    const pngs = decodeColumn(ds.steps, 'obs.camera') as Uint8Array[];
    const { data } = await sharp(pngs[6]!).raw().toBuffer({ resolveWithObject: true });
    expect(Buffer.compare(data, Buffer.from(image(101).bytes()))).toBe(0);
    const states = decodeColumn(ds.steps, 'obs.state') as Tensor[];
    expect(states[2]!.toNumbers()).toEqual([2, -2, 0.5, Infinity, 0, 1]);
    expect(decodeColumn(ds.steps, 'obs.mission')[1]).toBe('go 1');
    expect(decodeColumn(ds.steps, 'action').slice(0, 4)).toEqual([0, 1, 2, 0]);
    expect(decodeColumn(ds.steps, 'log_prob').slice(0, 2)).toEqual([null, -0.5]);
    const finals = decodeColumn(ds.steps, 'final_obs.camera');
    expect(finals.map((f) => f !== null)).toEqual([false, false, false, false, true, false, false, false, true, false, false, false]);
    const info = decodeColumn(ds.steps, 'info')[0] as Record<string, unknown>;
    expect(info).toEqual({ t: 0, big: '1152921504606846976', tensor: { __tensor__: { dtype: 'int32', shape: [2], data: [1, 2] } } });
    expect(decodeColumn(ds.episodes, 'status')).toEqual(['terminated', 'truncated', 'incomplete']);
    expect(decodeColumn(ds.episodes, 'file')).toEqual(['steps-00000.arrow', 'steps-00001.arrow', 'steps-00001.arrow']);
    expect(decodeColumn(ds.episodes, 'seed')).toEqual([42, null, null]);
  });

  it('holds back a producer while the queue is over its high-water mark', async () => {
    const writer = await TrajectoryWriter.create(join(tmp.dir, 'bp'), {
      envId: 'x',
      observationSpace: obsSpace,
      actionSpace: discrete(3),
      images: 'png',
      highWaterSteps: 10,
    });
    writer.add(episode(0, 30, 'terminated'));
    expect(writer.pendingSteps).toBe(30);
    let released = false;
    const ready = writer.ready().then(() => (released = true));
    await new Promise((r) => setImmediate(r));
    expect(released).toBe(false);
    await ready;
    expect(writer.pendingSteps).toBeLessThan(10);
    await writer.close({ policy: 'x' });
  });

  it('refuses a directory that holds a dataset unless overwrite, which removes only dataset files', async () => {
    const dir = join(tmp.dir, 'again');
    const make = (overwrite?: boolean) =>
      TrajectoryWriter.create(dir, { envId: 'x', observationSpace: obsSpace, actionSpace: discrete(3), ...(overwrite === undefined ? {} : { overwrite }) });
    const first = await make();
    first.add(episode(0, 5, 'terminated'));
    await first.close({ policy: 'x' });
    await writeFile(join(dir, 'steps-00009.arrow'), 'a stale part');
    await writeFile(join(dir, 'notes.txt'), 'mine');
    const before = await readFile(join(dir, 'dataset.json'), 'utf8');
    await expect(make()).rejects.toThrow(DatasetExistsError);
    await expect(make(false)).rejects.toThrow(/already holds a dataset \(dataset\.json, episodes\.arrow, steps-00000\.arrow and 1 more\)/);
    expect(await readFile(join(dir, 'dataset.json'), 'utf8')).toBe(before);
    const second = await make(true);
    second.add(episode(1, 3, 'terminated'));
    const manifest = await second.close({ policy: 'x' });
    expect(manifest.counts.steps).toBe(3);
    expect((await readdir(dir)).sort()).toEqual(['dataset.json', 'episodes.arrow', 'notes.txt', 'steps-00000.arrow']);
  });
});

describe('Rollout over two servers', () => {
  it('splits sessions across servers and records which server each step came from', async () => {
    const [a, b] = await Promise.all([cartpoleServer(), cartpoleServer()]);
    const [ca, cb] = await Promise.all([connect(a.url), connect(b.url)]);
    try {
      const env = new CartPoleEnv();
      const writer = await TrajectoryWriter.create(join(tmp.dir, 'two'), {
        envId: 'gymwire/CartPole-v1',
        observationSpace: env.observationSpace,
        actionSpace: env.actionSpace,
      });
      const summary = await new Rollout({
        envId: 'gymwire/CartPole-v1',
        targets: [
          { client: ca, url: a.url, sessions: 3 },
          { client: cb, url: b.url, sessions: 5 },
        ],
        policy: new RandomPolicy({ seed: 5 }),
        episodes: 24,
        groups: 3,
        seed: 10,
        writer,
      }).run();
      const manifest = await writer.close({ policy: summary.policy });
      expect(summary.episodes).toBe(24);
      expect(manifest.servers.sort()).toEqual([a.url, b.url].sort());
      const ds = await readDataset(join(tmp.dir, 'two'));
      const servers = decodeColumn(ds.steps, 'server') as string[];
      const sessions = decodeColumn(ds.steps, 'session') as string[];
      const perServer = new Map<string, Set<string>>();
      servers.forEach((s, i) => perServer.set(s, (perServer.get(s) ?? new Set()).add(sessions[i]!)));
      expect(perServer.get(a.url)!.size).toBe(3);
      expect(perServer.get(b.url)!.size).toBe(5);
      for (const steps of sessionSteps(ds).values()) expect([...steps].sort((x, y) => x - y)).toEqual(steps.map((_, i) => i));
    } finally {
      await Promise.all([ca.close(), cb.close()]);
      await Promise.all([a.close(), b.close()]);
    }
  });
});
