/**
 * Registers `gymwire/EvacWorldModel-v0`. One {@link WorldModelRuntime} per registration holds the
 * ONNX sessions and the inference worker for every env made from this registry; it is returned so
 * the owner (the server, a test) can `close()` it. Its worker is unreferenced while idle, so a
 * process that forgets to close it still exits.
 *
 * @example
 * const registry = new Registry();
 * const runtime = registerEvac(registry, { logger });
 * const env = await registry.make('gymwire/EvacWorldModel-v0', { resolution: 128 });
 * await runtime.close();
 */
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

import type { Registry } from '../core/registry.ts';
import { loadClientData } from '../core/data-roots.ts';
import { InvalidOptionsError } from '../core/env.ts';
import { ModelContractError } from './contract.ts';
import { readResetDataset } from './dataset.ts';
import type { ResetEpisode } from './dataset.ts';
import { EvacWorldModelEnv } from './env.ts';
import type { RuntimeOptions } from './runtime.ts';
import { WorldModelRuntime } from './runtime.ts';

export { EvacWorldModelEnv } from './env.ts';
export { WorldModelRuntime, LoadedWorldModel } from './runtime.ts';
export { ModelContractError, readModelDir, checkSessions } from './contract.ts';

export const EVAC_ENV_ID = 'gymwire/EvacWorldModel-v0';

/** The bundled assets (tiny models and their datasets): clients may always name paths inside. */
export const EVAC_ASSETS_DIR = fileURLToPath(new URL('./assets', import.meta.url));

/** The bundled tiny model directory for a resolution (64, 128 or 256). */
export function tinyModelDir(resolution: 64 | 128 | 256 = 64): string {
  return fileURLToPath(new URL(`./assets/tiny-${resolution}`, import.meta.url));
}

export const EvacKwargsSchema = z
  .object({
    model_dir: z
      .string()
      .min(1)
      .optional()
      .describe(
        "A model directory following docs/world-models.md, inside the server's data roots (relative to one, or absolute); default: the bundled tiny model",
      ),
    resolution: z
      .union([z.literal(64), z.literal(128), z.literal(256)])
      .optional()
      .describe('Bundled tiny model resolution (default 64)'),
    dataset_dir: z.string().min(1).optional().describe("Reset dataset folder inside the server's data roots; default: the model's"),
    device: z.enum(['cpu', 'cuda']).optional().describe('Execution provider; CUDA falls back to the CPU (logged) when unavailable'),
    use_rel_reward: z.boolean().optional(),
    reward_coef: z.number().optional(),
    max_episode_steps: z.number().int().positive().optional().describe('Episode length in frames'),
    return_all_frames: z.boolean().optional(),
    render_mode: z.enum(['rgb_array']).nullable().optional(),
  })
  .strict();
export type EvacKwargs = z.infer<typeof EvacKwargsSchema>;

const MIB = 1024 * 1024;

/**
 * The memory one session holds, for the server's memory budgets: its context and chunk frames and
 * the answer that carries them (three copies of each frame sent; a chunk's worth more with
 * return_all_frames). The loaded model is shared by every session of the runtime and not counted.
 * A model directory's resolution is unknown before it is read: 512x512 is assumed.
 */
export function estimateEvacBytes(kwargs: EvacKwargs): number {
  const side = kwargs.model_dir ? 512 : (kwargs.resolution ?? 64);
  const frame = side * side * 3;
  const context = 4;
  const chunk = 8;
  const sent = kwargs.return_all_frames ? chunk + 1 : 1;
  return 4 * MIB + frame * (context + chunk + 3 * sent);
}

export interface RegisterEvacOptions extends RuntimeOptions {
  /** Share an existing runtime instead of creating one. */
  runtime?: WorldModelRuntime;
}

export function registerEvac(registry: Registry, opts: RegisterEvacOptions = {}): WorldModelRuntime {
  const runtime = opts.runtime ?? new WorldModelRuntime(opts);
  const datasets = new Map<string, Promise<ResetEpisode[]>>();
  registry.register<EvacKwargs>({
    id: EVAC_ENV_ID,
    description:
      "RLinf's EVAC world-model simulator: an ONNX world model generates each action chunk's frames and a classifier scores them (bundled: a tiny tabletop pick-and-lift).",
    kwargsSchema: EvacKwargsSchema,
    tags: ['world-model', 'vla', 'evac'],
    estimateBytes: estimateEvacBytes,
    entryPoint: async (kwargs, ctx) => {
      if (kwargs.model_dir && kwargs.resolution)
        throw new InvalidOptionsError('give model_dir or resolution, not both (resolution picks a bundled tiny model)');
      const roots = ctx.dataRoots.with([EVAC_ASSETS_DIR]);
      // Paths a client names are held to the data roots, and so is every file their data names.
      const named = (kwarg: string) => ({ confine: (path: string) => roots.confine(kwarg, path) });
      const load = <T>(kwarg: string, what: string, run: () => Promise<T>) =>
        loadClientData(kwarg, what, run, (err) => err instanceof ModelContractError, ctx.log);
      const model = kwargs.model_dir
        ? await load('model_dir', 'a gymwire world model (docs/world-models.md)', () =>
            runtime.load(roots.resolve('model_dir', kwargs.model_dir!, 'dir'), { device: kwargs.device, ...named('model_dir') }),
          )
        : await runtime.load(tinyModelDir(kwargs.resolution ?? 64), { device: kwargs.device });
      const datasetKwarg = kwargs.dataset_dir ? 'dataset_dir' : kwargs.model_dir ? 'model_dir' : null;
      const dir = kwargs.dataset_dir ? roots.resolve('dataset_dir', kwargs.dataset_dir, 'dir') : model.dir.datasetDir;
      if (!dir) throw new InvalidOptionsError('the model has no reset dataset (manifest.dataset); pass dataset_dir');
      const key = `${dir}|${model.manifest.height}x${model.manifest.width}`;
      let episodes = datasets.get(key);
      if (!episodes) {
        episodes = readResetDataset(dir, model.manifest.height, model.manifest.width, datasetKwarg ? named(datasetKwarg) : {});
        datasets.set(key, episodes);
        episodes.catch(() => datasets.delete(key));
      }
      const loaded = datasetKwarg ? await load(datasetKwarg, 'a gymwire reset dataset (docs/world-models.md)', () => episodes) : await episodes;
      return new EvacWorldModelEnv(model, loaded, kwargs);
    },
  });
  return runtime;
}
