/**
 * Every built-in env, registered into a fresh registry. Each family contributes a `register*`
 * function; the server and the CLI call `defaultRegistry()`.
 */
import { registerClassic } from './classic/index.ts';
import { Registry } from './core/registry.ts';
import { registerEvac } from './evac/index.ts';

export function defaultRegistry(): Registry {
  const registry = new Registry();
  registerClassic(registry);
  registerEvac(registry);
  return registry;
}
