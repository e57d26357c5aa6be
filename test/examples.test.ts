/**
 * Every TypeScript example checks its own result and exits non-zero on failure: run them all.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const examples = readdirSync(join(root, 'examples'), { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(root, 'examples', d.name, 'main.ts')))
  .map((d) => d.name);

describe('examples', () => {
  it.each(examples)('%s runs and checks itself', { timeout: 180_000 }, (name) => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', join('examples', name, 'main.ts')], { cwd: root, encoding: 'utf8', timeout: 170_000 });
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
  });
});
