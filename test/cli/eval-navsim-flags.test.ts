/**
 * `gymwire eval navsim` takes the NAVSIM version as --navsim-version; the old --version spelling
 * (the program's own flag, which prints gymwire's version) is refused with the new one named.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

import { refuseOldNavsimVersionFlag } from '../../bin/commands/eval-navsim.ts';

const BIN = fileURLToPath(new URL('../../bin/gymwire.js', import.meta.url));

describe('eval navsim --navsim-version', () => {
  it('refuses the old --version spelling after eval navsim, and only there', () => {
    expect(() => refuseOldNavsimVersionFlag(['node', 'gymwire', 'eval', 'navsim', '--agent', 'human', '--version', '2'])).toThrow(/--navsim-version/);
    expect(() => refuseOldNavsimVersionFlag(['node', 'gymwire', 'eval', 'navsim', '--version=2'])).toThrow(/--navsim-version/);
    expect(() => refuseOldNavsimVersionFlag(['node', 'gymwire', 'eval', 'navsim', '--navsim-version', '2'])).not.toThrow();
    expect(() => refuseOldNavsimVersionFlag(['node', 'gymwire', '--version'])).not.toThrow();
  });

  it('the command says so and exits non-zero', () => {
    let stderr = '';
    try {
      execFileSync(process.execPath, [BIN, 'eval', 'navsim', '--agent', 'human', '--version', '2'], { encoding: 'utf8', stdio: 'pipe' });
    } catch (err) {
      stderr = (err as { stderr: string }).stderr;
    }
    expect(stderr).toContain('--navsim-version 1|2');
  }, 60_000);
});
