/**
 * The policy contract in the rollout engine, against a live server: the ActContext (session ids,
 * latest infos, episode starts) and the episodeStart hook reach the policy, PolicyOutput.extras reach
 * the dataset as extras/<name> columns, and an episode's last row keeps its own terminal info.
 */
import { describe, expect, it } from 'vitest';

import { connect } from '../../../client/ts/client.ts';
import { Rollout } from '../../../client/ts/rollout/engine.ts';
import { TrajectoryWriter } from '../../../client/ts/dataset/writer.ts';
import { decodeColumn, readDataset } from '../../../client/ts/dataset/reader.ts';
import type { ActContext, Policy, PolicyOutput } from '../../../client/ts/policy.ts';
import { Tensor } from '../../../protocol/tensor.ts';
import { cartpoleServer, tempDir } from './helpers.ts';

/** Pushes left or right by the pole's angle; records what the engine hands it. */
class RecordingPolicy implements Policy {
  readonly name = 'recording';
  readonly contexts: ActContext[] = [];
  readonly starts: string[] = [];
  /** Per session: how many observations it has acted on since its last episodeStart. */
  readonly sinceStart = new Map<string, number>();
  check(): void {}
  episodeStart(session: string): void {
    this.starts.push(session);
    this.sinceStart.set(session, 0);
  }
  act(observations: readonly unknown[], ctx: ActContext): PolicyOutput {
    this.contexts.push(ctx);
    ctx.sessions.forEach((s, i) => {
      const k = this.sinceStart.get(s) ?? -1;
      // episodeStarts is true exactly on the first observation after episodeStart.
      expect(ctx.episodeStarts![i]).toBe(k === 0);
      this.sinceStart.set(s, k + 1);
    });
    const angles = observations.map((o) => (o as Tensor).toNumbers()[2]!);
    return {
      actions: angles.map((a) => (a > 0 ? 1 : 0)),
      extras: {
        angle: angles,
        pair: angles.map((a) => Float32Array.from([a, -a])),
        grid: angles.map((a) => Tensor.from('int32', [2, 2], [1, 2, 3, a > 0 ? 1 : 0])),
      },
    };
  }
}

describe('Rollout policy contract', () => {
  it('hands the policy its context and hooks, and stores its extras as extras/<name> columns', async () => {
    const srv = await cartpoleServer();
    const client = await connect(srv.url);
    const tmp = await tempDir('gymwire-contract-');
    try {
      const first = await client.make('gymwire/CartPole-v1');
      const writer = await TrajectoryWriter.create(tmp.dir, {
        envId: 'gymwire/CartPole-v1',
        observationSpace: first.observationSpace,
        actionSpace: first.actionSpace,
      });
      await first.close();
      const policy = new RecordingPolicy();
      const summary = await new Rollout({
        envId: 'gymwire/CartPole-v1',
        targets: [{ client, url: srv.url, sessions: 3 }],
        policy,
        episodes: 7,
        seed: 0,
        writer,
      }).run();
      const manifest = await writer.close({ policy: policy.name });
      expect(summary.episodes).toBe(7);
      expect(policy.starts).toHaveLength(7);
      expect(manifest.columns['extras/angle']).toEqual({ encoding: 'raw', dtype: 'float64', shape: [] });
      expect(manifest.columns['extras/pair']).toEqual({ encoding: 'raw', dtype: 'float32', shape: [2] });
      expect(manifest.columns['extras/grid']).toEqual({ encoding: 'raw', dtype: 'int32', shape: [2, 2] });
      // Every context row carries an info object (CartPole's are empty) and a known session.
      for (const ctx of policy.contexts) {
        expect(ctx.infos).toHaveLength(ctx.sessions.length);
        expect(ctx.episodeStarts).toHaveLength(ctx.sessions.length);
      }

      const ds = await readDataset(tmp.dir);
      const obs = decodeColumn(ds.steps, 'obs') as Tensor[];
      const angle = decodeColumn(ds.steps, 'extras/angle') as Tensor[];
      const pair = decodeColumn(ds.steps, 'extras/pair') as Tensor[];
      const actions = decodeColumn(ds.steps, 'action') as number[];
      expect(angle).toHaveLength(summary.steps);
      obs.forEach((o, i) => {
        const a = o.toNumbers()[2]!;
        expect(angle[i]!.toNumbers()).toEqual([a]);
        expect(pair[i]!.toNumbers()).toEqual([Math.fround(a), Math.fround(-a)]);
        expect(actions[i]).toBe(a > 0 ? 1 : 0);
      });
    } finally {
      await client.closeAll();
      await srv.close();
      await tmp.cleanup();
    }
  });

  it("keeps each NAVSIM episode's own terminal metrics on its last row", async () => {
    const srv = await cartpoleServer();
    const client = await connect(srv.url);
    const tmp = await tempDir('gymwire-contract-');
    try {
      const envId = 'gymwire/NavsimEnv-v1';
      const first = await client.make(envId);
      const writer = await TrajectoryWriter.create(tmp.dir, { envId, observationSpace: first.observationSpace, actionSpace: first.actionSpace });
      await first.close();
      const straight: Policy = {
        name: 'straight',
        check() {},
        act: (observations) => ({
          actions: observations.map(() =>
            Tensor.from(
              'float32',
              [8, 3],
              Array.from({ length: 24 }, (_, k) => (k % 3 === 0 ? 2 * (k / 3 + 1) : 0)),
            ),
          ),
        }),
      };
      await new Rollout({ envId, targets: [{ client, url: srv.url, sessions: 2 }], policy: straight, episodes: 6, seed: 0, writer }).run();
      await writer.close({ policy: 'straight' });
      const ds = await readDataset(tmp.dir);
      const infos = decodeColumn(ds.steps, 'info') as Record<string, unknown>[];
      // NAVSIM episodes are one step: every row is a last row and carries its own PDMS.
      expect(infos).toHaveLength(6);
      for (const info of infos) expect(typeof info['pdms']).toBe('number');
      const tokens = new Set(infos.map((i) => i['scene_token']));
      expect(tokens.size).toBe(6);
    } finally {
      await client.closeAll();
      await srv.close();
      await tmp.cleanup();
    }
  });
});
