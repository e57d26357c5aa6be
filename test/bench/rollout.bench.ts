/**
 * Rollout benchmark (issue 7): env-steps/s collecting from 64 CartPole sessions with small ONNX
 * MLP policies (scripts/onnx/mlp.ts; `thread: 'auto'` runs the two smallest on the main thread and
 * the wider ones in the policy's worker), pipelined (2 session groups: one group's step_batch in
 * flight while the other's actions are computed) against lock-step (1 group: act, then step, then
 * act). The server runs in its own process, as it would on another machine. Also: the same
 * pipelined rollout writing the Arrow dataset, and the policy alone (the floor of what inference
 * costs per batch). Target: pipelined >= 1.5x lock-step with the headline model, the 4-64-64-2 MLP.
 *
 * Two links for the widest model: `local` (the server process on this machine, loopback) and
 * `lan` (the same server behind a TCP proxy process delaying every chunk by LINK_MS each way, 1 ms
 * by default, standing in for a server on another machine). A fixed delay is a per-call cost: it
 * does not shrink with the group's size, so splitting the same 64 sessions cannot hide it (more
 * sessions in flight would). Pipelining also needs a free core for the server while the client
 * works: each speedup line gives, per round, how many cores other processes kept busy, and the
 * median ratio of the rounds where they held less than half a core and of the others.
 *   npx tsx test/bench/rollout.bench.ts [--quick] [--only=mlp64,mlp64x2]
 *   bash test/bench/run-rollout-built.sh [...]   (bundled, on plain node: the figures in docs/rollouts.md)
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

import { connect } from '../../client/ts/client.ts';
import { TrajectoryWriter } from '../../client/ts/dataset/writer.ts';
import { OnnxPolicy } from '../../client/ts/policies/onnx.ts';
import { Rollout } from '../../client/ts/rollout/engine.ts';
import { CartPoleEnv } from '../../envs/classic/cartpole.ts';
import type { BusyPollSetting } from '../../runtime/busy-poll.ts';
import { CARTPOLE_MLP, writeMlp } from '../../scripts/onnx/mlp.ts';
import { onCore, SERVER_CORE } from './placement.ts';

const QUICK = process.argv.includes('--quick');
const SESSIONS = 64;
const STEPS = QUICK ? 8_000 : 20_000;
const ROUNDS = QUICK ? 5 : 11;
const WARMUP_ROUNDS = QUICK ? 1 : 4;
const ENV = 'gymwire/CartPole-v1';

function emit(metric: string, value: number, unit: string, extra: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ bench: 'rollout', metric, value: Number(value.toFixed(3)), unit, ...extra })}\n`);
}

// BENCH_SERVER points at a prebuilt server-process.mjs (see test/bench/run-rollout-built.sh) to measure without tsx.
const serverEntry = [
  ...(process.env.BENCH_NODE_FLAGS?.split(' ') ?? []),
  ...(process.env.BENCH_SERVER ? [process.env.BENCH_SERVER] : ['--import', 'tsx', 'test/bench/server-process.ts']),
];
// The server gets a core of its own, as on another machine (placement.ts).
async function startBenchServer(busyPollUs: BusyPollSetting): Promise<{ url: string; child: ReturnType<typeof spawn> }> {
  const child = spawn(...onCore(SERVER_CORE, process.execPath, [...serverEntry, 'gymwire', 'ws']), {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, BENCH_BUSY_POLL_US: String(busyPollUs) },
  });
  const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
  return { url: (JSON.parse(line) as { url: string }).url, child };
}
const { url: localUrl, child } = await startBenchServer('auto');
/**
 * By default server and client poll their sockets after each answer / request with an adaptive
 * window (runtime/busy-poll.ts). The headline model is also run with other settings: neither
 * polling (the default of sessions 1-4), the server polling a fixed 50 µs (shorter than lock-step's
 * gap between calls, the client acting on 64 sessions, but longer than pipelining's; session 4's
 * opt-in) and a fixed 400 µs (longer than both: lock-step's best).
 */
const POLLING: readonly { name: string; server: BusyPollSetting; client: BusyPollSetting }[] = [
  { name: 'off', server: 0, client: 0 },
  { name: 'server-50us', server: 50, client: 0 },
  { name: 'server-400us', server: 400, client: 'auto' },
];
const busyServers = await Promise.all(POLLING.map((p) => startBenchServer(p.server)));
/** The server the client is connected to, for its CPU time. */
let serverPid = child.pid;
const LINK_MS = Number(process.env.LINK_MS ?? 1);

/**
 * A TCP proxy in its own process adding a one-way delay to every chunk (order kept), so the delay
 * costs the measured client no CPU. Node timers have 1 ms granularity.
 */
const PROXY = `
const net = require('node:net');
const [port, delay] = [Number(process.argv[1]), Number(process.argv[2])];
const pipe = (from, to) => {
  from.on('data', (c) => setTimeout(() => to.destroyed || to.write(c), delay));
  from.on('close', () => setTimeout(() => to.destroy(), delay));
  from.on('error', () => to.destroy());
};
const server = net.createServer((down) => {
  down.setNoDelay(true);
  const up = net.connect(port, '127.0.0.1', () => up.setNoDelay(true));
  pipe(down, up);
  pipe(up, down);
});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
`;
async function delayedLink(target: string, delayMs: number): Promise<{ url: string; close(): void }> {
  const proxy = spawn(...onCore(SERVER_CORE, process.execPath, ['-e', PROXY, new URL(target).port, String(delayMs)]), { stdio: ['ignore', 'pipe', 'inherit'] });
  const [port] = (await once(createInterface({ input: proxy.stdout }), 'line')) as [string];
  return { url: `ws://127.0.0.1:${port.trim()}`, close: () => proxy.kill('SIGKILL') };
}
const link = await delayedLink(localUrl, LINK_MS);
const dir = await mkdtemp(join(tmpdir(), 'gymwire-rollout-bench-'));
/**
 * Policies, all tanh MLPs from scripts/onnx/mlp.ts: the 64-unit test MLP (4-64-2) and the headline
 * 4-64-64-2, which run a batch of 64 in 15-20 µs, less than a trip to a worker thread costs, so
 * `thread: 'auto'` keeps them on the main thread; and two wider ones (3 x 256, 3 x 768) whose
 * compute grows with the batch and runs in the worker.
 */
const MODELS = [
  { name: 'mlp64', hidden: 64, depth: 1 },
  { name: 'mlp64x2', hidden: 64, depth: 2, headline: true },
  { name: 'mlp256x3', hidden: 256, depth: 3 },
  { name: 'mlp768x3', hidden: 768, depth: 3, lan: true },
] as const satisfies readonly { name: string; hidden: number; depth: number; headline?: boolean; lan?: boolean }[];
const ONLY = process.argv
  .find((a) => a.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',');
const env = new CartPoleEnv();
let client = await connect(localUrl);
let url = localUrl;
let policy: OnnxPolicy | null = null;

/** CPU ms a thread has run, from its scheduler statistics (ns; Linux, 0 elsewhere), to see which thread bounds the rate. */
function cpuMs(task: string): number {
  const path = `${task}/schedstat`;
  return existsSync(path) ? Number(readFileSync(path, 'utf8').split(' ')[0]) / 1e6 : 0;
}
/** All threads of a process (its V8 helpers too). */
const processCpuMs = (pid: number | undefined) =>
  existsSync(`/proc/${pid}/task`) ? readdirSync(`/proc/${pid}/task`).reduce((a, t) => a + cpuMs(`/proc/${pid}/task/${t}`), 0) : 0;
const threadIds = () => (existsSync('/proc/self/task') ? readdirSync('/proc/self/task') : []);
let workerTids: string[] = [];
/** The client process total (main thread, worker, V8 helpers) comes from process.cpuUsage. */
const cpuTotal = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
/** CPU ms all cores spent busy (anyone's work), from /proc/stat's first line. */
function machineBusyMs(): number {
  if (!existsSync('/proc/stat')) return 0;
  const f = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  const idle = (f[3] ?? 0) + (f[4] ?? 0);
  return ((f.reduce((a, b) => a + b, 0) - idle) * 1000) / 100;
}
const usage = () => ({
  machine: machineBusyMs(),
  client: cpuTotal() / 1000,
  worker: workerTids.reduce((a, t) => a + cpuMs(`/proc/self/task/${t}`), 0),
  server: processCpuMs(serverPid),
});

interface RunResult {
  stepsPerSec: number;
  /** CPU ms per 64 env steps of the client's main thread, the policy worker and the server process. */
  cpu: { client: number; worker: number; server: number };
  /** Cores that other processes kept busy during the window (the load the two modes shared). */
  othersCores: number;
}

/**
 * One rollout; rate and CPU are taken over the same steady-state window, from the first progress
 * report after 10% of the steps to the first after 90% (session setup, resets and closing, the same
 * for both modes, are left out).
 */
async function run(groups: number, withWriter: boolean): Promise<RunResult> {
  const writer = withWriter
    ? await TrajectoryWriter.create(join(dir, `ds-${groups}-${Date.now()}`), {
        envId: ENV,
        observationSpace: env.observationSpace,
        actionSpace: env.actionSpace,
      })
    : null;
  type Mark = { t: number; steps: number; cpu: ReturnType<typeof usage> };
  let from: Mark | null = null;
  let to: Mark | null = null;
  const onProgress = (p: { steps: number }) => {
    if (!from && p.steps >= STEPS / 10) from = { t: performance.now(), steps: p.steps, cpu: usage() };
    else if (from && !to && p.steps >= (STEPS * 9) / 10) to = { t: performance.now(), steps: p.steps, cpu: usage() };
  };
  const rollout = new Rollout({
    envId: ENV,
    targets: [{ client, url, sessions: SESSIONS }],
    policy: policy!,
    episodes: 1e9,
    maxSteps: STEPS,
    onLimit: 'discard',
    groups,
    seed: 0,
    writer,
    onProgress,
  });
  await rollout.run();
  await writer?.close({ policy: policy!.name });
  const a = from! as Mark;
  const b = to! as Mark;
  const per64 = (k: keyof ReturnType<typeof usage>) => ((b.cpu[k] - a.cpu[k]) * SESSIONS) / (b.steps - a.steps);
  const ours = b.cpu.client - a.cpu.client + (b.cpu.server - a.cpu.server);
  return {
    stepsPerSec: ((b.steps - a.steps) * 1000) / (b.t - a.t),
    cpu: { client: per64('client'), worker: per64('worker'), server: per64('server') },
    othersCores: Math.max(0, (b.cpu.machine - a.cpu.machine - ours) / (b.t - a.t)),
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const round3 = (x: number) => Number(x.toFixed(3));
const cpuMedian = (rs: RunResult[]) => ({
  client_main_plus_worker: round3(median(rs.map((r) => r.cpu.client))),
  worker: round3(median(rs.map((r) => r.cpu.worker))),
  server: round3(median(rs.map((r) => r.cpu.server))),
});

/**
 * Lock-step and pipelined runs alternate, so both see the same machine load. Reported: min and
 * median rates of each mode over the rounds, the speedup as the median (and min) of per-round
 * ratios, and the CPU spent per 64 env steps (median) by the client process (main thread + policy
 * worker), the worker alone and the server process, to show which one bounds the rate.
 */
async function compare(
  model: string,
  link: 'local' | 'lan',
  withDataset: boolean,
  headline: boolean,
  polling = 'auto',
): Promise<{ lockstep: number; pipelined: number }> {
  // Warm-up: sessions path, worker, and the JIT of client and server for both schedules (one run of
  // each left the per-call code half-optimised: the rates kept climbing for several more runs).
  for (let i = 0; i < WARMUP_ROUNDS; i++) for (const groups of [1, 2]) await run(groups, false);
  const locks: RunResult[] = [];
  const pipes: RunResult[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const first = i % 2 === 0;
    const a = await run(first ? 1 : 2, false);
    const b = await run(first ? 2 : 1, false);
    locks.push(first ? a : b);
    pipes.push(first ? b : a);
  }
  const extra = {
    model,
    thread: policy!.thread,
    sessions: SESSIONS,
    link,
    polling,
    rounds: ROUNDS,
    loadavg: Number(loadavg()[0]!.toFixed(2)),
    ...(link === 'lan' ? { one_way_delay_ms: LINK_MS } : {}),
  };
  const ratios = locks.map((l, i) => pipes[i]!.stepsPerSec / l.stepsPerSec);
  const rates = (rs: RunResult[]) => rs.map((r) => r.stepsPerSec);
  emit('lockstep_env_steps_per_s', median(rates(locks)), 'steps/s', {
    ...extra,
    groups: 1,
    min: round3(Math.min(...rates(locks))),
    cpu_ms_per_64_steps: cpuMedian(locks),
  });
  emit('pipelined_env_steps_per_s', median(rates(pipes)), 'steps/s', {
    ...extra,
    groups: 2,
    min: round3(Math.min(...rates(pipes))),
    cpu_ms_per_64_steps: cpuMedian(pipes),
  });
  if (withDataset) emit('pipelined_with_dataset_env_steps_per_s', (await run(2, true)).stepsPerSec, 'steps/s', { ...extra, groups: 2, dataset: 'arrow' });
  const ratio = median(ratios);
  // The per-round ratios next to how many cores other processes kept busy in that round (10 ms ticks, so coarse).
  const others = ratios.map((_, i) => (locks[i]!.othersCores + pipes[i]!.othersCores) / 2);
  const rounds = ratios.map((r, i) => [Number(r.toFixed(2)), Number(others[i]!.toFixed(1))]);
  // Pipelining needs the second core: split the rounds by whether other processes held one.
  const split = (quiet: boolean) => {
    const picked = ratios.filter((_, i) => others[i]! < 0.5 === quiet);
    return picked.length > 0 ? { rounds: picked.length, median: round3(median(picked)) } : { rounds: 0 };
  };
  emit('speedup_pipelined_vs_lockstep', ratio, 'x', {
    ...extra,
    min: round3(Math.min(...ratios)),
    max: round3(Math.max(...ratios)),
    rounds_ratio_and_others_cores: rounds,
    others_under_half_core: split(true),
    others_half_core_or_more: split(false),
    ...(headline && polling === 'auto' ? { target: 1.5, pass: ratio >= 1.5 } : {}),
  });
  return { lockstep: median(rates(locks)), pipelined: median(rates(pipes)) };
}

/** The server's own cost per step_batch of n sessions (the policy left out), the floor the policy adds to. */
async function stepFloor(n: number, calls: number): Promise<number> {
  const envs = await Promise.all(Array.from({ length: n }, () => client.make(ENV, {})));
  const ids = envs.map((e) => e.sessionId);
  await client.request('reset_batch', { session_ids: ids, seeds: ids.map((_, i) => i), options: null });
  const actions = ids.map(() => 1);
  const t0 = performance.now();
  for (let i = 0; i < calls; i++) await client.request('step_batch', { session_ids: ids, actions, autoreset_mode: 'same_step' });
  const ms = (performance.now() - t0) / calls;
  await Promise.all(envs.map((e) => e.close()));
  return ms;
}

try {
  for (const n of [SESSIONS / 2, SESSIONS]) await stepFloor(n, 100); // warm-up
  for (const n of [SESSIONS / 2, SESSIONS]) emit(`step_batch${n}_ms`, await stepFloor(n, QUICK ? 200 : 600), 'ms', { floor: true });
  for (const m of MODELS) {
    if (ONLY && !ONLY.includes(m.name)) continue;
    const path = join(dir, `${m.name}.onnx`);
    await writeMlp(path, { ...CARTPOLE_MLP, hidden: m.hidden, depth: m.depth });
    await policy?.close();
    const before = new Set(threadIds());
    policy = await OnnxPolicy.load(path, { seed: 0 });
    workerTids = threadIds().filter((t) => !before.has(t));
    policy.check({ observationSpace: env.observationSpace, actionSpace: env.actionSpace });
    const obs = Array.from({ length: SESSIONS }, (_, i) => env.reset({ seed: i }).obs);
    // One call at a time (the time of a batch, not the throughput of two in flight); the first pass warms up.
    for (const pass of [0, 1]) {
      for (const n of [SESSIONS / 2, SESSIONS]) {
        const t0 = performance.now();
        const calls = QUICK ? 100 : 400;
        for (let i = 0; i < calls; i++) await policy.act(obs.slice(0, n), { sessions: [] });
        if (pass === 1)
          emit(`policy_batch${n}_ms`, (performance.now() - t0) / calls, 'ms', { model: m.name, thread: policy.thread, probe_us: policy.probeUs, floor: true });
      }
    }
    const headline = 'headline' in m && m.headline;
    const plain = await compare(m.name, 'local', headline, headline);
    if (headline) {
      const bySetting = [{ polling: 'auto', ...plain }];
      for (const [i, p] of POLLING.entries()) {
        await client.close();
        client = await connect(busyServers[i]!.url, { busyPoll: p.client });
        url = busyServers[i]!.url;
        serverPid = busyServers[i]!.child.pid;
        bySetting.push({ polling: p.name, ...(await compare(m.name, 'local', false, true, p.name)) });
      }
      // Each schedule with the setting that suits it best: the fair reading when the setting is
      // chosen for the workload.
      const best = (k: 'lockstep' | 'pipelined') => bySetting.reduce((a, b) => (b[k] > a[k] ? b : a));
      const [bl, bp] = [best('lockstep'), best('pipelined')];
      emit('speedup_pipelined_vs_lockstep_best_setting', bp.pipelined / bl.lockstep, 'x', {
        model: m.name,
        lockstep: { polling: bl.polling, steps_per_s: Math.round(bl.lockstep) },
        pipelined: { polling: bp.polling, steps_per_s: Math.round(bp.pipelined) },
      });
      await client.close();
      client = await connect(localUrl);
      url = localUrl;
      serverPid = child.pid;
    }
    if ('lan' in m && m.lan) {
      await client.close();
      client = await connect(link.url);
      url = link.url;
      await compare(m.name, 'lan', false, false);
    }
  }
} finally {
  await client.close();
  await policy?.close();
  link.close();
  child.kill('SIGKILL');
  for (const b of busyServers) b.child.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
}
