/** Writes docs/schemas/*.json from the zod schemas in protocol/messages.ts. */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { messageJsonSchemas, renderSchemaFile } from './codegen/json-schema.ts';

const dir = join(import.meta.dirname, '..', 'docs', 'schemas');
mkdirSync(dir, { recursive: true });
for (const f of readdirSync(dir)) if (f.endsWith('.json')) rmSync(join(dir, f));
const docs = messageJsonSchemas();
for (const [name, doc] of Object.entries(docs)) writeFileSync(join(dir, name), renderSchemaFile(doc));
process.stdout.write(`wrote ${Object.keys(docs).length} schemas to ${dir}\n`);
