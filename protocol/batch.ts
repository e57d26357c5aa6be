/**
 * The batched form of observations in `reset_batch` and `step_batch` answers, built by the server
 * and read by clients. Per-session observations become one tensor stacked over sessions when every
 * one is a tensor of one dtype and shape (integers: an int64 vector). Observations of a Dict space
 * that are maps with the same keys become one map holding each key's values in this same batched
 * form (stacked, a nested map, or the array of that key's values): a Dict space's batch as
 * Gymnasium's vector envs return it, so a client hands each image key's tensor on without copying
 * frames even when a text key rides along. Anything else stays an array of per-session values.
 *
 * @example
 * const obs = stackBatch([{ image: frameA, task: 'open' }, { image: frameB, task: 'lift' }], space);
 * // {image: uint8 [2, H, W, 3], task: ['open', 'lift']}
 * batchRow(obs, 1); // {image: frameB's pixels as a view, task: 'lift'}
 */
import { isPlainObject, stackTensors } from './spaces.ts';
import type { Space } from './spaces.ts';
import { Tensor } from './tensor.ts';

/** The first protocol version whose batches hold a Dict observation key by key; older ones get one map per session. */
export const PER_KEY_BATCH_VERSION = 2;

/**
 * Per-session observations in their batched wire form: stacked, a map of per-key batches (only
 * where `space`, the sessions' observation space, is a Dict, and the client speaks
 * PER_KEY_BATCH_VERSION or later), or the array itself.
 */
export function stackBatch(values: readonly unknown[], space?: Space, protocolVersion: number = PER_KEY_BATCH_VERSION): unknown {
  return stacked(values, protocolVersion >= PER_KEY_BATCH_VERSION ? space : undefined) ?? values;
}

/** The values stacked (a tensor, or a map of per-key batches), or undefined when they stay an array. */
function stacked(values: readonly unknown[], space: Space | undefined): Tensor | Record<string, unknown> | undefined {
  const first = values[0];
  if (first instanceof Tensor) {
    const shape = first.shape;
    for (const v of values) {
      if (!(v instanceof Tensor) || v.dtype !== first.dtype || v.shape.length !== shape.length) return undefined;
      for (let k = 0; k < shape.length; k++) if (v.shape[k] !== shape[k]) return undefined;
    }
    return stackTensors(values as Tensor[], first.dtype, first.shape);
  }
  if (typeof first === 'number') {
    return values.every((v) => typeof v === 'number' && Number.isInteger(v)) ? Tensor.from('int64', [values.length], values as number[]) : undefined;
  }
  // Only a Dict's values split by key: a Graph's {nodes, edges, edge_links} is one value, not a Dict.
  if (space?.type !== 'dict' || !isPlainObject(first)) return undefined;
  const keys = Object.keys(first);
  // A map without keys has no per-key form that keeps the number of sessions.
  if (keys.length === 0) return undefined;
  for (const v of values) if (!isPlainObject(v) || Object.keys(v).length !== keys.length || !keys.every((k) => k in v)) return undefined;
  const out: Record<string, unknown> = {};
  for (const key of keys)
    out[key] = stackBatch(
      values.map((v) => (v as Record<string, unknown>)[key]),
      space.spaces[key],
    );
  return out;
}

/**
 * Zeros shaped like `value` (a tensor, an integer, a map of values key by key), else null: what a
 * failed session's slot holds in a `step_batch` answer, so the other sessions still stack.
 */
export function zerosLike(value: unknown): unknown {
  if (value instanceof Tensor) return Tensor.zeros(value.dtype, value.shape);
  if (typeof value === 'number') return 0;
  if (!isPlainObject(value)) return null;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) out[key] = zerosLike(v);
  return out;
}

/** The number of sessions in a batched observation (undefined when it is not one of the batched forms). */
export function batchLength(obs: unknown): number | undefined {
  if (Array.isArray(obs)) return obs.length;
  if (obs instanceof Tensor) return obs.shape[0];
  if (!isPlainObject(obs)) return undefined;
  const first = Object.values(obs)[0];
  return first === undefined ? undefined : batchLength(first);
}

/**
 * Session `k`'s observation from a batched one; tensor rows are views, not copies. Given the
 * observation space, a Discrete row is the integer a single answer carries (without it, a 0-d
 * int64 tensor).
 */
export function batchRow(obs: unknown, k: number, space?: Space): unknown {
  if (Array.isArray(obs)) return obs[k];
  if (obs instanceof Tensor) {
    if (space?.type === 'discrete' && obs.shape.length === 1) return obs.at(k);
    const per = obs.size / (obs.shape[0] || 1);
    // The row is a view of the stacked tensor's typed array, of the same element type.
    const data = obs.data as unknown as { subarray(begin: number, end: number): Tensor['data'] };
    return new Tensor(obs.dtype, obs.shape.slice(1), data.subarray(k * per, (k + 1) * per));
  }
  if (!isPlainObject(obs)) return undefined;
  const out: Record<string, unknown> = {};
  for (const [key, column] of Object.entries(obs)) out[key] = batchRow(column, k, space?.type === 'dict' ? space.spaces[key] : undefined);
  return out;
}
