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
import { readFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

import type { Registry } from '../core/registry.ts';
import { loadClientData } from '../core/data-roots.ts';
import { InvalidOptionsError } from '../core/env.ts';
import { ModelContractError } from './contract.ts';
import { readResetDataset } from './dataset.ts';
import type { ResetEpisode } from './dataset.ts';
import { EvacWorldModelEnv } from './env.ts';
import type { EpisodeDraw } from './env.ts';
import { EpisodeDrawGroup } from './numpy-draw.ts';
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
    context_indexing: z
      .enum(['gymwire', 'rlinf'])
      .optional()
      .describe("Sparse context memory indices: 'gymwire' (default, evenly spread) or 'rlinf' (RLinf EvacEnv's)"),
    reset_resize: z
      .enum(['sharp', 'rlinf', 'rlinf-1-thread'])
      .optional()
      .describe(
        "How reset frames reach the model's size: 'sharp' (default, bilinear) or RLinf's chain as PyTorch's CPU computes it: 'rlinf' (torch on several threads) or 'rlinf-1-thread'",
      ),
    episode_draw: z
      .object({
        group: z.string().min(1).max(200).describe('A name shared by the envs of one RLinf env worker (pick one unique to it, e.g. a UUID)'),
        rank: z.number().int().nonnegative().describe('This env’s index in the worker (0 .. size-1)'),
        size: z.number().int().positive().describe("The worker's num_envs"),
      })
      .strict()
      .refine((d) => d.rank < d.size, { message: 'rank must be below size' })
      .optional()
      .describe("RLinf's reset draw: each round draws size distinct episodes (np.random.choice without replacement) and this env takes the rank-th"),
    ignore_terminations: z.boolean().optional().describe("RLinf's ignore_terminations: a success does not end the episode"),
    out_of_range_actions: z
      .enum(['refuse', 'clip', 'pass'])
      .optional()
      .describe("Actions outside the bounds: 'refuse' (default), 'clip' to the bounds, or 'pass' them to the model as RLinf does"),
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

/**
 * Steps per episode of a session made with the default kwargs: the default model's episode length
 * in frames over its chunk, rounded up (what the env reports), or undefined when its manifest does
 * not read (the make that loads it says why).
 */
function defaultEpisodeSteps(modelDir: string): number | undefined {
  try {
    const manifest = JSON.parse(readFileSync(join(modelDir, 'manifest.json'), 'utf8')) as { maxEpisodeSteps?: unknown; chunk?: unknown };
    const { maxEpisodeSteps: frames, chunk } = manifest;
    return typeof frames === 'number' && typeof chunk === 'number' && chunk > 0 ? Math.ceil(frames / chunk) : undefined;
  } catch {
    return undefined;
  }
}

export interface RegisterEvacOptions extends RuntimeOptions {
  /** Share an existing runtime instead of creating one. */
  runtime?: WorldModelRuntime;
  /**
   * The model directory served when a make names neither `model_dir` nor `resolution` (the
   * operator's choice, `gymwire serve --evac-model-dir`); default the bundled tiny model.
   */
  defaultModelDir?: string;
}

export function registerEvac(registry: Registry, opts: RegisterEvacOptions = {}): WorldModelRuntime {
  const runtime = opts.runtime ?? new WorldModelRuntime(opts);
  const datasets = new Map<string, Promise<ResetEpisode[]>>();
  const drawGroups = new Map<string, { group: EpisodeDrawGroup; users: number }>();
  const sharedDraw = (name: string, rank: number, size: number, episodes: number): EpisodeDraw => {
    const key = `${name}|${size}|${episodes}`;
    const entry = drawGroups.get(key) ?? { group: new EpisodeDrawGroup(episodes, size), users: 0 };
    entry.users++;
    drawGroups.set(key, entry);
    let released = false;
    return {
      next: (seed) => entry.group.next(rank, seed),
      release: () => {
        if (released) return;
        released = true;
        if (--entry.users === 0) drawGroups.delete(key);
      },
    };
  };
  registry.register<EvacKwargs>({
    id: EVAC_ENV_ID,
    description:
      "RLinf's EVAC world-model simulator: an ONNX world model generates each action chunk's frames and a classifier scores them (bundled: a tiny tabletop pick-and-lift).",
    kwargsSchema: EvacKwargsSchema,
    tags: ['world-model', 'vla', 'evac'],
    estimateBytes: estimateEvacBytes,
    ownEpisodeSteps: defaultEpisodeSteps(opts.defaultModelDir ?? tinyModelDir(64)),
    entryPoint: async (kwargs, ctx) => {
      if (kwargs.model_dir && kwargs.resolution)
        throw new InvalidOptionsError('give model_dir or resolution, not both (resolution picks a bundled tiny model)');
      const roots = ctx.dataRoots.with([EVAC_ASSETS_DIR]);
      // Paths a client names are held to the data roots, and so is every file their data names.
      const named = (kwarg: string) => ({ confine: (path: string) => roots.confine(kwarg, path) });
      // The folder is one the operator allowed, so its author is told what is wrong with it.
      const load = <T>(kwarg: string, what: string, dir: string, run: (dir: string) => Promise<T>) =>
        loadClientData(
          kwarg,
          what,
          () => run(dir),
          (err) => err instanceof ModelContractError,
          { log: ctx.log, dir },
        );
      const model = kwargs.model_dir
        ? await load('model_dir', 'a gymwire world model (docs/world-models.md)', roots.resolve('model_dir', kwargs.model_dir, 'dir'), (dir) =>
            runtime.load(dir, { device: kwargs.device, ...named('model_dir') }),
          )
        : opts.defaultModelDir && !kwargs.resolution
          ? await runtime.load(opts.defaultModelDir, { device: kwargs.device }).catch((err: unknown) => {
              // The operator's folder: its paths and the loader's reason belong in the server's log, not in a client's error.
              ctx.log?.error({ err, dir: opts.defaultModelDir }, 'the default world model (--evac-model-dir) does not load');
              throw new Error("the server's default world model does not load; the server's log has the reason", { cause: err });
            })
          : await runtime.load(tinyModelDir(kwargs.resolution ?? 64), { device: kwargs.device });
      const datasetKwarg = kwargs.dataset_dir ? 'dataset_dir' : kwargs.model_dir ? 'model_dir' : null;
      const dir = kwargs.dataset_dir ? roots.resolve('dataset_dir', kwargs.dataset_dir, 'dir') : model.dir.datasetDir;
      if (!dir) throw new InvalidOptionsError('the model has no reset dataset (manifest.dataset); pass dataset_dir');
      const resize = kwargs.reset_resize ?? 'sharp';
      // A dataset rewritten in place is read again (its episodes.json changed); envs made before keep theirs.
      const listing = await stat(join(dir, 'episodes.json')).catch(() => null);
      const key = `${dir}|${model.manifest.height}x${model.manifest.width}|${resize}|${listing ? `${listing.size}:${listing.mtimeMs}:${listing.ino}` : 'missing'}`;
      let episodes = datasets.get(key);
      if (!episodes) {
        episodes = readResetDataset(dir, model.manifest.height, model.manifest.width, { ...(datasetKwarg ? named(datasetKwarg) : {}), resize });
        datasets.set(key, episodes);
        episodes.catch(() => datasets.delete(key));
      }
      const loaded = datasetKwarg
        ? await load(datasetKwarg, 'a gymwire reset dataset (docs/world-models.md)', kwargs.dataset_dir ? dir : model.dir.dir, () => episodes!)
        : await episodes;
      let draw: EpisodeDraw | null = null;
      if (kwargs.episode_draw) {
        const { group, rank, size } = kwargs.episode_draw;
        if (size > loaded.length) {
          throw new InvalidOptionsError(`episode_draw.size ${size} is above the reset dataset's ${loaded.length} episodes; RLinf draws distinct episodes`);
        }
        draw = sharedDraw(group, rank, size, loaded.length);
      }
      return new EvacWorldModelEnv(model, loaded, kwargs, draw);
    },
  });
  return runtime;
}
