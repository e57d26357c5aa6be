import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { registerClassic } from '../../../envs/classic/index.ts';
import { registerNavsim } from '../../../envs/navsim/index.ts';
import { Registry } from '../../../envs/core/registry.ts';
import { startServer } from '../../../server/index.ts';
import type { RunningServer, ServerOptions } from '../../../server/index.ts';
import { decodeColumn } from '../../../client/ts/dataset/reader.ts';
import type { Dataset } from '../../../client/ts/dataset/reader.ts';

/** CartPole (and the other classic envs) plus NAVSIM, whose baseline the CLI test drives. */
export function classicRegistry(): Registry {
  const registry = new Registry();
  registerClassic(registry);
  registerNavsim(registry);
  return registry;
}

export function cartpoleServer(opts: ServerOptions = {}): Promise<RunningServer> {
  return startServer({ port: 0, registry: classicRegistry(), ...opts });
}

export async function tempDir(prefix: string): Promise<{ dir: string; cleanup(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** Per session: the session_step values in row order. */
export function sessionSteps(ds: Dataset): Map<string, number[]> {
  const sessions = decodeColumn(ds.steps, 'session') as string[];
  const counters = decodeColumn(ds.steps, 'session_step') as unknown[];
  const out = new Map<string, number[]>();
  sessions.forEach((s, i) => out.set(s, [...(out.get(s) ?? []), Number(counters[i])]));
  return out;
}

/** Per episode: its `step` values in row order. */
export function episodeSteps(ds: Dataset): Map<number, number[]> {
  const ids = ds.steps.getChild('episode_id')!.toArray() as BigInt64Array;
  const steps = ds.steps.getChild('step')!.toArray() as Int32Array;
  const out = new Map<number, number[]>();
  ids.forEach((id, i) => out.set(Number(id), [...(out.get(Number(id)) ?? []), steps[i]!]));
  return out;
}
