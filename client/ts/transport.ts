/**
 * Client transports: something that carries binary frames to a gymwire server. `wsConnector`
 * dials a URL with the `ws` library; tests use the server's in-memory transport.
 */
import type { Socket } from 'node:net';

import WebSocket from 'ws';

import { SdkError } from './errors.ts';

export interface ClientTransport {
  send(frame: Uint8Array): void;
  /** Sends a text frame (the protocol refuses them; conformance checks that). Absent where the transport has no text frames. */
  sendText?(text: string): void;
  close(): void;
  onmessage?: (frame: Uint8Array) => void;
  onclose?: (code: number, reason: string) => void;
  /** Frames are handed over inside this process (no socket, no core to wake): the client does not busy-poll. */
  readonly inProcess?: boolean;
}

/** Opens a fresh connection; called again on every reconnect. */
export type Connector = () => Promise<ClientTransport>;

export interface WsConnectOptions {
  /** Handshake timeout in ms. */
  connectTimeoutMs?: number;
  maxPayload?: number;
  /** Send a WebSocket ping after this long without hearing from the server (ms; default 15 s; 0: no keepalive). */
  keepaliveIntervalMs?: number;
  /** Drop the connection when nothing arrives this long after a ping (ms; default 30 s). */
  keepaliveTimeoutMs?: number;
}

export const DEFAULT_KEEPALIVE_INTERVAL_MS = 15_000;
export const DEFAULT_KEEPALIVE_TIMEOUT_MS = 30_000;

export function wsConnector(url: string, opts: WsConnectOptions = {}): Connector {
  return () =>
    new Promise((resolve, reject) => {
      const ws = new WebSocket(url, {
        perMessageDeflate: false,
        handshakeTimeout: opts.connectTimeoutMs ?? 10_000,
        maxPayload: opts.maxPayload ?? 512 * 1024 * 1024,
      });
      ws.binaryType = 'nodebuffer';
      let opened = false;
      let stopKeepalive = () => {};
      let dropReason: string | null = null;
      const transport: ClientTransport = {
        send: (frame) => {
          if (ws.readyState === WebSocket.OPEN) ws.send(frame, { binary: true });
        },
        sendText: (text) => {
          if (ws.readyState === WebSocket.OPEN) ws.send(text, { binary: false });
        },
        close: () => ws.close(1000),
      };
      ws.on('upgrade', (res) => {
        stopKeepalive = keepalive(ws, res.socket, opts, (reason) => {
          dropReason = reason;
          // A silent link delivers no close frame, so a closing handshake would wait in vain.
          ws.terminate();
        });
      });
      ws.on('open', () => {
        opened = true;
        resolve(transport);
      });
      ws.on('message', (data: Buffer) => transport.onmessage?.(data));
      ws.on('close', (code, reason) => {
        stopKeepalive();
        if (opened) transport.onclose?.(code, dropReason ?? reason.toString());
      });
      ws.on('error', (err) => {
        if (!opened) reject(new SdkError('CONNECT_FAILED', `could not connect to ${url}: ${err.message}`, { url }));
      });
    });
}

/**
 * Detects a silent link (no FIN or RST ever arrives: a frozen NAT entry, a pulled cable): after
 * `keepaliveIntervalMs` without a byte from the server it sends a ping, and when nothing arrives
 * within `keepaliveTimeoutMs` of it, it calls `drop`. Any bytes count, so a large answer still
 * arriving slowly keeps the link alive. Returns the function that stops it.
 */
function keepalive(ws: WebSocket, socket: Socket, opts: WsConnectOptions, drop: (reason: string) => void): () => void {
  const intervalMs = opts.keepaliveIntervalMs ?? DEFAULT_KEEPALIVE_INTERVAL_MS;
  const timeoutMs = opts.keepaliveTimeoutMs ?? DEFAULT_KEEPALIVE_TIMEOUT_MS;
  if (intervalMs <= 0) return () => {};
  let lastHeard = Date.now();
  let pingedAt: number | null = null;
  const heard = () => {
    lastHeard = Date.now();
    pingedAt = null;
  };
  socket.on('data', heard);
  const timer = setInterval(
    () => {
      const now = Date.now();
      if (pingedAt !== null) {
        if (now - pingedAt >= timeoutMs) {
          clearInterval(timer);
          drop(`no answer to a keepalive ping within ${timeoutMs} ms`);
        }
      } else if (now - lastHeard >= intervalMs && ws.readyState === WebSocket.OPEN) {
        pingedAt = now;
        ws.ping();
      }
    },
    Math.max(10, Math.floor(Math.min(intervalMs, timeoutMs) / 4)),
  );
  timer.unref();
  return () => {
    clearInterval(timer);
    socket.off('data', heard);
  };
}
