/**
 * Tool input schemas that agent hosts accept in their strict modes, and the way back.
 *
 * OpenAI's strict function calling and Anthropic's strict tool use constrain the model's sampling
 * to a JSON Schema, but each accepts only a subset: every object closed
 * (`additionalProperties: false`), every property listed in `required` (OpenAI), no numeric or
 * string bounds and no array lengths beyond `minItems` 0/1 (Anthropic), no recursion, no free-form
 * objects. {@link strictInputSchema} rewrites any tool's JSON Schema into that common subset:
 *
 * - an optional property becomes required and nullable (`null` means "leave it out");
 * - a bound the subset cannot express moves into the description ("0 to 1", "8 items");
 * - a free-form object or value (kwargs, options, a tuple) becomes a string holding its JSON.
 *
 * The returned `decode` undoes the rewrite on the arguments a host sends (drops the nulls, parses
 * the JSON strings), so the tool's own schema then checks them as before, bounds included.
 *
 * @example
 * const { schema, decode } = strictInputSchema(z.toJSONSchema(z.object({ n: z.number().max(3).optional() })));
 * // schema: { type: 'object', properties: { n: { type: ['number', 'null'], description: 'at most 3' } }, required: ['n'], additionalProperties: false }
 * decode({ n: null }); // {}
 */

export type JsonSchema = Record<string, unknown>;

/** How to turn a strict argument back into what the tool's own schema expects. */
type Decoder = (value: unknown, path: string) => unknown;

/** An argument a strict host sent that does not decode (a JSON string that does not parse). */
export class StrictArgumentError extends Error {
  override readonly name = 'StrictArgumentError';
}

export interface StrictSchema {
  schema: JsonSchema;
  decode(args: Record<string, unknown>): Record<string, unknown>;
}

const KEEP = (value: unknown) => value;

/** Keywords the common strict subset cannot carry, with how to say them in words instead. */
const BOUND_WORDS: [string, (v: unknown) => string][] = [
  ['minimum', (v) => `at least ${String(v)}`],
  ['exclusiveMinimum', (v) => `above ${String(v)}`],
  ['maximum', (v) => `at most ${String(v)}`],
  ['exclusiveMaximum', (v) => `below ${String(v)}`],
  ['multipleOf', (v) => `a multiple of ${String(v)}`],
  ['minLength', (v) => `at least ${String(v)} characters`],
  ['maxLength', (v) => `at most ${String(v)} characters`],
  ['pattern', (v) => `matching /${String(v)}/`],
  ['format', (v) => `format ${String(v)}`],
  ['maxItems', (v) => `at most ${String(v)} items`],
  ['default', (v) => `default ${JSON.stringify(v)}`],
];

function describe(node: JsonSchema, words: string[]): JsonSchema {
  const base = typeof node.description === 'string' ? node.description : '';
  if (!words.length) return node;
  const extra = words.join(', ');
  return { ...node, description: base ? `${base} (${extra})` : extra };
}

/** Moves the bounds of one node into its description and drops the keywords. */
function unbound(node: JsonSchema): JsonSchema {
  const out: JsonSchema = { ...node };
  const words: string[] = [];
  const minItems = out.minItems;
  if (typeof minItems === 'number' && minItems > 1) {
    if (minItems === out.maxItems) {
      words.push(`exactly ${minItems} items`);
      delete out.maxItems;
    } else words.push(`at least ${minItems} items`);
    out.minItems = 1;
  }
  for (const [key, say] of BOUND_WORDS) {
    if (key in out) {
      words.push(say(out[key]));
      delete out[key];
    }
  }
  return describe(out, words);
}

function nullable(node: JsonSchema): JsonSchema {
  if (Array.isArray(node.type)) return node.type.includes('null') ? node : { ...node, type: [...(node.type as string[]), 'null'] };
  if (Array.isArray(node.enum))
    return node.enum.includes(null) ? node : { ...node, ...(node.type ? { type: [node.type, 'null'] } : {}), enum: [...(node.enum as unknown[]), null] };
  if (typeof node.type === 'string' && !('const' in node)) return node.type === 'null' ? node : { ...node, type: [node.type, 'null'] };
  if (Array.isArray(node.anyOf))
    return (node.anyOf as JsonSchema[]).some((b) => b.type === 'null') ? node : { ...node, anyOf: [...(node.anyOf as JsonSchema[]), { type: 'null' }] };
  const { description, ...rest } = node;
  return { anyOf: [rest, { type: 'null' }], ...(description !== undefined ? { description } : {}) };
}

function asJsonText(node: JsonSchema): { schema: JsonSchema; decode: Decoder } {
  const what = typeof node.description === 'string' && node.description ? `${node.description}; ` : '';
  return {
    schema: { type: 'string', description: `${what}JSON text, e.g. "{}" or "[1, 2]"` },
    decode: (value, path) => {
      if (typeof value !== 'string') return value;
      try {
        return JSON.parse(value) as unknown;
      } catch (err) {
        throw new StrictArgumentError(`${path || 'argument'} must be JSON text: ${(err as Error).message}`);
      }
    },
  };
}

function isFreeForm(node: JsonSchema): boolean {
  const keys = Object.keys(node).filter((k) => k !== 'description' && k !== 'title' && k !== 'default');
  if (keys.length === 0) return true; // {}: any value
  if (node.type === 'object' && !node.properties) return true; // a record
  return 'prefixItems' in node || 'oneOf' in node || 'allOf' in node || 'not' in node || 'if' in node || 'patternProperties' in node;
}

function convert(input: JsonSchema): { schema: JsonSchema; decode: Decoder } {
  const node = { ...input };
  delete node.$schema;
  delete node.title;
  if (isFreeForm(node)) return asJsonText(node);
  if (Array.isArray(node.anyOf)) {
    const branches = (node.anyOf as JsonSchema[]).map(convert);
    // A branch that needs decoding makes the value ambiguous to decode: keep it simple and whole.
    if (branches.some((b) => b.decode !== KEEP)) return asJsonText(node);
    return { schema: unbound({ ...node, anyOf: branches.map((b) => b.schema) }), decode: KEEP };
  }
  const types = Array.isArray(node.type) ? (node.type as string[]) : [node.type as string];
  if (types.includes('object')) {
    const props = (node.properties ?? {}) as Record<string, JsonSchema>;
    const required = new Set((node.required as string[] | undefined) ?? []);
    const decoders: Record<string, { optional: boolean; decode: Decoder }> = {};
    const properties: Record<string, JsonSchema> = {};
    for (const [key, child] of Object.entries(props)) {
      const c = convert(child);
      const optional = !required.has(key);
      properties[key] = optional ? nullable(c.schema) : c.schema;
      decoders[key] = { optional, decode: c.decode };
    }
    const schema = unbound({ ...node, properties, required: Object.keys(properties), additionalProperties: false });
    delete schema.propertyNames;
    delete schema.minProperties;
    delete schema.maxProperties;
    return {
      schema,
      decode: (value, path) => {
        if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
        const out: Record<string, unknown> = {};
        for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
          const d = decoders[key];
          if (!d) {
            out[key] = v;
            continue;
          }
          if (v === null && d.optional) continue;
          out[key] = d.decode(v, path ? `${path}.${key}` : key);
        }
        return out;
      },
    };
  }
  if (types.includes('array')) {
    if (!node.items || typeof node.items !== 'object') return asJsonText(node);
    const item = convert(node.items as JsonSchema);
    return {
      schema: unbound({ ...node, items: item.schema }),
      decode: item.decode === KEEP ? KEEP : (value, path) => (Array.isArray(value) ? value.map((v, i) => item.decode(v, `${path}[${i}]`)) : value),
    };
  }
  return { schema: unbound(node), decode: KEEP };
}

/** The strict form of a tool's input schema (an object schema), and the decoder of its arguments. */
export function strictInputSchema(input: JsonSchema): StrictSchema {
  const root: JsonSchema = input.type === 'object' ? input : { type: 'object', properties: {}, ...input };
  const { schema, decode } = convert({ ...root, type: 'object' });
  return { schema, decode: (args) => decode(args, '') as Record<string, unknown> };
}
