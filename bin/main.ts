#!/usr/bin/env node
/**
 * The installed `gymwire` command: the compiled CLI run directly (the package's `bin`, dist/bin/main.js).
 * A checkout runs bin/gymwire.js instead, which loads the TypeScript sources through tsx.
 */
import { main } from './cli.ts';

await main(process.argv);
