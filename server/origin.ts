/**
 * Which browsers and which Host names may reach the server: the one origin/Host check shared by the
 * WebSocket upgrade (both transports), the plain HTTP routes, the viewer and /mcp.
 *
 * - `Origin` (sent by browsers, never required): allowed when absent (SDKs, curl, MCP hosts), a
 *   loopback origin (`localhost`, `*.localhost`, `127.0.0.0/8`, `[::1]`, any scheme and port), the
 *   page's own origin on a trusted Host, or listed in `allowedOrigins` (`'*'` allows every origin).
 * - `Host` (DNS-rebinding protection): a rebound name reaches the server with the attacker's name
 *   in `Host`. Trusted are IP literals (a browser that typed an IP connects there; nothing to
 *   rebind), loopback names, this machine's hostname and `allowedHosts` (`'*'`: any). When the
 *   server has a token, every route that reveals or changes sessions asks for it, so `checkHost`
 *   is false there and any Host is served (a server behind a proxy keeps its public name).
 *
 * @example
 * const policy = new OriginPolicy({ allowedOrigins: ['http://localhost:3000'], checkHost: true });
 * const verdict = policy.check({ origin: req.headers.origin, host: req.headers.host });
 * if (!verdict.allowed) res.writeHead(403).end(verdict.reason);
 */
import { isIP } from 'node:net';
import { hostname as machineHostname } from 'node:os';

export interface OriginPolicyOptions {
  /** Browser origins allowed besides loopback ones, exactly as browsers send them (`https://app.example:8443`); `'*'` allows any. */
  allowedOrigins?: readonly string[];
  /** Host names (without port) served besides IP literals, loopback names and this machine's name; `'*'` allows any. */
  allowedHosts?: readonly string[];
  /** Whether the Host header is checked at all (default true; servers with a token pass false). */
  checkHost?: boolean;
  /** This machine's hostname (default os.hostname()); trusted as a Host. */
  machineHostname?: string;
}

/** What a request carries that the policy reads: Node's `req.headers` fits. */
export interface OriginHeaders {
  origin?: string | string[] | undefined;
  host?: string | undefined;
}

export type OriginVerdict = { allowed: true } | { allowed: false; reason: string };

function isLoopbackName(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/^\[|\]$/g, '');
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  return h === '::1';
}

/** `host[:port]` of a Host header, lower-cased and without port; null when it does not parse. */
function hostnameOf(host: string): string | null {
  try {
    const url = new URL(`http://${host}`);
    // A Host header is authority only: anything after it (path, user info) is not a Host.
    if (url.pathname !== '/' || url.username || url.password || url.search || url.hash) return null;
    return url.hostname.toLowerCase();
  } catch {
    return null;
  }
}

/**
 * Whether a request's Origin may use an endpoint: absent, a loopback origin, or one allowed by
 * name. The Host-independent part of {@link OriginPolicy}, for callers that do not see a Host.
 */
export function originAllowed(origin: string | undefined, allowed: readonly string[] = []): boolean {
  if (origin === undefined) return true;
  if (allowed.includes('*') || allowed.includes(origin)) return true;
  try {
    return isLoopbackName(new URL(origin).hostname);
  } catch {
    return false;
  }
}

export class OriginPolicy {
  private readonly allowedOrigins: readonly string[];
  private readonly allowedHosts: ReadonlySet<string>;
  private readonly anyHost: boolean;
  private readonly checkHost: boolean;
  private readonly machine: string;

  constructor(opts: OriginPolicyOptions = {}) {
    this.allowedOrigins = (opts.allowedOrigins ?? []).map((o) => o.replace(/\/$/, ''));
    this.allowedHosts = new Set((opts.allowedHosts ?? []).map((h) => h.toLowerCase()));
    this.anyHost = this.allowedHosts.has('*');
    this.checkHost = opts.checkHost ?? true;
    this.machine = (opts.machineHostname ?? machineHostname()).toLowerCase();
  }

  /** A Host name that is safe from DNS rebinding, whether or not Host is checked. */
  private trustedHostname(hostname: string): boolean {
    if (this.anyHost || this.allowedHosts.has(hostname)) return true;
    if (isIP(hostname.replace(/^\[|\]$/g, '')) !== 0) return true;
    return isLoopbackName(hostname) || (this.machine !== '' && hostname === this.machine);
  }

  /** Whether a Host header is served (an absent one is: HTTP/1.0 clients send none). */
  hostAllowed(host: string | undefined): boolean {
    if (!this.checkHost || host === undefined) return true;
    const name = hostnameOf(host);
    return name !== null && this.trustedHostname(name);
  }

  /** Whether an Origin header is served, given the request's Host (a page may call its own server). */
  originAllowed(origin: string | undefined, host?: string): boolean {
    if (originAllowed(origin, this.allowedOrigins)) return true;
    if (origin === undefined || host === undefined) return false;
    try {
      const page = new URL(origin);
      if (page.protocol !== 'http:' && page.protocol !== 'https:') return false;
      const served = new URL(`${page.protocol}//${host}`);
      return page.host === served.host && this.trustedHostname(served.hostname.toLowerCase());
    } catch {
      return false;
    }
  }

  /** The verdict for one request; a refusal's reason tells the operator which flag allows it. */
  check(headers: OriginHeaders): OriginVerdict {
    const origin = Array.isArray(headers.origin) ? headers.origin[0] : headers.origin;
    const host = headers.host;
    if (!this.hostAllowed(host)) {
      const name = host === undefined ? '' : (hostnameOf(host) ?? host);
      return {
        allowed: false,
        reason: `Host ${JSON.stringify(host)} is not served (DNS-rebinding protection); allow it with gymwire serve --allow-host ${name || 'NAME'}`,
      };
    }
    if (!this.originAllowed(origin, host)) {
      return {
        allowed: false,
        reason: `Origin ${JSON.stringify(origin)} may not use this server (browser protection); allow it with gymwire serve --allow-origin ${origin}`,
      };
    }
    return { allowed: true };
  }
}
