#!/usr/bin/env node
// The `gymwire` command. The sources are TypeScript run through tsx, so there is no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('./cli.ts');
await main(process.argv);
