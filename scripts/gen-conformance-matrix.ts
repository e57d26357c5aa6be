/** Writes the traceability matrix into docs/conformance.md (scripts/codegen/conformance-matrix.ts). */
import { readFileSync, writeFileSync } from 'node:fs';

import { CONFORMANCE_PAGE, withMatrix } from './codegen/conformance-matrix.ts';

writeFileSync(CONFORMANCE_PAGE, withMatrix(readFileSync(CONFORMANCE_PAGE, 'utf8')));
process.stdout.write(`wrote the traceability matrix to ${CONFORMANCE_PAGE}\n`);
