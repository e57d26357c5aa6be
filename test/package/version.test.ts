/**
 * One version: package.json's, generated into the server, the CLI and the Python package
 * (scripts/gen-version.mjs), and one licence in both manifests.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

import { SERVER_VERSION } from '../../server/core.ts';
import { GYMWIRE_VERSION } from '../../protocol/version.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { version: string; license: string };
const pyproject = readFileSync(`${ROOT}client/python/pyproject.toml`, 'utf8');

describe('version and licence', () => {
  it('the generated version files are fresh', () => {
    expect(() => execFileSync(process.execPath, ['scripts/gen-version.mjs', '--check'], { cwd: ROOT, stdio: 'pipe' })).not.toThrow();
    expect(GYMWIRE_VERSION).toBe(pkg.version);
    expect(SERVER_VERSION).toBe(pkg.version);
    expect(readFileSync(`${ROOT}client/python/src/gymwire/_version.py`, 'utf8')).toContain(`__version__ = "${pkg.version}"`);
  });

  it('the Python package takes its version from the generated file, not a literal', () => {
    expect(pyproject).toMatch(/^dynamic = \["version"\]$/m);
    expect(pyproject).toContain('version = { attr = "gymwire._version.__version__" }');
    expect(pyproject).not.toMatch(/^version = "/m);
  });

  it('one licence: the LICENSE file, both manifests and the Python package agree', () => {
    expect(readFileSync(`${ROOT}LICENSE`, 'utf8')).toContain('Apache License\n                           Version 2.0');
    expect(pkg.license).toBe('Apache-2.0');
    expect(pyproject).toMatch(/^license = "Apache-2.0"$/m);
    expect(pyproject).toMatch(/^license-files = \["LICENSE"\]$/m);
    expect(readFileSync(`${ROOT}client/python/LICENSE`, 'utf8')).toBe(readFileSync(`${ROOT}LICENSE`, 'utf8'));
  });
});
