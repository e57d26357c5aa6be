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

import type { Registry } from '../core/registry.ts';

/** What a plugin module exports. */
export type RegisterPlugin = (registry: Registry) => void | Promise<void>;

/** How long a plugin's import and register() may take together (gymwire serve --plugin-timeout). */
export const DEFAULT_PLUGIN_TIMEOUT_MS = 30_000;

/** What a thrown value says, whatever it is (a null-prototype object, a throwing toString). */
function reasonOf(err: unknown): string {
  try {
    if (err instanceof Error) return `${err.name}: ${err.message}`;
    return typeof err === 'object' && err !== null ? JSON.stringify(err) : String(err);
  } catch {
    return 'a value that cannot be shown';
  }
}

/**
 * Imports a plugin and lets it register its envs; returns the ids it added. Whatever goes wrong
 * (the import throws, register() throws or registers nothing, either never settles within
 * `timeoutMs`) rejects with an Error that names the plugin and the reason: a top-level await that
 * never settles would otherwise end the process with exit code 13 and no message.
 */
export async function loadPlugin(registry: Registry, path: string, timeoutMs = DEFAULT_PLUGIN_TIMEOUT_MS): Promise<string[]> {
  const url = /^[a-z]+:/i.test(path) && !/^[a-z]:[\\/]/i.test(path) ? path : pathToFileURL(resolve(path)).href;
  let step = 'import';
  const load = async (): Promise<string[]> => {
    const mod = (await importPlugin(url)) as { register?: unknown; default?: unknown };
    const register = typeof mod.register === 'function' ? mod.register : mod.default;
    if (typeof register !== 'function') {
      throw new Error(`plugin ${path} exports no register(registry) function (export function register, or export default)`);
    }
    const before = new Set(registry.ids());
    step = 'register(registry)';
    await (register as RegisterPlugin)(registry);
    const added = registry.ids().filter((id) => !before.has(id));
    if (added.length === 0) throw new Error(`plugin ${path} registered no envs`);
    return added;
  };
  let timer: NodeJS.Timeout | undefined;
  // The timer also keeps the process alive while a never-settling import is all that is left.
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`plugin ${path} did not finish its ${step} within ${timeoutMs} ms (a top-level await or register() that never settles?)`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([load(), deadline]);
  } catch (err) {
    if (err instanceof Error && err.message.startsWith(`plugin ${path} `)) throw err;
    throw new Error(`plugin ${path} failed in its ${step}: ${reasonOf(err)}`, { cause: err });
  } finally {
    clearTimeout(timer);
  }
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
