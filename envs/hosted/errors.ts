/**
 * What a worker's failures become on the wire: a Python exception answers its request with
 * ENV_ERR_ENV_FAILURE and the traceback's last line (bad kwargs and bad state bytes get their own
 * client codes); a call past its deadline fails with ENV_ERR_ENV_FAILURE and `details.timed_out`,
 * and its session's later calls with `details.session_lost`; a lost worker fails every request of
 * its sessions with ENV_ERR_ENV_FAILURE and `details.worker_lost`.
 *
 * @example
 * throw failureError('step', { kind: 'env', type: 'ValueError', message: 'ValueError: boom', traceback }, 'gym/CartPole-v1');
 */
import { InvalidStateError } from '../core/env.ts';
import { InvalidKwargsError } from '../core/registry.ts';
import { ProtocolError } from '../../protocol/errors.ts';

/** What the worker answers for a failed call (client/python/src/gymwire/worker/host.py `error_answer`). */
export interface WorkerFailure {
  kind: 'env' | 'invalid_kwargs' | 'invalid_state' | 'unknown_handle' | 'unsupported';
  type: string;
  /** The traceback's last line, e.g. "ValueError: bad action". */
  message: string;
  traceback: string;
}

export function failureError(op: string, failure: WorkerFailure, what: string): Error {
  if (failure.kind === 'invalid_kwargs')
    return new InvalidKwargsError(`invalid kwargs for ${what}: ${failure.message}`, [{ path: '', message: failure.message }]);
  if (failure.kind === 'invalid_state') return new InvalidStateError(failure.message);
  // A missing optional package (pygame for classic-control frames): the op is unsupported here.
  if (failure.kind === 'unsupported')
    return new ProtocolError('ENV_ERR_UNSUPPORTED', `${op} is not available for ${what} on this server: ${failure.message}`, { error: failure.type });
  return new ProtocolError('ENV_ERR_ENV_FAILURE', `${op} failed in the Python env ${what}: ${failure.message}`, { error: failure.type });
}

export function workerLostError(reason: string): ProtocolError {
  return new ProtocolError('ENV_ERR_ENV_FAILURE', `the Python worker hosting this env is gone: ${reason}; this session is lost: close it and make a new one`, {
    worker_lost: true,
  });
}

/** A call past its deadline (`--worker-timeout`): it fails, and its session with it (the env may still be inside the call). */
export function callTimedOutError(op: string, deadlineMs: number): ProtocolError {
  return new ProtocolError(
    'ENV_ERR_ENV_FAILURE',
    `${op} did not finish in the Python env within ${deadlineMs} ms (--worker-timeout); this session is lost: close it and make a new one`,
    { side: 'env', timed_out: true, deadline_ms: deadlineMs },
  );
}

/** A later call of a session whose call missed its deadline. */
export function sessionLostError(): ProtocolError {
  return new ProtocolError('ENV_ERR_ENV_FAILURE', 'this session is lost: an earlier call did not finish within --worker-timeout; close it and make a new one', {
    session_lost: true,
  });
}
