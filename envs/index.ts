/**
 * Every built-in env, registered into a fresh registry. Each family contributes a `register*`
 * function; the server and the CLI call `defaultRegistry()`.
 */
import { registerBench2Drive } from './bench2drive/index.ts';
import { registerClassic } from './classic/index.ts';
import { Registry } from './core/registry.ts';
import type { RegistryOptions } from './core/registry.ts';
import { registerNavsim } from './navsim/index.ts';
import { registerEvac } from './evac/index.ts';

/** `opts.dataRoots`: where path kwargs (model_dir, scene_dir...) may point besides the bundled assets. */
export function defaultRegistry(opts: RegistryOptions = {}): Registry {
  const registry = new Registry(opts);
  registerClassic(registry);
  registerNavsim(registry);
  const evac = registerEvac(registry);
  registry.onClose(() => evac.close());
  registerBench2Drive(registry);
  return registry;
}
