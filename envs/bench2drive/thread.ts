/**
 * The Bench2Drive env thread (envs/core/env-threads.ts): Bench2Drive sessions are built and run
 * here, so the closed-loop simulation (up to ~100 ms for a reset: route, agents, scenario) and
 * camera rendering never run on the server's event loop.
 */
import { serveEnvThread } from '../core/env-thread-host.ts';
import { Bench2DriveEnv } from './env.ts';
import type { Bench2DriveKwargs } from './env.ts';

/** What a Bench2Drive session is made from on its thread. */
export interface Bench2DriveThreadArgs {
  kwargs: Bench2DriveKwargs;
}

// The cameras render on this thread too, with the env's own rig: the same images as on any other.
serveEnvThread((raw) => new Bench2DriveEnv((raw as Bench2DriveThreadArgs).kwargs));
