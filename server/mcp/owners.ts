/**
 * Who owns env sessions made over /mcp: the caller (its bearer token and remote address), not an
 * MCP session. The 2026-07-28 revision has no MCP sessions at all, and a 2025-11-25 client that
 * reconnects (after a restart, say) is the same caller again, so a session id a caller made keeps
 * working from any of its requests until close_env or an idle timeout.
 *
 * Each owner has one in-process gymwire connection ({@link coreLink}), opened at its first request
 * with the bearer token as hello's token, so the core's limits, validation and session reaper are
 * those of any WebSocket client. An owner with no request for `idleMs` is released: its env
 * sessions are closed and its connection with them. Env sessions are capped per caller and in all
 * ({@link CallerCaps}): past its cap a caller's make_env closes its own least recently used idle
 * session; when the endpoint is full, the caller holding the most gives one up.
 *
 * @example
 * const owners = new CallerOwners(core, { idleMs: 600_000, maxSessions: 1024, maxSessionsPerCaller: 64 });
 * const owner = await owners.acquire('10.0.0.7', token);
 * owner.mcp.createServer(); // an MCP server over that caller's sessions
 */
import type { Logger } from 'pino';

import type { ServerCore } from '../core.ts';
import { CatalogCache } from './catalog.ts';
import { CallerCaps } from './caller-caps.ts';
import type { CappedSession } from './caller-caps.ts';
import { coreLink } from './link.ts';
import type { CoreLink } from './link.ts';
import { ClosedSessionLog, GymwireMcp, ToolFailure } from './tools.ts';

export interface CallerOwnersOptions {
  logger: Logger;
  /** Owners with no request for this long are released (their env sessions closed); 0 never. */
  idleMs: number;
  /** Env sessions held through MCP at most, across callers; also the most callers held at once. */
  maxSessions: number;
  /** Env sessions one caller holds through MCP at most. */
  maxSessionsPerCaller: number;
  /** A make published tools the listing did not have. */
  onToolsAdded?: () => void;
}

/** One caller's link and sessions. */
export interface Owner {
  readonly key: string;
  readonly caller: string;
  readonly link: CoreLink;
  readonly mcp: GymwireMcp;
  /** Requests in progress (a long-lived listen stream does not count). */
  busy: number;
  lastActive: number;
}

/** A make in progress holds a place under the caps until its session exists. */
type Capped = CappedSession & { readonly id?: string };

export class CallerOwners {
  private readonly owners = new Map<string, Owner>();
  private readonly opening = new Map<string, Promise<Owner>>();
  /** Which owner holds each capped session, for evictions across callers. */
  private readonly holders = new Map<string, Owner>();
  private readonly caps: CallerCaps<Capped>;
  private readonly closed = new ClosedSessionLog(4096);
  private readonly catalog = new CatalogCache();
  private readonly reaper: ReturnType<typeof setInterval> | null;
  private readonly log: Logger;

  constructor(
    private readonly core: ServerCore,
    private readonly opts: CallerOwnersOptions,
  ) {
    this.log = opts.logger;
    this.caps = new CallerCaps<Capped>({ total: opts.maxSessions, perCaller: opts.maxSessionsPerCaller });
    const idleMs = opts.idleMs;
    this.reaper =
      idleMs > 0
        ? setInterval(
            () => {
              const now = Date.now();
              for (const o of this.owners.values()) if (o.busy === 0 && now - o.lastActive > idleMs) void this.release(o, `idle for more than ${idleMs} ms`);
            },
            Math.max(50, Math.min(5000, Math.floor(idleMs / 4))),
          )
        : null;
    this.reaper?.unref();
  }

  /** Env sessions held through MCP (makes in progress included). */
  get sessionCount(): number {
    return this.caps.size;
  }

  /** Callers with a live link. */
  get callerCount(): number {
    return this.owners.size;
  }

  /**
   * The caller's owner, opening its gymwire connection on first use. Rejects with the core's
   * ProtocolError when hello is refused, and with a {@link ToolFailure} (ENV_ERR_TOO_MANY_SESSIONS)
   * when every held caller is busy and the endpoint is full.
   */
  acquire(caller: string, token: string | undefined): Promise<Owner> {
    const key = `${caller}\u0000${token ?? ''}`;
    const live = this.owners.get(key);
    if (live && !live.link.closed) return Promise.resolve(live);
    let pending = this.opening.get(key);
    if (!pending) {
      pending = this.open(key, caller, token).finally(() => this.opening.delete(key));
      this.opening.set(key, pending);
    }
    return pending;
  }

  /** Releases every owner (closing their env sessions) and stops the reaper. */
  async close(): Promise<void> {
    if (this.reaper) clearInterval(this.reaper);
    await Promise.allSettled([...this.opening.values()]);
    await Promise.all([...this.owners.values()].map((o) => this.release(o, 'the MCP endpoint closed')));
  }

  private async open(key: string, caller: string, token: string | undefined): Promise<Owner> {
    if (this.owners.size >= this.opts.maxSessions) {
      let victim: Owner | undefined;
      for (const o of this.owners.values()) if (o.busy === 0 && (!victim || o.lastActive < victim.lastActive)) victim = o;
      if (!victim) throw new ToolFailure('ENV_ERR_TOO_MANY_SESSIONS', `too many MCP callers at once (at most ${this.opts.maxSessions}), and none is idle`);
      this.log.info({ caller: victim.caller }, 'MCP caller released: the endpoint is full');
      void this.release(victim, 'released: the MCP endpoint is full');
    }
    const link = await coreLink(this.core, { token, clientName: 'gymwire-mcp-http', remoteAddress: caller });
    const owner: Owner = {
      key,
      caller,
      link,
      busy: 0,
      lastActive: Date.now(),
      mcp: new GymwireMcp(link, {
        logger: this.log.child({ caller }),
        caller,
        catalog: this.catalog,
        closed: this.closed,
        onToolsAdded: this.opts.onToolsAdded,
        hooks: {
          reserve: () => this.reserve(caller),
          opened: (view) => {
            this.holders.set(view.id, owner);
            this.caps.add(view);
          },
          closed: (view) => {
            this.holders.delete(view.id);
            this.caps.remove(view);
          },
        },
      }),
    };
    this.owners.set(key, owner);
    link.onEvent = (event) => owner.mcp.handleEvent(event);
    link.onClose = (reason) => void this.release(owner, `gymwire connection closed: ${reason}`);
    this.log.debug({ caller, token: token !== undefined }, 'MCP caller connected');
    return owner;
  }

  /** Room under the caps for one more session of `caller`, held until the returned release. */
  private reserve(caller: string): () => void {
    const room = this.caps.makeRoom(caller);
    if (room.kind === 'refused') throw new ToolFailure('ENV_ERR_TOO_MANY_SESSIONS', room.message);
    for (const victim of room.evict) {
      const holder = victim.id !== undefined ? this.holders.get(victim.id) : undefined;
      if (!holder) continue;
      const reason = victim.caller === caller ? 'evicted: its caller made another one past the per-caller cap' : 'evicted: the MCP endpoint is full';
      this.log.info({ session_id: victim.id, caller: victim.caller, reason }, 'MCP env session evicted');
      // forget() runs before the first await, so the caps count drops now.
      void holder.mcp.closeSession(victim.id!, reason);
    }
    const placeholder: Capped = { caller, busy: 1, lastActive: Date.now() };
    this.caps.add(placeholder);
    return () => this.caps.remove(placeholder);
  }

  private async release(owner: Owner, reason: string): Promise<void> {
    if (this.owners.get(owner.key) !== owner) return;
    this.owners.delete(owner.key);
    this.log.debug({ caller: owner.caller, reason }, 'MCP caller released');
    await owner.mcp.closeSessions(reason);
    owner.link.close();
  }
}
