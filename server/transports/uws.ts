/**
 * The fast transport: uWebSockets.js, taken as an optional dependency through an npm alias
 * (`uws` -> @trufflesuite/uws-js-unofficial, whose linux-x64 build runs on glibc 2.36). It
 * serves /healthz and /metrics itself; other HTTP routes (MCP, the viewer) need the ws transport.
 */
import { STATUS_CODES } from 'node:http';

import { PRE_HELLO_MAX_FRAME_BYTES, upgradeRefusal } from '../admission.ts';
import type { Connection, ServerCore } from '../core.ts';
import { healthBody } from '../http.ts';
import type { ListenOptions, ServerTransport } from '../transport.ts';
import { UwsOutbox } from './uws-outbox.ts';

import type * as UwsModule from 'uws';

type Uws = typeof UwsModule;
type UwsData = { conn?: Connection; closed?: boolean; outbox?: UwsOutbox };
type UwsSocket = UwsModule.WebSocket<UwsData>;

/** @internal Loads uWebSockets.js, or explains how to get it (internal: its type is the optional peer `uws`). */
export async function loadUws(): Promise<Uws> {
  try {
    const mod = (await import('uws')) as Uws & { default?: Uws };
    return mod.default ?? mod;
  } catch (err) {
    throw new Error(
      `the uws transport needs uWebSockets.js, an optional peer dependency of gymwire: install it next to gymwire with \`npm install uws@npm:@trufflesuite/uws-js-unofficial@^20.30.0-unofficial.0\`, or use --transport ws (${(err as Error).message})`,
      { cause: err },
    );
  }
}

export class UwsTransport implements ServerTransport {
  readonly name = 'uws';
  private uws: Uws | null = null;
  private listenSocket: UwsModule.us_listen_socket | null = null;
  private readonly sockets = new Set<UwsSocket>();

  async listen(core: ServerCore, opts: ListenOptions): Promise<{ port: number }> {
    const uws = await loadUws();
    this.uws = uws;
    const app = uws.App();
    // uWS idles out sockets with no traffic; its automatic pings keep live peers alive (heartbeats).
    const idleTimeout = core.limits.heartbeat_ms > 0 ? Math.max(8, Math.ceil((core.limits.heartbeat_ms * 2) / 1000)) : 0;
    /** A foreign Origin or Host gets 403 on the HTTP routes too (the same check as the upgrade). */
    const allowed = (res: UwsModule.HttpResponse, req: UwsModule.HttpRequest): boolean => {
      const verdict = core.origins.check({ origin: req.getHeader('origin') || undefined, host: req.getHeader('host') || undefined });
      if (verdict.allowed) return true;
      res.cork(() =>
        res
          .writeStatus('403 Forbidden')
          .writeHeader('content-type', 'application/json')
          .end(JSON.stringify({ error: verdict.reason })),
      );
      return false;
    };
    app.ws<UwsData>('/*', {
      compression: uws.DISABLED,
      // uWS caps payloads per app, not per socket: before hello the core refuses (and closes on)
      // any frame over PRE_HELLO_MAX_FRAME_BYTES without decoding it.
      maxPayloadLength: core.limits.max_frame_bytes * 2,
      // uWS drops messages past this; the core's outbound bound closes a slow reader well before.
      maxBackpressure: Math.max(256 * 1024 * 1024, 2 * core.outbound.maxBytes),
      idleTimeout,
      sendPingsAutomatically: true,
      upgrade: (res, req, context) => {
        const url = req.getUrl() + (req.getQuery() ? `?${req.getQuery()}` : '');
        const ip = Buffer.from(res.getRemoteAddressAsText()).toString();
        const refused = upgradeRefusal(core, undefined, { url, origin: req.getHeader('origin') || undefined, host: req.getHeader('host') || undefined, ip });
        if (refused) {
          core.log.info({ ip, path: req.getUrl(), status: refused.status }, `WebSocket upgrade refused: ${refused.reason}`);
          res.cork(() =>
            res
              .writeStatus(`${refused.status} ${STATUS_CODES[refused.status] ?? ''}`)
              .writeHeader('content-type', 'application/json')
              .end(JSON.stringify({ error: refused.reason })),
          );
          return;
        }
        res.upgrade({}, req.getHeader('sec-websocket-key'), req.getHeader('sec-websocket-protocol'), req.getHeader('sec-websocket-extensions'), context);
      },
      open: (ws) => {
        this.sockets.add(ws);
        const data = ws.getUserData();
        const remote = Buffer.from(ws.getRemoteAddressAsText()).toString();
        // Every message and the close go through the outbox, so they keep their order behind a split answer.
        const outbox = new UwsOutbox(ws as never);
        data.outbox = outbox;
        data.conn = core.accept({
          send: (frame, onDone) => {
            if (data.closed) {
              onDone?.();
              return false;
            }
            // uWS copies the frame into its socket buffer (once the outbox hands it over: onDone then).
            outbox.send(frame, onDone);
            return true;
          },
          sendParts: (parts) => {
            if (data.closed) return false;
            outbox.sendParts(parts);
            return true;
          },
          close: (code, reason) => {
            if (!data.closed) outbox.close(code ?? 1000, reason ?? '');
          },
          terminate: () => {
            if (!data.closed) ws.close();
          },
          // uWS has no way to stop reading one socket: frames that arrive meanwhile wait in the core, bounded.
          bufferedBytes: () => (data.closed ? 0 : ws.getBufferedAmount() + outbox.queuedBytes),
          remoteAddress: remote,
          remoteIp: remote,
        });
      },
      message: (ws, message) => {
        const conn = ws.getUserData().conn;
        if (!conn) return;
        // Before hello a frame past the pre-hello bound is refused by its size alone, synchronously,
        // without a copy: the peer costs the server uWS's buffer only, never twice that.
        if (!conn.client && message.byteLength > PRE_HELLO_MAX_FRAME_BYTES) return conn.onFrame(new Uint8Array(message));
        // uWS reuses the message buffer after this callback returns; decoded tensors are views, so copy.
        conn.onFrame(new Uint8Array(message.slice(0)));
      },
      drain: (ws) => {
        const data = ws.getUserData();
        data.outbox?.pump();
        data.conn?.onDrain();
      },
      close: (ws) => {
        const data = ws.getUserData();
        data.closed = true;
        data.outbox?.dispose();
        this.sockets.delete(ws);
        data.conn?.onClose();
      },
    });
    app.get('/healthz', (res, req) => {
      if (!allowed(res, req)) return;
      res.cork(() => {
        res
          .writeStatus(core.isShuttingDown ? '503 Service Unavailable' : '200 OK')
          .writeHeader('content-type', 'application/json')
          .end(healthBody(core));
      });
    });
    app.get('/metrics', (res, req) => {
      if (!allowed(res, req)) return;
      let aborted = false;
      res.onAborted(() => (aborted = true));
      void core.metricsText().then((body) => {
        if (aborted) return;
        res.cork(() => res.writeHeader('content-type', core.metrics.registry.contentType).end(body));
      });
    });
    app.any('/*', (res, req) => {
      if (!allowed(res, req)) return;
      res.cork(() => res.writeStatus('404 Not Found').end('not found (this route needs --transport ws)'));
    });
    const port = await new Promise<number>((resolve, reject) => {
      app.listen(opts.host, opts.port, (token) => {
        if (!token) return reject(new Error(`uws could not listen on ${opts.host}:${opts.port}`));
        this.listenSocket = token;
        resolve(uws.us_socket_local_port(token));
      });
    });
    return { port };
  }

  /** Closes the listening socket at once; open connections stay until the core has drained and closed them. */
  stopAccepting(): void {
    if (this.listenSocket && this.uws) this.uws.us_listen_socket_close(this.listenSocket);
    this.listenSocket = null;
  }

  async close(): Promise<void> {
    this.stopAccepting();
    for (const ws of [...this.sockets]) {
      const data = ws.getUserData();
      if (!data.closed) ws.close();
    }
  }
}
