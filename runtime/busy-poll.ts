/**
 * Keeps the event loop polling its sockets for a short window after a message leaves instead of
 * letting the thread sleep. Both ends use it: a server after each answer, a client after each
 * request. On VMs whose idle cores halt at once (KVM/Firecracker guests with guest_halt_poll_ns=0,
 * like the machines gymwire's benchmarks run on), waking a sleeping core costs tens of µs twice: in
 * the sender's write, which has to interrupt the halted core, and in the message's latency. A peer
 * that sends again within the window (a pipelined rollout, several clients, an agent's burst of tool
 * calls; an answer that comes back fast) finds this end awake.
 *
 * Two settings:
 * - a fixed window (`--busy-poll-us N`): polls N µs after every message sent, whatever follows;
 * - adaptive (`auto`, the default). The window is sized the way Linux's cpuidle haltpoll governor
 *   sizes its own, from the gap between each message sent and the next one received: a gap that a
 *   longer window (up to `maxUs`) would have caught doubles it, a gap past `maxUs` halves it, and
 *   below `startUs` it closes. While closed, every `probeEvery`-th message opens a `startUs` probe
 *   (at most startUs / probeEvery of CPU per message: about 1 µs with the defaults). So a peer
 *   whose next message comes a network round trip or a long computation later turns polling off.
 *   Polling only pays while the peer has a core of its own, though: when both ends share one core
 *   (pinned there, or a machine with more busy processes than cores) the spinning end takes the
 *   time the other needs to answer, and gaps get longer, not shorter. Haltpoll can ignore that
 *   (it polls only when nothing else wants the core); a process cannot see it, so it measures it:
 *   every `trialEvery` polled exchanges the next `trialLength` go unpolled, and unless the median
 *   gap polled is shorter than unpolled by `keepBelow`, polling stays off for the next
 *   `backoff` exchanges (doubling on each failed trial, up to 64x). Being pinned to one CPU is no
 *   reason to stay off (benchmarks and HPC deployments give each process a core of its own). The
 *   trials only see the gaps between messages, not time taken from a thread of this process, so
 *   the server does not poll while env work runs asynchronously (a world model's batch in its
 *   worker thread, which may share the core): see Connection.send in server/connection.ts.
 *
 * How: while the window is open, a setImmediate keeps re-arming itself; with an immediate pending,
 * libuv polls with a zero timeout, so incoming frames are read on the next turn without sleeping.
 */

/** 'auto': adaptive window (default); 0: off; N > 0: a fixed N µs after every message sent. */
export type BusyPollSetting = 'auto' | number;

export interface AdaptiveOptions {
  /** Largest window, and the longest gap that counts as "polling would have caught it" (µs). */
  maxUs: number;
  /** First window after a caught gap, and the probe's window (µs). */
  startUs: number;
  /** While closed, one message in this many opens a probe window. */
  probeEvery: number;
  /** Polled exchanges between two unpolled trials. */
  trialEvery: number;
  /** Exchanges in a trial (and polled gaps it is compared with). */
  trialLength: number;
  /** Polling is kept when its median gap is below this fraction of the trial's. */
  keepBelow: number;
  /** Exchanges without polling after a failed trial (doubles per failure, up to 64x). */
  backoff: number;
}

export const ADAPTIVE_DEFAULTS: AdaptiveOptions = { maxUs: 100, startUs: 20, probeEvery: 16, trialEvery: 512, trialLength: 16, keepBelow: 0.9, backoff: 1024 };

/** Parses `--busy-poll-us`: 'auto', or a number of µs (0: off). */
export function parseBusyPoll(value: string): BusyPollSetting {
  if (value === 'auto') return 'auto';
  const us = Number(value);
  if (value.trim() === '' || !Number.isFinite(us) || us < 0) throw new RangeError(`--busy-poll-us must be 'auto' or a number of µs >= 0, got '${value}'`);
  return us;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

/** The adaptive window's state: its size, and the trials that check polling still pays. */
class AdaptiveWindow {
  /** µs; 0: closed. */
  size = 0;
  private sinceProbe = 0;
  /** Gaps of the latest polled exchanges (a ring of trialLength). */
  private readonly polled: number[] = [];
  private polledCount = 0;
  /** Gaps of the unpolled trial running now; null: no trial. */
  private trial: number[] | null = null;
  /** Exchanges left without polling after a failed trial. */
  private suppressed = 0;
  private backoff: number;

  constructor(private readonly o: AdaptiveOptions) {
    const ok =
      o.startUs > 0 &&
      o.maxUs >= o.startUs &&
      Number.isFinite(o.maxUs) &&
      [o.probeEvery, o.trialEvery, o.trialLength, o.backoff].every((n) => Number.isInteger(n) && n > 0) &&
      o.trialEvery >= o.trialLength &&
      o.keepBelow > 0;
    if (!ok)
      throw new RangeError(
        `adaptive busy-poll needs 0 < startUs <= maxUs, positive integer counts, trialEvery >= trialLength and keepBelow > 0, got ${JSON.stringify(o)}`,
      );
    this.backoff = o.backoff;
  }

  /** True while a failed trial keeps polling off. */
  get off(): boolean {
    return this.suppressed > 0;
  }

  /** The window to open for the message leaving now (µs; 0: none). */
  next(): number {
    if (this.trial || this.suppressed > 0) return 0;
    if (this.size > 0) return this.size;
    if (++this.sinceProbe < this.o.probeEvery) return 0;
    this.sinceProbe = 0;
    return this.o.startUs;
  }

  /** Learns from the gap (µs) between a message sent with window `opened` (µs) and the next one received. */
  learn(gapUs: number, opened: number): void {
    const o = this.o;
    if (this.trial) {
      this.trial.push(gapUs);
      if (this.trial.length === o.trialLength) this.judge(this.trial);
      return;
    }
    if (this.suppressed > 0) {
      this.suppressed--;
      return;
    }
    if (gapUs > o.maxUs) {
      // Too long to wait for: polling was (or would have been) wasted.
      const half = this.size / 2;
      this.size = half < o.startUs ? 0 : half;
    } else if (gapUs > this.size) {
      // A longer window would have caught it (a probe that caught it opens the window).
      this.size = Math.min(o.maxUs, Math.max(o.startUs, this.size * 2));
    }
    if (opened > 0 && this.size > 0) {
      this.polled[this.polledCount++ % o.trialLength] = gapUs;
      if (this.polledCount >= o.trialEvery) this.trial = [];
    }
  }

  /** Ends a trial: polling stays when its gaps were clearly shorter, else it rests for a while. */
  private judge(unpolled: number[]): void {
    this.trial = null;
    this.polledCount = 0;
    if (median(this.polled) < this.o.keepBelow * median(unpolled)) {
      this.backoff = this.o.backoff;
      return;
    }
    this.suppressed = this.backoff;
    this.backoff = Math.min(this.backoff * 2, this.o.backoff * 64);
    this.size = 0;
  }
}

export class BusyPoller {
  private readonly fixedUs: number;
  private readonly adaptive: AdaptiveWindow | null;
  private until = 0;
  private spinning = false;
  private stopped = false;
  /** When the last message left (ms), while none has come in since; -1 otherwise. */
  private sentAt = -1;
  /** The window opened for that message (µs). */
  private opened = 0;
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
    if (!adaptive && (!(windowUs > 0) || !Number.isFinite(windowUs))) throw new RangeError(`busy-poll window must be a positive number of µs, got ${windowUs}`);
    this.adaptive = adaptive ? new AdaptiveWindow(adaptive) : null;
    this.fixedUs = adaptive ? 0 : windowUs;
  }

  /** True while the loop is being kept awake. */
  get active(): boolean {
    return this.spinning;
  }

  /** The window the next message opens (µs): fixed, or where the adaptive one stands (0: closed). */
  get window(): number {
    return this.adaptive ? this.adaptive.size : this.fixedUs;
  }

  /** The window opened for the last message sent (µs; 0: none). */
  get lastOpenedUs(): number {
    return this.opened;
  }

  /** True while an adaptive poller rests after a trial found polling did not shorten the gaps. */
  get resting(): boolean {
    return this.adaptive?.off ?? false;
  }

  /** A message left: (re)opens the window. */
  touch(): void {
    if (this.stopped) return;
    const now = this.now();
    const us = this.adaptive ? this.adaptive.next() : this.fixedUs;
    this.sentAt = now;
    this.opened = us;
    if (us === 0) return;
    this.until = Math.max(this.until, now + us / 1000);
    if (this.spinning) return;
    this.spinning = true;
    setImmediate(this.spin);
  }

  /** A message came in: the adaptive window learns from the gap since the last one sent. */
  arrived(): void {
    if (!this.adaptive || this.sentAt < 0) return;
    const gapUs = (this.now() - this.sentAt) * 1000;
    this.sentAt = -1;
    this.adaptive.learn(gapUs, this.opened);
  }

  /** Closes the window for good (the endpoint is closing). */
  stop(): void {
    this.stopped = true;
  }

  private readonly spin = (): void => {
    this.turns++;
    if (!this.stopped && this.now() < this.until) setImmediate(this.spin);
    else this.spinning = false;
  };
}
