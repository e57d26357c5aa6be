/**
 * Keeps the event loop polling its sockets for a short window after each answer instead of letting
 * the thread sleep. On VMs whose idle cores halt at once (KVM/Firecracker guests with
 * guest_halt_poll_ns=0, like the machines gymwire's benchmarks run on), waking a sleeping core
 * costs tens of µs twice: in the client's write, which has to interrupt the halted core, and in the
 * answer's latency. A client that sends its next request within the window (a pipelined rollout,
 * several clients, an agent's burst of tool calls) finds the server awake. The price is up to
 * `windowUs` of CPU per answer when nothing follows, so it is off by default (`--busy-poll-us`).
 *
 * How: while the window is open, a setImmediate keeps re-arming itself; with an immediate pending,
 * libuv polls with a zero timeout, so incoming frames are read on the next turn without sleeping.
 */
export class BusyPoller {
  private readonly windowMs: number;
  private until = 0;
  private spinning = false;
  private stopped = false;
  /** Event-loop turns spent polling so far (for tests and metrics). */
  turns = 0;

  /** `now` (ms) is for tests; the window is timed with performance.now(). */
  constructor(
    windowUs: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    if (!(windowUs > 0) || !Number.isFinite(windowUs)) throw new RangeError(`busy-poll window must be a positive number of µs, got ${windowUs}`);
    this.windowMs = windowUs / 1000;
  }

  /** True while the loop is being kept awake. */
  get active(): boolean {
    return this.spinning;
  }

  /** (Re)opens the window: call after sending an answer. */
  touch(): void {
    if (this.stopped) return;
    this.until = this.now() + this.windowMs;
    if (this.spinning) return;
    this.spinning = true;
    setImmediate(this.spin);
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
