import { z } from 'zod';

import type { Registry } from '../core/registry.ts';
import { CartPoleEnv } from './cartpole.ts';
import { ConformanceEnv } from './conformance.ts';

export function registerClassic(registry: Registry): void {
  registry.register({
    id: 'gymwire/CartPole-v1',
    description: "Gymnasium's CartPole-v1: balance a pole on a cart (Discrete(2) actions, 500-step limit).",
    entryPoint: (kwargs) => new CartPoleEnv(kwargs),
    kwargsSchema: z.object({ render_mode: z.enum(['rgb_array']).nullable().optional() }).strict(),
    maxEpisodeSteps: 500,
    tags: ['classic'],
  });
  registry.register({
    id: 'gymwire/Conformance-v0',
    description: 'The everything env: every space type and dtype, tools, state save/load; for conformance checks.',
    entryPoint: (kwargs) => new ConformanceEnv(kwargs),
    tools: ConformanceEnv.TOOLS,
    kwargsSchema: z.object({ render_mode: z.enum(['rgb_array']).nullable().optional() }).strict(),
    maxEpisodeSteps: 50,
    tags: ['conformance'],
  });
}
