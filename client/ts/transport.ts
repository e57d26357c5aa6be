/**
 * Client transports: something that carries binary frames to a gymwire server. `wsConnector`
 * dials a URL with the `ws` library; tests use the server's in-memory transport.
 */
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
}

export function wsConnector(url: string, opts: WsConnectOptions = {}): Connector {
  return () =>
    new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { perMessageDeflate: false, handshakeTimeout: opts.connectTimeoutMs ?? 10_000, maxPayload: opts.maxPayload ?? 512 * 1024 * 1024 });
      ws.binaryType = 'nodebuffer';
      let opened = false;
      const transport: ClientTransport = {
        send: (frame) => {
          if (ws.readyState === WebSocket.OPEN) ws.send(frame, { binary: true });
        },
        sendText: (text) => {
          if (ws.readyState === WebSocket.OPEN) ws.send(text, { binary: false });
        },
        close: () => ws.close(1000),
      };
      ws.on('open', () => {
        opened = true;
        resolve(transport);
      });
      ws.on('message', (data: Buffer) => transport.onmessage?.(data));
      ws.on('close', (code, reason) => {
        if (opened) transport.onclose?.(code, reason.toString());
      });
      ws.on('error', (err) => {
        if (!opened) reject(new SdkError('CONNECT_FAILED', `could not connect to ${url}: ${err.message}`, { url }));
      });
    });
}
