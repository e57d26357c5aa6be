/**
 * The bound on what waits to be written to one client. A client that stops reading while it keeps
 * asking (a render in a loop) would otherwise grow the server by every answer it never reads. Past
 * `maxBytes` waiting, the server stops reading from that client (the transport pauses the socket,
 * so TCP pushes back on the client; frames it had already read wait here unhandled); once the
 * backlog drains to half the budget it reads again. A client that does not drain within
 * `drainTimeoutMs` is closed with {@link CLOSE_CODES.SLOW_READER}; if it does not read its way to
 * the close frame within the same time again, its socket is dropped. Other clients never wait on it.
 *
 * @example
 * const gate = new OutboundGate(transport, { maxBytes: 64 * MiB, drainTimeoutMs: 30_000 }, hooks);
 * gate.afterWrite(); // after every send: pauses reading when over budget
 */
import { CLOSE_CODES } from '../protocol/close-codes.ts';
import type { TransportConnection } from './transport.ts';

export interface OutboundLimits {
  /** Bytes waiting to be written to one connection past which the server stops reading from it; 0 disables the bound. */
  maxBytes: number;
  /** How long a connection over maxBytes has to drain before it is closed with SLOW_READER (and, as long again later, dropped). */
  drainTimeoutMs: number;
}

export const DEFAULT_OUTBOUND_LIMITS: OutboundLimits = {
  // Room for a few camera answers in flight; a single larger answer only pauses reading until it has left.
  maxBytes: 64 * 1024 * 1024,
  drainTimeoutMs: 30_000,
};

/** What the gate calls back into its connection. */
export interface OutboundHooks {
  /** Handles one frame that waited while reading was paused. */
  handle(frame: Uint8Array): void;
  /** Whether the connection has closed (a held frame is then dropped). */
  closed(): boolean;
  /** Reports a slow reader being closed (logs, metrics). */
  onSlowReader(info: { bufferedBytes: number; maxBytes: number; drainTimeoutMs: number }): void;
}

const MIB = 1024 * 1024;

export class OutboundGate {
  private paused = false;
  private closing = false;
  private deadline: NodeJS.Timeout | null = null;
  private held: Uint8Array[] = [];
  private heldBytes = 0;

  constructor(
    private readonly transport: TransportConnection,
    private readonly limits: OutboundLimits,
    private readonly hooks: OutboundHooks,
  ) {}

  /** Whether reading from the client is paused for its backlog. */
  get isPaused(): boolean {
    return this.paused;
  }

  private get enabled(): boolean {
    return this.limits.maxBytes > 0 && this.transport.bufferedBytes !== undefined;
  }

  /**
   * Called for each frame the transport delivers. Returns true when the frame was taken (held until
   * the backlog drains, or dropped once closing); false when the caller handles it now.
   */
  intercept(frame: Uint8Array): boolean {
    if (this.closing) return true;
    if (!this.paused) return false;
    // Frames the transport had read before it paused (or, for one that cannot pause, everything the
    // client sends meanwhile) wait here, bounded like the backlog itself.
    this.held.push(frame);
    this.heldBytes += frame.byteLength;
    if (this.heldBytes > this.limits.maxBytes) this.closeSlowReader();
    return true;
  }

  /** Called after every write (and every handled frame): pauses reading when the backlog is over budget. */
  afterWrite(): void {
    if (this.paused || this.closing || !this.enabled) return;
    if (this.transport.bufferedBytes!() <= this.limits.maxBytes) return;
    this.paused = true;
    this.transport.pauseReading?.();
    this.deadline = setTimeout(() => this.onDeadline(), this.limits.drainTimeoutMs);
    this.deadline.unref();
  }

  /** Called when the transport's buffer drained (some or all): resumes reading once below half the budget. */
  onDrain(): void {
    if (!this.paused || this.closing) return;
    if (this.transport.bufferedBytes!() > this.limits.maxBytes / 2) return;
    this.resume();
  }

  /** The connection closed: nothing held is handled. */
  dispose(): void {
    this.closing = true;
    this.clearDeadline();
    this.held = [];
    this.heldBytes = 0;
  }

  private resume(): void {
    this.paused = false;
    this.clearDeadline();
    this.transport.resumeReading?.();
    // Held frames run in arrival order until the backlog is over budget again.
    while (this.held.length > 0 && !this.paused && !this.closing && !this.hooks.closed()) {
      const frame = this.held.shift()!;
      this.heldBytes -= frame.byteLength;
      this.hooks.handle(frame);
      this.afterWrite();
    }
  }

  private onDeadline(): void {
    this.deadline = null;
    if (!this.paused || this.closing) return;
    // Drained without a drain event (a backlog under the socket's own high-water mark).
    if (this.transport.bufferedBytes!() <= this.limits.maxBytes / 2) return this.resume();
    this.closeSlowReader();
  }

  private closeSlowReader(): void {
    if (this.closing) return;
    const bufferedBytes = this.transport.bufferedBytes?.() ?? 0;
    this.closing = true;
    this.clearDeadline();
    this.held = [];
    this.heldBytes = 0;
    const { maxBytes, drainTimeoutMs } = this.limits;
    this.hooks.onSlowReader({ bufferedBytes, maxBytes, drainTimeoutMs });
    // The close frame queues behind what is still unread: a client that reads again sees it.
    this.transport.close(
      CLOSE_CODES.SLOW_READER,
      `slow reader: over ${(maxBytes / MIB).toFixed(0)} MiB of answers unread for ${drainTimeoutMs} ms`.slice(0, 120),
    );
    setTimeout(() => this.hooks.closed() || this.transport.terminate(), drainTimeoutMs).unref();
  }

  private clearDeadline(): void {
    if (this.deadline) clearTimeout(this.deadline);
    this.deadline = null;
  }
}
