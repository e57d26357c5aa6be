#!/usr/bin/env node
// Formats (or with --check, checks) the files under the formatters: prettier for TypeScript,
// JavaScript and JSON, ruff for Python.
//   node scripts/format.mjs [--check]
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Globs prettier formats: every TypeScript and JavaScript source (.prettierignore keeps out what
 * generators write). A glob with no match is an error, so a renamed folder cannot drop out silently.
 */
export const PRETTIER_FILES = ['.prettierrc.json', 'tsconfig.build.json', '**/*.ts', '**/*.mjs', '**/*.js'];

/** Paths ruff formats, relative to client/python (its pyproject.toml holds ruff's settings). */
export const RUFF_FORMAT_FILES = ['src', 'tests', 'scripts', '../../examples/python'];
/** Paths ruff also lints, with the rules in client/python/pyproject.toml: the same as it formats. */
export const RUFF_FILES = RUFF_FORMAT_FILES;

function run(cmd, args, cwd) {
  const result = spawnSync(cmd, args, { cwd, stdio: 'inherit' });
  if (result.error) throw result.error;
  return result.status ?? 1;
}

function ruffPath() {
  const python = join(root, 'client/python');
  const ruff = join(python, '.venv/bin/ruff');
  // The Python SDK's venv (pinned by requirements-test.txt) carries ruff; make it on first use.
  if (!existsSync(ruff)) run('bash', [join(python, 'scripts/test.sh'), '--venv-only'], root);
  return ruff;
}

if (fileURLToPath(import.meta.url) === process.argv[1]) {
  const check = process.argv.includes('--check');
  const prettier = createRequire(import.meta.url).resolve('prettier/bin/prettier.cjs');
  let failed = run(process.execPath, [prettier, check ? '--check' : '--write', '--log-level', 'warn', ...PRETTIER_FILES], root) !== 0;
  const python = join(root, 'client/python');
  const ruff = ruffPath();
  failed = run(ruff, ['format', ...(check ? ['--check'] : []), ...RUFF_FORMAT_FILES], python) !== 0 || failed;
  failed = run(ruff, ['check', ...(check ? [] : ['--fix']), ...RUFF_FILES], python) !== 0 || failed;
  if (failed) {
    process.stderr.write(check ? 'format: files differ from the formatters; run npm run format\n' : 'format: some files could not be fixed\n');
    process.exitCode = 1;
  }
}
