/**
 * Rollout benchmark (issue 7): env-steps/s collecting from 64 CartPole sessions with the small ONNX
 * MLP policy (scripts/onnx/mlp.ts, run in its worker thread), pipelined (2 session groups: one
 * group's step_batch in flight while the other's actions are computed) against lock-step (1 group:
 * act, then step, then act). The server runs in its own process, as it would on another machine.
 * Also: the same pipelined rollout writing the Arrow dataset, and the policy alone (the floor of
 * what inference costs per batch). Target: pipelined >= 1.5x lock-step.
 *
 * Two links: `local` (the server process on this machine, loopback) and `lan` (the same server
 * behind a TCP proxy process that delays every chunk by LINK_MS each way, 1 ms by default, standing in for
 * a server on another machine). Pipelining can only overlap what runs on different cores or waits
 * on the wire: on a loaded 2-core machine the local figure is bounded by CPU, not by the design.
 *   npx tsx test/bench/rollout.bench.ts [--quick]
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

import { connect } from '../../client/ts/client.ts';
import { TrajectoryWriter } from '../../client/ts/dataset/writer.ts';
import { OnnxPolicy } from '../../client/ts/policies/onnx.ts';
import { Rollout } from '../../client/ts/rollout/engine.ts';
import { CartPoleEnv } from '../../envs/classic/cartpole.ts';
import { CARTPOLE_MLP, writeMlp } from '../../scripts/onnx/mlp.ts';

const QUICK = process.argv.includes('--quick');
const SESSIONS = 64;
const STEPS = QUICK ? 8_000 : 20_000;
const ROUNDS = QUICK ? 3 : 7;
const ENV = 'gymwire/CartPole-v1';

function emit(metric: string, value: number, unit: string, extra: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ bench: 'rollout', metric, value: Number(value.toFixed(3)), unit, ...extra })}\n`);
}

const child = spawn(process.execPath, ['--import', 'tsx', 'test/bench/server-process.ts', 'gymwire', 'ws'], { stdio: ['ignore', 'pipe', 'inherit'] });
const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
const localUrl = (JSON.parse(line) as { url: string }).url;
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
  const proxy = spawn(process.execPath, ['-e', PROXY, new URL(target).port, String(delayMs)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [port] = (await once(createInterface({ input: proxy.stdout }), 'line')) as [string];
  return { url: `ws://127.0.0.1:${port.trim()}`, close: () => proxy.kill('SIGKILL') };
}
const link = await delayedLink(localUrl, LINK_MS);
const dir = await mkdtemp(join(tmpdir(), 'gymwire-rollout-bench-'));
const model = join(dir, 'cartpole-mlp.onnx');
// A small MLP whose inference costs about what a step_batch round trip does (~1 ms per batch of
// 32 here), the regime pipelining is for: the 64-unit test MLP is too cheap to hide anything.
const HIDDEN = Number(process.env.BENCH_HIDDEN ?? 256);
const DEPTH = Number(process.env.BENCH_DEPTH ?? 3);
await writeMlp(model, { ...CARTPOLE_MLP, hidden: HIDDEN, depth: DEPTH });
const policy = await OnnxPolicy.load(model, { seed: 0 });
const env = new CartPoleEnv();
let client = await connect(localUrl);
let url = localUrl;

async function run(groups: number, withWriter: boolean): Promise<number> {
  const writer = withWriter ? await TrajectoryWriter.create(join(dir, `ds-${groups}-${Date.now()}`), { envId: ENV, observationSpace: env.observationSpace, actionSpace: env.actionSpace }) : null;
  const rollout = new Rollout({ envId: ENV, targets: [{ client, url, sessions: SESSIONS }], policy, episodes: 1e9, maxSteps: STEPS, onLimit: 'discard', groups, seed: 0, writer });
  const s = await rollout.run();
  await writer?.close({ policy: policy.name });
  return s.stepsPerSec;
}

try {
  policy.check({ observationSpace: env.observationSpace, actionSpace: env.actionSpace });
  // Warm up the server's sessions path, the worker and the JIT.
  await run(2, false);
  // Lock-step and pipelined runs alternate, so both see the same machine load; medians of the
  // rounds are reported, with the speedup as the median of the per-round ratios.
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  for (const [name, target] of [['local', localUrl], ['lan', link.url]] as const) {
    if (target !== url) {
      await client.close();
      client = await connect(target);
      url = target;
      await run(2, false);
    }
    const locks: number[] = [];
    const pipes: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const first = i % 2 === 0;
      const a = await run(first ? 1 : 2, false);
      const b = await run(first ? 2 : 1, false);
      locks.push(first ? a : b);
      pipes.push(first ? b : a);
    }
    const extra = { sessions: SESSIONS, link: name, rounds: ROUNDS, loadavg: Number(loadavg()[0]!.toFixed(2)), ...(name === 'lan' ? { one_way_delay_ms: LINK_MS } : {}) };
    const ratio = median(locks.map((l, i) => pipes[i]! / l));
    emit('lockstep_env_steps_per_s', median(locks), 'steps/s', { ...extra, groups: 1 });
    emit('pipelined_env_steps_per_s', median(pipes), 'steps/s', { ...extra, groups: 2 });
    if (name === 'local') emit('pipelined_with_dataset_env_steps_per_s', await run(2, true), 'steps/s', { ...extra, groups: 2, dataset: 'arrow' });
    emit('speedup_pipelined_vs_lockstep', ratio, 'x', { ...extra, target: 1.5, pass: ratio >= 1.5 });
  }
  const obs = Array.from({ length: SESSIONS / 2 }, () => env.reset({ seed: 0 }).obs);
  const t0 = performance.now();
  const calls = QUICK ? 200 : 1000;
  for (let i = 0; i < calls; i++) await policy.act(obs, { sessions: [] });
  emit('policy_batch32_ms', (performance.now() - t0) / calls, 'ms', { floor: true, hidden: HIDDEN, depth: DEPTH });
} finally {
  await client.close();
  await policy.close();
  link.close();
  child.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
}
