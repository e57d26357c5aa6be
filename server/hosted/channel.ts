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

export class FrameChannel {
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  constructor(
    private readonly socket: Duplex,
    onMessage: (message: unknown) => void,
    onError: (err: Error) => void,
  ) {
    socket.on('data', (chunk: Buffer) => {
      this.pending.push(chunk);
      this.pendingBytes += chunk.byteLength;
      let messages: unknown[];
      try {
        messages = this.drain();
      } catch (err) {
        onError(err instanceof Error ? err : new Error(String(err)));
        return;
      }
      for (const m of messages) onMessage(m);
    });
    socket.on('error', onError);
  }

  /** Writes one message: its length, then its bytes. */
  send(message: unknown): void {
    const body = encode(message);
    if (body.byteLength < COPY_BELOW_BYTES) {
      const frame = Buffer.allocUnsafe(HEADER_BYTES + body.byteLength);
      frame.writeUInt32LE(body.byteLength, 0);
      frame.set(body, HEADER_BYTES);
      this.socket.write(frame);
      return;
    }
    const header = Buffer.allocUnsafe(HEADER_BYTES);
    header.writeUInt32LE(body.byteLength, 0);
    this.socket.cork();
    this.socket.write(header);
    // encode() returns a view of the codec's scratch buffer, which later messages do not overwrite.
    this.socket.write(body);
    this.socket.uncork();
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
