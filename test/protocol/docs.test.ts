import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { ERROR_CODES } from '../../protocol/errors.ts';
import { messageJsonSchemas, renderSchemaFile } from '../../scripts/codegen/json-schema.ts';
import { REQUEST_TYPES } from '../../protocol/messages.ts';

const root = join(import.meta.dirname, '..', '..');

describe('docs', () => {
  it('docs/errors.md lists exactly the codes in the registry', () => {
    const doc = readFileSync(join(root, 'docs', 'errors.md'), 'utf8');
    const documented = [...doc.matchAll(/^\| `(ENV_ERR_[A-Z_]+)` \|/gm)].map((m) => m[1]);
    expect(documented.sort()).toEqual(Object.keys(ERROR_CODES).sort());
  });

  it('docs/schemas is up to date with the zod schemas (run npm run gen:schemas)', () => {
    const dir = join(root, 'docs', 'schemas');
    const expected = messageJsonSchemas();
    expect(
      readdirSync(dir)
        .filter((f) => f.endsWith('.json'))
        .sort(),
    ).toEqual(Object.keys(expected).sort());
    for (const [name, doc] of Object.entries(expected)) expect(readFileSync(join(dir, name), 'utf8'), `${name} is stale`).toBe(renderSchemaFile(doc));
  });

  it('docs/PROTOCOL.md documents every operation', () => {
    const doc = readFileSync(join(root, 'docs', 'PROTOCOL.md'), 'utf8');
    for (const type of REQUEST_TYPES) expect(doc, type).toContain(`\`${type}\``);
  });
});
