import { existsSync } from 'node:fs';
import { join } from 'node:path';

import pino from 'pino';
import { describe, expect, it } from 'vitest';

import { Registry } from '../../../envs/core/registry.ts';
import { WorkerPool } from '../../../envs/hosted/pool.ts';
import { installedSimulators, missingSimulators, registerSimulators, SIMULATOR_SPECS } from '../../../envs/hosted/simulators.ts';

const logger = pino({ level: 'silent' });
// The sim venv (client/python/scripts/test-sim.sh) where it has been built; the probe then finds both families.
const simPython = join(import.meta.dirname, '..', '..', '..', 'client', 'python', '.venv-sim', 'bin', 'python');

describe('simulator families', () => {
  it('a Python that cannot run, or lacks the packages, has no family installed', async () => {
    expect((await installedSimulators('/nonexistent/python3')).size).toBe(0);
    const plain = await installedSimulators('python3');
    expect(plain.has('robosuite') && plain.has('metaworld')).toBe(false);
    expect(missingSimulators(plain).map((m) => m.id)).toContain('metaworld/MT1-v3');
  });

  it.runIf(existsSync(simPython))('the sim venv has robosuite and Meta-World, with their versions', async () => {
    const found = await installedSimulators(simPython);
    expect(found.get('robosuite')).toMatch(/^1\.5\./);
    expect(found.get('metaworld')).toMatch(/^3\./);
    expect(missingSimulators(found)).toEqual([]);
  });

  it('registers the installed families only, with their limits and typed kwargs', async () => {
    const registry = new Registry();
    const pool = new WorkerPool({ python: 'python3', size: 1, logger });
    const ids = registerSimulators(registry, pool, new Map([['metaworld', '3.1.1']]));
    expect(ids).toEqual(['metaworld/MT1-v3', 'metaworld/ML1-v3']);
    expect(registry.has('robosuite/Lift-v0')).toBe(false);
    const listing = registry.list().find((e) => e.id === 'metaworld/MT1-v3')!;
    expect(listing.max_episode_steps).toBe(500);
    expect(listing.tags).toEqual(['simulator', 'metaworld', 'python']);
    expect(listing.description).toContain('metaworld 3.1.1');
    // Bad kwargs are refused before any worker starts.
    await expect(registry.make('metaworld/MT1-v3', { image_size: 4 })).rejects.toThrow(/image_size/);
    await expect(registry.make('metaworld/MT1-v3', { split: 'test' })).rejects.toThrow(/split/);
    expect(pool.workers()).toEqual([]);
    await pool.close();
  });

  it('robosuite ids take LIBERO image sizes only', () => {
    const lift = SIMULATOR_SPECS.find((s) => s.id === 'robosuite/Lift-v0')!;
    expect(lift.kwargsSchema.safeParse({ image_size: 224, flip_images: true }).success).toBe(true);
    expect(lift.kwargsSchema.safeParse({ image_size: 64 }).success).toBe(false);
  });
});
