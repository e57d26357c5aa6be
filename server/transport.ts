/**
 * The one transport interface. A transport accepts connections and hands each one to the session
 * core as a {@link TransportConnection}; the core never knows which library carries the bytes.
 * ws (default), uWebSockets.js and in-memory implement it and share one test suite.
 */
import type { ServerCore } from './core.ts';

/** One client connection as the core sees it: binary frames in and out. */
export interface TransportConnection {
  /**
   * Sends one binary frame. Returns false when the peer is gone. `onDone`, when given, is called
   * exactly once when the transport no longer reads `frame` (at once for transports that copy it,
   * after the socket write for those that do not, and also when it was not sent), so the caller
   * may reuse the memory.
   */
  send(frame: Uint8Array, onDone?: () => void): boolean;
  /**
   * Sends one binary message made of `parts` (their concatenation), written one after another
   * as fragments of one WebSocket message, with no copy of the whole and without holding the
   * event loop for a large one; messages sent later leave after it. Transports without it get
   * the parts joined into one frame.
   */
  sendParts?(parts: readonly Uint8Array[]): boolean;
  /** Closes with a WebSocket close code. */
  close(code?: number, reason?: string): void;
  /** Drops the connection without a closing handshake (dead peers). */
  terminate(): void;
  /**
   * Bytes handed to this connection that the peer has not read yet (in the library's and the
   * socket's buffers). Transports without it (in-process ones) are never held back.
   */
  bufferedBytes?(): number;
  /** Stops reading from the peer (TCP then pushes back on it), for a peer that does not read its answers. */
  pauseReading?(): void;
  /** Reads from the peer again. */
  resumeReading?(): void;
  readonly remoteAddress: string;
  /** The peer's IP address alone, for per-address limits (default: remoteAddress). */
  readonly remoteIp?: string;
}

/** What the core gives a transport for each accepted connection. */
export interface ConnectionHandler {
  onFrame(frame: Uint8Array): void;
  onClose(): void;
  /** Called by transports that run their own heartbeats when the peer answered a ping. */
  onPong?(): void;
  /** Called when the transport's outgoing buffer drained (some or all of it). */
  onDrain?(): void;
}

export interface ListenOptions {
  host: string;
  port: number;
}

export interface ServerTransport {
  readonly name: string;
  /** Starts accepting; resolves with the bound port (port 0 picks a free one). */
  listen(core: ServerCore, opts: ListenOptions): Promise<{ port: number }>;
  /**
   * Closes the listening socket so no new connection arrives while the core drains (shutdown);
   * open connections stay. close() does it too when it was not called.
   */
  stopAccepting?(): void;
  /** Stops accepting and closes the listening socket. Existing connections are closed by the core. */
  close(): Promise<void>;
}
