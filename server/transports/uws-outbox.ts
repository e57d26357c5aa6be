/**
 * One uWS socket's outgoing messages, in order. uWS copies whatever the socket cannot take at once
 * into a buffer of its own, on the calling thread: a 200 MB camera answer sent whole costs one
 * 200 MB copy (and as much memory again) on the event loop. A message sent as parts (a SplitFrame)
 * leaves here as fragments of at most {@link FRAGMENT_BYTES}, a few per turn of the event loop and
 * the next ones only once uWS's buffer has drained, so no turn copies more than a few megabytes.
 * Messages sent meanwhile, and the close, wait their turn: fragments of two messages never mix.
 *
 * @example
 * const outbox = new UwsOutbox(ws);
 * outbox.sendParts(frame.parts); // behaviour.drain calls outbox.pump()
 */

/** The part of uWS's WebSocket the outbox uses. */
export interface UwsSendSocket {
  send(message: Uint8Array, isBinary: boolean, compress: boolean): number;
  sendFirstFragment(message: Uint8Array, isBinary: boolean, compress: boolean): boolean;
  sendFragment(message: Uint8Array, compress: boolean): boolean;
  sendLastFragment(message: Uint8Array, compress: boolean): boolean;
  getBufferedAmount(): number;
  end(code: number, reason: string): void;
}

/** The largest fragment written at once. */
export const FRAGMENT_BYTES = 1024 * 1024;
/** Fragments are written while uWS buffers less than this; above it the outbox waits for drain. */
const LOW_WATER_BYTES = 2 * FRAGMENT_BYTES;
/** Bytes written per turn of the event loop at most, so other sockets' work runs in between. */
const TURN_BYTES = 4 * FRAGMENT_BYTES;

type Item =
  | { kind: 'frame'; frame: Uint8Array; onDone: (() => void) | undefined }
  | { kind: 'parts'; chunks: Uint8Array[]; next: number }
  | { kind: 'close'; code: number; reason: string };

/** The non-empty pieces of `parts`, none larger than FRAGMENT_BYTES. */
function fragmentsOf(parts: readonly Uint8Array[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const part of parts) {
    for (let at = 0; at < part.byteLength; at += FRAGMENT_BYTES) out.push(part.subarray(at, Math.min(part.byteLength, at + FRAGMENT_BYTES)));
  }
  return out;
}

export class UwsOutbox {
  private readonly queue: Item[] = [];
  private scheduled = false;
  private closed = false;
  private queued = 0;

  constructor(private readonly ws: UwsSendSocket) {}

  /** Messages (and a close) waiting here, not yet all handed to uWS. */
  get queuedMessages(): number {
    return this.queue.length;
  }

  /** Bytes of the messages waiting here, not yet handed to uWS. */
  get queuedBytes(): number {
    return this.queued;
  }

  /**
   * One whole message: sent at once (uWS copies it) unless a split message is still leaving.
   * `onDone` runs once uWS has its copy (or the socket closed first).
   */
  send(frame: Uint8Array, onDone?: () => void): void {
    if (this.closed) return onDone?.();
    if (this.queue.length > 0) {
      this.queued += frame.byteLength;
      return void this.queue.push({ kind: 'frame', frame, onDone });
    }
    this.ws.send(frame, true, false);
    onDone?.();
  }

  /** One message made of `parts`, written as fragments. */
  sendParts(parts: readonly Uint8Array[]): void {
    if (this.closed) return;
    const chunks = fragmentsOf(parts);
    if (chunks.length <= 1) return this.send(chunks[0] ?? new Uint8Array(0), undefined);
    for (const chunk of chunks) this.queued += chunk.byteLength;
    this.queue.push({ kind: 'parts', chunks, next: 0 });
    if (this.queue.length === 1) this.pump();
  }

  /** Closes once every message queued before has left. */
  close(code: number, reason: string): void {
    if (this.closed) return;
    if (this.queue.length === 0) {
      this.closed = true;
      this.ws.end(code, reason);
    } else this.queue.push({ kind: 'close', code, reason });
  }

  /** The socket closed: nothing more is written. */
  dispose(): void {
    this.closed = true;
    this.queued = 0;
    for (const item of this.queue.splice(0)) if (item.kind === 'frame') item.onDone?.();
  }

  /** Writes what the socket's buffer allows this turn; uWS's drain handler calls it too. */
  pump(): void {
    if (this.closed) return;
    let budget = TURN_BYTES;
    while (this.queue.length > 0) {
      if (this.ws.getBufferedAmount() >= LOW_WATER_BYTES) return; // drain calls back
      if (budget <= 0) return this.later();
      const item = this.queue[0]!;
      if (item.kind === 'frame') {
        this.queue.shift();
        this.ws.send(item.frame, true, false);
        item.onDone?.();
        budget -= item.frame.byteLength;
        this.queued -= item.frame.byteLength;
      } else if (item.kind === 'close') {
        this.queue.length = 0;
        this.queued = 0;
        this.closed = true;
        this.ws.end(item.code, item.reason);
        return;
      } else {
        const chunk = item.chunks[item.next]!;
        if (item.next === 0) this.ws.sendFirstFragment(chunk, true, false);
        else if (item.next === item.chunks.length - 1) this.ws.sendLastFragment(chunk, false);
        else this.ws.sendFragment(chunk, false);
        budget -= chunk.byteLength;
        this.queued -= chunk.byteLength;
        if (++item.next === item.chunks.length) this.queue.shift();
      }
    }
  }

  /** Another turn of the event loop, for a socket that keeps taking bytes (no drain will come). */
  private later(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }
}
