/**
 * The viewer's pushed updates (`/api/events`, Server-Sent Events) over a real server and real
 * clients: the steps, actions, observations and episodes the sessions produced, the overview
 * across sessions, and the same token rule as the rest of the viewer API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connect } from '../../client/ts/client.ts';
import type { GymwireClient } from '../../client/ts/client.ts';
import { registerClassic } from '../../envs/classic/index.ts';
import { Registry } from '../../envs/core/registry.ts';
import { registerNavsim } from '../../envs/navsim/index.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { startServer } from '../../server/index.ts';
import type { RunningServer } from '../../server/index.ts';
import { mountViewer } from '../../server/viewer/index.ts';
import type { EpisodeRecord, StepRecord } from '../../server/viewer/history.ts';
import type { Overview } from '../../server/viewer/events.ts';

interface Update {
  sessions: { session_id: string; steps: number; steps_per_s: number }[];
  overview: Overview;
  session: { full: boolean; steps: StepRecord[]; episodes: EpisodeRecord[] } | null;
  session_closed: boolean;
}

/** Reads SSE `update` events from a real stream until `done` says enough, then aborts it. */
async function readEvents(url: string, done: (events: Update[]) => boolean, headers: Record<string, string> = {}): Promise<Update[]> {
  const abort = new AbortController();
  const res = await fetch(url, { signal: abort.signal, headers });
  expect(res.headers.get('content-type')).toBe('text/event-stream');
  const events: Update[] = [];
  const decoder = new TextDecoder();
  let buffered = '';
  const reader = res.body!.getReader();
  try {
    while (!done(events)) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      buffered += decoder.decode(value, { stream: true });
      let cut: number;
      while ((cut = buffered.indexOf('\n\n')) >= 0) {
        const block = buffered.slice(0, cut);
        buffered = buffered.slice(cut + 2);
        const data = block.split('\n').find((l) => l.startsWith('data: '));
        if (block.includes('event: update') && data) events.push(JSON.parse(data.slice(6)) as Update);
      }
    }
  } finally {
    abort.abort();
  }
  return events;
}

/**
 * Opens a viewer stream and keeps it open until the returned function is called: steps record
 * their actions and observations for the viewer only while one listens.
 */
async function watching(): Promise<() => void> {
  const abort = new AbortController();
  const res = await fetch(`${base}/api/events?token=tok`, { signal: abort.signal });
  // The first bytes (the retry line) come once the server counts this viewer.
  await res.body!.getReader().read();
  return () => abort.abort();
}

let srv: RunningServer;
let base: string;
let client: GymwireClient;

beforeAll(async () => {
  const registry = new Registry();
  registerClassic(registry);
  registerNavsim(registry);
  srv = await startServer({ port: 0, registry, token: 'tok', mountRoutes: mountViewer });
  base = srv.url.replace('ws://', 'http://');
  client = await connect(srv.url, { token: 'tok' });
});

afterAll(async () => {
  await client?.closeAll();
  await srv?.close();
});

describe('/api/events', () => {
  it('pushes a CartPole session’s rewards, returns, actions, observations and finished episodes', async () => {
    const stopWatching = await watching();
    const env = await client.make('gymwire/CartPole-v1');
    await env.reset({ seed: 7 });
    const produced: { action: number; obs: number[]; reward: number }[] = [];
    let episodes = 0;
    let length = 0;
    const lengths: number[] = [];
    while (episodes < 2) {
      const action = produced.length % 3 === 0 ? 0 : 1;
      const r = await env.step(action);
      length++;
      produced.push({ action, obs: (r.obs as Tensor).toNumbers(), reward: r.reward });
      if (r.terminated || r.truncated) {
        episodes++;
        lengths.push(length);
        length = 0;
        await env.reset();
      }
    }
    const [first] = await readEvents(`${base}/api/events?session=${env.sessionId}&token=tok`, (ev) => ev.length >= 1);
    const detail = first!.session!;
    expect(detail.full).toBe(true);
    expect(detail.steps.map((s) => s.action)).toEqual(produced.map((p) => [p.action]));
    expect(detail.steps.map((s) => s.reward)).toEqual(produced.map((p) => p.reward));
    for (const [i, s] of detail.steps.entries()) expect(s.obs['obs']).toEqual(produced[i]!.obs);
    expect(detail.episodes.map((e) => [e.length, e.return, e.reason])).toEqual(lengths.map((n) => [n, n, 'terminated']));
    expect(detail.steps[lengths[0]! - 1]!.return).toBe(lengths[0]);
    const row = first!.sessions.find((s) => s.session_id === env.sessionId)!;
    expect(row.steps).toBe(produced.length);
    const cartpole = first!.overview.envs.find((e) => e.env_id === 'gymwire/CartPole-v1')!;
    expect(cartpole.episodes).toBe(2);
    expect(cartpole.mean_return).toBeCloseTo((lengths[0]! + lengths[1]!) / 2);
    expect(cartpole.std_return).toBeCloseTo(Math.abs(lengths[0]! - lengths[1]!) / 2);
    stopWatching();
    await env.close();
  });

  it('sends only new steps after the first event, and counts error answers in the overview', async () => {
    const env = await client.make('gymwire/CartPole-v1');
    await env.reset({ seed: 1 });
    await env.step(0);
    await expect(env.step(5)).rejects.toMatchObject({ code: 'ENV_ERR_INVALID_ACTION' });
    let stepped = false;
    const events = await readEvents(
      `${base}/api/events?session=${env.sessionId}&interval_ms=50`,
      (ev) => {
        if (ev.length === 1 && !stepped) {
          stepped = true;
          void env.step(1);
        }
        return ev.some((e) => e.session!.steps.some((s) => s.seq === 2));
      },
      { authorization: 'Bearer tok' },
    );
    expect(events[0]!.session!.steps.map((s) => s.seq)).toEqual([1]);
    const later = events.slice(1);
    expect(later.every((e) => !e.session!.full)).toBe(true);
    expect(later.flatMap((e) => e.session!.steps.map((s) => [s.seq, s.action]))).toEqual([[2, [1]]]);
    expect(events[0]!.overview.errors['ENV_ERR_INVALID_ACTION']).toBeGreaterThanOrEqual(1);
    await env.close();
  });

  it('records NAVSIM’s score per episode and its plan as the action', async () => {
    const stopWatching = await watching();
    const env = await client.make('gymwire/NavsimEnv-v1');
    await env.reset({ seed: 3 });
    const plan = Tensor.from('float32', [8, 3], Array.from({ length: 8 }, (_, i) => [(i + 1) * 1.5, 0, 0]).flat());
    const r = await env.step(plan);
    const [first] = await readEvents(`${base}/api/events?session=${env.sessionId}&token=tok`, (ev) => ev.length >= 1);
    const [episode] = first!.session!.episodes;
    expect(episode).toMatchObject({ length: 1, reason: 'terminated', score_name: 'score', score: r.info['score'] });
    expect(episode!.return).toBe(r.reward);
    expect(first!.session!.steps[0]!.action).toEqual(plan.toNumbers());
    stopWatching();
    await env.close();
  });

  it('needs the token, and says when the watched session is gone', async () => {
    expect((await fetch(`${base}/api/events`)).status).toBe(401);
    expect((await fetch(`${base}/api/events?token=wrong`)).status).toBe(401);
    const [ev] = await readEvents(`${base}/api/events?session=gone&token=tok`, (e) => e.length >= 1);
    expect(ev!.session).toBeNull();
    expect(ev!.session_closed).toBe(true);
  });
});
