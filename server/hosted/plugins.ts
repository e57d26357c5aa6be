/**
 * TypeScript/JavaScript env plugins: `gymwire serve --plugin ./my-envs.ts` imports the module and
 * calls its `register(registry)` export (or its default export), which registers envs through the
 * public Env contract (envs/core/env.ts) like the built-in families do.
 *
 * @example
 * // my-envs.ts
 * export function register(registry: Registry) {
 *   registry.register({ id: 'mine/Coin-v0', entryPoint: () => new CoinEnv(), maxEpisodeSteps: 100 });
 * }
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import type { Registry } from '../../envs/core/registry.ts';

/** What a plugin module exports. */
export type RegisterPlugin = (registry: Registry) => void | Promise<void>;

/** Imports a plugin and lets it register its envs; returns the ids it added. */
export async function loadPlugin(registry: Registry, path: string): Promise<string[]> {
  const url = /^[a-z]+:/i.test(path) && !/^[a-z]:[\\/]/i.test(path) ? path : pathToFileURL(resolve(path)).href;
  const mod = (await import(url)) as { register?: unknown; default?: unknown };
  const register = typeof mod.register === 'function' ? mod.register : mod.default;
  if (typeof register !== 'function') {
    throw new Error(`plugin ${path} exports no register(registry) function (export function register, or export default)`);
  }
  const before = new Set(registry.ids());
  await (register as RegisterPlugin)(registry);
  const added = registry.ids().filter((id) => !before.has(id));
  if (added.length === 0) throw new Error(`plugin ${path} registered no envs`);
  return added;
}
