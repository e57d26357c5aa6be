import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';

import { connect } from '../../../client/ts/client.ts';
import { decodeColumn, readDataset } from '../../../client/ts/dataset/reader.ts';
import { TrajectoryWriter } from '../../../client/ts/dataset/writer.ts';
import { OnnxPolicy } from '../../../client/ts/policies/onnx.ts';
import { PolicyMismatchError, RandomPolicy } from '../../../client/ts/policy.ts';
import type { Policy } from '../../../client/ts/policy.ts';
import { Rollout } from '../../../client/ts/rollout/engine.ts';
import type { RolloutOptions } from '../../../client/ts/rollout/engine.ts';
import { Tensor } from '../../../protocol/tensor.ts';
import { CartPoleEnv } from '../../../envs/classic/cartpole.ts';
import { buildMlp, CARTPOLE_MLP, mlpWeights, writeMlp } from '../../../scripts/onnx/mlp.ts';
import { cartpoleServer, episodeSteps, sessionSteps, tempDir } from './helpers.ts';

const ENV = 'gymwire/CartPole-v1';
let tmp: Awaited<ReturnType<typeof tempDir>>;
let model: string;
let policy: OnnxPolicy;

beforeAll(async () => {
  tmp = await tempDir('gymwire-rollout-');
  model = join(tmp.dir, 'cartpole.onnx');
  await writeMlp(model);
  // The worker path, the one a model of any real size takes (policy.test covers the caller's-thread one).
  policy = await OnnxPolicy.load(model, { seed: 1, thread: 'worker' });
});
afterAll(async () => {
  await policy.close();
  await tmp.cleanup();
});

const cartpole = new CartPoleEnv();

async function collect(
  name: string,
  opts: Omit<RolloutOptions, 'envId' | 'writer' | 'policy'> & { policy?: RolloutOptions['policy'] },
  made?: (r: Rollout) => void,
) {
  const writer = await TrajectoryWriter.create(join(tmp.dir, name), {
    envId: ENV,
    observationSpace: cartpole.observationSpace,
    actionSpace: cartpole.actionSpace,
  });
  const rollout = new Rollout({ envId: ENV, writer, policy: opts.policy ?? policy, ...opts });
  made?.(rollout);
  const summary = await rollout.run();
  const manifest = await writer.close({ policy: summary.policy });
  return { summary, manifest, ds: await readDataset(join(tmp.dir, name)), rollout };
}

/** Every session's counters run 0..k-1 with no gap and no repeat; every episode's steps run 0..n-1. */
function expectNoLossNoRepeat(ds: Awaited<ReturnType<typeof readDataset>>): Map<string, number[]> {
  const bySession = sessionSteps(ds);
  for (const steps of bySession.values()) expect([...steps].sort((a, b) => a - b)).toEqual(steps.map((_, i) => i));
  for (const steps of episodeSteps(ds).values()) expect(steps).toEqual(steps.map((_, i) => i));
  return bySession;
}

describe('Rollout', () => {
  it('collects over 64 sessions with an ONNX policy, losing no step and repeating none', async () => {
    const srv = await cartpoleServer();
    const client = await connect(srv.url);
    try {
      const { summary, manifest, ds } = await collect('r64', {
        targets: [{ client, url: srv.url, sessions: 64 }],
        episodes: 200,
        groups: 2,
        seed: 0,
        closeSessions: false,
      });
      expect(summary.episodes).toBe(200);
      expect(summary.incomplete).toBe(0);
      expect(manifest.counts).toMatchObject({ episodes: 200, steps: summary.steps, incomplete: 0 });
      expect(ds.steps.numRows).toBe(summary.steps);
      const bySession = expectNoLossNoRepeat(ds);
      // The server's own per-session step counters agree with the dataset.
      const server = new Map(srv.core.listSessions().map((s) => [s.session_id, s.steps]));
      expect(bySession.size).toBe(64);
      for (const [session, steps] of bySession) expect(server.get(session)).toBe(steps.length);
      // Rows are real transitions: obs tensors, a final obs on each episode's last row, policy outputs.
      const obs = decodeColumn(ds.steps, 'obs') as Tensor[];
      expect(obs[0]).toBeInstanceOf(Tensor);
      expect(obs[0]!.shape).toEqual([4]);
      const finals = decodeColumn(ds.steps, 'final_obs');
      const terminated = decodeColumn(ds.steps, 'terminated') as boolean[];
      finals.forEach((f, i) => expect(f !== null).toBe(terminated[i]! || Boolean(ds.steps.getChild('truncated')!.get(i))));
      expect(decodeColumn(ds.steps, 'log_prob').every((v) => typeof v === 'number' && v <= 0)).toBe(true);
      expect(decodeColumn(ds.steps, 'value').every((v) => typeof v === 'number')).toBe(true);
      const returns = (ds.episodes.getChild('return')!.toArray() as Float64Array).reduce((a, b) => a + b, 0);
      expect(returns).toBeCloseTo((summary.meanReturn ?? 0) * 200, 6);
    } finally {
      await client.closeAll();
      await srv.close();
    }
  });

  it('goes on through a dropped connection: the client resumes and every episode completes', async () => {
    const srv = await cartpoleServer();
    const client = await connect(srv.url, { reconnectDelayMs: 10 });
    let dropped = false;
    try {
      const { summary, ds } = await collect('resume', {
        targets: [{ client, url: srv.url, sessions: 16 }],
        episodes: 60,
        closeSessions: false,
        onProgress: (p) => {
          if (!dropped && p.steps > 300) {
            dropped = true;
            client.simulateConnectionLoss();
          }
        },
      });
      expect(dropped).toBe(true);
      expect(summary).toMatchObject({ episodes: 60, incomplete: 0, lostSessions: 0 });
      const bySession = expectNoLossNoRepeat(ds);
      const server = new Map(srv.core.listSessions().map((s) => [s.session_id, s.steps]));
      for (const [session, steps] of bySession) expect(server.get(session)).toBe(steps.length);
    } finally {
      await client.closeAll();
      await srv.close();
    }
  });

  it('marks episodes incomplete when the server restarts without the sessions, and carries on with new ones', async () => {
    let srv = await cartpoleServer();
    const port = srv.port;
    const client = await connect(srv.url, { reconnectDelayMs: 20 });
    let restarted: Promise<void> | null = null;
    try {
      const { summary, ds, manifest } = await collect('restart', {
        targets: [{ client, url: srv.url, sessions: 8 }],
        episodes: 40,
        onProgress: (p) => {
          if (!restarted && p.steps > 100) {
            restarted = (async () => {
              await srv.close(100);
              srv = await cartpoleServer({ port });
            })();
          }
        },
      });
      expect(restarted).not.toBeNull();
      expect(summary.incomplete).toBeGreaterThan(0);
      expect(summary.recoveredSessions).toBe(8);
      expect(summary.episodes + summary.incomplete).toBe(manifest.counts.episodes);
      const status = decodeColumn(ds.episodes, 'status') as string[];
      const reasons = decodeColumn(ds.episodes, 'reason') as (string | null)[];
      status.forEach((s, i) => {
        if (s === 'incomplete') expect(reasons[i]).toMatch(/session lost/);
      });
      expectNoLossNoRepeat(ds);
      // Incomplete episodes keep their steps, and none of their rows claims an end.
      const ids = ds.episodes.getChild('episode_id')!.toArray() as BigInt64Array;
      const epOf = ds.steps.getChild('episode_id')!.toArray() as BigInt64Array;
      const ended = decodeColumn(ds.steps, 'terminated').map((t, i) => Boolean(t) || Boolean(ds.steps.getChild('truncated')!.get(i)));
      status.forEach((s, i) => {
        if (s !== 'incomplete') return;
        const rows = [...epOf.keys()].filter((r) => epOf[r] === ids[i]);
        expect(rows.length).toBeGreaterThan(0);
        expect(rows.some((r) => ended[r])).toBe(false);
      });
    } finally {
      await client.close();
      await srv.close();
    }
  });

  it('refuses a model that does not fit the observation space before any step', async () => {
    const srv = await cartpoleServer();
    const client = await connect(srv.url);
    const wrong = join(tmp.dir, 'wrong.onnx');
    await writeFile(wrong, buildMlp(mlpWeights({ ...CARTPOLE_MLP, obsDim: 6 })));
    const p = await OnnxPolicy.load(wrong);
    try {
      const rollout = new Rollout({ envId: ENV, targets: [{ client, url: srv.url, sessions: 4 }], policy: p, episodes: 4 });
      await expect(rollout.run()).rejects.toThrow(PolicyMismatchError);
      await expect(rollout.run()).rejects.toThrow(/model input 'obs' has shape \[N, 6\] but the observation is \[4\]/);
      expect(srv.core.listSessions().every((s) => s.steps === 0)).toBe(true);
    } finally {
      await p.close();
      await client.close();
      await srv.close();
    }
  });

  it('fails loudly on a policy error or a refused action, keeping the episodes collected so far', async () => {
    const srv = await cartpoleServer();
    const client = await connect(srv.url);
    try {
      let calls = 0;
      const flaky: Policy = {
        name: 'flaky',
        check: () => {},
        act: (obs) => {
          if (++calls > 20) throw new Error('the GPU fell over');
          return { actions: obs.map(() => 0) };
        },
      };
      let made: Rollout | null = null;
      await expect(
        collect('fail-policy', { targets: [{ client, url: srv.url, sessions: 4 }], policy: flaky, episodes: 100 }, (r) => (made = r)),
      ).rejects.toThrow(/the GPU fell over/);
      expect(made!.progress().steps).toBeGreaterThan(0);
      const bad: Policy = { name: 'bad', check: () => {}, act: (obs) => ({ actions: obs.map(() => 7) }) };
      await expect(collect('fail-action', { targets: [{ client, url: srv.url, sessions: 2 }], policy: bad, episodes: 4 })).rejects.toMatchObject({
        code: 'ENV_ERR_INVALID_ACTION',
      });
    } finally {
      await client.closeAll();
      await srv.close();
    }
  });

  it('stops cleanly: keep writes running episodes as incomplete, discard drops and counts them', async () => {
    const srv = await cartpoleServer();
    const client = await connect(srv.url);
    try {
      for (const mode of ['keep', 'discard', 'finish'] as const) {
        let r: Rollout | null = null;
        const { summary, manifest, ds } = await collect(
          `stop-${mode}`,
          {
            targets: [{ client, url: srv.url, sessions: 8 }],
            policy: new RandomPolicy({ seed: 2 }),
            episodes: 1000,
            onProgress: (p) => {
              if (p.steps >= 50) r?.stop(mode);
            },
          },
          (made) => (r = made),
        );
        expect(summary.steps).toBeGreaterThanOrEqual(50);
        if (mode === 'keep') {
          expect(manifest.counts.incomplete).toBeGreaterThan(0);
          expect(decodeColumn(ds.episodes, 'reason').filter((x) => x === 'stopped').length).toBe(manifest.counts.incomplete);
        } else {
          expect(manifest.counts.incomplete).toBe(0);
          if (mode === 'discard') expect(manifest.counts.discarded).toBeGreaterThan(0);
          else expect(manifest.counts.discarded).toBe(0);
        }
        expectNoLossNoRepeat(ds);
      }
    } finally {
      await client.closeAll();
      await srv.close();
    }
  });

  it('counts the same episodes, lengths and returns without a writer (transitions are then not kept)', async () => {
    const srv = await cartpoleServer();
    const client = await connect(srv.url);
    try {
      const opts = { targets: [{ client, url: srv.url, sessions: 6 }], episodes: 30, groups: 1, seed: 4 };
      const withWriter = await collect('with-writer', { ...opts, policy: new RandomPolicy({ seed: 9 }) });
      const episodes: { id: number; steps: number; return: number }[] = [];
      const bare = await new Rollout({ envId: ENV, ...opts, policy: new RandomPolicy({ seed: 9 }), onEpisode: (e) => episodes.push(e) }).run();
      expect(bare.returns).toEqual(withWriter.summary.returns);
      expect(bare.steps).toBe(withWriter.summary.steps);
      expect(bare.meanLength).toBe(withWriter.summary.meanLength);
      const ids = withWriter.ds.episodes.getChild('episode_id')!.toArray() as BigInt64Array;
      const lengths = new Map(Array.from(ids, (id, i) => [Number(id), withWriter.ds.episodes.getChild('steps')!.get(i) as number]));
      expect(episodes).toHaveLength(lengths.size);
      for (const e of episodes) expect(e.steps).toBe(lengths.get(e.id));
    } finally {
      await client.closeAll();
      await srv.close();
    }
  });
});
