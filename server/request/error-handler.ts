/**
 * Errors to wire errors: anything thrown while decoding a frame or serving a request becomes one
 * typed ProtocolError. Failures the server cannot attribute to the client are env or server
 * faults, never client-fault codes.
 */
import type { Logger } from 'pino';

import { InvalidActionError, InvalidOptionsError, InvalidStateError } from '../../envs/core/env.ts';
import { InvalidKwargsError, UnknownEnvError } from '../../envs/core/registry.ts';
import { EnvContractError, ResetNeededError } from '../../envs/core/wrappers.ts';
import { ProtocolError } from '../../protocol/errors.ts';
import { FrameScanError } from '../../protocol/frame-scan.ts';
import { TensorFormatError } from '../../protocol/tensor.ts';
import { describeThrown, peerError } from '../../runtime/channel.ts';

/** The wire error for a frame that cannot be decoded (or that decoding would make too costly). */
export function decodeError(err: unknown, size: number): ProtocolError {
  if (err instanceof TensorFormatError) return new ProtocolError('ENV_ERR_BAD_TENSOR', `bad tensor: ${err.message}`);
  if (err instanceof FrameScanError && err.problem === 'too_costly') return new ProtocolError('ENV_ERR_FRAME_TOO_LARGE', err.message, { size });
  return new ProtocolError('ENV_ERR_BAD_FRAME', `frame is not a msgpack message: ${err instanceof Error ? err.message : describeThrown(err)}`);
}

/** Maps anything thrown while serving a request to a wire error. Unknown failures are env or server faults, never client codes. */
export function toProtocolError(err: unknown, log: Logger, op: string): ProtocolError {
  if (err instanceof ProtocolError) return err;
  if (err instanceof InvalidActionError) return new ProtocolError('ENV_ERR_INVALID_ACTION', err.message);
  if (err instanceof ResetNeededError) return new ProtocolError('ENV_ERR_RESET_NEEDED', err.message);
  if (err instanceof InvalidStateError) return new ProtocolError('ENV_ERR_INVALID_STATE', err.message);
  if (err instanceof InvalidOptionsError) return new ProtocolError('ENV_ERR_INVALID_OPTIONS', err.message);
  if (err instanceof UnknownEnvError) return new ProtocolError('ENV_ERR_UNKNOWN_ENV', err.message, { available: err.available });
  if (err instanceof InvalidKwargsError) return new ProtocolError('ENV_ERR_INVALID_KWARGS', err.message, { issues: err.issues });
  // One mapping for whatever an env throws (runtime/channel.ts): a null-prototype object or a value
  // whose toString throws is still the env's fault, described without throwing.
  const mapped = peerError(err, { peer: 'the env', what: op });
  if (mapped instanceof ProtocolError) {
    log.warn({ err: mapped.message, op }, 'env failure');
    return mapped;
  }
  log.warn({ err: describeThrown(mapped), op }, 'env failure');
  return new ProtocolError('ENV_ERR_ENV_FAILURE', `${op} failed inside the env: ${describeThrown(mapped)}`, {
    error: mapped.name,
    contract: err instanceof EnvContractError,
  });
}
