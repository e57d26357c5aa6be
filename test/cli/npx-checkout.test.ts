/**
 * In a checkout, `npm install` runs `prepare`, which links node_modules/.bin/gymwire to the sources
 * (scripts/link-checkout-bin.mjs), so `npx gymwire …` works as every page writes it, with no build.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { GYMWIRE_VERSION } from '../../protocol/version.ts';

const root = join(import.meta.dirname, '..', '..');

describe('npx gymwire in a checkout', () => {
  it('runs the command from the sources', () => {
    execFileSync(process.execPath, [join(root, 'scripts', 'link-checkout-bin.mjs')]);
    const link = join(root, 'node_modules', '.bin', 'gymwire');
    expect(existsSync(link)).toBe(true);
    expect(realpathSync(link)).toBe(realpathSync(join(root, 'bin', 'gymwire.js')));
    const out = execFileSync('npx', ['--no-install', 'gymwire', '--version'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    expect(out.trim()).toBe(GYMWIRE_VERSION);
  }, 60_000);
});
