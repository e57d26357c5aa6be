/**
 * Plain HTTP routes served on the same port as the WebSockets: /healthz, /metrics, and whatever
 * else is mounted (MCP at /mcp, the viewer at /).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

import type { ServerCore } from './core.ts';

export type HttpHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

/** Exact-path routes plus prefix routes (a path ending in '/*'). */
export class HttpRoutes {
  private readonly exact = new Map<string, HttpHandler>();
  private readonly prefixes: [string, HttpHandler][] = [];

  add(path: string, handler: HttpHandler): this {
    if (path.endsWith('/*')) this.prefixes.push([path.slice(0, -1), handler]);
    else this.exact.set(path, handler);
    return this;
  }

  find(url: string): HttpHandler | undefined {
    const path = url.split('?')[0] ?? '/';
    return this.exact.get(path) ?? this.prefixes.find(([p]) => path.startsWith(p))?.[1];
  }

  handle(req: IncomingMessage, res: ServerResponse, onError: (err: unknown) => void): void {
    const handler = this.find(req.url ?? '/');
    if (!handler) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'not found', path: req.url }));
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
  return new HttpRoutes()
    .add('/healthz', (_req, res) => {
      res.writeHead(core.isShuttingDown ? 503 : 200, { 'content-type': 'application/json' }).end(healthBody(core));
    })
    .add('/metrics', async (_req, res) => {
      const body = await core.metrics.registry.metrics();
      res.writeHead(200, { 'content-type': core.metrics.registry.contentType }).end(body);
    });
}
