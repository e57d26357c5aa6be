#!/usr/bin/env node
/**
 * The installed `gymwire` command: the compiled CLI run directly (the package's `bin`, dist/bin/main.js).
 * A checkout runs bin/gymwire.js instead, which loads the TypeScript sources through tsx; both
 * re-run themselves once with a larger heap (bin/reexec.ts).
 */
import { fileURLToPath } from 'node:url';

import { reexecWithLargerHeap } from './reexec.ts';

// The CLI is loaded only in the process that runs it, not in the parent that waits.
if (!reexecWithLargerHeap(fileURLToPath(import.meta.url))) {
  const { main } = await import('./cli.ts');
  await main(process.argv);
}
