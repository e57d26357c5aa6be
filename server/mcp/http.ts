/**
 * MCP over Streamable HTTP at /mcp, on the same port as the WebSockets.
 *
 * Sessions are stateful (`Mcp-Session-Id`). Each MCP session gets its own in-process gymwire
 * connection ({@link coreLink}), opened at `initialize` with the bearer token as hello's token: a
 * token the core refuses is an HTTP 401, and every later request of that MCP session must carry
 * the same token. Limits, validation and the core's session reaper are those of any WebSocket
 * client. When the MCP session ends (DELETE, idle timeout, server shutdown) its gymwire sessions
 * are closed and its connection with them.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';

import { ProtocolError } from '../../protocol/errors.ts';
import type { ServerCore } from '../core.ts';
import { bearerToken } from '../http.ts';
import { originAllowed } from '../origin.ts';
import type { HttpRoutes } from '../http.ts';
import { coreLink } from './link.ts';
import type { CoreLink } from './link.ts';
import { GymwireMcp } from './tools.ts';

export interface McpHttpOptions {
  /** Where to serve MCP (default /mcp). */
  path?: string;
  logger?: Logger;
  /** MCP sessions with no request for this long are closed; default the core's idle_timeout_ms; 0 never. */
  idleTimeoutMs?: number;
  /** MCP sessions open at once at most (default 1024); initialize beyond it is answered 503. */
  maxSessions?: number;
  /**
   * Browser origins allowed besides loopback ones (http://localhost:3000, say). A request that
   * carries any other Origin is refused with 403: a web page must not reach a local server through
   * DNS rebinding. Requests without an Origin (MCP hosts, SDKs, curl) are not affected.
   */
  allowedOrigins?: readonly string[];
}

// One origin rule for the whole server (server/origin.ts); re-exported for existing importers.
export { originAllowed } from '../origin.ts';

/** The mounted endpoint, for tests and the admin side. */
export interface McpEndpoint {
  readonly path: string;
  readonly sessionCount: number;
  /** Ends every MCP session (closing their gymwire sessions) and stops the reaper. */
  close(): Promise<void>;
}

interface McpSession {
  id: string | null;
  token: string | undefined;
  link: CoreLink;
  mcp: GymwireMcp;
  transport: StreamableHTTPServerTransport;
  lastActive: number;
  /** POSTs in progress (a long-lived GET stream does not keep a session alive). */
  busy: number;
  ended: Promise<void> | null;
}

/**
 * Mounts MCP at `/mcp` on the server's HTTP routes.
 *
 * @example
 * const server = await startServer({ port: 0, mountRoutes: (routes, core) => mountMcp(routes, core) });
 * // an MCP client connects to http://127.0.0.1:<port>/mcp
 */
export function mountMcp(routes: HttpRoutes, core: ServerCore, opts: McpHttpOptions = {}): McpEndpoint {
  const path = opts.path ?? '/mcp';
  const log = (opts.logger ?? core.log).child({ component: 'mcp' });
  const idleMs = opts.idleTimeoutMs ?? core.limits.idle_timeout_ms;
  const maxSessions = opts.maxSessions ?? 1024;
  const sessions = new Map<string, McpSession>();
  /** Sessions between initialize and the transport assigning their id. */
  const starting = new Set<McpSession>();

  const end = (s: McpSession, reason: string): Promise<void> => {
    s.ended ??= (async () => {
      if (s.id) sessions.delete(s.id);
      starting.delete(s);
      log.debug({ mcp_session: s.id, reason }, 'MCP session ended');
      if (!s.link.closed) await s.mcp.closeSessions(reason);
      s.link.close();
      await s.transport.close().catch(() => {});
    })();
    return s.ended;
  };

  const reaper =
    idleMs > 0
      ? setInterval(
          () => {
            if (core.isShuttingDown) return void clearInterval(reaper!);
            const now = Date.now();
            for (const s of sessions.values()) if (s.busy === 0 && now - s.lastActive > idleMs) void end(s, `idle for more than ${idleMs} ms`);
          },
          Math.max(50, Math.min(5000, Math.floor(idleMs / 4))),
        )
      : null;
  reaper?.unref();

  async function open(req: IncomingMessage, res: ServerResponse, token: string | undefined): Promise<void> {
    const body = await readJson(req, core.limits.max_frame_bytes);
    if (body === undefined) return jsonRpcError(res, 400, -32700, 'Parse error: the body is not JSON');
    if (!isInitializeRequest(body)) return jsonRpcError(res, 400, -32000, 'Bad Request: no valid Mcp-Session-Id header, and the request is not initialize');
    if (sessions.size + starting.size >= maxSessions) return jsonRpcError(res, 503, -32000, `too many MCP sessions (at most ${maxSessions})`);
    let link: CoreLink;
    try {
      link = await coreLink(core, { token, clientName: 'gymwire-mcp-http', remoteAddress: req.socket.remoteAddress ?? 'mcp' });
    } catch (err) {
      if (err instanceof ProtocolError && err.code === 'ENV_ERR_UNAUTHORIZED') {
        res.setHeader('WWW-Authenticate', 'Bearer realm="gymwire"');
        return jsonRpcError(res, 401, -32001, `Unauthorized: ${err.message}; send Authorization: Bearer <token>`);
      }
      const message = err instanceof Error ? err.message : String(err);
      return jsonRpcError(res, 503, -32603, `gymwire refused the connection: ${message}`);
    }
    const mcp = new GymwireMcp(link, { logger: log });
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (id) => {
        s.id = id;
        starting.delete(s);
        sessions.set(id, s);
        log.debug({ mcp_session: id, conn_token: token !== undefined }, 'MCP session opened');
      },
    });
    const s: McpSession = { id: null, token, link, mcp, transport, lastActive: Date.now(), busy: 1, ended: null };
    starting.add(s);
    link.onEvent = (event) => mcp.handleEvent(event);
    link.onClose = (reason) => void end(s, `gymwire connection closed: ${reason}`);
    transport.onclose = () => void end(s, 'closed by the client');
    await mcp.server.connect(transport);
    try {
      await transport.handleRequest(req, res, body);
    } finally {
      s.busy--;
      s.lastActive = Date.now();
      if (!s.id) void end(s, 'initialize failed');
    }
  }

  routes.add(path, async (req, res) => {
    const origin = req.headers.origin;
    if (!originAllowed(origin, opts.allowedOrigins)) {
      log.warn({ origin }, 'MCP request from a browser origin that is not allowed');
      return jsonRpcError(res, 403, -32000, `Forbidden: Origin ${origin} may not use this endpoint (DNS-rebinding protection); allow it with gymwire serve --mcp-allow-origin ${origin}`);
    }
    const token = bearerToken(req);
    const sid = req.headers['mcp-session-id'];
    if (typeof sid !== 'string') {
      if (req.method !== 'POST') return jsonRpcError(res, 400, -32000, 'Bad Request: no Mcp-Session-Id header; start with an initialize POST');
      return open(req, res, token);
    }
    const s = sessions.get(sid);
    if (!s) return jsonRpcError(res, 404, -32001, 'Session not found: it ended or was reaped; initialize a new one');
    if (s.token !== token) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="gymwire"');
      return jsonRpcError(res, 401, -32001, 'Unauthorized: this MCP session was opened with a different bearer token');
    }
    const counts = req.method === 'POST';
    if (counts) s.busy++;
    s.lastActive = Date.now();
    try {
      await s.transport.handleRequest(req, res);
    } finally {
      if (counts) s.busy--;
      s.lastActive = Date.now();
    }
  }, { checksOrigin: true });

  return {
    path,
    get sessionCount() {
      return sessions.size;
    },
    async close() {
      if (reaper) clearInterval(reaper);
      await Promise.all([...sessions.values(), ...starting].map((s) => end(s, 'the MCP endpoint closed')));
    },
  };
}

async function readJson(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.byteLength;
    if (size > maxBytes) return undefined;
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

function jsonRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}
