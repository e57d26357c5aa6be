/**
 * The MCP tool catalog: what each tool is called, takes, returns and promises, for the fixed tools
 * and for every env's own tools. The list depends only on the server's registry, never on which
 * sessions are open, so hosts that ignore `tools/list_changed` see every tool from the start and a
 * prompt cache keeps hitting.
 *
 * Inputs are zod schemas (checked on every call) published in the strict subset OpenAI and
 * Anthropic accept (strict-schema.ts). An env tool is published as `<env>__<tool>`, e.g.
 * `NavsimEnv-v2__step_with_waypoints`, with the session id as its first argument and the env's own
 * description, so two envs' tools of one name stay apart.
 *
 * @example
 * const catalog = new ToolCatalog(envs); // envs: list_envs's answer
 * catalog.tools(); // Tool[] for tools/list
 */
import type { Tool, ToolAnnotations } from '@modelcontextprotocol/server';
import { z } from 'zod';

import type { EnvListingSchema, ToolDescription } from '../../protocol/messages.ts';
import type { GymwireLink } from './link.ts';
import { strictInputSchema } from './strict-schema.ts';
import type { JsonSchema, StrictSchema } from './strict-schema.ts';

const SessionId = z.string().describe('the session, from make_env');
const Params = z.record(z.string(), z.unknown());

/**
 * An action as JSON: a number for Discrete, (nested) arrays of numbers for Box, MultiDiscrete and
 * MultiBinary, a string for Text; Dict, Tuple and other composite actions as their JSON text.
 */
const ActionArg = z
  .union([
    z.number(),
    z.array(z.number()),
    z.array(z.array(z.number())),
    z.array(z.array(z.array(z.number()))),
    z.array(z.array(z.array(z.array(z.number())))),
    z.string(),
  ])
  .describe(
    "the action: an integer for Discrete, a (nested) array of numbers for Box/MultiDiscrete/MultiBinary, a string for Text, and the JSON text of the action for Dict and Tuple spaces; make_env's action_schema and action_space say which",
  );

/** Tool inputs; the MCP layer's own, close to the wire requests but without wire-only fields. */
export const TOOL_INPUTS = {
  list_envs: z.object({}).strict(),
  make_env: z
    .object({
      env_id: z.string().min(1).describe('an id from list_envs, e.g. gymwire/CartPole-v1'),
      kwargs: Params.optional().describe("the env's make kwargs (list_envs shows each env's kwargs_schema)"),
    })
    .strict(),
  reset: z
    .object({
      session_id: SessionId,
      seed: z
        .number()
        .int()
        .nonnegative()
        .max(Number.MAX_SAFE_INTEGER)
        .nullable()
        .optional()
        .describe('non-negative integer seed: the same seed gives the same episode'),
      options: Params.nullable().optional().describe('env-specific reset options (a scene index, a route...)'),
    })
    .strict(),
  step: z.object({ session_id: SessionId, action: ActionArg }).strict(),
  render: z.object({ session_id: SessionId }).strict(),
  close_env: z.object({ session_id: SessionId }).strict(),
  list_session_tools: z.object({ session_id: SessionId }).strict(),
  call_session_tool: z
    .object({
      session_id: SessionId,
      tool: z.string().min(1).describe("the tool's own name, from make_env or list_session_tools"),
      args: Params.optional().describe("the tool's arguments"),
    })
    .strict(),
};
export type FixedToolName = keyof typeof TOOL_INPUTS;
export const FIXED_NAMES = new Set<string>(Object.keys(TOOL_INPUTS));

const DESCRIPTIONS: Record<FixedToolName, { title: string; description: string; annotations: ToolAnnotations }> = {
  list_envs: {
    title: 'List environments',
    description: 'List the environments this gymwire server hosts: ids, descriptions, episode limits, make kwargs schemas and each env’s own tools.',
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  make_env: {
    title: 'Make an environment session',
    description:
      "Make an environment session. Returns session_id, the observation and action spaces (action_schema: the JSON an action must be) and the env's own tools (MCP tools named <env>__<tool>, taking session_id).",
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  },
  reset: {
    title: 'Reset a session',
    description: 'Start a new episode in a session (the current one ends). Returns the first observation and info; camera frames come as images.',
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  },
  step: {
    title: 'Step a session',
    description:
      'Take one action in a session. Returns reward, terminated, truncated, info and the observation; reset again once terminated or truncated is true.',
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  },
  render: {
    title: 'Render a session',
    description: 'Render a session\'s current frame as a PNG image (make the env with kwargs {"render_mode": "rgb_array"}).',
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  close_env: {
    title: 'Close a session',
    description: 'Close a session and free it. Sessions also close when this MCP session ends or stays idle too long.',
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  },
  list_session_tools: {
    title: "List a session's tools",
    description: "List a session's own tools (name, description, JSON Schema of the arguments).",
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  call_session_tool: {
    title: "Call a session's tool",
    description: "Call one of a session's own tools by its own name with its arguments (the same as calling the MCP tool <env>__<tool>).",
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  },
};

const Json = z.unknown();
const EpisodeOutcome = {
  reward: z.number().optional().describe('the reward of this step (or the sum over a span)'),
  terminated: z.boolean().optional(),
  truncated: z.boolean().optional(),
  episode_return: z.number().optional().describe('the summed reward of the episode so far'),
  episode_steps: z.number().int().optional().describe('steps taken in the episode so far'),
  info: Json.optional(),
};
const ToolSummary = z.looseObject({ name: z.string(), mcp_tool: z.string().optional(), description: z.string() });

/** What each fixed tool's structured content holds (errors carry text only). */
const OUTPUTS: Record<FixedToolName, z.ZodType> = {
  list_envs: z.looseObject({ envs: z.array(z.looseObject({ id: z.string(), description: z.string(), max_episode_steps: z.number().int().nullable() })) }),
  make_env: z.looseObject({
    session_id: z.string(),
    env_id: z.string(),
    observation_space: z.string(),
    action_space: z.string(),
    action_schema: Json,
    max_episode_steps: z.number().int().nullable(),
    render_mode: z.string().nullable(),
    tools: z.array(ToolSummary),
  }),
  reset: z.looseObject({ session_id: z.string(), obs: Json, info: Json }),
  step: z.looseObject({ session_id: z.string(), ...EpisodeOutcome, reward: z.number(), terminated: z.boolean(), truncated: z.boolean(), obs: Json }),
  render: z.looseObject({ session_id: z.string(), format: z.string().optional(), bytes: z.number().int().optional(), frame: z.string().optional() }),
  close_env: z.looseObject({ session_id: z.string(), closed: z.boolean(), reason: z.string().optional() }),
  list_session_tools: z.looseObject({
    session_id: z.string(),
    tools: z.array(z.looseObject({ name: z.string(), description: z.string(), input_schema: Json })),
  }),
  call_session_tool: z.looseObject({ session_id: z.string(), tool: z.string(), ...EpisodeOutcome, result: Json }),
};

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const json = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema;
  delete json.$schema;
  return json;
}

/** An env tool as published: which env and tool it reaches, and how to decode its arguments. */
export interface EnvToolEntry {
  name: string;
  envId: string;
  tool: string;
  strict: StrictSchema;
  published: Tool;
}

/** The MCP name of an env's tool: `<env>__<tool>`, the env id without the `gymwire/` namespace. */
export function envToolName(envId: string, tool: string): string {
  const env = envId.replace(/^gymwire\//, '').replace(/[^A-Za-z0-9_-]/g, '_');
  const clean = tool.replace(/[^A-Za-z0-9_-]/g, '_');
  const name = `${env}__${clean}`;
  if (name.length <= 64) return name;
  // Hosts cap names at 64 characters: keep the tool's own name whole where possible.
  return `${env.slice(0, Math.max(8, 62 - clean.length))}__${clean}`.slice(0, 64);
}

/** Read-only env tools, by the naming convention env authors follow (get_*, list_*). */
function isReadOnlyTool(tool: string): boolean {
  return /^(get|list)_/.test(tool);
}

const SESSION_ARG: JsonSchema = { type: 'string', description: 'the session, from make_env' };

/** Builds the published form of one env tool. */
export function envToolEntry(envId: string, description: ToolDescription['function']): EnvToolEntry {
  const name = envToolName(envId, description.name);
  const params = description.parameters as { properties?: Record<string, JsonSchema>; required?: string[] };
  const input: JsonSchema = {
    ...params,
    type: 'object',
    properties: { session_id: { ...SESSION_ARG, description: `a session of ${envId}, from make_env` }, ...params.properties },
    required: ['session_id', ...(params.required ?? []).filter((r) => r !== 'session_id')],
  };
  const strict = strictInputSchema(input);
  const readOnly = isReadOnlyTool(description.name);
  return {
    name,
    envId,
    tool: description.name,
    strict,
    published: {
      name,
      title: `${envId}: ${description.name}`,
      description: `${description.description} (a tool of ${envId} sessions)`,
      inputSchema: strict.schema as Tool['inputSchema'],
      annotations: readOnly
        ? { readOnlyHint: true, openWorldHint: false }
        : { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
  };
}

/** The fixed tools and every listed env's tools, built once per registry listing. */
export class ToolCatalog {
  private readonly fixed = new Map<FixedToolName, { strict: StrictSchema; published: Tool }>();
  private readonly envTools = new Map<string, EnvToolEntry>();

  constructor(envs: readonly Pick<z.infer<typeof EnvListingSchema>, 'id' | 'tools'>[]) {
    const ids = envs.map((e) => e.id);
    for (const name of Object.keys(TOOL_INPUTS) as FixedToolName[]) {
      const input = jsonSchema(TOOL_INPUTS[name], 'input');
      // The env ids are known: offer them as a closed list so a model cannot invent one.
      if (name === 'make_env' && ids.length) (input.properties as Record<string, JsonSchema>).env_id!.enum = ids;
      const strict = strictInputSchema(input);
      const meta = DESCRIPTIONS[name];
      this.fixed.set(name, {
        strict,
        published: {
          name,
          title: meta.title,
          description: meta.description,
          inputSchema: strict.schema as Tool['inputSchema'],
          outputSchema: jsonSchema(OUTPUTS[name], 'output') as Tool['outputSchema'],
          annotations: meta.annotations,
        },
      });
    }
    for (const env of envs) for (const t of env.tools ?? []) this.add(envToolEntry(env.id, t.function));
  }

  /** Adds an env tool known only once a session exists (hosted envs); true when it is new. */
  add(entry: EnvToolEntry): boolean {
    if (this.envTools.has(entry.name) || FIXED_NAMES.has(entry.name)) return false;
    this.envTools.set(entry.name, entry);
    return true;
  }

  fixedTool(name: FixedToolName): { strict: StrictSchema; published: Tool } {
    return this.fixed.get(name)!;
  }

  envTool(name: string): EnvToolEntry | undefined {
    return this.envTools.get(name);
  }

  /** The MCP name a session's tool is published under, when it is published. */
  envToolNameOf(envId: string, tool: string): string | null {
    const name = envToolName(envId, tool);
    return this.envTools.has(name) ? name : null;
  }

  names(): string[] {
    return [...this.fixed.keys(), ...this.envTools.keys()];
  }

  tools(): Tool[] {
    return [...[...this.fixed.values()].map((f) => f.published), ...[...this.envTools.values()].map((e) => e.published)];
  }
}

/**
 * One catalog for an endpoint, built from the server's listing on first use and shared by every
 * owner: the registry does not change while the server runs, and a hosted env's tools added at
 * one caller's make are listed for all.
 */
export class CatalogCache {
  private catalog: Promise<ToolCatalog> | null = null;

  get(link: GymwireLink): Promise<ToolCatalog> {
    this.catalog ??= link.request('list_envs', {}).then(
      ({ envs }) => new ToolCatalog(envs),
      (err: unknown) => {
        this.catalog = null; // a refused or lost link: the next call tries again
        throw err;
      },
    );
    return this.catalog;
  }
}
