/**
 * The wire error registry: every code a gymwire server may answer with, who is at fault, and what
 * it means. `docs/errors.md` is checked against this table by a test.
 *
 * Wire errors ({@link ProtocolError}) cross the connection; local SDK errors (not connected, timed
 * out) are a separate family in the client and never cross it. A server fault never reports a
 * client-fault code.
 *
 * @example
 * throw new ProtocolError('ENV_ERR_INVALID_ACTION', 'element 0 = 3 is above high 1', { session_id });
 */

export type Fault = 'client' | 'server' | 'env';

export const ERROR_CODES = {
  ENV_ERR_BAD_FRAME: { fault: 'client', summary: 'The frame is not a msgpack message.' },
  ENV_ERR_FRAME_TOO_LARGE: { fault: 'client', summary: 'The frame is larger than the max_frame_bytes limit from the welcome.' },
  ENV_ERR_UNKNOWN_TYPE: { fault: 'client', summary: 'The message type is not one this protocol version defines.' },
  ENV_ERR_INVALID_MESSAGE: { fault: 'client', summary: 'The message does not match its schema; details.issues lists each violation with its path.' },
  ENV_ERR_BAD_TENSOR: { fault: 'client', summary: 'A tensor’s bytes do not match its dtype and shape, or its dtype code is unknown.' },
  ENV_ERR_HANDSHAKE_REQUIRED: { fault: 'client', summary: 'The first message on a connection must be hello.' },
  ENV_ERR_VERSION_MISMATCH: { fault: 'client', summary: 'The client’s protocol version is not supported; details.supported lists those that are.' },
  ENV_ERR_UNAUTHORIZED: { fault: 'client', summary: 'The auth token is missing or wrong.' },
  ENV_ERR_UNKNOWN_ENV: { fault: 'client', summary: 'No env is registered under that id; details.available lists the ids.' },
  ENV_ERR_INVALID_KWARGS: {
    fault: 'client',
    summary: 'The make kwargs do not match the env’s kwargs schema, or a path kwarg points outside the server’s data roots or at data that does not load.',
  },
  ENV_ERR_UNKNOWN_SESSION: { fault: 'client', summary: 'No open session has that id (never made, closed, or reaped).' },
  ENV_ERR_RESET_NEEDED: { fault: 'client', summary: 'step or render was called before reset, or after the episode ended without a reset.' },
  ENV_ERR_INVALID_OPTIONS: { fault: 'client', summary: 'The reset options are invalid for this env (unknown scene index, bad value).' },
  ENV_ERR_INVALID_ACTION: { fault: 'client', summary: 'The action is not in the action space (wrong dtype, shape, bounds or NaN).' },
  ENV_ERR_UNKNOWN_TOOL: { fault: 'client', summary: 'The session’s env has no tool of that name.' },
  ENV_ERR_INVALID_TOOL_ARGS: { fault: 'client', summary: 'The tool arguments do not match the tool’s input schema.' },
  ENV_ERR_INVALID_STATE: { fault: 'client', summary: 'set_state was given bytes that this env cannot restore.' },
  ENV_ERR_UNSUPPORTED: { fault: 'client', summary: 'The env does not support the operation (no render mode, no state, no such format).' },
  ENV_ERR_TOO_MANY_SESSIONS: { fault: 'client', summary: 'A session limit (per connection or per server) is reached.' },
  ENV_ERR_MEMORY_BUDGET: {
    fault: 'client',
    summary:
      'make would take a session past a memory budget (max_memory_bytes_per_client or max_memory_bytes from the welcome); details give the session’s estimated bytes, the limit and what is in use. Nothing was built.',
  },
  ENV_ERR_TOO_MANY_PENDING: { fault: 'client', summary: 'Too many requests are waiting on one session.' },
  ENV_ERR_REPLY_EXPIRED: {
    fault: 'client',
    summary:
      'A request id below the highest this client sent has no held answer: it ran and its answer was evicted (too many unacknowledged answers), or the id was never used (ids must increase). It was not run.',
  },
  ENV_ERR_SHUTTING_DOWN: { fault: 'server', summary: 'The server is shutting down and accepts no new work.' },
  ENV_ERR_ENV_FAILURE: {
    fault: 'env',
    summary: 'The env raised an exception while handling the request, or returned a value msgpack cannot carry; other sessions are unaffected.',
  },
  ENV_ERR_INTERNAL: { fault: 'server', summary: 'An unexpected server fault; the message says what failed.' },
} as const satisfies Record<string, { fault: Fault; summary: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERROR_CODES, code);
}

/** An error that crosses the wire with a stable code. */
export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.code = code;
    this.details = details;
  }

  get fault(): Fault {
    return ERROR_CODES[this.code].fault;
  }

  toWire(): { code: ErrorCode; message: string; details: Record<string, unknown> } {
    return { code: this.code, message: this.message, details: this.details };
  }

  /** Rebuilds a wire error; unknown codes (from a newer server) become ENV_ERR_INTERNAL with the original code kept. */
  static fromWire(err: { code: string; message: string; details?: Record<string, unknown> }): ProtocolError {
    if (isErrorCode(err.code)) return new ProtocolError(err.code, err.message, err.details ?? {});
    return new ProtocolError('ENV_ERR_INTERNAL', err.message, { ...err.details, original_code: err.code });
  }
}

/**
 * A short printable form of any wire value, for error messages: never throws (64-bit integers,
 * tensors and byte strings are summarised) and never echoes a large value back whole.
 */
export function previewValue(value: unknown, max = 80): string {
  let text: string;
  try {
    text =
      JSON.stringify(value, (_key, v: unknown) => {
        if (typeof v === 'bigint') return `${v}n`;
        if (ArrayBuffer.isView(v)) return `<${v.constructor.name} of ${v.byteLength} bytes>`;
        return v;
      }) ?? String(value);
  } catch {
    text = Object.prototype.toString.call(value);
  }
  return text.length > max ? `${text.slice(0, max)}… (${text.length} characters)` : text;
}
