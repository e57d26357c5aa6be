/**
 * The default transport: the `ws` library (with its native bufferutil addon) on a Node HTTP
 * server that also answers the HTTP routes. Per-message deflate is off: it costs more than it
 * saves on tensor payloads.
 */
import { createServer, STATUS_CODES } from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';

import { WebSocketServer } from 'ws';
import type { WebSocket } from 'ws';

import type { Connection, ServerCore } from '../core.ts';
import { PRE_HELLO_MAX_FRAME_BYTES, upgradeRefusal } from '../admission.ts';
import type { HttpRoutes } from '../http.ts';
import { TICK_BATCH_MAX_MESSAGE_BYTES, TickBatch } from './tick-batch.ts';
import { baseRoutes } from '../http.ts';
import type { ListenOptions, ServerTransport } from '../transport.ts';

/**
 * Caps one socket's incoming message size. ws reads the cap per message header, before it buffers
 * the payload; it is set per server, so it is changed here on the socket's own receiver (private in
 * ws 8: when that changes, the core still refuses an oversized pre-hello frame, only later).
 */
function capIncoming(ws: WebSocket, maxBytes: number): void {
  const receiver = (ws as unknown as { _receiver?: { _maxPayload?: unknown } })._receiver;
  if (receiver && typeof receiver._maxPayload === 'number') receiver._maxPayload = maxBytes;
}

/** Answers a refused upgrade with a plain HTTP status and drops the socket (no WebSocket is built). */
function refuseUpgrade(socket: Duplex, status: number, reason: string): void {
  const body = JSON.stringify({ error: reason });
  if (!socket.writable) return void socket.destroy();
  socket.once('finish', () => socket.destroy());
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

interface Tracked {
  ws: WebSocket;
  conn: Connection;
  alive: boolean;
}

export class WsTransport implements ServerTransport {
  readonly name = 'ws';
  private http: Server | null = null;
  private wss: WebSocketServer | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private readonly tracked = new Set<Tracked>();
  /** Resolves when the HTTP server has closed, once stopAccepting ran. */
  private stopped: Promise<void> | null = null;

  /** @param routes HTTP routes to serve besides the WebSocket upgrade (defaults to /healthz and /metrics). */
  constructor(private readonly routes?: HttpRoutes) {}

  /** The underlying HTTP server (for mounting more routes). */
  get httpServer(): Server | null {
    return this.http;
  }

  async listen(core: ServerCore, opts: ListenOptions): Promise<{ port: number }> {
    const routes = this.routes ?? baseRoutes(core);
    // The hard cap closes the socket; frames between max_frame_bytes and it get a typed error instead.
    // Before hello the socket's cap is lower (capIncoming): the core reads at most PRE_HELLO_MAX_FRAME_BYTES.
    const maxPayload = core.limits.max_frame_bytes * 2;
    const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload });
    // Logged without the URL's query (it may carry ?token=).
    const http = createServer((req, res) => routes.handle(req, res, (err) => core.log.error({ err, path: req.url?.split('?')[0] }, 'http handler failed')));
    http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const ip = req.socket.remoteAddress ?? '?';
      const refused = upgradeRefusal(core, routes, { url: req.url ?? '/', origin: req.headers.origin, host: req.headers.host, ip });
      if (refused) {
        core.log.info(
          { ip, path: (req.url ?? '/').split('?')[0], origin: req.headers.origin, host: req.headers.host, status: refused.status },
          `WebSocket upgrade refused: ${refused.reason}`,
        );
        return refuseUpgrade(socket, refused.status, refused.reason);
      }
      wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
    });
    wss.on('connection', (ws, req) => {
      capIncoming(ws, Math.min(maxPayload, PRE_HELLO_MAX_FRAME_BYTES * 2));
      let greeted = false;
      const remote = `${req.socket.remoteAddress ?? '?'}:${req.socket.remotePort ?? '?'}`;
      let closed = false;
      const batch = new TickBatch(req.socket, () => !closed && ws.readyState === ws.OPEN);
      const conn = core.accept({
        send: (frame, onDone) => {
          if (closed || ws.readyState !== ws.OPEN) {
            onDone?.();
            return false;
          }
          // Small answers produced in the same tick (pipelined requests read in one chunk) leave together,
          // in writes of at most TICK_BATCH_MAX_MESSAGES (so at most that many wait outside ws's
          // buffered count). A large one leaves at once: holding it back would make the client wait for
          // the whole burst instead of decoding the first answer while the rest is still being written.
          if (frame.byteLength < TICK_BATCH_MAX_MESSAGE_BYTES) {
            batch.add(frame, onDone);
            return true;
          }
          batch.flush();
          // ws hands the frame to the socket without copying; its callback runs once the write is done (or failed).
          ws.send(frame, { binary: true }, onDone && (() => onDone()));
          return true;
        },
        sendParts: (parts) => {
          if (closed || ws.readyState !== ws.OPEN) return false;
          batch.flush();
          // Fragments of one message, handed to the socket without a copy (ws writes server frames
          // unmasked): Node's stream holds them until the kernel takes them, so none blocks the loop.
          for (let i = 0; i < parts.length; i++) ws.send(parts[i]!, { binary: true, fin: i === parts.length - 1 });
          return true;
        },
        close: (code, reason) => {
          batch.flush();
          ws.close(code, reason);
        },
        terminate: () => ws.terminate(),
        // ws's own queue (while it frames a message) and the socket's unwritten bytes.
        bufferedBytes: () => ws.bufferedAmount,
        pauseReading: () => ws.pause(),
        resumeReading: () => ws.resume(),
        remoteAddress: remote,
        remoteIp: req.socket.remoteAddress ?? '?',
      });
      const entry: Tracked = { ws, conn, alive: true };
      this.tracked.add(entry);
      ws.on('pong', () => (entry.alive = true));
      ws.on('message', (data, isBinary) => {
        entry.alive = true;
        const frame = Array.isArray(data) ? Buffer.concat(data) : data instanceof ArrayBuffer ? new Uint8Array(data) : data;
        // Text frames are not msgpack; the core answers them with ENV_ERR_BAD_FRAME like any garbage.
        conn.onFrame(isBinary ? frame : Buffer.from(frame));
        if (!greeted && conn.client) {
          greeted = true;
          capIncoming(ws, maxPayload);
        }
      });
      req.socket.on('drain', () => conn.onDrain());
      ws.on('close', () => {
        closed = true;
        this.tracked.delete(entry);
        conn.onClose();
      });
      ws.on('error', (err) => conn.log.debug({ err }, 'socket error'));
    });
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject);
      http.listen(opts.port, opts.host, () => resolve());
    });
    this.http = http;
    this.wss = wss;
    // Heartbeats: a peer that misses a whole interval is dead (half-open sockets leak nothing).
    if (core.limits.heartbeat_ms > 0) {
      this.heartbeat = setInterval(() => {
        for (const t of this.tracked) {
          // A peer we stopped reading cannot answer pings; its drain deadline judges it instead.
          if (t.conn.readingPaused) {
            t.alive = true;
            continue;
          }
          if (!t.alive) {
            t.conn.log.info('no heartbeat from peer; dropping the connection');
            t.ws.terminate();
            continue;
          }
          t.alive = false;
          t.ws.ping();
        }
      }, core.limits.heartbeat_ms);
      this.heartbeat.unref();
    }
    const addr = http.address();
    return { port: typeof addr === 'object' && addr ? addr.port : opts.port };
  }

  /** Closes the listening socket at once; open connections stay until the core has drained and closed them. */
  stopAccepting(): void {
    const http = this.http;
    if (!http || this.stopped) return;
    this.stopped = new Promise<void>((resolve) => http.close(() => resolve()));
  }

  async close(): Promise<void> {
    if (this.heartbeat) clearInterval(this.heartbeat);
    for (const t of this.tracked) t.ws.terminate();
    this.wss?.close();
    if (this.http) {
      this.stopAccepting();
      this.http.closeAllConnections?.();
      await this.stopped;
    }
    this.http = null;
  }
}
