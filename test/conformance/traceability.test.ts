/**
 * Every written promise is held by a case: each statement id of docs/PROTOCOL.md and
 * docs/errors.md is covered by a conformance case or explained in OUTSIDE_THE_SUITE, no case cites
 * an id that does not exist, and docs/conformance.md prints the current matrix.
 */
import { readFileSync } from 'node:fs';

import { describe, expect, it } from 'vitest';

import { CONFORMANCE_PAGE, currentTraceability, withMatrix } from '../../scripts/codegen/conformance-matrix.ts';

describe('traceability from the docs to the conformance cases', () => {
  const t = currentTraceability();

  it('covers every statement id with a case, or says why it is outside the suite', () => {
    expect(t.matrix.length).toBeGreaterThan(80);
    expect(t.uncovered, 'statements no case covers (add a case, or a reason in OUTSIDE_THE_SUITE)').toEqual([]);
  });

  it('cites only ids the pages carry, and every case cites one', () => {
    expect(t.unknown, 'ids cited by a case or OUTSIDE_THE_SUITE that no page carries').toEqual([]);
    expect(t.uncited, 'cases that cite no statement').toEqual([]);
  });

  it('docs/conformance.md prints the current matrix (run npm run gen:conformance)', () => {
    const page = readFileSync(CONFORMANCE_PAGE, 'utf8');
    expect(page).toBe(withMatrix(page));
  });
});
