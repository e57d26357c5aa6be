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
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import type { Registry } from '../../envs/core/registry.ts';

/** What a plugin module exports. */
export type RegisterPlugin = (registry: Registry) => void | Promise<void>;

/** Imports a plugin and lets it register its envs; returns the ids it added. */
export async function loadPlugin(registry: Registry, path: string): Promise<string[]> {
  const url = /^[a-z]+:/i.test(path) && !/^[a-z]:[\\/]/i.test(path) ? path : pathToFileURL(resolve(path)).href;
  const mod = (await importPlugin(url)) as { register?: unknown; default?: unknown };
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

/**
 * Imports a plugin module. A `.ts` plugin needs a TypeScript loader: a checkout's command runs from
 * the sources under tsx already; the installed (compiled) command registers tsx's loader first,
 * from the plugin's project (`npm install tsx` there) or next to gymwire, and says how to add it
 * otherwise. (Registering after a failed import would not help: Node keeps the failure for that URL.)
 */
async function importPlugin(url: string): Promise<unknown> {
  const compiled = !import.meta.url.endsWith('.ts');
  if (compiled && /\.[mc]?ts$/.test(new URL(url).pathname)) await registerTsx(url);
  return import(url);
}

let tsxRegistered = false;

async function registerTsx(pluginUrl: string): Promise<void> {
  if (tsxRegistered) return;
  for (const base of [pluginUrl, import.meta.url]) {
    let manifestPath: string;
    try {
      manifestPath = createRequire(base).resolve('tsx/package.json');
    } catch {
      continue;
    }
    // The ESM build of tsx's API (what `import 'tsx/esm/api'` would load from the plugin's folder).
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { exports: Record<string, { import: { default: string } }> };
    const api = join(dirname(manifestPath), manifest.exports['./esm/api']!.import.default);
    const { register } = (await import(pathToFileURL(api).href)) as { register: () => unknown };
    register();
    tsxRegistered = true;
    return;
  }
  throw new Error(
    `a .ts plugin needs a TypeScript loader: install tsx where the plugin is (npm install tsx), or compile the plugin to .js (${new URL(pluginUrl).pathname})`,
  );
}
