/**
 * Path kwargs end to end: a real server on a real socket with a data root, the TypeScript client,
 * and the wire errors a client sees for paths outside the root and data that does not load.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connect } from '../../client/ts/client.ts';
import type { GymwireClient } from '../../client/ts/client.ts';
import { generateScene } from '../../envs/navsim/generator.ts';
import { ERROR_CODES, ProtocolError } from '../../protocol/errors.ts';
import { startServer } from '../../server/index.ts';
import type { RunningServer } from '../../server/index.ts';

const NAVSIM = 'gymwire/NavsimEnv-v1';
const EVAC = 'gymwire/EvacWorldModel-v0';
const base = realpathSync(mkdtempSync(join(tmpdir(), 'gymwire-data-paths-')));
const root = join(base, 'root');
mkdirSync(join(root, 'scenes'), { recursive: true });
mkdirSync(join(root, 'broken'), { recursive: true });
writeFileSync(join(root, 'scenes', 'a.json'), JSON.stringify(generateScene('synthetic-test', 0)));
writeFileSync(join(root, 'broken', 'a.json'), 'root:x:0:0:SECRET-CONTENT');
writeFileSync(join(base, 'secret.json'), 'SECRET-CONTENT');

let server: RunningServer;
let client: GymwireClient;
beforeAll(async () => {
  server = await startServer({ port: 0, transport: 'ws', dataRoots: [root] });
  client = await connect(server.url);
});
afterAll(async () => {
  await client.close();
  await server.close(2000);
  rmSync(base, { recursive: true, force: true });
});

/** The wire error `run` fails with: a client-fault code, with nothing of the filesystem in it. */
async function wireError(run: () => Promise<unknown>): Promise<ProtocolError> {
  const err = await run().then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProtocolError);
  const pe = err as ProtocolError;
  expect(ERROR_CODES[pe.code].fault).toBe('client');
  expect(JSON.stringify(pe.toWire())).not.toMatch(/SECRET|gymwire-data-paths|passwd|root:x/);
  return pe;
}

describe('path kwargs through a real server', () => {
  it('serves scenes from inside the data root', async () => {
    const env = await client.make(NAVSIM, { scene_dir: 'scenes' });
    const { info } = await env.reset({ seed: 0 });
    expect(info.scene_token).toBe(generateScene('synthetic-test', 0).name);
    await env.close();
  });

  it('refuses paths outside the data root alike, existing or not, with ENV_ERR_INVALID_KWARGS', async () => {
    const answers = [];
    for (const kwargs of [{ scene_dir: '/etc' }, { scene_dir: base }, { scene_dir: '/no/such/dir' }, { scene_dir: '../' }]) {
      answers.push((await wireError(() => client.make(NAVSIM, kwargs))).toWire());
    }
    for (const kwargs of [{ model_dir: '/etc' }, { model_dir: join(base, 'secret.json') }, { dataset_dir: '/proc/self' }]) {
      const pe = await wireError(() => client.make(EVAC, kwargs));
      expect(pe.code).toBe('ENV_ERR_INVALID_KWARGS');
      expect(pe.message).toMatch(/^(model_dir|dataset_dir): the path is outside the data roots this server allows/);
    }
    expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1);
    expect(answers[0]).toEqual({
      code: 'ENV_ERR_INVALID_KWARGS',
      message:
        'scene_dir: the path is outside the data roots this server allows (gymwire serve --data-root DIR); give a path relative to a data root, or an absolute one inside it',
      details: { issues: [{ path: 'scene_dir', message: expect.any(String) }] },
    });
  });

  it('reports a scene that does not load as a client fault without its content, and keeps serving', async () => {
    const env = await client.make(NAVSIM, { scene_dir: 'broken' });
    const pe = await wireError(() => env.reset({ seed: 0 }));
    expect(pe.code).toBe('ENV_ERR_INVALID_KWARGS');
    expect(pe.message).toBe("scene_dir: the data there does not load as gymwire NAVSIM scenes (docs/navsim-scenes.md); the server's log has the reason");
    const ok = await client.make(NAVSIM, { scene_dir: 'scenes' });
    expect((await ok.reset({ seed: 0 })).obs).toBeDefined();
  });
});
