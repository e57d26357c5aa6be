/**
 * Busy-polling after answers: the window opens on every answer, keeps the event loop turning while
 * open, closes on its own, and never outlives the server.
 */
import { describe, expect, it } from 'vitest';

import { connect } from '../../client/ts/client.ts';
import { BusyPoller } from '../../server/busy-poll.ts';
import { startTestServer, TRANSPORTS } from '../helpers/servers.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Two check phases: the poller's pending immediate has run (and re-armed or not). */
const turn = () => new Promise<void>((r) => setImmediate(() => setImmediate(r)));

describe('BusyPoller', () => {
  it('refuses a window that is not a positive number of µs', () => {
    for (const bad of [0, -5, Number.NaN, Number.POSITIVE_INFINITY]) expect(() => new BusyPoller(bad)).toThrow(RangeError);
  });

  it('stays active for its window after a touch, then lets the loop sleep', async () => {
    const clock = { ms: 0 };
    const poller = new BusyPoller(30_000, () => clock.ms);
    expect(poller.active).toBe(false);
    poller.touch();
    expect(poller.active).toBe(true);
    clock.ms = 29;
    await turn();
    expect(poller.active).toBe(true);
    clock.ms = 30;
    await turn();
    expect(poller.active).toBe(false);
  });

  it('reopens the window on every touch and stops for good on stop()', async () => {
    const clock = { ms: 0 };
    const poller = new BusyPoller(20_000, () => clock.ms);
    poller.touch();
    clock.ms = 12;
    poller.touch(); // open until 32 ms, not 20
    clock.ms = 25;
    await turn();
    expect(poller.active).toBe(true);
    poller.stop();
    await turn();
    expect(poller.active).toBe(false);
    poller.touch();
    expect(poller.active).toBe(false);
  });

  it('keeps an immediate pending (so libuv polls without sleeping) while active, and only then', async () => {
    const poller = new BusyPoller(1, () => 0); // a clock that never moves: open until stop()
    poller.touch();
    const turns = async (n: number) => {
      for (let i = 0; i < n; i++) await turn();
    };
    await turns(5);
    // Re-armed on every check phase: each is one zero-timeout poll instead of a sleep.
    expect(poller.turns).toBeGreaterThanOrEqual(5);
    poller.stop();
    await turn();
    const after = poller.turns;
    await turns(5);
    expect(poller.turns).toBe(after);
  });
});

describe.each(TRANSPORTS)('server with busyPollUs (%s)', (transport) => {
  it('answers as usual, polls after each answer, and stops polling when closed', async () => {
    const srv = await startTestServer(transport, { busyPollUs: 2_000_000 });
    const client = await connect(srv.connector);
    try {
      const poller = srv.server.core.poller!;
      const env = await client.make('gymwire/CartPole-v1');
      await env.reset({ seed: 1 });
      expect(poller.active).toBe(true);
      const r = await env.step(0);
      expect(r.terminated).toBe(false);
      expect(poller.active).toBe(true);
    } finally {
      await client.close();
      await srv.close();
    }
    await sleep(5);
    expect(srv.server.core.poller!.active).toBe(false);
  });
});
