/**
 * The same faults applied to every link that runs on the one channel (runtime/channel.ts), each
 * with a real peer: a real Python worker running a misbehaving Gymnasium env written here, a
 * plugin env module in a temp dir loaded by a real server, and env threads running a faulty env.
 * For each fault: the documented error, bounded memory, and a bystander session on the same kind
 * of link that keeps stepping; at the end the server's /metrics shows only the sessions still open.
 *
 * Faults: a peer that stops reading (hangs while requests pile up), floods (writes 128 MiB without a
 * newline; posts answers nobody asked for), hangs, crashes, answers garbage, answers twice, answers
 * late. In-process plugin envs have no stream to flood or garble: for them "garbage" is odd values
 * rejected or resolved, and "twice" cannot happen (a promise settles once).
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { connect } from '../../client/ts/client.ts';
import type { GymwireClient } from '../../client/ts/client.ts';
import type { RemoteEnv } from '../../client/ts/remote-env.ts';
import { EnvThreadPool } from '../../envs/core/env-threads.ts';
import { Registry } from '../../envs/core/registry.ts';
import { hostEnvs } from '../../envs/hosted/index.ts';
import type { WorkerPool } from '../../envs/hosted/pool.ts';
import { startServer } from '../../server/index.ts';
import type { RunningServer } from '../../server/index.ts';
import { FaultyEnv } from '../fixtures/faulty/env.ts';

const VENV_PYTHON = 'client/python/.venv/bin/python';
const PYTHON = process.env.GYMWIRE_PYTHON ?? (existsSync(VENV_PYTHON) ? VENV_PYTHON : null);

const WORKER_TIMEOUT_MS = 4_000;
const ENV_CALL_TIMEOUT_MS = 500;
const THREAD_TIMEOUT_MS = 500;
const CLOSE_WAIT_MS = 300;
const MiB = 1024 * 1024;

const PYTHON_ENV = String.raw`
import os, sys, threading, time
import gymnasium as gym
import msgpack
import numpy as np
from gymnasium import spaces

def flood():
    chunk = b"x" * (1 << 20)
    for _ in range(128):
        sys.stdout.buffer.write(chunk)
    sys.stdout.buffer.write(b"\nflood over\n")
    sys.stdout.flush()

def frame(message):
    body = msgpack.packb(message)
    return len(body).to_bytes(4, "little") + body

class Faulty(gym.Env):
    metadata = {"render_modes": []}
    def __init__(self):
        self.observation_space = spaces.Box(-1e9, 1e9, shape=(1,), dtype=np.float64)
        self.action_space = spaces.Discrete(2)
        self.fault = None
        self.count = 0
    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.fault = (options or {}).get("fault")
        self.count = 0
        return np.zeros(1), {}
    def step(self, action):
        fault, self.fault = self.fault, None
        if fault == "flood":
            # From a thread: the worker answers while the server drains the flood.
            threading.Thread(target=flood, daemon=True).start()
        if fault in ("hang", "late"):
            time.sleep(3600 if fault == "hang" else 5)
        if fault == "crash":
            os._exit(3)
        if fault == "garbage":
            os.write(3, b"\xff\xff\xff\x7f" + b"\x00" * 64)  # a header announcing 2 GiB
            time.sleep(3600)
        if fault == "twice":
            os.write(3, frame({"ids": [1], "results": [{"ok": None}]}))  # an id answered long ago
            os.write(3, frame({"ids": [10**9], "results": [{"ok": None}]}))  # an id never sent
            os.write(3, frame({"no_id": True}))
        self.count += 1 + int(action)
        return np.array([self.count], dtype=np.float64), 1.0, False, False, {}

def make():
    return Faulty()
`;

const PLUGIN = `
class Odd {
  observationSpace = { type: 'discrete', n: 1000, start: 0, dtype: 'int64' };
  actionSpace = { type: 'discrete', n: 2, start: 0, dtype: 'int64' };
  metadata = { render_modes: [] };
  fault = null;
  async reset(opts) { this.fault = opts?.options?.fault ?? null; return { obs: 0, info: {} }; }
  async step() {
    const fault = this.fault; this.fault = null;
    if (fault === 'null-proto') throw Object.create(null);
    if (fault === 'throwing-tostring') throw { toString() { throw new Error('no'); } };
    if (fault === 'undefined') return Promise.reject(undefined);
    if (fault === 'hang') return new Promise(() => {});
    if (fault === 'late') return new Promise((r) => setTimeout(() => r({ obs: 9, reward: 0, terminated: false, truncated: false, info: {} }), ${ENV_CALL_TIMEOUT_MS + 200}));
    if (fault === 'garbage') return 42;
    return { obs: 1, reward: 1, terminated: false, truncated: false, info: {} };
  }
}
export function register(registry) { registry.register({ id: 'fault/Plugin-v0', entryPoint: () => new Odd() }); }
`;

let dir: string;
let server: RunningServer;
let pool: WorkerPool | null = null;
let threads: EnvThreadPool;
let client: GymwireClient;
const logged: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gymwire-faults-'));
  writeFileSync(join(dir, 'faulty_env.py'), PYTHON_ENV);
  writeFileSync(join(dir, 'plugin.mjs'), PLUGIN);
  const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(line.slice(0, 400)) });
  const registry = new Registry();
  threads = registry.closes(
    new EnvThreadPool(new URL('../fixtures/faulty/thread.ts', import.meta.url), import.meta.url, { threads: 2, callTimeoutMs: THREAD_TIMEOUT_MS }),
  );
  registry.register({ id: 'fault/Thread-v0', entryPoint: () => threads.make(new FaultyEnv(), null) });
  if (PYTHON) process.env.PYTHONPATH = [dir, process.env.PYTHONPATH].filter(Boolean).join(':');
  pool = await hostEnvs(registry, {
    plugins: [join(dir, 'plugin.mjs')],
    python: PYTHON ? [{ target: 'faulty_env:make', id: 'fault/Python-v0' }] : [],
    pythonExe: PYTHON ?? undefined,
    workers: 2,
    workerTimeoutMs: WORKER_TIMEOUT_MS,
    logger,
  });
  server = await startServer({ port: 0, registry, logger, envCallTimeoutMs: ENV_CALL_TIMEOUT_MS, closeWaitMs: CLOSE_WAIT_MS });
  client = await connect(server.url, { requestTimeoutMs: 30_000 });
}, 60_000);

afterAll(async () => {
  await client?.close();
  await server?.close(2_000);
  await server?.core.registry.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A session armed with `fault` for its next step. */
async function armed(envId: string, fault: string): Promise<RemoteEnv> {
  const env = await client.make(envId);
  await env.reset({ seed: 0, options: { fault } });
  return env;
}

async function failure(p: Promise<unknown>): Promise<{ code: string; details: Record<string, unknown>; message: string }> {
  const err = (await p.then(
    () => null,
    (e: unknown) => e,
  )) as { code: string; details: Record<string, unknown>; message: string } | null;
  expect(err, 'the request should have failed').not.toBeNull();
  return err!;
}

/**
 * What `close` must answer within after a fault. The envs these closes follow are stuck for good
 * (a call that never settles, a worker that never reads), so a close that waited on them would
 * never answer: any bound proves it does not. The bound is generous for a loaded 2-core CI machine.
 */
const CLOSE_PROMPT_MS = 3_000;

/**
 * Closes `env`, which must answer within `withinMs` even when its env is stuck. Python closes are
 * held below WORKER_TIMEOUT_MS too: a close that waited for another worker deadline would take that long.
 */
async function closesPromptly(env: RemoteEnv, withinMs: number): Promise<void> {
  const started = performance.now();
  await env.close();
  expect(performance.now() - started).toBeLessThan(withinMs);
}

async function stepsFine(env: RemoteEnv): Promise<void> {
  const r = await env.step(1);
  expect(r.reward).toBe(1);
}

const rssMiB = () => process.memoryUsage().rss / MiB;

describe.skipIf(!PYTHON)('fault matrix: hosted Python worker (a real process)', () => {
  let bystander: RemoteEnv;
  beforeAll(async () => {
    bystander = await client.make('fault/Python-v0');
    await bystander.reset({ seed: 0 });
  });

  it('floods stdout with 128 MiB and no newline: the line is cut and logged, memory stays bounded, the session carries on', async () => {
    const env = await armed('fault/Python-v0', 'flood');
    const before = rssMiB();
    let peak = before;
    await stepsFine(env);
    await vi.waitFor(
      () => {
        peak = Math.max(peak, rssMiB());
        expect(logged.some((l) => l.includes('flood over'))).toBe(true);
      },
      { timeout: 20_000, interval: 20 },
    );
    expect(peak - before).toBeLessThan(64);
    expect(logged.some((l) => l.includes('"cut_bytes":134152192'))).toBe(true);
    await stepsFine(env);
    await stepsFine(bystander);
    await env.close();
  });

  it('hangs while requests pile up: the first fails at its deadline (timed_out), the rest at once, close answers, the idle worker is recycled', async () => {
    const env = await armed('fault/Python-v0', 'hang');
    const restarts = pool!.restarts;
    const piled = Array.from({ length: 200 }, () => failure(env.step(0)));
    const errs = await Promise.all(piled);
    expect(errs[0]).toMatchObject({ code: 'ENV_ERR_ENV_FAILURE', details: { timed_out: true } });
    expect(errs[0]!.message).toMatch(/within 4000 ms/);
    for (const e of errs.slice(1)) expect(e.code).toBe('ENV_ERR_ENV_FAILURE');
    await closesPromptly(env, Math.min(CLOSE_PROMPT_MS, WORKER_TIMEOUT_MS - 500));
    // Its worker held no other healthy session: it was recycled rather than left with a stuck thread.
    expect(pool!.restarts).toBe(restarts + 1);
    await stepsFine(bystander);
    const fresh = await client.make('fault/Python-v0');
    await fresh.reset({ seed: 0 });
    await stepsFine(fresh);
    await fresh.close();
  });

  it('answers late (after the deadline): the documented error, and nothing reaches the caller afterwards', async () => {
    const env = await armed('fault/Python-v0', 'late');
    expect(await failure(env.step(0))).toMatchObject({ code: 'ENV_ERR_ENV_FAILURE', details: { timed_out: true } });
    await closesPromptly(env, Math.min(CLOSE_PROMPT_MS, WORKER_TIMEOUT_MS - 500));
    await stepsFine(bystander);
  });

  it('crashes: ENV_ERR_ENV_FAILURE worker_lost for its session only', async () => {
    const env = await armed('fault/Python-v0', 'crash');
    const err = await failure(env.step(0));
    expect(err).toMatchObject({ code: 'ENV_ERR_ENV_FAILURE', details: { worker_lost: true } });
    expect(err.message).toMatch(/exited with code 3/);
    await closesPromptly(env, Math.min(CLOSE_PROMPT_MS, WORKER_TIMEOUT_MS - 500));
    await stepsFine(bystander);
  });

  it('answers garbage (a header announcing 2 GiB): refused at once without buffering, worker lost', async () => {
    const env = await armed('fault/Python-v0', 'garbage');
    const before = rssMiB();
    const err = await failure(env.step(0));
    expect(err).toMatchObject({ code: 'ENV_ERR_ENV_FAILURE', details: { worker_lost: true } });
    expect(err.message).toMatch(/larger than the limit/);
    expect(rssMiB() - before).toBeLessThan(64);
    await closesPromptly(env, Math.min(CLOSE_PROMPT_MS, WORKER_TIMEOUT_MS - 500));
    await stepsFine(bystander);
  });

  it('answers twice and for ids never sent: counted and dropped, the session carries on', async () => {
    const env = await armed('fault/Python-v0', 'twice');
    await stepsFine(env);
    const stats = pool!.workers().map((w) => w.channel.stats);
    expect(stats.reduce((n, s) => n + s.duplicate, 0)).toBeGreaterThanOrEqual(1);
    expect(stats.reduce((n, s) => n + s.unknown, 0)).toBeGreaterThanOrEqual(1);
    expect(stats.reduce((n, s) => n + s.garbage, 0)).toBeGreaterThanOrEqual(1);
    await stepsFine(env);
    await env.close();
    await stepsFine(bystander);
  });

  afterAll(async () => {
    await bystander?.close();
  });
});

/**
 * Sessions that share one worker process (a pool of one): a hung env call must block only its own
 * session, and a crash ends the worker's sessions alone.
 */
describe.skipIf(!PYTHON)('fault matrix: hosted Python worker shared by two sessions (a pool of one)', () => {
  const CALL_TIMEOUT_MS = 1_500;
  let shared: RunningServer;
  let sharedPool: WorkerPool;
  let sharedClient: GymwireClient;
  let metricsUrl: string;

  beforeAll(async () => {
    const registry = new Registry();
    const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(line.slice(0, 400)) });
    sharedPool = (await hostEnvs(registry, {
      python: [{ target: 'faulty_env:make', id: 'fault/Python-v0' }],
      pythonExe: PYTHON!,
      workers: 1,
      workerTimeoutMs: CALL_TIMEOUT_MS,
      maxAbandonedCalls: 1,
      simulators: false,
      logger,
    }))!;
    shared = await startServer({ port: 0, registry, logger });
    sharedClient = await connect(shared.url, { requestTimeoutMs: 30_000 });
    metricsUrl = shared.url.replace('ws', 'http') + '/metrics';
  }, 60_000);

  afterAll(async () => {
    await sharedClient?.close();
    await shared?.close(2_000);
    await shared?.core.registry.close();
  });

  const session = async (fault?: string): Promise<RemoteEnv> => {
    const env = await sharedClient.make('fault/Python-v0');
    await env.reset({ seed: 0, options: fault ? { fault } : undefined });
    return env;
  };
  /** Milliseconds of each of `n` steps of `env`, one after another. */
  const stepTimes = async (env: RemoteEnv, n: number): Promise<number[]> => {
    const times: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      await stepsFine(env);
      times.push(performance.now() - t0);
    }
    return times;
  };
  const metric = async (name: string): Promise<number> => {
    const line = (await (await fetch(metricsUrl)).text()).split('\n').find((l) => l.startsWith(`${name}{pool="python"}`));
    return line === undefined ? 0 : Number(line.split(' ').pop());
  };

  it('one session hangs: the other is answered while it hangs; the hung one fails timed_out, then session_lost; its close answers; /metrics counts the abandoned call; the worker is recycled once no healthy session is left', async () => {
    const hung = await session();
    const other = await session();
    expect(sharedPool.workers()).toHaveLength(1);
    const pid = sharedPool.workers()[0]!.pid;
    await stepTimes(other, 20);
    await hung.reset({ seed: 0, options: { fault: 'hang' } });
    let stuckSettled = false;
    const stuck = failure(hung.step(0)).finally(() => (stuckSettled = true));
    await new Promise((r) => setTimeout(r, 150));
    const during = await stepTimes(other, 5);
    // Answered while the hung call still ran: a worker that served the other session behind the
    // hung call would answer none of these before the hung call's deadline. (An order, not a
    // wall-clock bound: a loaded CI machine may slow single steps by hundreds of milliseconds.)
    expect(during).toHaveLength(5);
    expect(stuckSettled).toBe(false);
    const err = await stuck;
    expect(err).toMatchObject({ code: 'ENV_ERR_ENV_FAILURE', details: { timed_out: true } });
    expect(err.message).toMatch(/within 1500 ms/);
    expect(await failure(hung.step(0))).toMatchObject({ code: 'ENV_ERR_ENV_FAILURE', details: { session_lost: true } });
    await closesPromptly(hung, CLOSE_PROMPT_MS);
    await stepsFine(other);
    // One healthy session is left and one abandoned call is within the bound: the worker stays.
    expect(sharedPool.workers()[0]!.pid).toBe(pid);
    expect(await metric('gymwire_python_abandoned_calls_total')).toBe(1);
    expect(await metric('gymwire_python_stuck_calls')).toBe(1);
    expect(logged.some((l) => l.includes('python env call abandoned'))).toBe(true);
    // The last healthy session goes while the abandoned call still runs: the worker is recycled with it.
    await other.close();
    await vi.waitFor(() => expect(sharedPool.workers()[0]?.pid).not.toBe(pid), { timeout: 5_000 });
    expect(await metric('gymwire_python_worker_restarts_total')).toBe(1);
    expect(await metric('gymwire_python_stuck_calls')).toBe(0);
  });

  it('past --max-abandoned-calls the worker is recycled: its sessions get worker_lost, new sessions work, /metrics counts the restart', async () => {
    const bystander = await session();
    const hangs = [await session('hang'), await session('hang')];
    const pid = sharedPool.workers()[0]!.pid;
    // Two abandoned calls still running, over the bound of 1: the worker goes, and its healthy session with it.
    for (const err of await Promise.all(hangs.map((h) => failure(h.step(0)))))
      expect(err).toMatchObject({ code: 'ENV_ERR_ENV_FAILURE', details: { timed_out: true } });
    expect(await failure(bystander.step(0))).toMatchObject({ code: 'ENV_ERR_ENV_FAILURE', details: { worker_lost: true } });
    for (const env of [...hangs, bystander]) await closesPromptly(env, CLOSE_PROMPT_MS);
    const fresh = await session();
    await stepsFine(fresh);
    expect(sharedPool.workers()[0]!.pid).not.toBe(pid);
    expect(await metric('gymwire_python_worker_restarts_total')).toBe(2);
    expect(await metric('gymwire_python_abandoned_calls_total')).toBe(3);
    expect(await metric('gymwire_python_stuck_calls')).toBe(0);
    await fresh.close();
  });

  it('crashes while another session has a call in flight: both get worker_lost, new sessions work afterwards', async () => {
    const slow = await session('late');
    const crashing = await session('crash');
    const inFlight = failure(slow.step(0));
    await new Promise((r) => setTimeout(r, 150));
    const [a, b] = await Promise.all([inFlight, failure(crashing.step(0))]);
    for (const e of [a, b]) expect(e).toMatchObject({ code: 'ENV_ERR_ENV_FAILURE', details: { worker_lost: true } });
    expect(b.message).toMatch(/exited with code 3/);
    await closesPromptly(slow, CLOSE_PROMPT_MS);
    await closesPromptly(crashing, CLOSE_PROMPT_MS);
    const fresh = await session();
    await stepsFine(fresh);
    await fresh.close();
    const res = await fetch(metricsUrl);
    const open = (await res.text())
      .split('\n')
      .filter((l) => l.startsWith('gymwire_open_sessions{'))
      .reduce((n, l) => n + Number(l.split(' ').pop()), 0);
    expect(open).toBe(0);
  });
});

describe('fault matrix: in-process plugin env (a module loaded by the server)', () => {
  let bystander: RemoteEnv;
  beforeAll(async () => {
    bystander = await client.make('fault/Plugin-v0');
    await bystander.reset({ seed: 0 });
  });

  it.each(['null-proto', 'throwing-tostring', 'undefined', 'garbage'])(
    'rejects or answers oddly (%s): ENV_ERR_ENV_FAILURE, never a crash or ENV_ERR_INTERNAL',
    async (fault) => {
      const env = await armed('fault/Plugin-v0', fault);
      const err = await failure(env.step(0));
      expect(err.code).toBe('ENV_ERR_ENV_FAILURE');
      await stepsFine(env);
      await env.close();
      await stepsFine(bystander);
    },
  );

  it('hangs (a step that never settles): the step fails at its deadline, the session is lost, close answers at once', async () => {
    const env = await armed('fault/Plugin-v0', 'hang');
    const stuck = failure(env.step(0));
    const queued = failure(env.step(0));
    await stepsFine(bystander); // while the other session hangs
    expect(await stuck).toMatchObject({ code: 'ENV_ERR_ENV_FAILURE', details: { timed_out: true } });
    expect(await queued).toMatchObject({ code: 'ENV_ERR_ENV_FAILURE', details: { session_lost: true } });
    await closesPromptly(env, CLOSE_PROMPT_MS);
  });

  it('hangs and is closed while the step is still stuck: close answers within closeWaitMs', async () => {
    const env = await armed('fault/Plugin-v0', 'hang');
    const stuck = failure(env.step(0));
    await new Promise((r) => setTimeout(r, 50));
    await closesPromptly(env, CLOSE_WAIT_MS + CLOSE_PROMPT_MS);
    expect((await stuck).code).toBe('ENV_ERR_ENV_FAILURE');
    await stepsFine(bystander);
  });

  it('answers late: the step fails at its deadline and the late answer is dropped', async () => {
    const env = await armed('fault/Plugin-v0', 'late');
    expect(await failure(env.step(0))).toMatchObject({ details: { timed_out: true } });
    await new Promise((r) => setTimeout(r, 300));
    expect(await failure(env.step(0))).toMatchObject({ details: { session_lost: true } });
    await closesPromptly(env, CLOSE_PROMPT_MS);
  });

  afterAll(async () => {
    await bystander?.close();
  });
});

describe('fault matrix: env threads (real worker threads)', () => {
  let bystander: RemoteEnv;
  beforeAll(async () => {
    bystander = await client.make('fault/Thread-v0');
    await bystander.reset({ seed: 0 });
  });

  it.each(['hang', 'late'])('%s (a busy thread): the call fails at its deadline, the thread is replaced, close answers', async (fault) => {
    const env = await armed('fault/Thread-v0', fault);
    expect(await failure(env.step(0))).toMatchObject({ code: 'ENV_ERR_ENV_FAILURE', details: { timed_out: true } });
    expect(await failure(env.step(0))).toMatchObject({ code: 'ENV_ERR_ENV_FAILURE', details: { session_lost: true } });
    await closesPromptly(env, CLOSE_PROMPT_MS);
    const fresh = await client.make('fault/Thread-v0');
    await fresh.reset({ seed: 0 });
    await stepsFine(fresh);
    await fresh.close();
    await stepsFine(bystander);
  });

  it('crashes (the thread exits): ENV_ERR_ENV_FAILURE for its sessions only', async () => {
    const env = await armed('fault/Thread-v0', 'crash');
    expect(await failure(env.step(0))).toMatchObject({ code: 'ENV_ERR_ENV_FAILURE' });
    await closesPromptly(env, CLOSE_PROMPT_MS);
    await stepsFine(bystander);
  });

  it('posts garbage, second answers and answers for ids never sent: dropped, the session carries on', async () => {
    const env = await armed('fault/Thread-v0', 'twice');
    await stepsFine(env);
    await stepsFine(env);
    await env.close();
    await stepsFine(bystander);
  });

  afterAll(async () => {
    await bystander?.close();
  });
});

describe('fault matrix: afterwards', () => {
  it('the server is alive and /metrics counts no session left open by a fault', async () => {
    const res = await fetch(server.url.replace('ws', 'http') + '/metrics');
    const text = await res.text();
    const open = text
      .split('\n')
      .filter((l) => l.startsWith('gymwire_open_sessions{'))
      .reduce((n, l) => n + Number(l.split(' ').pop()), 0);
    expect(open).toBe(0);
    expect(server.core.sessions.size).toBe(0);
  });
});
