/**
 * The busy-poller both endpoints use: a fixed window opens on every answer, keeps the event loop
 * turning while open and closes on its own; the adaptive one sizes its window from the gaps it sees.
 */
import { describe, expect, it } from 'vitest';

import { ADAPTIVE_DEFAULTS, BusyPoller, parseBusyPoll } from '../../protocol/busy-poll.ts';

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

describe('adaptive BusyPoller', () => {
  const opts = { maxUs: 100, startUs: 20, probeEvery: 4 };
  /** A poller on a fake clock, and one answer-then-request exchange with a gap of `gapUs`. */
  function adaptive() {
    const clock = { ms: 0 };
    const poller = BusyPoller.create('auto', () => clock.ms, opts)!;
    const exchange = (gapUs: number) => {
      poller.touch();
      clock.ms += gapUs / 1000;
      poller.arrived();
      clock.ms += 1; // the next answer comes well after: any window opened here has closed
    };
    return { clock, poller, exchange };
  }

  it('starts closed and opens, doubling up to maxUs, while requests come soon after answers', () => {
    const { poller, exchange } = adaptive();
    expect(poller.window).toBe(0);
    const seen: number[] = [];
    for (let i = 0; i < 5; i++) {
      exchange(90); // caught only by a window of at least 90 µs
      seen.push(poller.window);
    }
    expect(seen).toEqual([20, 40, 80, 100, 100]);
  });

  it('keeps its window while the window catches the requests', () => {
    const { poller, exchange } = adaptive();
    exchange(30);
    exchange(30);
    expect(poller.window).toBe(40);
    for (let i = 0; i < 10; i++) exchange(35);
    expect(poller.window).toBe(40);
  });

  it('halves on a gap longer than maxUs and closes below startUs (lock-step or a network away)', () => {
    const { poller, exchange } = adaptive();
    for (let i = 0; i < 4; i++) exchange(90);
    expect(poller.window).toBe(100);
    const seen: number[] = [];
    for (let i = 0; i < 4; i++) {
      exchange(250);
      seen.push(poller.window);
    }
    expect(seen).toEqual([50, 25, 0, 0]);
  });

  it('while closed, polls only on every probeEvery-th answer, for startUs', async () => {
    const { clock, poller } = adaptive();
    const spun: boolean[] = [];
    for (let i = 0; i < 8; i++) {
      poller.touch();
      spun.push(poller.active);
      clock.ms += 1;
      await new Promise<void>((r) => setImmediate(() => setImmediate(r)));
    }
    expect(spun).toEqual([false, false, false, true, false, false, false, true]);
    // A probe that catches a request opens the window.
    poller.touch();
    poller.touch();
    poller.touch();
    poller.touch();
    clock.ms += 0.01;
    poller.arrived();
    expect(poller.window).toBe(20);
  });

  it('learns only from the first request after an answer', () => {
    const { clock, poller } = adaptive();
    poller.touch();
    clock.ms += 0.01;
    poller.arrived();
    expect(poller.window).toBe(20);
    clock.ms += 5; // a second request, long after the answer: not a gap
    poller.arrived();
    expect(poller.window).toBe(20);
  });

  it('refuses impossible settings and parses the CLI value', () => {
    expect(() => new BusyPoller(0, undefined, { maxUs: 10, startUs: 20, probeEvery: 4 })).toThrow(RangeError);
    expect(() => new BusyPoller(0, undefined, { maxUs: 100, startUs: 20, probeEvery: 0 })).toThrow(RangeError);
    expect(BusyPoller.create(0)).toBeNull();
    expect(BusyPoller.create('auto')!.window).toBe(0);
    expect(BusyPoller.create(75)!.window).toBe(75);
    expect(ADAPTIVE_DEFAULTS.maxUs).toBeGreaterThanOrEqual(ADAPTIVE_DEFAULTS.startUs);
    expect(parseBusyPoll('auto')).toBe('auto');
    expect(parseBusyPoll('0')).toBe(0);
    expect(parseBusyPoll('50')).toBe(50);
    for (const bad of ['', 'fast', '-5', 'Infinity']) expect(() => parseBusyPoll(bad)).toThrow(/must be 'auto' or a number/);
  });
});
