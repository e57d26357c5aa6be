/**
 * README.md and docs/ are for users, in the present tense: development history belongs in
 * CHANGELOG.md, so wording from a development log fails here.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const DEV_LOG = [
  /(?<![-\w])sessions? \d+\b/i, // "session 5", not the `--sessions 64` option
  /\bthis round\b/i,
  /\b(last|next|previous) round\b/i,
  /\bnot (reliably )?met\b/i,
  /\bmet \/ not met\b/i,
  /\btarget:? met\b/i,
];

function markdown(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? markdown(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : [],
  );
}

describe('user documentation', () => {
  const files = [join(ROOT, 'README.md'), ...markdown(join(ROOT, 'docs'))];

  it('has no development-log wording', () => {
    const hits: string[] = [];
    for (const file of files) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          for (const pattern of DEV_LOG) if (pattern.test(line)) hits.push(`${file.slice(ROOT.length)}:${i + 1}: ${line.trim().slice(0, 120)}`);
        });
    }
    expect(hits).toEqual([]);
  });
});
