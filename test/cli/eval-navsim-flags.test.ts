/**
 * `gymwire eval navsim` takes the NAVSIM version as --navsim-version; the old --version spelling
 * (the program's own flag, which prints gymwire's version) is refused with the new one named and a
 * non-zero exit. The parsing rules themselves are in version-flag.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

import { GYMWIRE_VERSION } from '../../protocol/version.ts';

const BIN = fileURLToPath(new URL('../../bin/gymwire.js', import.meta.url));

describe('eval navsim --navsim-version', () => {
  it('the command refuses --version 2 with the new spelling named and exits 1', () => {
    const run = spawnSync(process.execPath, [BIN, 'eval', 'navsim', '--agent', 'human', '--version', '2'], { encoding: 'utf8' });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('--navsim-version 1|2');
    expect(run.stdout).not.toContain(GYMWIRE_VERSION);
  }, 60_000);
});
