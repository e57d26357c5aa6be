/**
 * Core benchmarks (issue: the wire protocol and server). Prints JSON lines; each figure sits next
 * to a floor measured in the same run:
 *   - step round trip, CartPole, one client, sequential: p50/p99 on ws and uws vs a bare echo of
 *     the same bytes on the same library;
 *   - 224x224x3 uint8 observations, 8 sessions in parallel: steps/s and MB/s vs the echo floor;
 *   - 256 CartPole sessions stepped in one frame: env-steps/s vs a local in-process vector env;
 *   - 2,048 sessions open and stepping: every step answered, memory per idle session.
 * Servers run in their own process, pinned to the other core than the client's (placement.ts);
 * round trips are also measured with both on one core.
 *   npx tsx test/bench/core.bench.ts [--quick]
 */
import { fork, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

import WebSocket from 'ws';

import { connect } from '../../client/ts/client.ts';
import { CartPoleEnv } from '../../envs/classic/cartpole.ts';
import { encode } from '../../protocol/codec.ts';
import type { BusyPollSetting } from '../../runtime/busy-poll.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { CLIENT_CORE, onCore, PINNED, SERVER_CORE } from './placement.ts';

const QUICK = process.argv.includes('--quick');
const scale = QUICK ? 0.2 : 1;

function emit(bench: string, metric: string, value: number, unit: string, extra: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ bench, metric, value: Number(value.toFixed(3)), unit, ...extra })}\n`);
}

const SEPARATE_CORES = SERVER_CORE;
const SAME_CORE = CLIENT_CORE;

/** `busyPoll`: the gymwire server's polling setting (runtime/busy-poll.ts); its default is 'auto'. */
async function spawnServer(
  kind: 'gymwire' | 'echo',
  transport: 'ws' | 'uws',
  cpu = SEPARATE_CORES,
  busyPoll: BusyPollSetting = 'auto',
): Promise<{ url: string; stop(): void }> {
  // BENCH_SERVER points at a prebuilt server-process.mjs (see test/bench/run-built.sh) to measure without tsx.
  const v8 = process.env.BENCH_NODE_FLAGS ? process.env.BENCH_NODE_FLAGS.split(' ') : [];
  const entry = [...v8, ...(process.env.BENCH_SERVER ? [process.env.BENCH_SERVER] : ['--import', 'tsx', 'test/bench/server-process.ts'])];
  const [cmd, args] = onCore(cpu, process.execPath, [...entry, kind, transport]);
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, BENCH_BUSY_POLL_US: String(busyPoll) } });
  const rl = createInterface({ input: child.stdout });
  const [line] = (await once(rl, 'line')) as [string];
  return { url: (JSON.parse(line) as { url: string }).url, stop: () => child.kill('SIGTERM') };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

/** Sequential round trips on a bare ws client: send `requestBytes` bytes, receive `replyBytes`. */
async function echoRoundTrips(url: string, requestBytes: number, replyBytes: number, count: number): Promise<number[]> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  await once(ws, 'open');
  const frame = Buffer.alloc(requestBytes, 1);
  frame.writeUInt32LE(replyBytes, 0);
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    ws.send(frame, { binary: true });
    await once(ws, 'message');
    times.push(performance.now() - t0);
  }
  ws.close();
  return times;
}

/**
 * Sequential step round trips against a bare echo of the same bytes. The echo does not poll its
 * socket, so gymwire is measured twice: with polling off at both ends (like for like: the target)
 * and with its defaults (adaptive polling, runtime/busy-poll.ts: it opens when answers come back
 * within its limit).
 */
async function latency(transport: 'ws' | 'uws', cpu: number): Promise<void> {
  // gymwire and the bare echo run side by side in alternating rounds, so machine drift hits both alike.
  const rounds = QUICK ? 2 : 6;
  const perRound = Math.round(1000 * scale);
  const sides = await Promise.all(
    (['off', 'default'] as const).map(async (polling) => {
      const srv = await spawnServer('gymwire', transport, cpu, polling === 'off' ? 0 : 'auto');
      const c = await connect(srv.url, { busyPoll: polling === 'off' ? 0 : 'auto' });
      const env = await c.make('gymwire/CartPole-v1');
      await env.reset({ seed: 0 });
      return { polling, srv, c, env, times: [] as number[], ratios: [] as number[] };
    }),
  );
  const echo = await spawnServer('echo', transport, cpu);
  const { env } = sides[0]!;
  const last = await env.step(0);
  const reqBytes = encode({ session_id: env.sessionId, action: 1, id: 123456, type: 'step', ack: 123455 }).byteLength;
  const resBytes = encode({ id: 123456, type: 'result', result: { obs: last.obs, reward: 1, terminated: false, truncated: false, info: {} } }).byteLength;
  const steps = async (side: (typeof sides)[number], n: number): Promise<number[]> => {
    const times: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      const r = await side.env.step(i % 2);
      times.push(performance.now() - t0);
      if (r.terminated || r.truncated) await side.env.reset();
    }
    return times;
  };
  // Warm up every side first: the JIT needs a few thousand steps before round trips settle.
  for (const side of sides) await steps(side, 5000 * scale);
  await echoRoundTrips(echo.url, 60, 60, Math.round(5000 * scale));
  const floor: number[] = [];
  for (let round = 0; round < rounds + 1; round++) {
    const mine: number[][] = [];
    for (const side of sides) mine.push(await steps(side, perRound));
    const theirs = await echoRoundTrips(echo.url, reqBytes, resBytes, perRound);
    if (round === 0) continue; // warm-up round for all
    floor.push(...theirs);
    sides.forEach((side, k) => {
      side.times.push(...mine[k]!);
      side.ratios.push(median(mine[k]!) / median(theirs));
    });
  }
  for (const side of sides) {
    await side.c.close();
    side.srv.stop();
  }
  echo.stop();
  floor.sort((a, b) => a - b);
  const f50 = percentile(floor, 0.5) * 1000;
  const placement = PINNED ? { placement: cpu === SAME_CORE ? 'client and server on one core' : 'client and server on separate cores' } : {};
  for (const side of sides) {
    const times = side.times.sort((a, b) => a - b);
    const ratios = side.ratios.sort((a, b) => a - b);
    const p50 = percentile(times, 0.5) * 1000;
    const polling = side.polling === 'off' ? 'off at both ends (like the echo)' : 'default (adaptive at both ends)';
    emit(`step_rtt_${transport}`, 'p50', p50, 'us', {
      ...placement,
      polling,
      floor_p50_us: Number(f50.toFixed(1)),
      ratio: Number((p50 / f50).toFixed(2)),
      round_ratios_min_median_max: [ratios[0], median(ratios), ratios[ratios.length - 1]].map((r) => Number(r!.toFixed(2))),
      ...(side.polling === 'off' ? { target_ratio: 1.5 } : {}),
    });
    emit(`step_rtt_${transport}`, 'p99', percentile(times, 0.99) * 1000, 'us', {
      ...placement,
      polling,
      floor_p99_us: Number((percentile(floor, 0.99) * 1000).toFixed(1)),
    });
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

const IMAGE_SESSIONS = 8;
const FRAME_BYTES = 224 * 224 * 3;

interface RoundResult {
  steps: number;
  bytes: number;
  seconds: number;
}

/** Steps every lane in parallel until `ms` have passed; counts the steps and the payload bytes they returned. */
async function timedRound<L>(ms: number, lanes: readonly L[], stepOnce: (lane: L) => Promise<number>): Promise<RoundResult> {
  let steps = 0;
  let bytes = 0;
  const t0 = performance.now();
  const deadline = t0 + ms;
  await Promise.all(
    lanes.map(async (lane) => {
      while (performance.now() < deadline) {
        // Awaited first: `bytes += await ...` would read `bytes` before the await and drop the other lanes' counts.
        const got = await stepOnce(lane);
        bytes += got;
        steps++;
      }
    }),
  );
  return { steps, bytes, seconds: (performance.now() - t0) / 1000 };
}

/**
 * One side of the image benchmark in its own process (`--image-client gymwire|echo URL`): the parent
 * asks for rounds over IPC. The two clients never share a process, so neither inherits the other's
 * heap and allocator state (measured: a gymwire client alternating with an echo client in one process
 * ran ~30 % slower than in a process of its own).
 */
async function imageClient(kind: string, url: string): Promise<void> {
  let round: (ms: number) => Promise<RoundResult>;
  let stop: () => Promise<void>;
  if (kind === 'gymwire') {
    const c = await connect(url);
    const envs = await Promise.all(Array.from({ length: IMAGE_SESSIONS }, () => c.make('bench/Image-v0')));
    await Promise.all(envs.map((e) => e.reset()));
    round = (ms) => timedRound(ms, envs, async (e) => ((await e.step(0)).obs as Tensor).byteLength);
    stop = () => c.close();
  } else {
    const sockets = await Promise.all(
      Array.from({ length: IMAGE_SESSIONS }, async () => {
        const ws = new WebSocket(url, { perMessageDeflate: false });
        await once(ws, 'open');
        return ws;
      }),
    );
    const request = Buffer.alloc(60, 1);
    request.writeUInt32LE(FRAME_BYTES + 120, 0); // the echo answers with a frame the size of a step answer
    round = (ms) =>
      timedRound(ms, sockets, async (ws) => {
        ws.send(request, { binary: true });
        await once(ws, 'message');
        return FRAME_BYTES;
      });
    stop = async () => {
      for (const ws of sockets) ws.close();
    };
  }
  process.on('message', (m: { round?: number }) => {
    if (m.round === undefined) {
      void stop().then(() => process.exit(0));
      return;
    }
    void round(m.round).then((r) => process.send!(r));
  });
  process.send!({ ready: true });
}

async function spawnImageClient(kind: 'gymwire' | 'echo', url: string): Promise<{ round(ms: number): Promise<RoundResult>; stop(): void }> {
  // Same script, same node flags (and loader, under tsx), same core as this process.
  const child = fork(process.argv[1]!, ['--image-client', kind, url], { execArgv: process.execArgv });
  await once(child, 'message');
  return {
    round: async (ms) => {
      child.send({ round: ms });
      const [r] = (await once(child, 'message')) as [RoundResult];
      return r;
    },
    stop: () => child.send({}),
  };
}

async function images(transport: 'ws' | 'uws'): Promise<void> {
  // gymwire and the echo floor alternate in short rounds (like the latency bench), so machine drift hits both alike.
  const rounds = QUICK ? 2 : 6;
  const roundMs = QUICK ? 300 : 600;
  const srv = await spawnServer('gymwire', transport);
  const echo = await spawnServer('echo', transport);
  const mine = await spawnImageClient('gymwire', srv.url);
  const theirs = await spawnImageClient('echo', echo.url);
  let steps = 0;
  let bytes = 0;
  let seconds = 0;
  let floorBytes = 0;
  let floorSeconds = 0;
  const ratios: number[] = [];
  for (let round = 0; round < rounds + 1; round++) {
    const m = await mine.round(roundMs);
    const t = await theirs.round(roundMs);
    if (round === 0) continue; // warm-up round for both
    steps += m.steps;
    bytes += m.bytes;
    seconds += m.seconds;
    floorBytes += t.bytes;
    floorSeconds += t.seconds;
    ratios.push(m.bytes / m.seconds / (t.bytes / t.seconds));
  }
  mine.stop();
  theirs.stop();
  srv.stop();
  echo.stop();
  const mbs = bytes / seconds / 1e6;
  const floorMbs = floorBytes / floorSeconds / 1e6;
  ratios.sort((a, b) => a - b);
  emit(`image_224_8sessions_${transport}`, 'steps_per_s', steps / seconds, 'steps/s');
  emit(`image_224_8sessions_${transport}`, 'throughput', mbs, 'MB/s', {
    floor_mb_s: Number(floorMbs.toFixed(1)),
    ratio: Number((mbs / floorMbs).toFixed(2)),
    round_ratios_min_median_max: [ratios[0], median(ratios), ratios[ratios.length - 1]].map((r) => Number(r!.toFixed(2))),
    target_ratio: 0.8,
  });
}

async function batched(transport: 'ws' | 'uws'): Promise<void> {
  const n = 256;
  const seconds = 3 * scale + 0.5;
  const srv = await spawnServer('gymwire', transport);
  const c = await connect(srv.url);
  const vec = await c.makeVec('gymwire/CartPole-v1', n, { autoresetMode: 'next_step' });
  await vec.reset({ seed: 0 });
  const actions = Tensor.from(
    'int64',
    [n],
    Array.from({ length: n }, (_, i) => i % 2),
  );
  let batches = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < seconds * 1000) {
    await vec.step(actions);
    batches++;
  }
  const elapsed = (performance.now() - t0) / 1000;
  await c.close();
  srv.stop();
  // Floor: the same 256 CartPoles stepped in this process, no wire.
  const local = Array.from({ length: n }, () => new CartPoleEnv());
  local.forEach((e, i) => e.reset({ seed: i }));
  let localSteps = 0;
  const l0 = performance.now();
  while (performance.now() - l0 < 1000) {
    for (let i = 0; i < n; i++) {
      const r = local[i]!.step(i % 2);
      if (r.terminated) local[i]!.reset();
    }
    localSteps += n;
  }
  const localRate = localSteps / ((performance.now() - l0) / 1000);
  const rate = (batches * n) / elapsed;
  emit(`batched_256_cartpole_${transport}`, 'env_steps_per_s', rate, 'steps/s', { floor_local_vector_env: Math.round(localRate), target: 300000 });
}

async function concurrency(): Promise<void> {
  const total = QUICK ? 512 : 2048;
  const perConnection = 128;
  const stepsEach = QUICK ? 5 : 20;
  const srv = await spawnServer('gymwire', 'ws');
  const health = async () =>
    (await (await fetch(`${srv.url.replace('ws://', 'http://')}/healthz`)).json()) as { rss_bytes: number; heap_used_bytes: number; sessions: number };
  const clients = await Promise.all(Array.from({ length: total / perConnection }, () => connect(srv.url)));
  await new Promise((r) => setTimeout(r, 200));
  const before = await health();
  const envs = (await Promise.all(clients.map((c) => Promise.all(Array.from({ length: perConnection }, () => c.make('gymwire/CartPole-v1')))))).flat();
  await Promise.all(envs.map((e, i) => e.reset({ seed: i })));
  const after = await health();
  let answered = 0;
  const t0 = performance.now();
  await Promise.all(
    envs.map(async (e) => {
      for (let k = 0; k < stepsEach; k++) {
        const r = await e.step(k % 2);
        answered++;
        if (r.terminated || r.truncated) await e.reset();
      }
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  await Promise.all(clients.map((c) => c.close()));
  srv.stop();
  emit('sessions_2048', 'open_sessions', after.sessions, 'sessions');
  emit('sessions_2048', 'steps_answered', answered, 'steps', { expected: total * stepsEach, all_answered: answered === total * stepsEach });
  emit('sessions_2048', 'steps_per_s', answered / elapsed, 'steps/s');
  emit('sessions_2048', 'memory_per_idle_session', (after.heap_used_bytes - before.heap_used_bytes) / total / 1024, 'KiB (heap)', {
    rss_per_session_kib: Number(((after.rss_bytes - before.rss_bytes) / total / 1024).toFixed(1)),
  });
}

const imageClientAt = process.argv.indexOf('--image-client');
if (imageClientAt >= 0) {
  await imageClient(process.argv[imageClientAt + 1]!, process.argv[imageClientAt + 2]!);
  await new Promise(() => {}); // serve rounds until the parent says stop
}

const only = process.argv.find((a) => a.startsWith('--only='))?.slice(7);
const benches: [string, () => Promise<void>][] = [
  ['latency-ws', () => latency('ws', SEPARATE_CORES)],
  ['latency-uws', () => latency('uws', SEPARATE_CORES)],
  ...(PINNED
    ? ([
        ['latency-ws-one-core', () => latency('ws', SAME_CORE)],
        ['latency-uws-one-core', () => latency('uws', SAME_CORE)],
      ] as [string, () => Promise<void>][])
    : []),
  ['images-ws', () => images('ws')],
  ['images-uws', () => images('uws')],
  ['batched-ws', () => batched('ws')],
  ['batched-uws', () => batched('uws')],
  ['concurrency', concurrency],
];
for (const [name, run] of benches) if (!only || name.startsWith(only)) await run();
process.exit(0);
