import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { numpyArgsort } from '../../../envs/navsim/argsort.ts';

// Recorded from numpy 1.23.5 by scripts/navsim/numpy_argsort_vectors.py.
const VECTORS = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'navsim-reference', 'numpy-argsort.json'), 'utf8')) as {
  cases: { values: number[]; argsort: number[] }[];
};

describe('numpyArgsort', () => {
  it.each(VECTORS.cases.map((c) => [c.values.length, c] as const))('returns numpy 1.23 np.argsort order for %i tie-heavy values', (_n, c) => {
    expect(numpyArgsort(c.values)).toEqual(c.argsort);
  });
  it('is not stable where numpy is not: of 36 distances tied behind 19 nearer ones, the 12th, 13th, 14th, 16th and 35th (from 0) fall past 50', () => {
    const order = numpyArgsort([...Array<number>(19).fill(25), ...Array<number>(36).fill(65)]);
    expect(order.slice(50).sort((a, b) => a - b)).toEqual([31, 32, 33, 35, 54]);
  });
  it('sorts the empty and single-element cases', () => {
    expect(numpyArgsort([])).toEqual([]);
    expect(numpyArgsort([3])).toEqual([0]);
  });
});
