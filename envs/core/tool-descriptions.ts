/**
 * Tool descriptions in OpenAI function-calling form, generated from each tool's zod schema (the
 * wire's `make` and `list_envs` answers and the MCP tool list show them).
 */
import { z } from 'zod';

import type { EnvTool } from './env.ts';
import type { ToolDescription } from '../../protocol/messages.ts';

const cache = new WeakMap<object, ToolDescription>();

export function toolDescription(tool: EnvTool<never>): ToolDescription {
  const hit = cache.get(tool);
  if (hit) return hit;
  const schema = z.toJSONSchema(tool.inputSchema as z.ZodType, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete schema.$schema;
  const description: ToolDescription = { type: 'function', function: { name: tool.name, description: tool.description, parameters: schema } };
  cache.set(tool, description);
  return description;
}

export function toolDescriptions(tools: readonly EnvTool<never>[]): ToolDescription[] {
  return tools.map(toolDescription);
}
