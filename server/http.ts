/**
 * Plain HTTP routes served on the same port as the WebSockets: /healthz, /metrics, and whatever
 * else is mounted (MCP at /mcp, the viewer at /).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

import type { ServerCore } from './core.ts';
import type { OriginPolicy } from './origin.ts';

export type HttpHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

/**
 * Paths that are HTTP routes whatever is mounted (MCP and the viewer on the ws transport): a
 * WebSocket upgrade there is refused, on every transport, as docs/PROTOCOL.md says.
 */
const RESERVED_HTTP_PATHS: readonly string[] = ['/healthz', '/metrics', '/mcp', '/api/*', '/viewer/*'];

/** The path of a request URL, without its query. */
export function urlPath(url: string): string {
  return url.split('?')[0] ?? '/';
}

/**
 * Whether a WebSocket upgrade may use `url`: `/` and any path that is not an HTTP route (the
 * viewer's page at `/` is a plain GET; the protocol's upgrade there is what clients send).
 */
export function webSocketPathAllowed(url: string, routes?: HttpRoutes): boolean {
  const path = urlPath(url);
  if (path === '/') return true;
  if (routes?.find(path)) return false;
  return !RESERVED_HTTP_PATHS.some((p) => (p.endsWith('/*') ? path.startsWith(p.slice(0, -1)) : path === p));
}

/**
 * Exact-path routes plus prefix routes (a path ending in '/*'). With an origin policy, every
 * request is checked against it first: a foreign Origin or Host gets 403 on every route.
 */
export class HttpRoutes {
  private readonly exact = new Map<string, HttpHandler>();
  private readonly prefixes: [string, HttpHandler][] = [];
  /** Handlers that answer a foreign Origin themselves (in their own protocol's error format). */
  private readonly ownOriginCheck = new Set<HttpHandler>();

  constructor(private readonly origins?: OriginPolicy) {}

  /** `opts.checksOrigin`: the handler refuses foreign Origins itself; the Host is still checked here. */
  add(path: string, handler: HttpHandler, opts: { checksOrigin?: boolean } = {}): this {
    if (path.endsWith('/*')) this.prefixes.push([path.slice(0, -1), handler]);
    else this.exact.set(path, handler);
    if (opts.checksOrigin) this.ownOriginCheck.add(handler);
    return this;
  }

  find(url: string): HttpHandler | undefined {
    const path = urlPath(url);
    return this.exact.get(path) ?? this.prefixes.find(([p]) => path.startsWith(p))?.[1];
  }

  handle(req: IncomingMessage, res: ServerResponse, onError: (err: unknown) => void): void {
    const handler = this.find(req.url ?? '/');
    const verdict = this.origins?.check(handler && this.ownOriginCheck.has(handler) ? { host: req.headers.host } : req.headers);
    if (verdict && !verdict.allowed) {
      res.writeHead(403, { 'content-type': 'application/json' }).end(JSON.stringify({ error: verdict.reason }));
      return;
    }
    if (!handler) {
      // The URL is not echoed: it may carry ?token=.
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'not found' }));
      return;
    }
    Promise.resolve()
      .then(() => handler(req, res))
      .catch((err) => {
        onError(err);
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'internal error' }));
      });
  }
}

/** The token of an `Authorization: Bearer T` header (MCP clients, the viewer). */
export function bearerToken(req: IncomingMessage): string | undefined {
  const h = req.headers.authorization;
  if (typeof h !== 'string') return undefined;
  const m = /^Bearer\s+(.+)$/i.exec(h.trim());
  return m ? m[1] : undefined;
}

export function healthBody(core: ServerCore): string {
  return JSON.stringify({
    status: core.isShuttingDown ? 'shutting_down' : 'ok',
    sessions: core.sessionCount,
    connections: core.connectionCount,
    uptime_s: Math.round(process.uptime()),
    rss_bytes: process.memoryUsage.rss(),
    heap_used_bytes: process.memoryUsage().heapUsed,
  });
}

/** The routes every server has. */
export function baseRoutes(core: ServerCore): HttpRoutes {
  return new HttpRoutes(core.origins)
    .add('/healthz', (_req, res) => {
      res.writeHead(core.isShuttingDown ? 503 : 200, { 'content-type': 'application/json' }).end(healthBody(core));
    })
    .add('/metrics', async (_req, res) => {
      const body = await core.metricsText();
      res.writeHead(200, { 'content-type': core.metrics.registry.contentType }).end(body);
    });
}
