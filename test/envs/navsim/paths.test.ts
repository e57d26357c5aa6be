/**
 * NAVSIM's scene_dir through the registry: confined to the data roots, and scene files that do not
 * load are the client's fault, reported without their path or content.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { DataPathError, DataRoots } from '../../../envs/core/data-roots.ts';
import { InvalidOptionsError } from '../../../envs/core/env.ts';
import { defaultRegistry } from '../../../envs/index.ts';
import { generateScene } from '../../../envs/navsim/generator.ts';

const NAVSIM = 'gymwire/NavsimEnv-v1';
const base = realpathSync(mkdtempSync(join(tmpdir(), 'gymwire-scenes-')));
const root = join(base, 'root');
const outside = join(base, 'outside');
for (const dir of ['good', 'broken', 'schema', 'linked', 'empty']) mkdirSync(join(root, dir), { recursive: true });
mkdirSync(outside);
for (const i of [0, 1]) writeFileSync(join(root, 'good', `scene-${i}.json`), JSON.stringify(generateScene('synthetic-test', i)));
writeFileSync(join(root, 'broken', 'a.json'), 'root:x:0:0:SECRET-CONTENT');
writeFileSync(join(root, 'schema', 'a.json'), JSON.stringify({ name: 'SECRET-NAME', agents: 'SECRET-VALUE' }));
writeFileSync(join(outside, 'secret.json'), JSON.stringify(generateScene('synthetic-test', 2)));
symlinkSync(join(outside, 'secret.json'), join(root, 'linked', 'a.json'));
writeFileSync(join(outside, 'x.json'), '{}');
afterAll(() => rmSync(base, { recursive: true, force: true }));

const registry = defaultRegistry({ dataRoots: new DataRoots([root]) });

/** The error a make or reset of `scene_dir` fails with; the test fails if it does not. */
async function failure(sceneDir: string): Promise<Error> {
  try {
    const env = await registry.make(NAVSIM, { scene_dir: sceneDir });
    await env.reset({ seed: 0 });
  } catch (err) {
    return err as Error;
  }
  throw new Error(`scene_dir ${sceneDir} loaded`);
}

describe('NavsimEnv scene_dir', () => {
  it('serves scene files from inside a data root, by relative or absolute path', async () => {
    for (const dir of ['good', join(root, 'good')]) {
      const env = await registry.make(NAVSIM, { scene_dir: dir });
      expect(env.metadata.scene_count).toBe(2);
      const { info } = await env.reset({ options: { scene_index: 1 } });
      expect(info.scene_token).toBe(generateScene('synthetic-test', 1).name);
    }
  });

  it('refuses paths outside the data roots with one message, whether they exist or not', async () => {
    const messages: string[] = [];
    for (const dir of [outside, '/etc', '/no/such/place', '../outside', 'good/../../outside']) {
      const err = await failure(dir);
      expect(err).toBeInstanceOf(DataPathError);
      messages.push(err.message);
    }
    expect(new Set(messages)).toEqual(
      new Set([
        'scene_dir: the path is outside the data roots this server allows (gymwire serve --data-root DIR); give a path relative to a data root, or an absolute one inside it',
      ]),
    );
  });

  it('refuses a scene_dir with no data roots configured (no scenes ship with the package)', async () => {
    await expect(defaultRegistry().make(NAVSIM, { scene_dir: join(root, 'good') })).rejects.toThrow(/^scene_dir: the path is outside/);
  });

  it('reports scene files that do not load as the client’s fault, without their path or content', async () => {
    for (const dir of ['broken', 'schema']) {
      const err = await failure(dir);
      expect(err).toBeInstanceOf(DataPathError);
      expect(err.message).toBe("scene_dir: the data there does not load as gymwire NAVSIM scenes (docs/navsim-scenes.md); the server's log has the reason");
    }
  });

  it('refuses a scene file that links outside the data roots', async () => {
    const err = await failure('linked');
    expect(err).toBeInstanceOf(DataPathError);
    expect(err.message).toBe('scene_dir: the data names a file outside the data roots this server allows');
    expect(err.message).not.toContain(base);
  });

  it('names no path when the directory holds no scenes', async () => {
    const err = await failure('empty');
    expect(err).toBeInstanceOf(InvalidOptionsError);
    expect(err.message).toBe('no scene files (*.json) in scene_dir');
  });
});
