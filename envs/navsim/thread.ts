/**
 * The NAVSIM env thread (envs/core/env-threads.ts): NAVSIM sessions are built and run here, so
 * scene loading, PDM scoring and camera rendering never run on the server's event loop.
 */
import type { Logger } from 'pino';

import { DataRoots } from '../core/data-roots.ts';
import { serveEnvThread } from '../core/env-thread-host.ts';
import { NavsimEnv } from './env.ts';
import type { NavsimKwargs } from './env.ts';

/** What a NAVSIM session is made from on its thread. */
export interface NavsimThreadArgs {
  version: 1 | 2;
  kwargs: NavsimKwargs;
  /** A client-named scene directory (already resolved) and the data roots its files must stay in. */
  sceneDir?: { dir: string; roots: readonly string[] };
}

serveEnvThread((raw, log) => {
  const args = raw as NavsimThreadArgs;
  if (!args.sceneDir) return new NavsimEnv(args.version, args.kwargs);
  const roots = new DataRoots(args.sceneDir.roots);
  return new NavsimEnv(args.version, args.kwargs, { dir: args.sceneDir.dir, confine: (path) => roots.confine('scene_dir', path), log: log as Logger });
});
