/**
 * Registers `gymwire/NavsimEnv-v1` (PDMS) and `gymwire/NavsimEnv-v2` (EPDMS).
 */
import { EnvThreadPool, type EnvThreadPoolOptions } from '../core/env-threads.ts';
import type { Registry } from '../core/registry.ts';
import { estimateNavsimBytes, NavsimEnv, NavsimKwargsSchema } from './env.ts';
import type { NavsimThreadArgs } from './thread.ts';

export interface RegisterNavsimOptions {
  /**
   * Where sessions run (default: env threads of their own, closed with the registry): scene
   * loading, scoring and cameras cost the event loop up to seconds per call. Null runs them on the
   * calling thread.
   */
  envThreads?: EnvThreadPool | null;
}

/** A pool of NAVSIM env threads (for callers that share one between registries). */
export function navsimEnvThreads(opts: EnvThreadPoolOptions = {}): EnvThreadPool {
  return new EnvThreadPool(new URL('./thread.ts', import.meta.url), import.meta.url, opts);
}

export function registerNavsim(registry: Registry, opts: RegisterNavsimOptions = {}): void {
  const envThreads = opts.envThreads === undefined ? registry.closes(navsimEnvThreads()) : opts.envThreads;
  for (const version of [1, 2] as const) {
    registry.register({
      id: `gymwire/NavsimEnv-v${version}`,
      description: `NAVSIM ${version === 1 ? 'v1: PDM Score' : 'v2: Extended PDM Score'} on seeded synthetic scenes (or a directory of scene files): one 4 s trajectory of 8 poses per scene, tracked by LQR + kinematic bicycle and scored.`,
      entryPoint: (kwargs, { dataRoots, log }) => {
        // No scenes ship with the package: a scene_dir must lie inside a --data-root.
        const dir = kwargs.scene_dir ? dataRoots.resolve('scene_dir', kwargs.scene_dir, 'dir') : null;
        const sceneDir = dir === null ? undefined : { dir, confine: (path: string) => dataRoots.confine('scene_dir', path), log };
        if (!envThreads) return new NavsimEnv(version, kwargs, sceneDir);
        // The shell (spaces, metadata, tool schemas) is cheap; the env itself is built on its thread.
        const shell = new NavsimEnv(version, kwargs, sceneDir, { shell: true });
        const args: NavsimThreadArgs = { version, kwargs, ...(dir === null ? {} : { sceneDir: { dir, roots: dataRoots.roots } }) };
        return envThreads.make(shell, args, log);
      },
      kwargsSchema: NavsimKwargsSchema,
      tools: NavsimEnv.TOOLS,
      estimateBytes: estimateNavsimBytes,
      // Two steps when v2's two-stage mode is on; one-stage episodes terminate after the first.
      maxEpisodeSteps: 2,
      tags: ['driving', 'navsim'],
    });
  }
}
