/**
 * WebSocket close codes a gymwire server uses, and what a client should do on each. Both SDKs read
 * this table (the Python SDK through its generated `_protocol.py`), so a code means one thing on
 * every side of the wire.
 *
 * @example
 * transport.close(CLOSE_CODES.GOING_AWAY, 'server shutting down');
 */
export const CLOSE_CODES = {
  /** The server is shutting down (after its `shutdown` event); reconnecting later may succeed. */
  GOING_AWAY: 1001,
  /** The hello named a protocol version the server does not speak: retrying cannot help. */
  PROTOCOL_ERROR: 1002,
  /** The peer broke a rule (wrong token, no hello in time, a frame too large before hello): retrying cannot help. */
  POLICY_VIOLATION: 1008,
  /** The frame is larger than the server accepts. */
  MESSAGE_TOO_BIG: 1009,
  /** An unexpected server fault. */
  INTERNAL_ERROR: 1011,
  /**
   * The server is at its connection limits (--max-connections, --max-preauth-per-ip) and refused
   * this connection after it was upgraded (most are refused with HTTP 503/429 before): reconnect later.
   */
  TRY_AGAIN_LATER: 1013,
  /**
   * The client left more answers unread than the server holds for one connection (gymwire serve
   * --max-outbound-bytes) for longer than --outbound-drain-timeout: read answers as they come (or
   * ask for fewer at once) and reconnect.
   */
  SLOW_READER: 4008,
} as const;

export type CloseCode = (typeof CLOSE_CODES)[keyof typeof CLOSE_CODES];

/** Close codes after which a client must not reconnect on its own. */
export const FATAL_CLOSE_CODES: readonly CloseCode[] = [CLOSE_CODES.PROTOCOL_ERROR, CLOSE_CODES.POLICY_VIOLATION];
