/**
 * Bench2Drive's span tools act for many ticks in one call (agent-scale control): the result equals
 * stepping the same controls tick by tick, spans stop at the route's end and at the events asked
 * for, and following the route ahead that each span reports completes a route.
 */
import { describe, expect, it } from 'vitest';

import { Bench2DriveEnv, MAX_SPAN_TICKS } from '../../../envs/bench2drive/env.ts';
import { Tensor } from '../../../protocol/tensor.ts';

type Span = {
  ticks: number;
  reward: number;
  terminated: boolean;
  truncated: boolean;
  stopped: string;
  route_completion: number;
  route_ahead: number[][];
  command: string;
};

function setup(route = 'SignalizedJunctionLeftTurn_0') {
  const env = new Bench2DriveEnv({ route });
  env.reset({ seed: 0 });
  const call = async (name: string, args: Record<string, unknown>) =>
    (await env.tools.find((t) => t.name === name)!.handler(args as never, { env, wrapped: env })) as Span;
  return { env, call };
}

describe('Bench2Drive span tools', () => {
  it('drive_for equals stepping the same controls tick by tick', async () => {
    const a = setup();
    const span = await a.call('drive_for', { throttle: 0.6, steer: 0.05, brake: 0, ticks: 30 });
    const b = setup();
    let reward = 0;
    for (let i = 0; i < 30; i++) reward += b.env.step(Tensor.from('float32', [3], [0.6, 0.05, 0])).reward;
    expect(span).toMatchObject({ ticks: 30, stopped: 'ticks', terminated: false, truncated: false });
    expect(span.reward).toBeCloseTo(reward, 10);
    expect(a.env.getState()).toEqual(b.env.getState());
    expect(span.route_ahead.length).toBeGreaterThan(2);
    expect(span.route_ahead.every(([x]) => x! > 0)).toBe(true);
  });

  it('refuses a span longer than the cap and controls out of range', () => {
    const { env } = setup();
    const schema = env.tools.find((t) => t.name === 'drive_for')!.inputSchema;
    expect(schema.safeParse({ throttle: 0, steer: 0, brake: 0, ticks: MAX_SPAN_TICKS + 1 }).success).toBe(false);
    expect(schema.safeParse({ throttle: 0, steer: 2, brake: 0, ticks: 5 }).success).toBe(false);
    expect(schema.safeParse({ throttle: 0, steer: 0, brake: 0, ticks: 5, until: 'infraction' }).success).toBe(true);
  });

  it('follows the route ahead span by span to the end of a route, in far fewer calls than ticks', async () => {
    const { call } = setup();
    let path = [
      [3, 0],
      [6, 0],
    ];
    let calls = 0;
    let ticks = 0;
    let last: Span | null = null;
    while (calls < 400) {
      // 3 m apart and 0.5 s apart: 6 m/s along the route ahead.
      const waypoints = path.slice(0, 8);
      last = await call('follow_waypoints_for', { waypoints, ticks: 20 });
      calls++;
      ticks += last.ticks;
      if (last.terminated || last.truncated) break;
      path = last.route_ahead.filter((_, i) => i % 2 === 1 || i === 0);
      if (path.length < 2)
        path = [
          [3, 0],
          [6, 0],
        ];
    }
    expect(last!.terminated).toBe(true);
    expect(last!.stopped).toBe('terminated');
    expect(last!.route_completion).toBeGreaterThan(99);
    expect(ticks / calls).toBeGreaterThan(10);
  });

  it('stops a span when the navigation command changes, when asked', async () => {
    const { call } = setup();
    const span = await call('drive_for', { throttle: 0.7, steer: 0, brake: 0, ticks: MAX_SPAN_TICKS, until: 'command_change' });
    expect(['command_change', 'terminated', 'ticks']).toContain(span.stopped);
    if (span.stopped === 'command_change') expect(span.ticks).toBeLessThan(MAX_SPAN_TICKS);
  });
});
