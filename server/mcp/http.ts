/**
 * MCP over Streamable HTTP at /mcp, on the same port as the WebSockets, in both protocol
 * revisions through the official SDK's `createMcpHandler`: 2026-07-28 (`server/discover`, every
 * request stands alone) and 2025-11-25 (`initialize`), the latter served statelessly (no
 * `Mcp-Session-Id`), so there is no MCP session to expire and a reconnecting client never meets
 * a 404. Every request gets a fresh MCP server from the factory, over its caller's env sessions
 * ({@link CallerOwners}): sessions belong to the caller (bearer token and remote address), so a
 * session id made in one request works in the next, whichever revision or connection it uses.
 *
 * The front door costs an unauthenticated caller nothing: the origin and the token are checked
 * from the headers before a byte of the body is read, and bodies are bounded (413 past the
 * bound, without buffering it). Env sessions are capped per caller and in all.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler } from '@modelcontextprotocol/server';
import type { AuthInfo } from '@modelcontextprotocol/server';
import type { Logger } from 'pino';

import { ProtocolError } from '../../protocol/errors.ts';
import type { ServerCore } from '../core.ts';
import { bearerToken } from '../http.ts';
import { originAllowed } from '../origin.ts';
import type { HttpHandler, HttpRoutes } from '../http.ts';
import { drainThenClose, readBoundedJson } from './body.ts';
import { callerOf } from './caller-caps.ts';
import { CallerOwners } from './owners.ts';
import type { Owner } from './owners.ts';
import { ToolFailure } from './tools.ts';

export interface McpHttpOptions {
  /** Where to serve MCP (default /mcp). */
  path?: string;
  logger?: Logger;
  /**
   * A caller with no request for this long is released: its env sessions are closed. Default the
   * core's idle_timeout_ms; 0 never.
   */
  idleTimeoutMs?: number;
  /**
   * Env sessions held through MCP at most, across callers (default 1024); also the most callers
   * held at once. When full, a make_env closes the least recently used idle session of the caller
   * holding the most; a tool error ENV_ERR_TOO_MANY_SESSIONS when none is idle.
   */
  maxSessions?: number;
  /**
   * Env sessions one caller (remote address) holds through MCP at most (default 64). Its next
   * make_env closes its own least recently used idle session; a tool error when all are busy.
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
  /** Env sessions held through MCP. */
  readonly sessionCount: number;
  /** Callers holding a gymwire connection (one each, whatever the number of MCP clients). */
  readonly callerCount: number;
  /** Closes every caller's env sessions and connection, and stops the reaper. */
  close(): Promise<void>;
}

/** Defaults of the front door's limits. */
export const MCP_DEFAULTS = { maxSessions: 1024, maxSessionsPerCaller: 64, maxBodyBytes: 4 * 1024 * 1024 } as const;

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
  const owners = new CallerOwners(core, {
    logger: log,
    idleMs,
    maxSessions: opts.maxSessions ?? MCP_DEFAULTS.maxSessions,
    maxSessionsPerCaller: opts.maxSessionsPerCaller ?? MCP_DEFAULTS.maxSessionsPerCaller,
    // Modern clients listening on subscriptions/listen learn of a hosted env's tools at once.
    onToolsAdded: () => handler.notify.toolsChanged(),
  });
  // One fresh MCP server per request, over the env sessions of the caller the front door found.
  const handler = createMcpHandler((ctx) => ownerOf(ctx.authInfo).mcp.createServer(), {
    onerror: (err) => log.debug({ err }, 'MCP request refused by the SDK'),
  });
  const serve = toNodeHandler(handler, { onerror: (err) => log.warn({ err }, 'MCP request failed') });

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
    if (body.kind === 'too_deep') {
      jsonRpcError(res, 400, -32600, `Invalid Request: the body nests arrays and objects deeper than ${body.maxDepth} levels`);
      return undefined;
    }
    return { value: body.value };
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
          `Forbidden: Origin ${origin} may not use this endpoint (DNS-rebinding protection); allow it with gymwire serve --allow-origin ${origin}`,
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
      let body: unknown;
      if (req.method === 'POST') {
        const read = await readBody(req, res);
        if (!read) return;
        body = read.value;
      }
      let owner: Owner;
      try {
        owner = await owners.acquire(callerOf(req.socket.remoteAddress), token);
      } catch (err) {
        if (err instanceof ProtocolError && err.code === 'ENV_ERR_UNAUTHORIZED') {
          challenge(req, res);
          return jsonRpcError(res, 401, -32001, `Unauthorized: ${err.message}; send Authorization: Bearer <token>`);
        }
        const message = err instanceof Error ? err.message : String(err);
        return jsonRpcError(res, 503, -32603, `gymwire refused the connection: ${message}`);
      }
      // A subscriptions/listen stream stays open for as long as the client likes: it does not keep the caller busy.
      const counts = !isListen(body);
      if (counts) owner.busy++;
      owner.lastActive = Date.now();
      const auth: AuthInfo = { token: token ?? '', clientId: owner.caller, scopes: [], extra: { owner } };
      (req as IncomingMessage & { auth?: AuthInfo }).auth = auth;
      try {
        await serve(req, res, body);
      } finally {
        if (counts) owner.busy--;
        owner.lastActive = Date.now();
      }
    },
    { checksOrigin: true },
  );

  return {
    path,
    get sessionCount() {
      return owners.sessionCount;
    },
    get callerCount() {
      return owners.callerCount;
    },
    async close() {
      await handler.close();
      await owners.close();
    },
  };
}

function jsonRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/** The owner the front door attached to the request (see the route handler). */
function ownerOf(auth: AuthInfo | undefined): Owner {
  const owner = auth?.extra?.owner as Owner | undefined;
  if (!owner) throw new ToolFailure('ENV_ERR_INTERNAL', 'an MCP request reached the server factory without its caller');
  return owner;
}

function isListen(body: unknown): boolean {
  return typeof body === 'object' && body !== null && (body as { method?: unknown }).method === 'subscriptions/listen';
}
