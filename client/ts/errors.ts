/**
 * Client-side errors. Wire errors arrive as {@link ProtocolError} (stable `ENV_ERR_*` codes, from
 * protocol/errors.ts); {@link SdkError} is the local family (not connected, timed out) and never
 * crosses the wire.
 */
export { ProtocolError } from '../../protocol/errors.ts';
export type { ErrorCode } from '../../protocol/errors.ts';
import type { SdkErrorCodeName } from '../../protocol/sdk-errors.ts';

export const SdkErrorCode = {
  NotConnected: 'NOT_CONNECTED',
  ConnectFailed: 'CONNECT_FAILED',
  RequestTimeout: 'REQUEST_TIMEOUT',
  ConnectionLost: 'CONNECTION_LOST',
  ServerShutdown: 'SERVER_SHUTDOWN',
  SessionLost: 'SESSION_LOST',
  Closed: 'CLOSED',
  BadResponse: 'BAD_RESPONSE',
  FrameTooLarge: 'FRAME_TOO_LARGE',
  VersionMismatch: 'VERSION_MISMATCH',
  TooDeep: 'TOO_DEEP',
  TooManyPending: 'TOO_MANY_PENDING',
} as const satisfies Record<string, SdkErrorCodeName>;
export type SdkErrorCode = (typeof SdkErrorCode)[keyof typeof SdkErrorCode];

export class SdkError extends Error {
  override readonly name = 'SdkError';
  constructor(
    readonly code: SdkErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}
