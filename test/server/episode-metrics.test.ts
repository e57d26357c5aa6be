/**
 * /metrics reports finished episodes per env: a histogram of their returns and lengths, and how
 * they ended (terminated, truncated), from single steps and batched steps alike.
 */
import { afterEach, describe, expect, it } from 'vitest';

import { connect } from '../../client/ts/client.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { startTestServer } from '../helpers/servers.ts';
import type { TestServer } from '../helpers/servers.ts';

let srv: TestServer | null = null;
afterEach(async () => {
  await srv?.close();
  srv = null;
});

/** One sample of a Prometheus text exposition, by metric name and labels. */
function sample(text: string, name: string, labels: Record<string, string>): number | null {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const inside = line.slice(name.length + 1, line.indexOf('}'));
    const have = inside.split(',');
    if (want.every((w) => have.includes(w)) && have.length === want.length) return Number(line.slice(line.indexOf('}') + 1));
  }
  return null;
}

describe('episode metrics', () => {
  it('counts returns, lengths and end reasons of finished episodes per env', async () => {
    srv = await startTestServer('ws');
    const c = await connect(srv.server.url);
    const env = await c.make('gymwire/CartPole-v1');
    // Always pushing right ends CartPole (terminated) within a few dozen steps.
    const lengths: number[] = [];
    for (let episode = 0; episode < 2; episode++) {
      await env.reset({ seed: episode });
      let steps = 0;
      for (;;) {
        const r = await env.step(1);
        steps++;
        if (r.terminated || r.truncated) break;
      }
      lengths.push(steps);
    }
    // A second env whose episodes end by the time limit (truncated): Conformance-v0 stops at 50.
    const conf = await c.make('gymwire/Conformance-v0');
    // The goal in one corner and the agent pushing to the other: it never arrives, the limit ends it.
    await conf.reset({ seed: 0, options: { goal: [0.95, 0.95] } });
    let truncated = false;
    let confSteps = 0;
    while (!truncated && confSteps < 100) {
      const r = await conf.step(Tensor.from('float32', [2], [-1, -1]));
      confSteps++;
      expect(r.terminated).toBe(false);
      truncated = r.truncated;
    }
    const text = await (await fetch(`${srv.server.url.replace('ws://', 'http://')}/metrics`)).text();
    const cart = { env_id: 'gymwire/CartPole-v1' };
    expect(sample(text, 'gymwire_episodes_total', { ...cart, reason: 'terminated' })).toBe(2);
    expect(sample(text, 'gymwire_episode_length_steps_count', cart)).toBe(2);
    expect(sample(text, 'gymwire_episode_length_steps_sum', cart)).toBe(lengths[0]! + lengths[1]!);
    // CartPole pays 1 per step: each return equals its length.
    expect(sample(text, 'gymwire_episode_return_sum', cart)).toBe(lengths[0]! + lengths[1]!);
    expect(sample(text, 'gymwire_episode_return_bucket', { le: '+Inf', ...cart })).toBe(2);
    expect(sample(text, 'gymwire_episode_length_steps_bucket', { le: '1', ...cart })).toBe(0);
    expect(truncated).toBe(true);
    {
      expect(sample(text, 'gymwire_episodes_total', { env_id: 'gymwire/Conformance-v0', reason: 'truncated' })).toBe(1);
      expect(sample(text, 'gymwire_episode_length_steps_sum', { env_id: 'gymwire/Conformance-v0' })).toBe(confSteps);
    }
    await c.close();
  });

  it('counts episodes that end inside a batched step', async () => {
    srv = await startTestServer('ws');
    const c = await connect(srv.server.url);
    const vec = await c.makeVec('gymwire/CartPole-v1', 3);
    await vec.reset({ seed: 0 });
    let ended = 0;
    for (let i = 0; i < 200 && ended < 3; i++) {
      const r = await vec.step([1, 1, 1]);
      ended += r.terminations.filter(Boolean).length + r.truncations.filter(Boolean).length;
    }
    const text = await (await fetch(`${srv.server.url.replace('ws://', 'http://')}/metrics`)).text();
    expect(sample(text, 'gymwire_episodes_total', { env_id: 'gymwire/CartPole-v1', reason: 'terminated' })).toBe(ended);
    expect(sample(text, 'gymwire_episode_length_steps_count', { env_id: 'gymwire/CartPole-v1' })).toBe(ended);
    await c.close();
  });
});
