/**
 * A session's recent history (server/viewer/history.ts): bounded rings that keep the newest steps
 * and episodes, numbers copied from actions and vector observations (never images), and the env's
 * own score read from final infos as NAVSIM and Bench2Drive write them.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';

import { routeRecord } from '../../envs/bench2drive/scoring.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { ServerMetrics } from '../../server/metrics.ts';
import { Session } from '../../server/session.ts';
import { EPISODE_HISTORY, episodeScore, SessionHistory, STEP_HISTORY, vectorLeaves } from '../../server/viewer/history.ts';

const session = () => new Session('s_1', 'test/Env-v0', {} as never, 'c_1', pino({ level: 'silent' }), null, new ServerMetrics().forEnv('test/Env-v0'));

describe('SessionHistory', () => {
  it('keeps the newest steps and episodes once the rings wrap, with returns restarting per episode', () => {
    const s = session();
    const h = s.history;
    const total = STEP_HISTORY + 37;
    for (let i = 1; i <= total; i++) s.recordStep(null, 1, i % 2 === 0, false, {}, i, true);
    const steps = h.stepsSince(0);
    expect(steps).toHaveLength(STEP_HISTORY);
    expect(steps[0]!.seq).toBe(total - STEP_HISTORY + 1);
    expect(steps.at(-1)).toMatchObject({ seq: total, action: [total] });
    expect(steps.map((s) => s.return)).toEqual(steps.map((s) => (s.seq % 2 === 0 ? 2 : 1)));
    expect(h.stepsSince(total - 2).map((s) => s.seq)).toEqual([total - 1, total]);
    expect(h.stepsSince(total)).toEqual([]);
    const episodes = h.episodesSince(0);
    expect(episodes).toHaveLength(EPISODE_HISTORY);
    expect(episodes.at(-1)).toMatchObject({ episode: Math.floor(total / 2), return: 2, length: 2, reason: 'terminated', score: null });
  });

  it('restarts the return on reset and counts a truncation as such', () => {
    const s = session();
    s.recordStep(null, 3, false, false, {}, 0, true);
    s.recordReset(null, {});
    s.recordStep(null, 2, false, true, {}, 0, true);
    expect(s.history.episodesSince(0)).toMatchObject([{ return: 2, length: 1, reason: 'truncated' }]);
    // The session's own counters are the history's: one copy of the episode's return.
    expect(s.stats).toMatchObject({ episodeReturn: 2, episodeSteps: 1, episodes: 1 });
  });

  it('walks actions and observations into numbers only while a viewer listens', () => {
    const h = new SessionHistory();
    const obs = { state: Tensor.from('float32', [2], [1, 2]) };
    h.recordStep(1, 1, 1, null, {}, null);
    h.recordStep(1, 2, 2, null, {}, { action: 3, obs });
    expect(h.stepsSince(0)).toMatchObject([
      { seq: 1, return: 1, action: null, obs: {} },
      { seq: 2, return: 2, action: [3], obs: { state: [1, 2] } },
    ]);
  });

  it('copies small numeric leaves and skips images and large tensors', () => {
    const obs = {
      state: Tensor.from('float32', [3], [0.5, -1, 2]),
      cmd: 4,
      image: new Tensor('uint8', [64, 64, 3], new Uint8Array(64 * 64 * 3)),
      lidar: new Tensor('float32', [1000, 4], new Float32Array(4000)),
      nested: { flag: true },
    };
    expect(vectorLeaves(obs)).toEqual({ state: [0.5, -1, 2], cmd: [4], 'nested.flag': [1] });
    expect(vectorLeaves(Tensor.from('float64', [4], [1, 2, 3, 4]))).toEqual({ obs: [1, 2, 3, 4] });
  });

  it('reads the env score: NAVSIM score before EPDMS and PDMS, Bench2Drive’s route record before driving_score', () => {
    expect(episodeScore({ pdms: 0.8, epdms: 0.7, score: 0.7 })).toEqual({ name: 'score', value: 0.7 });
    expect(episodeScore({ pdms: 0.8 })).toEqual({ name: 'pdms', value: 0.8 });
    const record = routeRecord({ routeCompletion: 50, targetReached: false, events: [], failure: null });
    expect(episodeScore({ driving_score: 1, record })).toEqual({ name: 'driving score', value: record.scores.score_composed });
    expect(episodeScore({ driving_score: 42 })).toEqual({ name: 'driving score', value: 42 });
    expect(episodeScore({ success: 1 })).toBeNull();
  });
});
