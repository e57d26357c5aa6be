/**
 * Reusable memory for large answers (image observations). Encoding every answer into fresh memory
 * cost more than the copy itself: the kernel zeroes each new page on first touch, and V8 starts a
 * major GC for every few tens of MB of new external memory. A pooled frame goes back to the pool
 * once every holder (the request that produced it, socket writes, the reply cache) has released it.
 * Free buffers are bounded in total bytes and handed back to the GC after sitting unused for a
 * while (`trim`, which the server's reaper calls), so one burst of large answers does not pin its
 * memory for the life of the process.
 */
import { encodeIntoSplit, encodeSplit, SplitFrame } from '../protocol/codec.ts';
import type { EncodedFrame } from '../protocol/codec.ts';

/** Answers expected to be smaller than this are encoded the ordinary way. */
export const POOLED_FRAME_MIN_BYTES = 64 * 1024;
/** The bytes a frame cost to encode (a split frame's own bytes): what the next answer of its stream is sized by. */
export function encodedBytes(frame: EncodedFrame): number {
  return frame instanceof SplitFrame ? frame.inlineBytes : frame.byteLength;
}
/** Free buffers kept per size class; more are left to the GC. */
const FREE_PER_CLASS = 64;
/** An answer under this share of its buffer is copied out instead of pinning the buffer. */
const KEEP_FRACTION = 4;
/**
 * No pooled frame is smaller: buffers start at twice the minimum (a power of two above it plus
 * headroom) and keep only frames of at least KEEP_FRACTION of themselves. Below it, the holder
 * lookups (three per answer, on every step) are skipped.
 */
const SMALLEST_POOLED_FRAME = (2 * POOLED_FRAME_MIN_BYTES) / KEEP_FRACTION;

export interface FramePoolOptions {
  /** Free buffers kept at most, in bytes, over every size class (default 256 MiB). */
  maxFreeBytes?: number;
  /** A free buffer unused this long is released by `trim` (default 30 s). */
  idleMs?: number;
}

interface FreeBuffer {
  buffer: Buffer;
  /** When it went back to the pool (Date.now()). */
  since: number;
}

interface Holders {
  refs: number;
  buffer: Buffer;
}

export class FramePool {
  private readonly free = new Map<number, FreeBuffer[]>();
  private readonly holders = new WeakMap<ArrayBufferLike, Holders>();
  private readonly maxFreeBytes: number;
  private readonly idleMs: number;
  /** Frames handed out and not yet back (for tests and /healthz-style introspection). */
  outstanding = 0;
  /** Bytes held by free buffers waiting for reuse. */
  freeBytes = 0;

  constructor(opts: FramePoolOptions = {}) {
    this.maxFreeBytes = opts.maxFreeBytes ?? 256 * 1024 * 1024;
    this.idleMs = opts.idleMs ?? 30_000;
  }

  /** Releases free buffers unused for longer than idleMs (the pool grows back on demand). */
  trim(now = Date.now()): void {
    for (const [size, list] of this.free) {
      // Each list is a stack: the oldest buffers sit at the bottom.
      let stale = 0;
      while (stale < list.length && now - list[stale]!.since > this.idleMs) stale++;
      if (stale === 0) continue;
      list.splice(0, stale);
      this.freeBytes -= stale * size;
      if (list.length === 0) this.free.delete(size);
    }
  }

  /**
   * Encodes `value`, into pooled memory when `expectedBytes` (the frame's own bytes in this
   * stream's previous answer, {@link encodedBytes}) says it will be large. Tensors of a megabyte or
   * more are not copied at all: the answer is a SplitFrame that references them. The caller holds
   * one reference to a pooled frame and must `release` it; every other holder `retain`s and
   * `release`s its own.
   */
  encode(value: unknown, expectedBytes: number): EncodedFrame {
    if (expectedBytes < POOLED_FRAME_MIN_BYTES) return encodeSplit(value);
    const buffer = this.take(expectedBytes);
    const frame = encodeIntoSplit(value, buffer);
    if (frame instanceof SplitFrame) {
      // Its own bytes were copied out; the buffer is free again.
      this.putBack(buffer);
      return frame;
    }
    if (frame.buffer !== buffer.buffer) {
      // It did not fit (msgpackr moved to memory of its own): the answer grew; nothing to track.
      this.putBack(buffer);
      return frame;
    }
    if (frame.byteLength < buffer.byteLength / KEEP_FRACTION) {
      // Much smaller than expected: keep an exact copy rather than pin a large buffer in the reply cache.
      const copy = Buffer.from(frame);
      this.putBack(buffer);
      return copy;
    }
    this.holders.set(buffer.buffer, { refs: 1, buffer });
    this.outstanding++;
    return frame;
  }

  isPooled(frame: EncodedFrame): boolean {
    return this.holdersOf(frame) !== undefined;
  }

  retain(frame: EncodedFrame): void {
    const h = this.holdersOf(frame);
    if (h) h.refs++;
  }

  release(frame: EncodedFrame): void {
    const h = this.holdersOf(frame);
    if (!h) return;
    if (--h.refs > 0) return;
    this.holders.delete(h.buffer.buffer);
    this.outstanding--;
    this.putBack(h.buffer);
  }

  /** A split frame is never pooled: its own bytes are a small copy, its tensors the env's. */
  private holdersOf(frame: EncodedFrame): Holders | undefined {
    return frame.byteLength < SMALLEST_POOLED_FRAME || frame instanceof SplitFrame ? undefined : this.holders.get(frame.buffer);
  }

  /** A buffer of at least `bytes` rounded up to a power of two, with headroom for the envelope. */
  private take(bytes: number): Buffer {
    const size = 2 ** Math.ceil(Math.log2(bytes + 1024));
    const reused = this.free.get(size)?.pop();
    if (!reused) return Buffer.allocUnsafeSlow(size);
    this.freeBytes -= size;
    return reused.buffer;
  }

  private putBack(buffer: Buffer): void {
    if (this.freeBytes + buffer.byteLength > this.maxFreeBytes) return;
    let list = this.free.get(buffer.byteLength);
    if (!list) this.free.set(buffer.byteLength, (list = []));
    if (list.length >= FREE_PER_CLASS) return;
    list.push({ buffer, since: Date.now() });
    this.freeBytes += buffer.byteLength;
  }
}
