/**
 * Splitting batched replies into per-session values: `step_batch` and `reset_batch` stack
 * same-shaped tensors along a new first axis (and integer scalars into an int64 tensor) and send
 * anything else as an array.
 */
import type { Space } from '../../../protocol/spaces.ts';
import { Tensor } from '../../../protocol/tensor.ts';

/** Per-session observations from a batched reply (tensor rows are views, not copies). */
export function unstack(obs: unknown, n: number, space: Space): unknown[] {
  if (obs instanceof Tensor) {
    if (obs.shape[0] !== n) throw new Error(`a batched observation has first dimension ${obs.shape[0]}, expected ${n}`);
    if (space.type === 'discrete' && obs.shape.length === 1) return Array.from({ length: n }, (_, i) => obs.at(i));
    const rowShape = obs.shape.slice(1);
    const per = obs.size / Math.max(1, n);
    // Rows are views of the stacked tensor's typed array (of the same element type), one Tensor each.
    const data = obs.data as unknown as { subarray(begin: number, end: number): Tensor['data'] };
    const rows = new Array<Tensor>(n);
    for (let i = 0; i < n; i++) rows[i] = new Tensor(obs.dtype, rowShape, data.subarray(i * per, (i + 1) * per));
    return rows;
  }
  if (Array.isArray(obs) && obs.length === n) return obs;
  throw new Error(`a batched observation is neither a stacked tensor nor an array of ${n}`);
}
