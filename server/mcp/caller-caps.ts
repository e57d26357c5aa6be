/**
 * Caps on sessions per caller and in all (over /mcp: the env sessions made through MCP). A caller (one remote address) that reaches its cap
 * makes room by giving up its own least recently used idle session, so it can never lock out
 * anyone else; when the whole endpoint is full, the idle session given up is the least recently
 * used one of the caller holding the most. A new session is refused only when every session that
 * could give way is in the middle of a request.
 *
 * @example
 * const caps = new CallerCaps<Session>({ perCaller: 64, total: 1024 });
 * const room = caps.makeRoom('10.0.0.7');
 * if (room.kind === 'refused') return answer(room.status, room.message);
 * for (const s of room.evict) end(s);
 * caps.add(newSession);
 */

/** What the caps need to know about a session. */
export interface CappedSession {
  readonly caller: string;
  /** Requests in progress; a busy session is never evicted. */
  readonly busy: number;
  /** Date.now() of its last request. */
  readonly lastActive: number;
}

export interface CallerCapsOptions {
  /** Sessions one caller may hold at once. */
  perCaller: number;
  /** Sessions the endpoint holds at once, across callers. */
  total: number;
}

export type Room<S> = { kind: 'room'; evict: S[] } | { kind: 'refused'; status: 429 | 503; message: string };

export class CallerCaps<S extends CappedSession> {
  private readonly byCaller = new Map<string, Set<S>>();
  private count = 0;

  constructor(readonly opts: CallerCapsOptions) {
    for (const [name, value] of Object.entries(opts)) {
      if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer, got ${String(value)}`);
    }
  }

  get size(): number {
    return this.count;
  }

  held(caller: string): number {
    return this.byCaller.get(caller)?.size ?? 0;
  }

  add(s: S): void {
    let own = this.byCaller.get(s.caller);
    if (!own) this.byCaller.set(s.caller, (own = new Set()));
    if (!own.has(s)) {
      own.add(s);
      this.count++;
    }
  }

  remove(s: S): void {
    const own = this.byCaller.get(s.caller);
    if (!own?.delete(s)) return;
    this.count--;
    if (own.size === 0) this.byCaller.delete(s.caller);
  }

  /**
   * The sessions to end so that `caller` may open one more, or why it may not. Nothing is
   * removed here: the caller ends the sessions (which removes them) and then adds the new one.
   */
  makeRoom(caller: string): Room<S> {
    const evict: S[] = [];
    const own = this.byCaller.get(caller);
    if (own && own.size >= this.opts.perCaller) {
      const victim = leastRecentlyUsedIdle(own, evict);
      if (!victim)
        return {
          kind: 'refused',
          status: 429,
          message: `too many env sessions from this caller through MCP (at most ${this.opts.perCaller}), and every one of them is busy; close one with close_env`,
        };
      evict.push(victim);
    }
    if (this.count - evict.length >= this.opts.total) {
      const victim = this.globalVictim(evict);
      if (!victim) return { kind: 'refused', status: 503, message: `too many env sessions through MCP (at most ${this.opts.total}), and none is idle` };
      evict.push(victim);
    }
    return { kind: 'room', evict };
  }

  /** The least recently used idle session of the caller holding the most (ties: the older session). */
  private globalVictim(taken: readonly S[]): S | undefined {
    let best: S | undefined;
    let bestHeld = 0;
    for (const own of this.byCaller.values()) {
      const held = own.size - taken.filter((s) => own.has(s)).length;
      if (held < bestHeld) continue;
      const candidate = leastRecentlyUsedIdle(own, taken);
      if (!candidate) continue;
      if (held > bestHeld || !best || candidate.lastActive < best.lastActive) {
        best = candidate;
        bestHeld = held;
      }
    }
    return best;
  }
}

function leastRecentlyUsedIdle<S extends CappedSession>(sessions: Iterable<S>, skip: readonly S[]): S | undefined {
  let best: S | undefined;
  for (const s of sessions) {
    if (s.busy > 0 || skip.includes(s)) continue;
    if (!best || s.lastActive < best.lastActive) best = s;
  }
  return best;
}

/**
 * Who a request comes from, for the caps: its remote address (IPv4-mapped IPv6 folded to IPv4).
 * Every caller of a server has the same token, so the token cannot tell callers apart; forwarded
 * headers are not trusted, as any client can write them.
 */
export function callerOf(remoteAddress: string | undefined): string {
  if (!remoteAddress) return 'unknown';
  return remoteAddress.startsWith('::ffff:') && remoteAddress.includes('.') ? remoteAddress.slice(7) : remoteAddress;
}
