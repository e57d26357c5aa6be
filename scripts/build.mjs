#!/usr/bin/env node
// Builds the npm package's dist/: the compiled JavaScript and declarations (tsconfig.build.json;
// it emits without type-checking, which `npm run typecheck` does) and the non-code assets the
// compiled code loads beside itself.
//   node scripts/build.mjs
import { execFileSync } from 'node:child_process';
import { cpSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');

/** Files the compiled code reads at run time through `new URL(..., import.meta.url)`, at the same relative place. */
export const ASSETS = ['envs/evac/assets', 'server/viewer/static', 'client/ts/policies/onnx-worker.mjs'];

function* walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* walk(path);
    else yield path;
  }
}

if (fileURLToPath(import.meta.url) === process.argv[1]) build();

function build() {
  rmSync(dist, { recursive: true, force: true });
  execFileSync(process.execPath, [createRequire(import.meta.url).resolve('typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], {
    stdio: 'inherit',
  });
  // tsc rewrites `.ts` import specifiers in JavaScript only; declarations get the same `.js` specifiers
  // so that a consumer's compiler resolves them under any moduleResolution that follows the exports map.
  const TS_SPECIFIER = /((?:from|import)\s*\(?\s*['"])(\.{1,2}\/[^'"]+)\.ts(['"])/g;
  for (const file of walk(dist)) {
    if (!file.endsWith('.d.ts')) continue;
    const text = readFileSync(file, 'utf8');
    const rewritten = text.replace(TS_SPECIFIER, '$1$2.js$3');
    if (rewritten !== text) writeFileSync(file, rewritten);
  }
  for (const asset of ASSETS) cpSync(join(root, asset), join(dist, asset), { recursive: true });
}
