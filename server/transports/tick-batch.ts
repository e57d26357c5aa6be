/**
 * Small binary messages sent in one tick, framed here (RFC 6455 server frames: unmasked, FIN, binary)
 * and written to the socket as one buffer (a long burst as a few). Many sessions stepping on one connection answer many
 * frames per chunk read; through `ws.send` each frame was two buffers of one `writev` (corked),
 * and the kernel's work per buffer made that write a quarter of the server's time per step.
 */
import type { Socket } from 'node:net';

/** Messages this large go through ws directly: the copy into the batch would cost more than the write saves. */
export const TICK_BATCH_MAX_MESSAGE_BYTES = 16 * 1024;

/**
 * A burst leaves in writes of at most this many messages. Answers to one chunk of pipelined
 * requests written all at the tick's end make the two ends take turns (the client waits while the
 * server works through the chunk, then the server waits while the client works through the
 * answers); written in parts, the client starts on the first answers while the server works on the
 * rest. At 64 sessions stepping on one connection this doubled the steps per second.
 */
export const TICK_BATCH_MAX_MESSAGES = 32;

export class TickBatch {
  private parts: Uint8Array[] = [];
  private dones: (() => void)[] = [];

  /** @param writable false once the socket is closing: the batch is then dropped (its callbacks still run). */
  constructor(
    private readonly socket: Socket,
    private readonly writable: () => boolean,
  ) {}

  /** Queues one message (under TICK_BATCH_MAX_MESSAGE_BYTES); `onDone` runs once it is written, or dropped. */
  add(message: Uint8Array, onDone?: () => void): void {
    if (this.parts.length === 0) process.nextTick(this.flush);
    const n = message.byteLength;
    this.parts.push(n < 126 ? Uint8Array.of(0x82, n) : Uint8Array.of(0x82, 126, n >> 8, n & 0xff), message);
    if (onDone) this.dones.push(onDone);
    if (this.parts.length >= 2 * TICK_BATCH_MAX_MESSAGES) this.flush();
  }

  /** Writes what is queued now: before any frame that ws writes itself, so the order on the wire is the order sent. */
  readonly flush = (): void => {
    if (this.parts.length === 0) return;
    const parts = this.parts;
    const dones = this.dones;
    this.parts = [];
    this.dones = [];
    if (!this.writable()) {
      for (const done of dones) done();
      return;
    }
    // One copy of small frames into one buffer; the messages (pooled buffers) are free once it is made.
    this.socket.write(Buffer.concat(parts));
    for (const done of dones) done();
  };
}
