/**
 * MCP over Streamable HTTP at /mcp, on the same port as the WebSockets.
 *
 * Sessions are stateful (`Mcp-Session-Id`). Each MCP session gets its own in-process gymwire
 * connection ({@link coreLink}), opened at `initialize` with the bearer token as hello's token: a
 * token the core refuses is an HTTP 401, and every later request of that MCP session must carry
 * the same token. Limits, validation and the core's session reaper are those of any WebSocket
 * client. When the MCP session ends (DELETE, idle timeout, eviction, server shutdown) its gymwire
 * sessions are closed and its connection with them.
 *
 * The front door costs an unauthenticated caller nothing: the origin and the token are checked
 * from the headers before a byte of the body is read, and bodies are bounded (413 past the
 * bound, without buffering it). Sessions are capped per caller and in all ({@link CallerCaps}).
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
import type { HttpHandler, HttpRoutes } from '../http.ts';
import { drainThenClose, readBoundedJson } from './body.ts';
import { CallerCaps, callerOf } from './caller-caps.ts';
import { coreLink } from './link.ts';
import type { CoreLink } from './link.ts';
import { GymwireMcp } from './tools.ts';

export interface McpHttpOptions {
  /** Where to serve MCP (default /mcp). */
  path?: string;
  logger?: Logger;
  /** MCP sessions with no request for this long are closed; default the core's idle_timeout_ms; 0 never. */
  idleTimeoutMs?: number;
  /**
   * MCP sessions open at once at most (default 1024). When full, an initialize ends the least
   * recently used idle session of the caller holding the most; 503 when none is idle.
   */
  maxSessions?: number;
  /**
   * MCP sessions one caller (remote address) holds at most (default 64). Its next initialize ends
   * its own least recently used idle session; 429 when all of them are busy.
   */
  maxSessionsPerCaller?: number;
  /** Largest request body read, in bytes (default 4 MiB); larger ones get 413 unread. */
  maxBodyBytes?: number;
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

/** Defaults of the front door's limits. */
export const MCP_DEFAULTS = { maxSessions: 1024, maxSessionsPerCaller: 64, maxBodyBytes: 4 * 1024 * 1024 } as const;

interface McpSession {
  id: string | null;
  caller: string;
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
  const maxBodyBytes = opts.maxBodyBytes ?? MCP_DEFAULTS.maxBodyBytes;
  if (!Number.isInteger(maxBodyBytes) || maxBodyBytes < 1) throw new RangeError(`maxBodyBytes must be a positive integer, got ${String(maxBodyBytes)}`);
  const caps = new CallerCaps<McpSession>({
    total: opts.maxSessions ?? MCP_DEFAULTS.maxSessions,
    perCaller: opts.maxSessionsPerCaller ?? MCP_DEFAULTS.maxSessionsPerCaller,
  });
  const sessions = new Map<string, McpSession>();
  /** Sessions between initialize and the transport assigning their id. */
  const starting = new Set<McpSession>();

  const end = (s: McpSession, reason: string): Promise<void> => {
    s.ended ??= (async () => {
      if (s.id) sessions.delete(s.id);
      starting.delete(s);
      caps.remove(s);
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

  /** The parsed body of a POST, or undefined once the request has been answered (413, 400). */
  async function readBody(req: IncomingMessage, res: ServerResponse): Promise<{ value: unknown } | undefined> {
    const body = await readBoundedJson(req, maxBodyBytes);
    if (body.kind === 'too_large') {
      log.warn({ caller: callerOf(req.socket.remoteAddress), max_body_bytes: maxBodyBytes }, 'MCP request body too large');
      drainThenClose(req, res);
      jsonRpcError(res, 413, -32000, `Payload Too Large: the request body must not exceed ${maxBodyBytes} bytes (gymwire serve --mcp-max-body-bytes)`);
      return undefined;
    }
    if (body.kind === 'not_json') {
      jsonRpcError(res, 400, -32700, 'Parse error: the body is not JSON');
      return undefined;
    }
    return { value: body.value };
  }

  async function open(req: IncomingMessage, res: ServerResponse, token: string | undefined): Promise<void> {
    const read = await readBody(req, res);
    if (!read) return;
    const body = read.value;
    if (!isInitializeRequest(body)) return jsonRpcError(res, 400, -32000, 'Bad Request: no valid Mcp-Session-Id header, and the request is not initialize');
    let link: CoreLink;
    try {
      link = await coreLink(core, { token, clientName: 'gymwire-mcp-http', remoteAddress: req.socket.remoteAddress ?? 'mcp' });
    } catch (err) {
      if (err instanceof ProtocolError && err.code === 'ENV_ERR_UNAUTHORIZED') {
        challenge(req, res);
        return jsonRpcError(res, 401, -32001, `Unauthorized: ${err.message}; send Authorization: Bearer <token>`);
      }
      const message = err instanceof Error ? err.message : String(err);
      return jsonRpcError(res, 503, -32603, `gymwire refused the connection: ${message}`);
    }
    // From here to caps.add() nothing awaits: concurrent initializes cannot all pass one check.
    const caller = callerOf(req.socket.remoteAddress);
    const room = caps.makeRoom(caller);
    if (room.kind === 'refused') {
      link.close();
      log.warn({ caller, held: caps.held(caller), total: caps.size }, 'MCP initialize refused: sessions full');
      return jsonRpcError(res, room.status, -32000, room.message);
    }
    for (const victim of room.evict) {
      const reason = victim.caller === caller ? 'evicted: its caller opened another one past the per-caller cap' : 'evicted: the endpoint is full';
      log.info({ mcp_session: victim.id, caller: victim.caller, reason }, 'MCP session evicted');
      void end(victim, reason);
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
    const s: McpSession = { id: null, caller, token, link, mcp, transport, lastActive: Date.now(), busy: 1, ended: null };
    starting.add(s);
    caps.add(s);
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

  /**
   * RFC 9728: a 401 names the protected resource's metadata, so a client (an OAuth-only connector
   * included) learns what this endpoint is and how it takes its token without guessing.
   */
  const metadataPath = `/.well-known/oauth-protected-resource${path}`;
  function baseUrl(req: IncomingMessage): string {
    const proto = req.headers['x-forwarded-proto'] === 'https' ? 'https' : 'http';
    return `${proto}://${req.headers.host ?? 'localhost'}`;
  }
  function challenge(req: IncomingMessage, res: ServerResponse): void {
    res.setHeader('WWW-Authenticate', `Bearer realm="gymwire", resource_metadata="${baseUrl(req)}${metadataPath}"`);
  }
  const metadata: HttpHandler = (req, res) => {
    const body = JSON.stringify({
      resource: `${baseUrl(req)}${path}`,
      resource_name: 'gymwire MCP',
      bearer_methods_supported: ['header'],
      // gymwire checks one static bearer token (gymwire serve --token); it runs no authorization server.
      authorization_servers: [],
    });
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=3600' }).end(body);
  };
  routes.add(metadataPath, metadata);
  if (path !== '') routes.add('/.well-known/oauth-protected-resource', metadata);

  routes.add(
    path,
    async (req, res) => {
      const origin = req.headers.origin;
      if (!originAllowed(origin, opts.allowedOrigins)) {
        log.warn({ origin }, 'MCP request from a browser origin that is not allowed');
        return jsonRpcError(
          res,
          403,
          -32000,
          `Forbidden: Origin ${origin} may not use this endpoint (DNS-rebinding protection); allow it with gymwire serve --mcp-allow-origin ${origin}`,
        );
      }
      const token = bearerToken(req);
      // Before anything is read or allocated for the request: an unauthenticated body costs nothing.
      if (!core.authorizes(token)) {
        challenge(req, res);
        const why = token === undefined ? 'this server needs an auth token' : 'the auth token is wrong';
        drainThenClose(req, res);
        return jsonRpcError(res, 401, -32001, `Unauthorized: ${why}; send Authorization: Bearer <token>`);
      }
      const sid = req.headers['mcp-session-id'];
      if (typeof sid !== 'string') {
        if (req.method !== 'POST') return jsonRpcError(res, 400, -32000, 'Bad Request: no Mcp-Session-Id header; start with an initialize POST');
        return open(req, res, token);
      }
      const s = sessions.get(sid);
      if (!s) return jsonRpcError(res, 404, -32001, 'Session not found: it ended or was reaped; initialize a new one');
      if (s.token !== token) {
        challenge(req, res);
        return jsonRpcError(res, 401, -32001, 'Unauthorized: this MCP session was opened with a different bearer token');
      }
      const counts = req.method === 'POST';
      if (counts) s.busy++;
      s.lastActive = Date.now();
      try {
        if (counts) {
          const read = await readBody(req, res);
          if (read) await s.transport.handleRequest(req, res, read.value);
        } else await s.transport.handleRequest(req, res);
      } finally {
        if (counts) s.busy--;
        s.lastActive = Date.now();
      }
    },
    { checksOrigin: true },
  );

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

function jsonRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}
