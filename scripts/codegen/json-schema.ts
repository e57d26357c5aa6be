/**
 * JSON Schema of every wire message, generated from the zod schemas (the single source of truth)
 * for SDKs in other languages. `npm run gen:schemas` writes docs/schemas/; a test fails when the
 * committed files are stale.
 *
 * Files: `request.<type>.json` (what a client sends), `result.<type>.json` (the `result` field of
 * its answer), `response.<type>.json` (the whole answer frame: `{id, type: 'result', result}`),
 * `response.error.json` and `event.json`. msgpack values JSON has no word for carry an annotation:
 * bin bytes `x-msgpack: "bin"`, tensors `x-msgpack-ext: 1` with their layout and dtype codes.
 */
import { z } from 'zod';

import { EventSchema, ErrorResponseSchema, REQUEST_SCHEMAS, RequestIdSchema, RESULT_SCHEMAS } from '../../protocol/messages.ts';
import { DTYPES, TENSOR_EXT_TYPE } from '../../protocol/tensor.ts';

/** How the msgpack-only values are described (by their zod meta id). */
const MSGPACK_TYPES: Record<string, Record<string, unknown>> = {
  Bytes: { 'x-msgpack': 'bin', description: 'msgpack bin (raw bytes)' },
  Tensor: {
    'x-msgpack-ext': TENSOR_EXT_TYPE,
    'x-dtype-codes': Object.fromEntries(DTYPES.map((d, i) => [d, i])),
    description: `msgpack extension type ${TENSOR_EXT_TYPE}: [dtype code u8][ndim u8][ndim x u32 LE dims][raw little-endian row-major data]`,
  },
  Value: { description: `any msgpack value; tensors as extension type ${TENSOR_EXT_TYPE} (see Tensor)` },
};

function generate(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  return z.toJSONSchema(schema, {
    io,
    unrepresentable: 'any',
    reused: 'inline',
    override: (ctx) => {
      const id = z.globalRegistry.get(ctx.zodSchema)?.id;
      if (id && MSGPACK_TYPES[id]) Object.assign(ctx.jsonSchema, MSGPACK_TYPES[id]);
    },
  }) as Record<string, unknown>;
}

/** File name -> schema document. */
export function messageJsonSchemas(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [type, schema] of Object.entries(REQUEST_SCHEMAS)) out[`request.${type}.json`] = generate(schema, 'input');
  for (const [type, schema] of Object.entries(RESULT_SCHEMAS)) {
    out[`result.${type}.json`] = generate(schema, 'output');
    const envelope = z.object({ id: RequestIdSchema, type: z.literal('result'), result: schema }).strict();
    out[`response.${type}.json`] = generate(envelope.describe(`the answer to a ${type} request`), 'output');
  }
  out['response.error.json'] = generate(ErrorResponseSchema, 'output');
  out['event.json'] = generate(EventSchema, 'output');
  return out;
}

export function renderSchemaFile(doc: unknown): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}
