/**
 * Cases on what a session promises beyond stepping: render (no mode, frame layout), ownership of
 * close, the seed range, reset options, state that carries the random generator, tool schemas
 * that are JSON Schema, and `list_envs` agreeing with `make`.
 */
import { ProtocolError } from '../../protocol/errors.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { Random } from '../../runtime/random.ts';
import { sample } from '../../runtime/space-sample.ts';
import { check, RawSession, stateOf, valuesEqual } from '../harness.ts';
import type { CaseResult, ConformanceCase } from '../harness.ts';

/** Reset options the reference envs refuse with ENV_ERR_INVALID_OPTIONS (other envs define their own). */
const BAD_OPTIONS: Record<string, Record<string, unknown>> = {
  'gymwire/Conformance-v0': { goal: 'nowhere' },
};

const JSON_SCHEMA_TYPES = new Set(['object', 'array', 'string', 'number', 'integer', 'boolean', 'null']);

/**
 * Why `schema` is not a JSON Schema (draft 2020-12 keywords as tools use them), or null: types
 * are JSON Schema's names, `properties` and `$defs` map to schemas, `required` names properties,
 * `items`, `anyOf`/`oneOf`/`allOf` hold schemas, `enum` is an array.
 */
export function jsonSchemaProblem(schema: unknown, path = '(root)'): string | null {
  if (typeof schema === 'boolean') return null;
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return `${path} is not a schema object`;
  const s = schema as Record<string, unknown>;
  if ('type' in s) {
    const types = Array.isArray(s.type) ? s.type : [s.type];
    const bad = types.find((t) => typeof t !== 'string' || !JSON_SCHEMA_TYPES.has(t));
    if (bad !== undefined || types.length === 0) return `${path}.type ${JSON.stringify(s.type)} is not a JSON Schema type`;
  }
  for (const key of ['properties', '$defs', 'patternProperties'] as const) {
    if (!(key in s)) continue;
    const map = s[key];
    if (map === null || typeof map !== 'object' || Array.isArray(map)) return `${path}.${key} must map names to schemas`;
    for (const [name, sub] of Object.entries(map)) {
      const problem = jsonSchemaProblem(sub, `${path}.${key}.${name}`);
      if (problem) return problem;
    }
  }
  if ('required' in s && (!Array.isArray(s.required) || !s.required.every((r) => typeof r === 'string')))
    return `${path}.required must be an array of property names`;
  if ('enum' in s && !Array.isArray(s.enum)) return `${path}.enum must be an array`;
  for (const key of ['items', 'additionalProperties', 'not'] as const) {
    if (key in s) {
      const problem = jsonSchemaProblem(s[key], `${path}.${key}`);
      if (problem) return problem;
    }
  }
  for (const key of ['anyOf', 'oneOf', 'allOf', 'prefixItems'] as const) {
    if (!(key in s)) continue;
    const list = s[key];
    if (!Array.isArray(list) || list.length === 0) return `${path}.${key} must be a non-empty array of schemas`;
    for (const [i, sub] of list.entries()) {
      const problem = jsonSchemaProblem(sub, `${path}.${key}[${i}]`);
      if (problem) return problem;
    }
  }
  for (const key of ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'minLength', 'maxLength', 'minItems', 'maxItems'] as const)
    if (key in s && typeof s[key] !== 'number') return `${path}.${key} must be a number`;
  return null;
}

/** `width` and `height` from a PNG's IHDR chunk, or null when the bytes are no PNG. */
function pngSize(png: Uint8Array): { width: number; height: number } | null {
  if (png.length < 24 || png[1] !== 0x50 || png[2] !== 0x4e || png[3] !== 0x47) return null;
  const view = new DataView(png.buffer, png.byteOffset, png.byteLength);
  return { width: view.getUint32(16), height: view.getUint32(20) };
}

export const SESSION_CASES: ConformanceCase[] = [
  {
    name: 'render: a session made without a render mode answers ENV_ERR_UNSUPPORTED',
    covers: ['P-RENDER-2', 'E-UNSUPPORTED-1'],
    async run(ctx): Promise<CaseResult> {
      const s = await RawSession.open(ctx);
      const made = await s.result<{ session_id: string; render_mode: string | null }>('make', { env_id: ctx.envId });
      if (made.render_mode !== null) return { status: 'skip', reason: `the env renders by default (render_mode ${JSON.stringify(made.render_mode)})` };
      await s.result('reset', { session_id: made.session_id, seed: 1 });
      for (const format of ['tensor', 'png'])
        await s.refused('ENV_ERR_UNSUPPORTED', `render (${format}) of a session made without render_mode`, 'render', { session_id: made.session_id, format });
      return { status: 'pass' };
    },
  },
  {
    name: 'render: frames are uint8 [H, W, 3|4], laid out as the PNG of the same frame',
    covers: ['P-RENDER-1'],
    async run(ctx): Promise<CaseResult> {
      const c = await ctx.client();
      const probe = await c.make(ctx.envId);
      const modes = (probe.metadata.render_modes as string[] | undefined) ?? [];
      await probe.close();
      if (!modes.includes('rgb_array')) return { status: 'skip', reason: 'the env lists no rgb_array render mode' };
      const env = await c.make(ctx.envId, { render_mode: 'rgb_array' }).catch(() => null);
      if (!env) return { status: 'skip', reason: 'the env lists rgb_array but does not take a render_mode kwarg' };
      await env.reset({ seed: 1 });
      let frame: unknown;
      try {
        frame = await env.render('tensor');
      } catch (err) {
        // The env's own renderer failed (no display, no GL): that is the env's fault, not the server's.
        if (err instanceof ProtocolError && (err.code === 'ENV_ERR_UNSUPPORTED' || err.code === 'ENV_ERR_ENV_FAILURE'))
          return { status: 'skip', reason: `the env does not render here: ${err.code}: ${err.message}` };
        throw err;
      }
      if (typeof frame === 'string') return { status: 'skip', reason: 'the env renders text (ANSI)' };
      check(frame instanceof Tensor, 'render tensor format returned neither a tensor nor text');
      const [h, w, channels] = frame.shape;
      check(
        frame.dtype === 'uint8' && frame.shape.length === 3 && (channels === 3 || channels === 4),
        `a frame must be uint8 [H, W, 3|4], got ${frame.dtype} [${frame.shape.join(', ')}]`,
      );
      const size = pngSize((await env.render('png')) as Uint8Array);
      check(size !== null, 'render png format did not return PNG bytes');
      check(
        size.width === w && size.height === h,
        `the tensor frame is [${frame.shape.join(', ')}] but the PNG of it is ${size.width}x${size.height}: the layout is not [H, W, C]`,
      );
      return { status: 'pass' };
    },
  },
  {
    name: 'sessions: another client cannot close your session',
    covers: ['P-MAKE-2', 'P-CLOSE-1'],
    async run(ctx) {
      const [a, b] = [await ctx.client(), await ctx.client()];
      const env = await a.make(ctx.envId);
      await env.reset({ seed: 2 });
      const theirs = await b.request('close', { session_id: env.sessionId });
      check(theirs.closed === false, `another client's close of my session answered closed: ${String(theirs.closed)}`);
      const s = await env.step(sample(env.actionSpace, new Random(2)));
      check(typeof s.reward === 'number', 'my session did not step after another client tried to close it');
    },
  },
  {
    name: 'reset: seeds past 2^53 - 1 and negative seeds are ENV_ERR_INVALID_MESSAGE',
    covers: ['P-RESET-3', 'P-FRAME-2'],
    async run(ctx) {
      const s = await RawSession.open(ctx);
      const { session_id } = await s.result<{ session_id: string }>('make', { env_id: ctx.envId });
      for (const [what, seed] of [
        ['2^53', 2n ** 53n],
        ['2^64 - 1', 2n ** 64n - 1n],
        ['-1', -1],
      ] as const)
        await s.refused('ENV_ERR_INVALID_MESSAGE', `reset with seed ${what}`, 'reset', { session_id, seed });
      await s.result('reset', { session_id, seed: Number.MAX_SAFE_INTEGER });
    },
  },
  {
    name: 'reset: invalid options are refused with ENV_ERR_INVALID_OPTIONS or, not a map, ENV_ERR_INVALID_MESSAGE',
    covers: ['E-INVALID_OPTIONS-1', 'P-RESET-4'],
    async run(ctx) {
      const s = await RawSession.open(ctx);
      const { session_id } = await s.result<{ session_id: string }>('make', { env_id: ctx.envId });
      await s.refused('ENV_ERR_INVALID_MESSAGE', 'reset with options 5 (not a map)', 'reset', { session_id, seed: 1, options: 5 });
      const bad = BAD_OPTIONS[ctx.envId];
      if (bad) await s.refused('ENV_ERR_INVALID_OPTIONS', `reset with options ${JSON.stringify(bad)}`, 'reset', { session_id, seed: 1, options: bad });
      await s.result('reset', { session_id, seed: 1, options: null });
    },
  },
  {
    name: 'get_state/set_state carry the random generator: reset(seed=null) after set_state repeats itself',
    covers: ['P-STATE-1'],
    async run(ctx): Promise<CaseResult> {
      const c = await ctx.client();
      const env = await c.make(ctx.envId);
      await env.reset({ seed: 33 });
      const rng = new Random(33);
      for (let i = 0; i < 3; i++) {
        const r = await env.step(sample(env.actionSpace, rng));
        if (r.terminated || r.truncated) break;
      }
      const state = await stateOf(env);
      if (!state) return { status: 'skip', reason: 'the env does not support state' };
      const first = [(await env.reset({ seed: null })).obs, (await env.reset({ seed: null })).obs];
      await env.setState(state);
      const second = [(await env.reset({ seed: null })).obs, (await env.reset({ seed: null })).obs];
      check(
        valuesEqual(first, second),
        'reset(seed=null) after set_state(s) differs from reset(seed=null) after the get_state that returned s: the state left out the RNG',
      );
      return { status: 'pass' };
    },
  },
  {
    name: 'tools: parameter schemas are JSON Schema objects',
    covers: ['P-TOOLS-1'],
    async run(ctx): Promise<CaseResult> {
      const c = await ctx.client();
      const env = await c.make(ctx.envId);
      const tools = await env.listTools();
      if (!tools.length) return { status: 'skip', reason: 'the env has no tools' };
      for (const t of tools) {
        const params = t.function.parameters as Record<string, unknown>;
        check(params.type === 'object', `${t.function.name}: parameters.type is ${JSON.stringify(params.type)}, not "object"`);
        const problem = jsonSchemaProblem(params);
        check(problem === null, `${t.function.name}: parameters are not JSON Schema: ${problem}`);
        for (const r of (params.required as string[] | undefined) ?? [])
          check(Object.hasOwn((params.properties as object | undefined) ?? {}, r), `${t.function.name}: required ${r} is not among its properties`);
      }
      return { status: 'pass' };
    },
  },
  {
    name: 'list_envs and make agree on max_episode_steps and tools',
    covers: ['P-LIST-1', 'P-MAKE-3'],
    async run(ctx) {
      const c = await ctx.client();
      const listing = (await c.listEnvs()).find((e) => e.id === ctx.envId);
      check(listing !== undefined, `${ctx.envId} missing from list_envs`);
      const made = await c.request('make', { env_id: ctx.envId });
      await c.request('close', { session_id: made.session_id });
      check(
        listing.max_episode_steps === made.max_episode_steps,
        `list_envs says max_episode_steps ${listing.max_episode_steps}, make says ${made.max_episode_steps}`,
      );
      if (listing.tools !== null)
        check(
          valuesEqual(listing.tools, made.tools),
          `list_envs lists tools ${listing.tools.map((t) => t.function.name).join(', ') || 'none'}, make ${made.tools.map((t) => t.function.name).join(', ') || 'none'} (or their schemas differ)`,
        );
    },
  },
];
