/**
 * numpy's default `np.argsort` (kind `quicksort`: introsort) for float64, in the order numpy 1.23
 * (NAVSIM's pinned version) returns: a median-of-three quicksort down to 16 elements, insertion
 * sort below, heapsort past a depth of twice the bit length. It is not stable: equal values come
 * out in the order the partitioning leaves them, and NAVSIM's code keeps the first k of that order
 * (PDM-Closed's nearest objects), so gymwire reproduces it instead of sorting stably.
 *
 * @example
 * numpyArgsort([65, 25, 65]); // [1, 0, 2]
 */

/** numpy's `Tag::less` for doubles: NaNs sort last. */
function less(a: number, b: number): boolean {
  return a < b || (b !== b && a === a);
}

/** Partitions up to this length (`pr - pl`) are finished by insertion sort (numpy's SMALL_QUICKSORT). */
const SMALL_QUICKSORT = 15;

/** The indices that sort `values`, in numpy 1.23's `np.argsort(values)` order. */
export function numpyArgsort(values: ArrayLike<number>): number[] {
  const v = values;
  const idx = Array.from({ length: v.length }, (_x, i) => i);
  const at = (k: number): number => idx[k] as number;
  const val = (k: number): number => v[at(k)] as number;
  const swap = (a: number, b: number): void => {
    const t = idx[a] as number;
    idx[a] = idx[b] as number;
    idx[b] = t;
  };
  const stack: [number, number, number][] = [];
  let pl = 0,
    pr = v.length - 1;
  // numpy's depth limit: twice the index of the highest set bit of the length.
  let depth = 2 * (31 - Math.clz32(Math.max(1, v.length)));
  for (;;) {
    if (depth < 0) heapsort(v, idx, pl, pr - pl + 1);
    else {
      while (pr - pl > SMALL_QUICKSORT) {
        const pm = pl + ((pr - pl) >> 1);
        if (less(val(pm), val(pl))) swap(pm, pl);
        if (less(val(pr), val(pm))) swap(pr, pm);
        if (less(val(pm), val(pl))) swap(pm, pl);
        const pivot = val(pm);
        let pi = pl,
          pj = pr - 1;
        swap(pm, pj);
        for (;;) {
          do pi++;
          while (less(val(pi), pivot));
          do pj--;
          while (less(pivot, val(pj)));
          if (pi >= pj) break;
          swap(pi, pj);
        }
        swap(pi, pr - 1);
        // The larger side waits on the stack; the smaller is partitioned next.
        depth--;
        if (pi - pl < pr - pi) {
          stack.push([pi + 1, pr, depth]);
          pr = pi - 1;
        } else {
          stack.push([pl, pi - 1, depth]);
          pl = pi + 1;
        }
      }
      for (let pi = pl + 1; pi <= pr; pi++) {
        const item = at(pi);
        const key = v[item] as number;
        let pj = pi;
        while (pj > pl && less(key, val(pj - 1))) {
          idx[pj] = at(pj - 1);
          pj--;
        }
        idx[pj] = item;
      }
    }
    const next = stack.pop();
    if (!next) break;
    [pl, pr, depth] = next;
  }
  return idx;
}

/** numpy's `aheapsort_` on `idx[start .. start + n)`: the introsort's fallback. */
function heapsort(v: ArrayLike<number>, idx: number[], start: number, n: number): void {
  // One-based heap indexing over the slice, as numpy's.
  const get = (i: number): number => idx[start + i - 1] as number;
  const set = (i: number, x: number): void => {
    idx[start + i - 1] = x;
  };
  const key = (item: number): number => v[item] as number;
  const siftDown = (top: number, size: number, item: number): void => {
    let i = top;
    for (let j = top << 1; j <= size;) {
      if (j < size && less(key(get(j)), key(get(j + 1)))) j++;
      if (!less(key(item), key(get(j)))) break;
      set(i, get(j));
      i = j;
      j += j;
    }
    set(i, item);
  };
  for (let l = n >> 1; l > 0; l--) siftDown(l, n, get(l));
  for (let size = n; size > 1;) {
    const item = get(size);
    set(size, get(1));
    size--;
    siftDown(1, size, item);
  }
}
