#!/usr/bin/env node
// Writes package.json's version, the one source of it, into the files that need it as code:
// protocol/version.ts (the server's and the CLI's version) and the Python package's _version.py.
// `npm version` runs it; test/package/version.test.ts fails when they are stale.
//   node scripts/gen-version.mjs [--check]
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

export const GENERATED = {
  'protocol/version.ts': `// Generated from package.json by scripts/gen-version.mjs; do not edit.\nexport const GYMWIRE_VERSION = '${version}';\n`,
  'client/python/src/gymwire/_version.py': `# Generated from package.json by scripts/gen-version.mjs; do not edit.\n__version__ = "${version}"\n`,
};

if (fileURLToPath(import.meta.url) === process.argv[1]) {
  const check = process.argv.includes('--check');
  let stale = false;
  for (const [path, text] of Object.entries(GENERATED)) {
    const full = join(root, path);
    let current = null;
    try {
      current = readFileSync(full, 'utf8');
    } catch {
      // missing: written below, or reported as stale
    }
    if (current === text) continue;
    if (check) {
      process.stderr.write(`${path} is stale: run node scripts/gen-version.mjs\n`);
      stale = true;
    } else writeFileSync(full, text);
  }
  if (stale) process.exitCode = 1;
}
