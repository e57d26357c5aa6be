/**
 * Who may hold a connection: the server-wide connection cap, the per-IP cap on connections that
 * have not said hello yet, and the hello deadline. Nothing unauthenticated may hold the server's
 * resources for long or in bulk: a peer that never says hello is closed after `helloTimeoutMs`,
 * and one address cannot keep more than `maxPreAuthPerIp` such connections open at once.
 *
 * Transports call {@link Admission.refusal} at the WebSocket upgrade to refuse early (an HTTP
 * status, no WebSocket built); the core calls {@link Admission.enter} for every accepted
 * connection, which counts it (refusing it when upgrades raced past the check) and starts its
 * hello deadline.
 *
 * @example
 * const admission = new Admission({ maxConnections: 4096, maxPreAuthPerIp: 256, helloTimeoutMs: 5000 });
 * const pass = admission.enter('10.0.0.7', () => conn.close(1008, 'no hello'));
 * if ('refused' in pass) close(1013, pass.reason); else on hello: pass.greeted(); on close: pass.leave();
 */
import { webSocketPathAllowed } from './http.ts';
import type { HttpRoutes } from './http.ts';
import type { OriginPolicy } from './origin.ts';

export interface AdmissionLimits {
  /** Connections open at once, greeted or not (0: no cap). */
  maxConnections: number;
  /** Connections from one IP address that have not completed hello (0: no cap). */
  maxPreAuthPerIp: number;
  /** A connection with no successful hello after this long is closed (0: never). */
  helloTimeoutMs: number;
}

/**
 * The largest frame read before hello: a hello with a long token fits many times over, and a peer
 * that has not authenticated cannot make the server decode (or hold) more.
 */
export const PRE_HELLO_MAX_FRAME_BYTES = 64 * 1024;

export const DEFAULT_ADMISSION_LIMITS: AdmissionLimits = {
  maxConnections: 4096,
  maxPreAuthPerIp: 256,
  helloTimeoutMs: 5000,
};

/** Why a connection is not admitted; `status` is the HTTP answer to an upgrade. */
export interface AdmissionRefusal {
  refused: true;
  status: 503 | 429;
  reason: string;
}

/** One admitted connection's hold on the counts. Both methods are idempotent. */
export interface AdmissionPass {
  /** The connection completed hello: it no longer counts as pre-auth and its deadline stops. */
  greeted(): void;
  /** The connection closed: it no longer counts at all. */
  leave(): void;
}

export class Admission {
  readonly limits: AdmissionLimits;
  private open = 0;
  private readonly preAuth = new Map<string, number>();

  constructor(limits: Partial<AdmissionLimits> = {}) {
    this.limits = { ...DEFAULT_ADMISSION_LIMITS, ...limits };
  }

  get connectionCount(): number {
    return this.open;
  }

  /** Pre-auth connections from `ip` right now. */
  preAuthCount(ip: string): number {
    return this.preAuth.get(ip) ?? 0;
  }

  /** Whether one more connection from `ip` would be refused, and why; counts nothing. */
  refusal(ip: string): AdmissionRefusal | null {
    const { maxConnections, maxPreAuthPerIp } = this.limits;
    if (maxConnections > 0 && this.open >= maxConnections) {
      return {
        refused: true,
        status: 503,
        reason: `the server holds its maximum of ${maxConnections} connections (gymwire serve --max-connections); try again later`,
      };
    }
    if (maxPreAuthPerIp > 0 && this.preAuthCount(ip) >= maxPreAuthPerIp) {
      return {
        refused: true,
        status: 429,
        reason: `${maxPreAuthPerIp} connections from ${ip} have not completed hello yet (gymwire serve --max-preauth-per-ip); say hello on those first`,
      };
    }
    return null;
  }

  /**
   * Counts a new connection from `ip` and starts its hello deadline (`onHelloTimeout` runs when it
   * passes without {@link AdmissionPass.greeted}); or refuses it, counting nothing.
   */
  enter(ip: string, onHelloTimeout: () => void): AdmissionPass | AdmissionRefusal {
    const refused = this.refusal(ip);
    if (refused) return refused;
    this.open++;
    this.preAuth.set(ip, this.preAuthCount(ip) + 1);
    let preAuth = true;
    let inside = true;
    const leavePreAuth = () => {
      if (!preAuth) return;
      preAuth = false;
      if (timer) clearTimeout(timer);
      const left = this.preAuthCount(ip) - 1;
      if (left > 0) this.preAuth.set(ip, left);
      else this.preAuth.delete(ip);
    };
    const timer = this.limits.helloTimeoutMs > 0 ? setTimeout(() => preAuth && onHelloTimeout(), this.limits.helloTimeoutMs) : null;
    timer?.unref();
    return {
      greeted: leavePreAuth,
      leave: () => {
        if (!inside) return;
        inside = false;
        leavePreAuth();
        this.open--;
      },
    };
  }
}

/** What an upgrade request shows before any WebSocket exists. */
export interface UpgradeRequest {
  url: string;
  origin?: string;
  host?: string;
  ip: string;
}

/**
 * Why a WebSocket upgrade is refused, as an HTTP status (404 a path that is an HTTP route, 403 a
 * foreign Origin or Host, 503/429 the connection caps), or null to accept it. Both transports ask
 * this before building a WebSocket.
 */
export function upgradeRefusal(
  guards: { origins: OriginPolicy; admission: Admission },
  routes: HttpRoutes | undefined,
  req: UpgradeRequest,
): { status: number; reason: string } | null {
  if (!webSocketPathAllowed(req.url, routes)) return { status: 404, reason: `no WebSocket endpoint at ${req.url.split('?')[0]}: connect to /` };
  const verdict = guards.origins.check(req);
  if (!verdict.allowed) return { status: 403, reason: verdict.reason };
  return guards.admission.refusal(req.ip);
}
