/**
 * Frames between the server and one Python worker: a 4-byte little-endian length, then one msgpack
 * message in the wire's own encoding (protocol/codec.ts: tensors as extension type 1, raw bytes).
 * Nothing is pickled and no tensor becomes a JSON list on the way.
 *
 * @example
 * const channel = new FrameChannel(child.stdio[3] as Duplex, (msg) => handle(msg), () => onEnd());
 * channel.send({ id: 1, calls: [{ op: 'describe', target: { kind: 'gym', id: 'CartPole-v1' } }] });
 */
import type { Duplex } from 'node:stream';

import { decode, encode } from '../../protocol/codec.ts';

const HEADER_BYTES = 4;
/** Frames up to this size are copied behind their header and written once; larger ones go out as a writev. */
const COPY_BELOW_BYTES = 16 * 1024;
/** The largest frame read from a worker by default: a header announcing more is garbage, not a reason to buffer. */
export const DEFAULT_MAX_WORKER_FRAME_BYTES = 1024 * 1024 * 1024;

export class FrameChannel {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Set once a frame could not be read: what follows is dropped, never buffered. */
  private broken = false;

  constructor(
    private readonly socket: Duplex,
    onMessage: (message: unknown) => void,
    onError: (err: Error) => void,
    private readonly maxFrameBytes = DEFAULT_MAX_WORKER_FRAME_BYTES,
  ) {
    socket.on('data', (chunk: Buffer) => {
      if (this.broken) return;
      this.pending.push(chunk);
      this.pendingBytes += chunk.byteLength;
      let messages: unknown[];
      try {
        messages = this.drain();
      } catch (err) {
        this.broken = true;
        this.pending = [];
        this.pendingBytes = 0;
        onError(err instanceof Error ? err : new Error(String(err)));
        return;
      }
      for (const m of messages) onMessage(m);
    });
    socket.on('error', onError);
  }

  /** Writes one message: its length, then its bytes. False when the socket's buffer is full (wait for its 'drain'). */
  send(message: unknown): boolean {
    const body = encode(message);
    if (body.byteLength < COPY_BELOW_BYTES) {
      const frame = Buffer.allocUnsafe(HEADER_BYTES + body.byteLength);
      frame.writeUInt32LE(body.byteLength, 0);
      frame.set(body, HEADER_BYTES);
      return this.socket.write(frame);
    }
    const header = Buffer.allocUnsafe(HEADER_BYTES);
    header.writeUInt32LE(body.byteLength, 0);
    this.socket.cork();
    this.socket.write(header);
    // encode() returns a view of the codec's scratch buffer, which later messages do not overwrite.
    const accepted = this.socket.write(body);
    this.socket.uncork();
    return accepted;
  }

  /** Calls `fn` each time the socket's write buffer drains. */
  onDrain(fn: () => void): void {
    this.socket.on('drain', fn);
  }

  close(): void {
    this.socket.destroy();
  }

  /** Decodes every complete frame received so far. */
  private drain(): unknown[] {
    const out: unknown[] = [];
    while (this.pendingBytes >= HEADER_BYTES) {
      let head = this.pending[0]!;
      if (head.byteLength < HEADER_BYTES) head = this.join();
      const length = head.readUInt32LE(0);
      if (length > this.maxFrameBytes) throw new Error(`a frame of ${length} bytes is larger than the limit of ${this.maxFrameBytes}`);
      if (this.pendingBytes < HEADER_BYTES + length) break;
      if (head.byteLength < HEADER_BYTES + length) head = this.join();
      out.push(decode(head.subarray(HEADER_BYTES, HEADER_BYTES + length)));
      const rest = head.subarray(HEADER_BYTES + length);
      this.pending.shift();
      if (rest.byteLength) this.pending.unshift(rest);
      this.pendingBytes -= HEADER_BYTES + length;
    }
    return out;
  }

  private join(): Buffer {
    const all = Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [all];
    return all;
  }
}
