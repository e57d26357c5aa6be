/**
 * Embodied simulators as shipped env families, run by the Python workers
 * (client/python/src/gymwire/sim): robosuite tasks with LIBERO's conventions, Meta-World's MT1 and
 * ML1, and LIBERO itself. A family is served when its package is installed in the workers' Python
 * (`pip install "gymwire[robosuite]"`, `"gymwire[metaworld]"`); {@link installedSimulators} asks
 * that Python with `importlib.util.find_spec`, importing nothing, so serve starts as fast as before.
 *
 * The families get a pool of their own: making a robosuite env imports robosuite and numba and
 * compiles the scene (tens of seconds on a busy 2-core machine), which the pool's call deadline
 * must allow (at least {@link SIMULATOR_CALL_TIMEOUT_MS}), and their sessions should not share
 * workers with light Gymnasium envs.
 *
 * @example
 * const installed = await installedSimulators('python3');
 * registerSimulators(registry, pool, installed); // robosuite/Lift-v0, metaworld/MT1-v3, ...
 */
import { execFile } from 'node:child_process';

import { z } from 'zod';

import type { Registry } from '../core/registry.ts';
import type { HostedTarget } from './env.ts';
import { makeHostedEnv } from './env.ts';
import type { WorkerPool } from './pool.ts';

/** The shortest call deadline a simulator pool gets: a first make imports and compiles for long. */
export const SIMULATOR_CALL_TIMEOUT_MS = 300_000;

export type SimulatorFamily = 'robosuite' | 'metaworld' | 'libero';

/** What each family needs installed: the Python distribution and the SDK extra that brings it. */
export const SIMULATOR_PACKAGES: Record<SimulatorFamily, { dist: string; extra: string }> = {
  robosuite: { dist: 'robosuite', extra: 'robosuite' },
  metaworld: { dist: 'metaworld', extra: 'metaworld' },
  // LIBERO runs on robosuite; its own package and assets are checked at make (libero_tasks.py).
  libero: { dist: 'robosuite', extra: 'robosuite' },
};

const renderKwargs = {
  render_mode: z.enum(['rgb_array']).nullable().optional(),
  render_effects: z
    .boolean()
    .nullable()
    .optional()
    .describe('Shadows, reflections and anti-aliasing; default on where a GPU renders (EGL), off in software (OSMesa)'),
};
const liberoImageSize = z
  .union([z.literal(128), z.literal(224)])
  .optional()
  .describe('Camera images are image_size x image_size (LIBERO: 128 or 224); default 128');

const flipImages = z
  .boolean()
  .optional()
  .describe('Turn the camera images 180 degrees, as RLinf and OpenVLA-OFT do with LIBERO’s; default false (robosuite’s OpenGL order)');
const RobosuiteKwargs = z.object({ image_size: liberoImageSize, flip_images: flipImages, ...renderKwargs }).strict();
const MetaWorldKwargs = z
  .object({
    task: z
      .string()
      .regex(/^[a-z0-9-]+-v3$/, 'a Meta-World v3 task name like reach-v3')
      .optional()
      .describe('The task, e.g. pick-place-v3; default reach-v3'),
    image_size: z
      .number()
      .int()
      .min(16)
      .max(1024)
      .nullable()
      .optional()
      .describe('Add a camera image of this size to the observation (obs becomes {state, image})'),
    camera: z.enum(['corner', 'corner2', 'corner3', 'topview', 'behindGripper', 'gripperPOV']).optional(),
    terminate_on_success: z.boolean().optional().describe('End the episode when the task succeeds (Meta-World does not by default)'),
    ...renderKwargs,
  })
  .strict();
const LiberoKwargs = z
  .object({
    suite: z.enum(['libero_spatial', 'libero_object', 'libero_goal', 'libero_10', 'libero_90']).optional(),
    task_id: z.number().int().min(0).optional(),
    image_size: liberoImageSize,
    flip_images: flipImages,
    render_mode: renderKwargs.render_mode,
  })
  .strict();

interface SimulatorSpec {
  id: string;
  family: SimulatorFamily;
  description: string;
  target: HostedTarget;
  kwargsSchema: z.ZodType<Record<string, unknown>>;
  /** Kwargs the id fixes (the task), merged over the client's. */
  preset: Record<string, unknown>;
  maxEpisodeSteps: number;
  /** Memory one session holds (MuJoCo model and data, render buffers), for the server's budgets. */
  bytes: number;
}

const ROBOSUITE_TARGET: HostedTarget = { kind: 'callable', path: 'gymwire.sim.robosuite_tasks:RobosuiteTask' };
const METAWORLD_TARGET: HostedTarget = { kind: 'callable', path: 'gymwire.sim.metaworld_tasks:MetaWorldTask' };
const LIBERO_TARGET: HostedTarget = { kind: 'callable', path: 'gymwire.sim.libero_tasks:LiberoTask' };
const MIB = 1024 * 1024;

/** The robosuite tasks served (names as robosuite has them; instructions in robosuite_tasks.py). */
const ROBOSUITE_TASKS = ['Lift', 'Stack', 'PickPlaceCan', 'NutAssemblySquare', 'Door'] as const;

export const SIMULATOR_SPECS: readonly SimulatorSpec[] = [
  ...ROBOSUITE_TASKS.map((task) => ({
    id: `robosuite/${task}-v0`,
    family: 'robosuite' as const,
    description: `robosuite ${task} on a Panda arm, LIBERO's conventions: 7-dim end-effector delta action with the gripper last, agent-view and wrist images, proprioception, success from the task's check`,
    target: ROBOSUITE_TARGET,
    kwargsSchema: RobosuiteKwargs,
    preset: { task },
    maxEpisodeSteps: 300,
    bytes: 256 * MIB,
  })),
  ...(['MT1', 'ML1'] as const).map((benchmark) => ({
    id: `metaworld/${benchmark}-v3`,
    family: 'metaworld' as const,
    description:
      benchmark === 'MT1'
        ? "Meta-World MT1: one of the 50 v3 tasks chosen at make, one of its 50 goals drawn by the reset seed; success from the task's check"
        : 'Meta-World ML1: a v3 task chosen at make, goals from its train or held-out test split (split kwarg) drawn by the reset seed',
    target: METAWORLD_TARGET,
    kwargsSchema:
      benchmark === 'MT1'
        ? MetaWorldKwargs
        : MetaWorldKwargs.extend({ split: z.enum(['train', 'test']).optional().describe("ML1's goal split; default train") }),
    preset: { benchmark },
    maxEpisodeSteps: 500,
    bytes: 128 * MIB,
  })),
  {
    id: 'libero/LIBERO-v0',
    family: 'libero',
    description: "LIBERO's tasks (suite and task_id at make) with its cameras, actions and init states; needs LIBERO's package and scene assets installed",
    target: LIBERO_TARGET,
    kwargsSchema: LiberoKwargs,
    preset: {},
    maxEpisodeSteps: 520,
    bytes: 256 * MIB,
  },
];

/** ML1's split kwarg becomes the Python class's benchmark name. */
function pythonKwargs(spec: SimulatorSpec, kwargs: Record<string, unknown>): Record<string, unknown> {
  const { split, ...rest } = kwargs;
  const merged = { ...rest, ...spec.preset };
  if (spec.preset.benchmark === 'ML1') merged.benchmark = `ML1-${typeof split === 'string' ? split : 'train'}`;
  return merged;
}

/** The families whose package the given Python has, with their versions (none when Python cannot be run). */
export function installedSimulators(python: string, timeoutMs = 20_000): Promise<Map<SimulatorFamily, string>> {
  const families = Object.keys(SIMULATOR_PACKAGES) as SimulatorFamily[];
  const probe = [
    'import importlib.util as u, importlib.metadata as m, json, sys',
    'def v(d):',
    '    try: return m.version(d) if u.find_spec(d) else None',
    '    except Exception: return None',
    'print(json.dumps([v(d) for d in sys.argv[1:]]))',
  ].join('\n');
  return new Promise((resolve) => {
    execFile(python, ['-c', probe, ...families.map((f) => SIMULATOR_PACKAGES[f].dist)], { timeout: timeoutMs }, (err, stdout) => {
      const found = new Map<SimulatorFamily, string>();
      if (err) return resolve(found);
      try {
        const versions = JSON.parse(stdout) as (string | null)[];
        families.forEach((family, i) => {
          if (typeof versions[i] === 'string') found.set(family, versions[i]);
        });
      } catch {
        // Output that is not the probe's JSON: count nothing as installed.
      }
      resolve(found);
    });
  });
}

/** Registers the ids of every installed family; returns them. */
export function registerSimulators(registry: Registry, pool: WorkerPool, installed: ReadonlyMap<SimulatorFamily, string>): string[] {
  const specs = SIMULATOR_SPECS.filter((spec) => installed.has(spec.family));
  for (const spec of specs) {
    registry.register({
      id: spec.id,
      description: `${spec.description} (${SIMULATOR_PACKAGES[spec.family].dist} ${installed.get(spec.family)})`,
      kwargsSchema: spec.kwargsSchema,
      maxEpisodeSteps: spec.maxEpisodeSteps,
      estimateBytes: () => spec.bytes,
      tags: ['simulator', spec.family, 'python'],
      entryPoint: (kwargs) => makeHostedEnv(pool, spec.target, pythonKwargs(spec, kwargs), spec.id),
    });
  }
  return specs.map((spec) => spec.id);
}

/** The families not installed, as `gymwire envs` lists them: the id and the extra to install. */
export function missingSimulators(installed: ReadonlyMap<SimulatorFamily, string>): { id: string; description: string; extra: string }[] {
  return SIMULATOR_SPECS.filter((spec) => !installed.has(spec.family)).map((spec) => ({
    id: spec.id,
    description: spec.description,
    extra: SIMULATOR_PACKAGES[spec.family].extra,
  }));
}
