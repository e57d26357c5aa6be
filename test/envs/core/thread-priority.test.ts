/**
 * Worker threads doing env work run below the event loop's priority (Linux): a thread started by
 * startModuleWorker takes the niceness asked for before its module loads, the default comes from
 * GYMWIRE_THREAD_NICE or 10 (a bad value stops `gymwire serve` at start-up), and a real NAVSIM env
 * thread runs at it while the main thread keeps its own.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

import { afterEach, describe, expect, it } from 'vitest';

import { DEFAULT_THREAD_NICE, threadNice } from '../../../envs/core/thread-priority.ts';
import { startModuleWorker } from '../../../envs/core/threads.ts';
import { NavsimEnv } from '../../../envs/navsim/env.ts';
import { navsimEnvThreads } from '../../../envs/navsim/index.ts';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

/** The niceness (field 19 of /proc/self/task/<tid>/stat) of every thread of this process. */
function threadNiceness(): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    // The command name (field 2) may hold spaces: fields are counted after its closing parenthesis.
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.set(Number(tid), Number(fields[16]));
  }
  return out;
}

async function reported(nice?: number): Promise<{ tid: number; nice: number }> {
  const worker = startModuleWorker(new URL('../../fixtures/threads/report-priority.ts', import.meta.url), import.meta.url, nice);
  cleanups.push(() => worker.terminate());
  const [msg] = (await once(worker, 'message')) as [{ tid: number; nice: number }];
  return msg;
}

describe('thread priority', () => {
  it('reads GYMWIRE_THREAD_NICE, 10 by default, and refuses what setpriority would not take', () => {
    expect(threadNice({})).toBe(DEFAULT_THREAD_NICE);
    expect(DEFAULT_THREAD_NICE).toBe(10);
    expect(threadNice({ GYMWIRE_THREAD_NICE: '0' })).toBe(0);
    expect(threadNice({ GYMWIRE_THREAD_NICE: '19' })).toBe(19);
    for (const bad of ['-1', '20', '2.5', 'low'])
      expect(() => threadNice({ GYMWIRE_THREAD_NICE: bad })).toThrow(/GYMWIRE_THREAD_NICE must be an integer from 0 to 19/);
  });

  it('gymwire serve stops at start-up on a bad GYMWIRE_THREAD_NICE, naming it', () => {
    const run = spawnSync(process.execPath, ['bin/gymwire.js', 'serve', '--port', '0', '--log-level', 'error'], {
      cwd: fileURLToPath(new URL('../../../', import.meta.url)),
      env: { ...process.env, GYMWIRE_THREAD_NICE: 'high' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('GYMWIRE_THREAD_NICE must be an integer from 0 to 19, got "high"');
  }, 60_000);

  it.runIf(process.platform === 'linux')('starts a worker at the niceness asked for, before its module runs', async () => {
    expect(await reported(15)).toMatchObject({ nice: 15 });
    expect(await reported(0)).toMatchObject({ nice: 0 });
    const dflt = await reported();
    expect(dflt.nice).toBe(threadNice());
    expect(dflt.tid).not.toBe(process.pid);
    expect(getPriority(process.pid)).toBe(0);
  });

  it.runIf(process.platform === 'linux')('runs a real NAVSIM env thread below the main thread', async () => {
    const before = threadNiceness();
    const pool = navsimEnvThreads({ threads: 1, nice: 12 });
    cleanups.push(() => pool.close());
    const env = await pool.make(new NavsimEnv(2, {}, undefined, { shell: true }), { version: 2, kwargs: {} });
    cleanups.push(() => env.close());
    await env.reset({ seed: 0 });
    const started = [...threadNiceness()].filter(([tid]) => !before.has(tid));
    // The env thread itself is niced; threads Node starts for it (none on Linux today) would inherit.
    expect(started.filter(([, nice]) => nice === 12).length).toBeGreaterThanOrEqual(1);
    expect(threadNiceness().get(process.pid)).toBe(before.get(process.pid));
  });
});
