/**
 * JSON Schema of every wire message, generated from the zod schemas (the single source of truth)
 * for SDKs in other languages. `npm run gen:schemas` writes docs/schemas/; a test fails when the
 * committed files are stale.
 */
import { z } from 'zod';

import { EventSchema, ErrorResponseSchema, REQUEST_SCHEMAS, RESULT_SCHEMAS } from './messages.ts';

/** File name -> schema document. */
export function messageJsonSchemas(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const gen = (schema: z.ZodType, io: 'input' | 'output') => z.toJSONSchema(schema, { io, unrepresentable: 'any', reused: 'inline' });
  for (const [type, schema] of Object.entries(REQUEST_SCHEMAS)) out[`request.${type}.json`] = gen(schema, 'input');
  for (const [type, schema] of Object.entries(RESULT_SCHEMAS)) out[`result.${type}.json`] = gen(schema, 'output');
  out['response.error.json'] = gen(ErrorResponseSchema, 'output');
  out['event.json'] = gen(EventSchema, 'output');
  return out;
}

export function renderSchemaFile(doc: unknown): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}
