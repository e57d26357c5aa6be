/**
 * The busy-poller both endpoints use: a fixed window opens on every answer, keeps the event loop
 * turning while open and closes on its own; the adaptive one sizes its window from the gaps it sees.
 */
import { describe, expect, it } from 'vitest';

import { ADAPTIVE_DEFAULTS, BusyPoller, parseBusyPoll } from '../../runtime/busy-poll.ts';

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
  const opts = { ...ADAPTIVE_DEFAULTS, maxUs: 100, startUs: 20, probeEvery: 4 };
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

  /** Exchanges against a peer whose next message comes `polledUs` after ours when we poll, `unpolledUs` when we sleep. */
  function peer(polledUs: number, unpolledUs: number, o = { ...opts, trialEvery: 64, trialLength: 8, backoff: 100 }) {
    const clock = { ms: 0 };
    const poller = BusyPoller.create('auto', () => clock.ms, o)!;
    const run = (n: number) => {
      const opened: number[] = [];
      for (let i = 0; i < n; i++) {
        poller.touch();
        opened.push(poller.lastOpenedUs);
        clock.ms += (poller.lastOpenedUs > 0 ? polledUs : unpolledUs) / 1000;
        poller.arrived();
        clock.ms += 1;
      }
      return opened;
    };
    return { poller, run };
  }

  it('keeps polling while a trial without it shows longer gaps (the peer has a core of its own)', () => {
    const { poller, run } = peer(30, 90);
    const opened = run(1000);
    expect(poller.resting).toBe(false);
    expect(poller.window).toBeGreaterThan(0);
    // Trials: 8 unpolled exchanges after every 64 polled ones.
    const unpolled = opened.slice(100).filter((us) => us === 0).length;
    expect(unpolled / 900).toBeGreaterThan(0.08);
    expect(unpolled / 900).toBeLessThan(0.15);
  });

  it('stops polling for a while, doubling, when polling makes the gaps longer (both ends on one core)', () => {
    const { poller, run } = peer(90, 40);
    expect(run(10).at(-1)).toBeGreaterThan(0); // opened by the short gaps
    /** Exchanges until the poller rests (after a failed trial), then how long it opens no window, not even a probe. */
    const restLength = () => {
      let before = 0;
      while (!poller.resting && before++ < 1000) run(1);
      expect(poller.resting).toBe(true);
      expect(poller.window).toBe(0);
      let rest = 0;
      while (run(1)[0] === 0 && rest < 10_000) rest++;
      return { before, rest };
    };
    const first = restLength();
    expect(first.before).toBeLessThan(64 + 8); // the first trial comes after 64 polled exchanges
    expect(first.rest).toBeGreaterThanOrEqual(100);
    expect(first.rest).toBeLessThan(100 + 8);
    const second = restLength();
    expect(second.rest).toBeGreaterThanOrEqual(200);
    expect(second.rest).toBeLessThan(200 + 8);
  });

  it('refuses impossible settings and parses the CLI value', () => {
    for (const bad of [{ maxUs: 10, startUs: 20 }, { probeEvery: 0 }, { trialEvery: 8, trialLength: 16 }, { backoff: 1.5 }, { keepBelow: 0 }]) {
      expect(() => new BusyPoller(0, undefined, { ...ADAPTIVE_DEFAULTS, ...bad })).toThrow(RangeError);
    }
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
