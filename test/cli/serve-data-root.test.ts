/**
 * `gymwire serve --data-root` as a process: repeatable, relative scene_dir paths found in any
 * root, paths elsewhere refused, and a root that does not exist stops the server at start-up.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import { afterAll, describe, expect, it } from 'vitest';

import { connect } from '../../client/ts/client.ts';
import { generateScene } from '../../envs/navsim/generator.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const base = realpathSync(mkdtempSync(join(tmpdir(), 'gymwire-serve-roots-')));
for (const dir of ['first', 'second/scenes']) mkdirSync(join(base, dir), { recursive: true });
writeFileSync(join(base, 'second', 'scenes', 'a.json'), JSON.stringify(generateScene('synthetic-test', 3)));

let child: ChildProcess | null = null;
afterAll(() => {
  child?.kill('SIGKILL');
  rmSync(base, { recursive: true, force: true });
});

const serveArgs = (...more: string[]) => ['bin/gymwire.js', 'serve', '--port', '0', '--log-level', 'error', ...more];
// GYMWIRE_NO_REEXEC: the spawned process is the server itself, so killing it leaves nothing behind.
const env = { ...process.env, GYMWIRE_NO_REEXEC: '1' };

describe('gymwire serve --data-root', () => {
  it('serves scene_dir from any of its roots and refuses the rest', async () => {
    child = spawn(process.execPath, serveArgs('--data-root', join(base, 'first'), '--data-root', join(base, 'second')), {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
      env,
    });
    let url = '';
    for await (const line of createInterface({ input: child.stdout! })) {
      url = /on (ws:\/\/\S+)/.exec(line)?.[1] ?? '';
      if (url) break;
    }
    const client = await connect(url);
    try {
      const made = await client.make('gymwire/NavsimEnv-v1', { scene_dir: 'scenes' });
      expect((await made.reset({ seed: 0 })).info.scene_token).toBe(generateScene('synthetic-test', 3).name);
      await expect(client.make('gymwire/NavsimEnv-v1', { scene_dir: base })).rejects.toMatchObject({
        code: 'ENV_ERR_INVALID_KWARGS',
        message: expect.stringMatching(/^scene_dir: the path is outside/),
      });
    } finally {
      await client.close();
    }
  }, 60_000);

  it('stops at start-up when a data root does not exist', () => {
    const run = spawnSync(process.execPath, serveArgs('--data-root', join(base, 'missing')), { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`gymwire: data root ${join(base, 'missing')} does not exist`);
  }, 60_000);
});
