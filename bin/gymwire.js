#!/usr/bin/env node
// The `gymwire` command. The sources are TypeScript run through tsx, so there is no build step.
// It re-runs itself once with a larger heap (bin/reexec.ts), as the installed command does.
import { fileURLToPath } from 'node:url';

const { register } = await import('tsx/esm/api');
register();
const { reexecWithLargerHeap } = await import('./reexec.ts');
if (!reexecWithLargerHeap(fileURLToPath(import.meta.url))) {
  const { main } = await import('./cli.ts');
  await main(process.argv);
}
