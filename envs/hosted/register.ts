/**
 * Hosted Python envs in the registry: Gymnasium ids as `gym/<Name-vN>` and `module:callable`
 * targets as `python/<module:callable>` (or a chosen id).
 *
 * Each target is described by a worker before it is registered, so a typo in an id or a module
 * fails at start-up with Python's own message, and the spec carries the env's max_episode_steps
 * (the server's TimeLimit truncates; the worker builds the env without Gymnasium's).
 *
 * @example
 * await registerHostedEnvs(registry, pool, { gym: ['CartPole-v1'], python: [{ target: 'my_pkg.envs:make_env' }] });
 * registry.has('gym/CartPole-v1'); // true
 */
import { z } from 'zod';

import type { Registry } from '../core/registry.ts';
import { ENV_ID_RE } from '../core/registry.ts';
import type { HostedTarget } from './env.ts';
import { makeHostedEnv } from './env.ts';
import type { WorkerPool } from './pool.ts';

export interface HostedEnvsOptions {
  /** Gymnasium registry ids, e.g. 'CartPole-v1', 'ale_py:ALE/Pong-v5' (the module is imported first). */
  gym?: readonly string[];
  /** Callables returning a gymnasium.Env: 'package.module:callable', with an optional id. */
  python?: readonly { target: string; id?: string }[];
  /** Have the workers check each observation against its space before converting it (serve --check). */
  check?: boolean;
}

/** Kwargs go to the Python side as they are; it answers unknown ones with ENV_ERR_INVALID_KWARGS. */
const PYTHON_KWARGS = z.record(z.string(), z.unknown());

/** The gymwire id of a Gymnasium id: `gym/CartPole-v1`; ids with their own namespace (`ALE/Pong-v5`) keep it. */
export function gymEnvId(gymId: string): string {
  const id = gymId.slice(gymId.lastIndexOf(':') + 1);
  return id.includes('/') ? id : `gym/${id}`;
}

export function pythonEnvId(target: string): string {
  return `python/${target}`;
}

export async function registerHostedEnvs(registry: Registry, pool: WorkerPool, opts: HostedEnvsOptions): Promise<string[]> {
  const entries: { id: string; target: HostedTarget }[] = [
    ...(opts.gym ?? []).map((gymId) => ({ id: gymEnvId(gymId), target: { kind: 'gym' as const, id: gymId } })),
    ...(opts.python ?? []).map((p) => ({ id: p.id ?? pythonEnvId(p.target), target: { kind: 'callable' as const, path: p.target } })),
  ];
  for (const { id } of entries) {
    if (!ENV_ID_RE.test(id)) throw new Error(`hosted env id ${JSON.stringify(id)} does not match namespace/Name-vN`);
  }
  const worker = pool.any();
  const described = await Promise.all(
    entries.map(({ id, target }) =>
      worker.call({ op: 'describe', target }, id).catch((err: unknown) => {
        throw new Error(`cannot host ${id}: ${err instanceof Error ? err.message : String(err)}`);
      }),
    ),
  );
  entries.forEach(({ id, target }, i) => {
    const info = described[i] as { max_episode_steps: number | null; description: string };
    registry.register({
      id,
      description: info.description,
      entryPoint: (kwargs) => makeHostedEnv(pool, target, kwargs, id, opts.check ?? false),
      kwargsSchema: PYTHON_KWARGS,
      maxEpisodeSteps: info.max_episode_steps ?? undefined,
      tags: ['python'],
    });
  });
  return entries.map((e) => e.id);
}
