/**
 * Every MCP tool's input schema passes the strict modes of OpenAI's function calling and
 * Anthropic's tool use (rules in strict-rules.ts, from each vendor's docs), every argument is
 * described, and the strict form decodes back to what the tool's own schema takes.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { strictInputSchema } from '../../server/mcp/strict-schema.ts';
import { CAMERA_ENV, callOk, httpClient, startMcpServer } from './helpers.ts';
import type { McpTestServer } from './helpers.ts';
import { anthropicStrictViolations, openAiStrictViolations } from './strict-rules.ts';

type Schema = Record<string, unknown>;

function undescribed(schema: Schema, path = ''): string[] {
  const out: string[] = [];
  for (const [key, child] of Object.entries((schema.properties ?? {}) as Record<string, Schema>)) {
    const described = typeof child.description === 'string' && child.description.length > 0;
    if (!described) out.push(`${path}.${key}`);
    out.push(...undescribed(child, `${path}.${key}`));
  }
  return out;
}

let t: McpTestServer;
let c: Client;
beforeAll(async () => {
  t = await startMcpServer();
  c = await httpClient(t.mcpUrl);
});
afterAll(async () => {
  await c.close();
  await t.server.close();
});

describe('MCP tool schemas in strict mode', () => {
  it('pass OpenAI strict and Anthropic strict for every tool, with every argument described', async () => {
    await callOk(c, 'make_env', { env_id: CAMERA_ENV }); // adds the tools only a session knows
    const { tools } = await c.listTools();
    expect(tools.length).toBeGreaterThan(20);
    const problems: string[] = [];
    for (const tool of tools) {
      const schema = tool.inputSchema as Schema;
      for (const v of openAiStrictViolations(schema)) problems.push(`${tool.name} (OpenAI) ${v}`);
      for (const v of anthropicStrictViolations(schema)) problems.push(`${tool.name} (Anthropic) ${v}`);
      for (const v of undescribed(schema)) problems.push(`${tool.name}: argument ${v} has no description`);
      if (!/^[A-Za-z0-9_-]{1,64}$/.test(tool.name)) problems.push(`${tool.name}: name is not ^[A-Za-z0-9_-]{1,64}$`);
      if (!tool.description) problems.push(`${tool.name}: no description`);
      if (!tool.annotations || tool.annotations.readOnlyHint === undefined) problems.push(`${tool.name}: no readOnlyHint annotation`);
    }
    expect(problems).toEqual([]);
    const fixed = tools.filter((x) => !x.name.includes('__'));
    expect(fixed.every((x) => x.outputSchema?.type === 'object')).toBe(true);
  });

  it('the rule checkers catch what each host refuses', () => {
    const loose = { type: 'object', properties: { n: { type: 'number', minimum: 0 }, o: { type: 'object' } }, required: [] };
    expect(openAiStrictViolations(loose)).toEqual(
      expect.arrayContaining([
        '(root): additionalProperties must be false',
        '.n: must be listed in required (optional = nullable)',
        '.o: additionalProperties must be false',
      ]),
    );
    expect(anthropicStrictViolations(loose)).toEqual(expect.arrayContaining(['.n: minimum is not supported', '(root): additionalProperties must be false']));
    const recursive = {
      type: 'object',
      properties: { a: { $ref: '#/$defs/n' } },
      $defs: { n: { type: 'object', properties: { next: { $ref: '#/$defs/n' } }, additionalProperties: false } },
      additionalProperties: false,
      required: ['a'],
    };
    expect(anthropicStrictViolations(recursive)).toEqual(expect.arrayContaining([expect.stringMatching(/recursive schema/)]));
  });
});

describe('strictInputSchema', () => {
  const tool = z
    .object({
      waypoints: z.array(z.array(z.number()).length(3)).min(1).max(80).describe('poses'),
      interval: z.number().positive().max(1).optional().describe('seconds between poses'),
      options: z.record(z.string(), z.unknown()).optional().describe('extra options'),
      mode: z.enum(['fast', 'safe']).optional().describe('how to drive'),
    })
    .strict();
  const { schema, decode } = strictInputSchema(z.toJSONSchema(tool, { io: 'input' }) as Schema);

  it('makes every property required and nullable, moves bounds into words and free-form objects into JSON text', () => {
    expect(schema.required).toEqual(['waypoints', 'interval', 'options', 'mode']);
    expect(schema.additionalProperties).toBe(false);
    const props = schema.properties as Record<string, Schema>;
    expect(props.interval).toEqual({ type: ['number', 'null'], description: 'seconds between poses (above 0, at most 1)' });
    expect(props.options).toMatchObject({ type: ['string', 'null'] });
    expect(props.mode).toMatchObject({ type: ['string', 'null'], enum: ['fast', 'safe', null] });
    expect(props.waypoints).toMatchObject({
      type: 'array',
      minItems: 1,
      description: 'poses (at most 80 items)',
      items: { minItems: 1, description: 'exactly 3 items' },
    });
    expect(openAiStrictViolations(schema)).toEqual([]);
    expect(anthropicStrictViolations(schema)).toEqual([]);
  });

  it('decodes what a strict host sends back into what the tool takes, bounds still checked by the tool', () => {
    const sent = { waypoints: [[1, 0, 0]], interval: null, options: '{"lane": 2}', mode: null };
    const decoded = decode(sent);
    expect(decoded).toEqual({ waypoints: [[1, 0, 0]], options: { lane: 2 } });
    expect(tool.safeParse(decoded).success).toBe(true);
    expect(tool.safeParse(decode({ waypoints: [[1, 0]], interval: 5, options: null, mode: 'fast' })).success).toBe(false);
    // Hosts outside strict mode may still send objects and leave optional arguments out.
    expect(decode({ waypoints: [[1, 0, 0]], options: { lane: 1 } })).toEqual({ waypoints: [[1, 0, 0]], options: { lane: 1 } });
    expect(() => decode({ waypoints: [], options: '{' })).toThrow(/options must be JSON text/);
  });
});
