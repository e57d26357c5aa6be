/**
 * The two strict-mode rule sets agent hosts apply to tool input schemas, as their docs state them:
 *
 * - OpenAI, "Structured Outputs: supported schemas" (strict function calling,
 *   https://platform.openai.com/docs/guides/structured-outputs#supported-schemas): the root is an
 *   object (not anyOf); every object has `additionalProperties: false` and lists every property in
 *   `required`; keywords only from the supported list; at most 10 levels of nesting and 5000
 *   properties; enums of at most 1000 values.
 * - Anthropic, "Structured outputs: JSON Schema limitations" (strict tool use,
 *   https://platform.claude.com/docs/en/build-with-claude/structured-outputs#json-schema-limitations):
 *   every object closed; no recursive schemas; no numerical constraints (minimum, maximum,
 *   multipleOf), no string constraints (minLength, maxLength, pattern); arrays take `minItems` 0 or 1
 *   only; enums of primitives only; no external `$ref`.
 *
 * Each checker returns the violations found, as `path: rule`, empty when the schema passes.
 */
type Schema = Record<string, unknown>;

const at = (path: string) => path || '(root)';

const OPENAI_KEYWORDS = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'const',
  'anyOf',
  'description',
  'title',
  '$defs',
  '$ref',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minItems',
  'maxItems',
]);
const ANTHROPIC_FORBIDDEN = [
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
  'maxItems',
  'prefixItems',
  'patternProperties',
];

function children(node: Schema): [string, Schema][] {
  const out: [string, Schema][] = [];
  for (const [k, v] of Object.entries((node.properties ?? {}) as Record<string, Schema>)) out.push([`.${k}`, v]);
  if (node.items && typeof node.items === 'object' && !Array.isArray(node.items)) out.push(['[]', node.items as Schema]);
  for (const key of ['anyOf', 'allOf', 'oneOf'] as const)
    if (Array.isArray(node[key])) (node[key] as Schema[]).forEach((b, i) => out.push([`.${key}[${i}]`, b]));
  for (const [k, v] of Object.entries((node.$defs ?? {}) as Record<string, Schema>)) out.push([`.$defs.${k}`, v]);
  return out;
}

function isObject(node: Schema): boolean {
  return node.type === 'object' || (Array.isArray(node.type) && node.type.includes('object')) || 'properties' in node;
}

export function openAiStrictViolations(root: Schema): string[] {
  const out: string[] = [];
  if (root.type !== 'object') out.push('(root): must be type object');
  if ('anyOf' in root) out.push('(root): must not be anyOf');
  let properties = 0;
  const walk = (node: Schema, path: string, depth: number) => {
    if (depth > 10) out.push(`${at(path)}: nested deeper than 10 levels`);
    for (const key of Object.keys(node)) if (!OPENAI_KEYWORDS.has(key)) out.push(`${at(path)}: keyword ${key} is not supported`);
    if (Array.isArray(node.enum) && node.enum.length > 1000) out.push(`${at(path)}: enum of more than 1000 values`);
    if (isObject(node)) {
      if (node.additionalProperties !== false) out.push(`${at(path)}: additionalProperties must be false`);
      const props = Object.keys((node.properties ?? {}) as Schema);
      properties += props.length;
      const required = new Set((node.required as string[] | undefined) ?? []);
      for (const p of props) if (!required.has(p)) out.push(`${path}.${p}: must be listed in required (optional = nullable)`);
    }
    for (const [suffix, child] of children(node)) walk(child, `${path}${suffix}`, depth + 1);
  };
  walk(root, '', 0);
  if (properties > 5000) out.push(`(root): more than 5000 properties`);
  return out;
}

export function anthropicStrictViolations(root: Schema): string[] {
  const out: string[] = [];
  const walk = (node: Schema, path: string, refs: Set<string>) => {
    for (const key of ANTHROPIC_FORBIDDEN) if (key in node) out.push(`${at(path)}: ${key} is not supported`);
    if (typeof node.minItems === 'number' && node.minItems > 1) out.push(`${at(path)}: minItems must be 0 or 1`);
    if (Array.isArray(node.enum) && node.enum.some((v) => v !== null && typeof v === 'object')) out.push(`${at(path)}: enum values must be primitives`);
    if (isObject(node) && node.additionalProperties !== false) out.push(`${at(path)}: additionalProperties must be false`);
    if (typeof node.$ref === 'string') {
      if (!node.$ref.startsWith('#')) out.push(`${at(path)}: external $ref`);
      if (refs.has(node.$ref)) out.push(`${at(path)}: recursive schema`);
      const target = resolveRef(root, node.$ref);
      if (target && !refs.has(node.$ref)) walk(target, `${path}->${node.$ref}`, new Set([...refs, node.$ref]));
    }
    for (const [suffix, child] of children(node)) if (!suffix.startsWith('.$defs')) walk(child, `${path}${suffix}`, refs);
  };
  walk(root, '', new Set());
  return out;
}

function resolveRef(root: Schema, ref: string): Schema | null {
  let node: unknown = root;
  for (const part of ref.replace(/^#\/?/, '').split('/').filter(Boolean)) {
    if (!node || typeof node !== 'object') return null;
    node = (node as Schema)[part];
  }
  return node && typeof node === 'object' ? (node as Schema) : null;
}
