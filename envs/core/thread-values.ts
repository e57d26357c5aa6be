/**
 * Values and errors across a worker-thread boundary. Structured cloning keeps typed arrays but
 * drops classes, so tensors travel as tagged plain objects and are rebuilt on the other side;
 * their bytes are copied once on the sending thread and then transferred, never copied on the
 * receiving one (the event loop). Errors travel by name and come back as the classes the server
 * maps to wire codes.
 */
import { ProtocolError } from '../../protocol/errors.ts';
import type { ErrorCode } from '../../protocol/errors.ts';
import { Tensor } from '../../protocol/tensor.ts';
import type { DType } from '../../protocol/tensor.ts';
import { InvalidActionError, InvalidOptionsError, InvalidStateError } from './env.ts';
import { DataPathError } from './data-roots.ts';
import { InvalidKwargsError } from './kwargs-error.ts';
import { EnvContractError, ResetNeededError } from './wrappers.ts';

const TENSOR_TAG = '__gymwire_tensor__';

interface PackedTensor {
  [TENSOR_TAG]: true;
  dtype: DType;
  shape: readonly number[];
  data: ArrayBufferView;
}

/**
 * `value` with every tensor replaced by a tagged plain object. With `transfer`, each tensor's
 * bytes are copied into a fresh buffer listed there (so the sender may keep and reuse its own);
 * without it they are shared by the structured clone's own copy.
 */
export function packValue(value: unknown, transfer?: ArrayBuffer[]): unknown {
  if (value instanceof Tensor) {
    let data = value.data as ArrayBufferView;
    if (transfer) {
      data = (value.data as Uint8Array).slice();
      transfer.push(data.buffer as ArrayBuffer);
    }
    return { [TENSOR_TAG]: true, dtype: value.dtype, shape: [...value.shape], data } satisfies PackedTensor;
  }
  if (Array.isArray(value)) return value.map((v) => packValue(v, transfer));
  if (typeof value === 'object' && value !== null && !ArrayBuffer.isView(value)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = packValue(v, transfer);
    return out;
  }
  return value;
}

/** The inverse of {@link packValue}: tagged objects back to tensors, without copying their bytes. */
export function unpackValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(unpackValue);
  if (typeof value === 'object' && value !== null && !ArrayBuffer.isView(value)) {
    const v = value as Record<string, unknown>;
    if (v[TENSOR_TAG] === true) {
      const p = v as unknown as PackedTensor;
      return new Tensor(p.dtype, p.shape, p.data as never);
    }
    const out: Record<string, unknown> = {};
    for (const [k, inner] of Object.entries(v)) out[k] = unpackValue(inner);
    return out;
  }
  return value;
}

/** An error as it crosses the boundary. */
export interface PackedError {
  name: string;
  message: string;
  code?: ErrorCode;
  details?: Record<string, unknown>;
  issues?: { path: string; message: string }[];
}

export function packError(err: unknown): PackedError {
  if (err instanceof ProtocolError) return { name: err.name, message: err.message, code: err.code, details: err.details };
  if (err instanceof InvalidKwargsError)
    return { name: err instanceof DataPathError ? 'DataPathError' : 'InvalidKwargsError', message: err.message, issues: err.issues };
  if (err instanceof Error) return { name: err.name, message: err.message };
  return { name: 'Error', message: String(err) };
}

const REBUILT: Record<string, new (message: string) => Error> = {
  InvalidActionError,
  InvalidOptionsError,
  InvalidStateError,
  ResetNeededError,
  EnvContractError,
};

/** The error the env threw on its thread, as the class the server maps to a wire code (others keep their name). */
export function unpackError(packed: PackedError): Error {
  if (packed.code) return new ProtocolError(packed.code, packed.message, packed.details ?? {});
  const issue = packed.issues?.[0];
  if (packed.name === 'DataPathError' && issue) return new DataPathError(issue.path, issue.message);
  if (packed.issues) return new InvalidKwargsError(packed.message, packed.issues);
  const Known = REBUILT[packed.name];
  if (Known) return new Known(packed.message);
  const err = new Error(packed.message);
  err.name = packed.name;
  return err;
}
