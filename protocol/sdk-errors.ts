/**
 * The local error family of both SDKs: conditions a client detects itself (not connected, timed
 * out, the connection lost). They never cross the wire, but the TypeScript and Python SDKs name
 * them alike, so this one table defines them; the Python SDK's copy is generated from it.
 *
 * @example
 * throw new SdkError(SdkErrorCode.RequestTimeout, 'step got no answer within 30000 ms');
 */
export const SDK_ERROR_CODES = {
  NOT_CONNECTED: 'The client is not connected (yet, or any more) and cannot send.',
  CONNECT_FAILED: 'The connection or its handshake could not be established.',
  REQUEST_TIMEOUT: 'A request got no answer within its timeout.',
  CONNECTION_LOST: 'The connection dropped and could not be resumed (or reconnecting is off).',
  SERVER_SHUTDOWN: 'The server announced its shutdown: waiting requests and requests for its sessions fail at once.',
  SESSION_LOST: 'Reconnected, but the server no longer had this client’s sessions.',
  CLOSED: 'The client was closed.',
  BAD_RESPONSE: 'The server sent an answer the client cannot read.',
  FRAME_TOO_LARGE: 'A request is larger than the server’s max_frame_bytes; it was not sent.',
  VERSION_MISMATCH: 'The server speaks another protocol version.',
  TOO_DEEP: 'A request nests deeper than the protocol’s depth limit (MAX_FRAME_DEPTH, 512 levels); it was not sent.',
  TOO_MANY_PENDING: 'More requests wait to be sent than the client allows (maxQueued); this one was not sent.',
} as const;

export type SdkErrorCodeName = keyof typeof SDK_ERROR_CODES;
