/**
 * Registers `gymwire/NavsimEnv-v1` (PDMS) and `gymwire/NavsimEnv-v2` (EPDMS).
 */
import type { Registry } from '../core/registry.ts';
import { estimateNavsimBytes, NavsimEnv, NavsimKwargsSchema } from './env.ts';

export function registerNavsim(registry: Registry): void {
  for (const version of [1, 2] as const) {
    registry.register({
      id: `gymwire/NavsimEnv-v${version}`,
      description: `NAVSIM ${version === 1 ? 'v1: PDM Score' : 'v2: Extended PDM Score'} on seeded synthetic scenes (or a directory of scene files): one 4 s trajectory of 8 poses per scene, tracked by LQR + kinematic bicycle and scored.`,
      entryPoint: (kwargs, { dataRoots, log }) => {
        if (!kwargs.scene_dir) return new NavsimEnv(version, kwargs);
        // No scenes ship with the package: a scene_dir must lie inside a --data-root.
        const dir = dataRoots.resolve('scene_dir', kwargs.scene_dir, 'dir');
        return new NavsimEnv(version, kwargs, { dir, confine: (path) => dataRoots.confine('scene_dir', path), log });
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
