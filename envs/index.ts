/**
 * Every built-in env, registered into a fresh registry. Each family contributes a `register*`
 * function; the server and the CLI call `defaultRegistry()`.
 */
import { bench2DriveEnvThreads, registerBench2Drive } from './bench2drive/index.ts';
import { registerClassic } from './classic/index.ts';
import { Registry } from './core/registry.ts';
import type { RegistryOptions } from './core/registry.ts';
import { navsimEnvThreads, registerNavsim } from './navsim/index.ts';
import { registerEvac } from './evac/index.ts';
import type { RegisterEvacOptions } from './evac/index.ts';

// What a plugin author needs (docs/serve-your-env.md): the registry, the Env contract and its helpers.
export { Registry } from './core/registry.ts';
export type { EnvSpec, MakeContext, RegistryOptions } from './core/registry.ts';
export type { Env, EnvMetadata, EnvTool, Info, RenderFrame, ResetOptions, ResetResult, StepResult, ToolContext } from './core/env.ts';
export { defineTool, InvalidActionError, InvalidOptionsError, InvalidStateError } from './core/env.ts';
export { packState, unpackState } from './core/state.ts';

/**
 * `opts.dataRoots`: where path kwargs (model_dir, scene_dir...) may point besides the bundled assets;
 * `opts.evac`: the world-model runtime's settings (batching, threads, device, default model);
 * `opts.threadCallTimeoutMs`: how long one call on an env thread or the world-model worker may take
 * before that thread counts as hung and is ended (default 5 min; `gymwire serve --env-call-timeout`).
 */
export function defaultRegistry(opts: RegistryOptions & { evac?: RegisterEvacOptions; threadCallTimeoutMs?: number } = {}): Registry {
  const registry = new Registry(opts);
  const callTimeoutMs = opts.threadCallTimeoutMs;
  registerClassic(registry);
  registerNavsim(registry, { envThreads: registry.closes(navsimEnvThreads({ callTimeoutMs })) });
  // The logger carries the runtime's warnings (the CUDA fallback, a failed batch retried) to the server's log.
  registry.closes(registerEvac(registry, { logger: opts.logger?.child({ env: 'evac' }), callTimeoutMs, ...opts.evac }));
  registerBench2Drive(registry, { envThreads: registry.closes(bench2DriveEnvThreads({ callTimeoutMs })) });
  return registry;
}
