/**
 * A client's identity across its connections: its sessions, its resume token, its ack, and the
 * reply cache that answers a request retried after a reconnect from what the first attempt
 * produced, so no request ever runs twice.
 */
import type { EncodedFrame } from '../protocol/codec.ts';
import { PROTOCOL_VERSION } from '../protocol/messages.ts';
import type { RequestType } from '../protocol/messages.ts';
import type { Connection } from './connection.ts';
import type { FramePool } from './frame-pool.ts';

/**
 * Replies kept per client for requests retried after a reconnect. Enough for every request in flight
 * at a drop in practice; a retried request whose answer was evicted is refused
 * (ENV_ERR_REPLY_EXPIRED), never applied twice. Kept small: retained image replies cost GC time.
 */
export const REPLY_CACHE_ENTRIES = 1024;
export const REPLY_CACHE_BYTES = 16 * 1024 * 1024;

interface CachedReply {
  /** The request's type: a later request that reuses the id for another type is refused, not answered from here. */
  type: RequestType;
  /** The answer itself, never a copy (a split frame references the env's tensors). */
  bytes: EncodedFrame | Promise<EncodedFrame>;
  size: number;
}

/** A client identity that outlives its connections, so sessions can be resumed after a drop. */
export class ClientState {
  readonly sessions = new Set<string>();
  readonly replies = new Map<number, CachedReply>();
  replyBytes = 0;
  /** The highest request id seen from this client; ids below it were all received (one ordered stream at a time). */
  highestId = -1;
  /** The client's latest ack: it has every answer up to here, so ids at or below it are never retried. */
  acked = -1;
  connection: Connection | null = null;
  detachedAt: number | null = null;
  /** Sessions being made right now: counted against the limits before they exist. */
  reserved = 0;
  /** The size of this client's last answer per batched op: large ones are encoded into pooled memory. */
  readonly batchReplyBytes = { step_batch: 0, reset_batch: 0 };

  /** The protocol version of this client's latest hello: answers take that version's forms. */
  protocolVersion = PROTOCOL_VERSION;

  constructor(
    readonly id: string,
    readonly resumeToken: string,
    readonly name: string,
    private readonly frames: FramePool,
  ) {}

  remember(id: number, type: RequestType, bytes: EncodedFrame | Promise<EncodedFrame>): void {
    const entry: CachedReply = { type, bytes, size: 0 };
    this.replies.set(id, entry);
    const account = (b: EncodedFrame) => {
      if (this.replies.get(id) !== entry) return;
      this.frames.retain(b);
      entry.bytes = b;
      entry.size = b.byteLength;
      this.replyBytes += b.byteLength;
      this.evict();
    };
    if (bytes instanceof Promise) void bytes.then(account, () => {});
    else account(bytes);
    this.evict();
  }

  /** Drops answers the client confirmed it received (every id up to `ack`). */
  forgetUpTo(ack: number): void {
    this.acked = Math.max(this.acked, ack);
    for (const [id, entry] of this.replies) {
      if (id > ack) break;
      this.drop(id, entry);
    }
  }

  /** Empties the cache (the client is gone for good). */
  forgetAll(): void {
    for (const [id, entry] of this.replies) this.drop(id, entry);
  }

  private drop(id: number, entry: CachedReply): void {
    this.replyBytes -= entry.size;
    this.replies.delete(id);
    // size is set once the answer exists: only then does the cache hold a reference to it.
    if (entry.size > 0 && !(entry.bytes instanceof Promise)) this.frames.release(entry.bytes);
  }

  private evict(): void {
    while (this.replies.size > REPLY_CACHE_ENTRIES || this.replyBytes > REPLY_CACHE_BYTES) {
      const oldest = this.replies.keys().next();
      if (oldest.done) break;
      this.drop(oldest.value, this.replies.get(oldest.value)!);
    }
  }
}
