/**
 * Keeps the event loop polling its sockets for a short window after each answer instead of letting
 * the thread sleep. On VMs whose idle cores halt at once (KVM/Firecracker guests with
 * guest_halt_poll_ns=0, like the machines gymwire's benchmarks run on), waking a sleeping core
 * costs tens of µs twice: in the client's write, which has to interrupt the halted core, and in the
 * answer's latency. A client that sends its next request within the window (a pipelined rollout,
 * several clients, an agent's burst of tool calls) finds the server awake.
 *
 * Two settings:
 * - a fixed window (`--busy-poll-us N`): polls N µs after every answer, whether or not a request
 *   follows;
 * - adaptive (`auto`, the default), the way Linux's cpuidle haltpoll governor sizes its window: it
 *   measures the gap between each answer and the next request. A gap the window would have caught
 *   had it been longer (up to `maxUs`) doubles the window; a gap longer than `maxUs` halves it,
 *   and below `startUs` it closes. So a pipelined client on the same host keeps the server awake,
 *   while a lock-step client, or one across a network, whose next request comes a round trip
 *   later, turns polling off after a few answers. While off, every `probeEvery`-th answer polls
 *   `startUs` to see whether requests now come sooner (at most startUs / probeEvery of CPU per
 *   answer: about 1 µs with the defaults).
 *
 * How: while the window is open, a setImmediate keeps re-arming itself; with an immediate pending,
 * libuv polls with a zero timeout, so incoming frames are read on the next turn without sleeping.
 */

/** 'auto': adaptive window (default); 0: off; N > 0: a fixed N µs after every answer. */
export type BusyPollSetting = 'auto' | number;

export interface AdaptiveOptions {
  /** Largest window, and the longest gap that counts as "polling would have caught it" (µs). */
  maxUs: number;
  /** First window after a caught gap, and the probe's window (µs). */
  startUs: number;
  /** While off, one answer in this many opens a probe window. */
  probeEvery: number;
}

export const ADAPTIVE_DEFAULTS: AdaptiveOptions = { maxUs: 100, startUs: 20, probeEvery: 16 };

/** Parses `--busy-poll-us`: 'auto', or a number of µs (0: off). */
export function parseBusyPoll(value: string): BusyPollSetting {
  if (value === 'auto') return 'auto';
  const us = Number(value);
  if (value.trim() === '' || !Number.isFinite(us) || us < 0) throw new RangeError(`--busy-poll-us must be 'auto' or a number of µs >= 0, got '${value}'`);
  return us;
}

export class BusyPoller {
  /** The window opened after the next answer (µs); fixed, or adapted to the gaps seen. */
  private windowUs: number;
  private readonly adaptive: AdaptiveOptions | null;
  private until = 0;
  private spinning = false;
  private stopped = false;
  /** When the last answer left (ms), while no request has come since; -1 otherwise. */
  private answeredAt = -1;
  private sinceProbe = 0;
  /** Event-loop turns spent polling so far (for tests and metrics). */
  turns = 0;

  /**
   * A poller for a setting, or null when it is off. `now` (ms) is for tests; the window is timed
   * with performance.now().
   */
  static create(setting: BusyPollSetting, now?: () => number, adaptive: AdaptiveOptions = ADAPTIVE_DEFAULTS): BusyPoller | null {
    if (setting === 'auto') return new BusyPoller(0, now, adaptive);
    if (setting === 0) return null;
    return new BusyPoller(setting, now);
  }

  /** A fixed window of `windowUs`, or, with `adaptive`, a window that starts closed and adapts. */
  constructor(
    windowUs: number,
    private readonly now: () => number = () => performance.now(),
    adaptive: AdaptiveOptions | null = null,
  ) {
    if (adaptive) {
      const { maxUs, startUs, probeEvery } = adaptive;
      if (!(startUs > 0 && maxUs >= startUs && Number.isFinite(maxUs) && Number.isInteger(probeEvery) && probeEvery > 0)) {
        throw new RangeError(`adaptive busy-poll needs 0 < startUs <= maxUs and an integer probeEvery > 0, got ${JSON.stringify(adaptive)}`);
      }
    } else if (!(windowUs > 0) || !Number.isFinite(windowUs)) {
      throw new RangeError(`busy-poll window must be a positive number of µs, got ${windowUs}`);
    }
    this.adaptive = adaptive;
    this.windowUs = adaptive ? 0 : windowUs;
  }

  /** True while the loop is being kept awake. */
  get active(): boolean {
    return this.spinning;
  }

  /** The window the next answer opens (µs): fixed, or where the adaptive one stands (0: closed). */
  get window(): number {
    return this.windowUs;
  }

  /** An answer left: (re)opens the window. */
  touch(): void {
    if (this.stopped) return;
    const now = this.now();
    this.answeredAt = now;
    let us = this.windowUs;
    if (us === 0) {
      // Closed (adaptive only): now and then, a probe.
      if (++this.sinceProbe < this.adaptive!.probeEvery) return;
      this.sinceProbe = 0;
      us = this.adaptive!.startUs;
    }
    this.until = Math.max(this.until, now + us / 1000);
    if (this.spinning) return;
    this.spinning = true;
    setImmediate(this.spin);
  }

  /** A request came in: the adaptive window learns from the gap since the last answer. */
  arrived(): void {
    const a = this.adaptive;
    if (!a || this.answeredAt < 0) return;
    const gapUs = (this.now() - this.answeredAt) * 1000;
    this.answeredAt = -1;
    const open = this.windowUs;
    if (gapUs > a.maxUs) {
      // Too long to wait for: polling would have been wasted.
      const half = open / 2;
      this.windowUs = half < a.startUs ? 0 : half;
    } else if (gapUs > open) {
      // A longer window would have caught it.
      this.windowUs = Math.min(a.maxUs, Math.max(a.startUs, open * 2));
    }
  }

  /** Closes the window for good (the server is closing). */
  stop(): void {
    this.stopped = true;
  }

  private readonly spin = (): void => {
    this.turns++;
    if (!this.stopped && this.now() < this.until) setImmediate(this.spin);
    else this.spinning = false;
  };
}
