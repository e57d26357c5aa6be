/**
 * Splitting batched replies into per-session values: `step_batch` and `reset_batch` stack
 * same-shaped tensors along a new first axis (integer scalars into an int64 tensor, a Dict
 * observation key by key) and send anything else as an array (protocol/batch.ts).
 */
import { batchLength, batchRow } from '../../../protocol/batch.ts';
import type { Space } from '../../../protocol/spaces.ts';

/** Per-session observations from a batched reply (tensor rows are views, not copies). */
export function unstack(obs: unknown, n: number, space: Space): unknown[] {
  const length = batchLength(obs);
  if (length === undefined) throw new Error(`a batched observation is neither stacked (a tensor, or a map of them) nor an array of ${n}`);
  if (length !== n) throw new Error(`a batched observation holds ${length} sessions, expected ${n}`);
  if (Array.isArray(obs)) return obs;
  const rows = new Array<unknown>(n);
  for (let i = 0; i < n; i++) rows[i] = batchRow(obs, i, space);
  return rows;
}
