/**
 * The importer of RLinf's EVAC reset dataset (scripts/evac/import_rlinf_reset.py), run on a fixture
 * in RLinf's on-disk format (scripts/evac/make_rlinf_reset_fixture.py, numpy's own np.save of object
 * arrays of frame dicts). Both need numpy: they run with the Python SDK's test venv, created here
 * when missing (client/python/scripts/test.sh --venv-only).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { DataRoots } from '../../../envs/core/data-roots.ts';
import { Registry } from '../../../envs/core/registry.ts';
import { readResetDataset } from '../../../envs/evac/dataset.ts';
import type { EvacObs } from '../../../envs/evac/env.ts';
import { EVAC_ENV_ID, registerEvac } from '../../../envs/evac/index.ts';
import { resizeLikeRLinf } from '../../../envs/evac/resize.ts';
import type { WorldModelRuntime } from '../../../envs/evac/runtime.ts';

const repo = fileURLToPath(new URL('../../../', import.meta.url));
const python = join(repo, 'client/python/.venv/bin/python');
const root = realpathSync(mkdtempSync(join(tmpdir(), 'gymwire-evac-import-')));
const runtimes: WorldModelRuntime[] = [];
const H = 40;
const W = 56;

/** Episode i's first frame as the fixture script writes it: (7y + 3x + 50c + 11i) mod 256. */
function fixtureImage(i: number): Uint8Array {
  const out = new Uint8Array(H * W * 3);
  for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) for (let c = 0; c < 3; c++) out[(y * W + x) * 3 + c] = (7 * y + 3 * x + 50 * c + 11 * i) % 256;
  return out;
}

const run = (script: string, ...args: string[]) => execFileSync(python, [join(repo, 'scripts/evac', script), ...args], { encoding: 'utf8', stdio: 'pipe' });

beforeAll(() => {
  if (!existsSync(python)) execFileSync('bash', [join(repo, 'client/python/scripts/test.sh'), '--venv-only'], { stdio: 'inherit' });
  run('make_rlinf_reset_fixture.py', join(root, 'rlinf'));
}, 900_000);

afterAll(async () => {
  for (const r of runtimes) await r.close();
  rmSync(root, { recursive: true, force: true });
});

describe('import_rlinf_reset.py', () => {
  it("converts RLinf's npy episodes: first frame, pose (init_ee_pose, else abs_action), task (instruction, else task), in sorted order", async () => {
    expect(run('import_rlinf_reset.py', join(root, 'rlinf'), join(root, 'imported'))).toMatch(/wrote 3 episodes/);
    const episodes = await readResetDataset(join(root, 'imported'), H, W);
    expect(episodes.map((e) => e.task)).toEqual(['task 0', 'task 1', 'task 2']);
    episodes.forEach((ep, i) => {
      expect(ep.initPose).toEqual([0.1 * i, -0.05, 0.2, 0, 0, 0, 1, -1].map(Math.fround));
      expect(Buffer.from(ep.frame).equals(Buffer.from(fixtureImage(i)))).toBe(true);
    });
  });

  it('serves the imported dataset with RLinf’s resize to the model’s resolution', async () => {
    const reg = new Registry({ dataRoots: new DataRoots([root]) });
    runtimes.push(registerEvac(reg));
    const env = await reg.make(EVAC_ENV_ID, { resolution: 64, dataset_dir: 'imported', reset_resize: 'rlinf' });
    expect(env.metadata.num_episodes).toBe(3);
    const { obs } = await env.reset({ options: { episode_index: 1 } });
    const o = obs as EvacObs;
    expect(o.task_description).toBe('task 1');
    expect(Buffer.from(o.full_image.data).equals(Buffer.from(resizeLikeRLinf(fixtureImage(1), H, W, 64, 64)))).toBe(true);
  });

  it('refuses a folder that is not an RLinf reset dataset, saying why', () => {
    let message = '';
    try {
      run('import_rlinf_reset.py', join(root, 'imported'), join(root, 'out'));
    } catch (err) {
      message = String((err as { stderr?: string }).stderr);
    }
    expect(message).toMatch(/import_rlinf_reset: no \.npy files in/);
  });
});
