/** Writes client/python/src/gymwire/_protocol.py from the TypeScript protocol. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { renderPythonConstants } from './codegen/python-constants.ts';

const file = join(import.meta.dirname, '..', 'client', 'python', 'src', 'gymwire', '_protocol.py');
writeFileSync(file, renderPythonConstants());
process.stdout.write(`wrote ${file}\n`);
