/**
 * Rollout benchmark (issue 7): env-steps/s collecting from 64 CartPole sessions with small ONNX
 * MLP policies (scripts/onnx/mlp.ts, run in the policy's worker thread), pipelined (2 session groups: one
 * group's step_batch in flight while the other's actions are computed) against lock-step (1 group:
 * act, then step, then act). The server runs in its own process, as it would on another machine.
 * Also: the same pipelined rollout writing the Arrow dataset, and the policy alone (the floor of
 * what inference costs per batch). Target: pipelined >= 1.5x lock-step.
 *
 * Two links for the headline model: `local` (the server process on this machine, loopback) and
 * `lan` (the same server behind a TCP proxy process delaying every chunk by LINK_MS each way, 1 ms
 * by default, standing in for a server on another machine). A fixed delay is a per-call cost: it
 * does not shrink with the group's size, so splitting the same 64 sessions cannot hide it (more
 * sessions in flight would). Pipelining also needs idle cores: on a loaded 2-core machine every
 * thread competes for the same CPU; each line records the load average.
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
/**
 * Policies, all tanh MLPs from scripts/onnx/mlp.ts: the 64-unit test MLP, whose inference is mostly
 * the worker hop's fixed cost, and two wider ones whose compute grows with the batch. Pipelining
 * pays when the policy's and the envs' costs grow with the batch and are of similar size: with a
 * fixed per-call cost, two groups of 32 take as long per call as one of 64 and nothing is gained.
 * The last one is the headline figure.
 */
const MODELS = [
  { name: 'mlp64', hidden: 64, depth: 1 },
  { name: 'mlp256x3', hidden: 256, depth: 3 },
  { name: 'mlp768x3', hidden: 768, depth: 3 },
] as const;
const env = new CartPoleEnv();
let client = await connect(localUrl);
let url = localUrl;
let policy: OnnxPolicy | null = null;

async function run(groups: number, withWriter: boolean): Promise<number> {
  const writer = withWriter ? await TrajectoryWriter.create(join(dir, `ds-${groups}-${Date.now()}`), { envId: ENV, observationSpace: env.observationSpace, actionSpace: env.actionSpace }) : null;
  const rollout = new Rollout({ envId: ENV, targets: [{ client, url, sessions: SESSIONS }], policy: policy!, episodes: 1e9, maxSteps: STEPS, onLimit: 'discard', groups, seed: 0, writer });
  const s = await rollout.run();
  await writer?.close({ policy: policy!.name });
  return s.stepsPerSec;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Lock-step and pipelined runs alternate, so both see the same machine load; medians of the rounds, speedup = median of per-round ratios. */
async function compare(model: string, link: 'local' | 'lan', withDataset: boolean): Promise<void> {
  await run(2, false); // warm-up: sessions path, worker, JIT
  const locks: number[] = [];
  const pipes: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const first = i % 2 === 0;
    const a = await run(first ? 1 : 2, false);
    const b = await run(first ? 2 : 1, false);
    locks.push(first ? a : b);
    pipes.push(first ? b : a);
  }
  const extra = { model, sessions: SESSIONS, link, rounds: ROUNDS, loadavg: Number(loadavg()[0]!.toFixed(2)), ...(link === 'lan' ? { one_way_delay_ms: LINK_MS } : {}) };
  const ratio = median(locks.map((l, i) => pipes[i]! / l));
  emit('lockstep_env_steps_per_s', median(locks), 'steps/s', { ...extra, groups: 1 });
  emit('pipelined_env_steps_per_s', median(pipes), 'steps/s', { ...extra, groups: 2 });
  if (withDataset) emit('pipelined_with_dataset_env_steps_per_s', await run(2, true), 'steps/s', { ...extra, groups: 2, dataset: 'arrow' });
  emit('speedup_pipelined_vs_lockstep', ratio, 'x', { ...extra, target: 1.5, pass: ratio >= 1.5 });
}

try {
  for (const m of MODELS) {
    const path = join(dir, `${m.name}.onnx`);
    await writeMlp(path, { ...CARTPOLE_MLP, hidden: m.hidden, depth: m.depth });
    await policy?.close();
    policy = await OnnxPolicy.load(path, { seed: 0 });
    policy.check({ observationSpace: env.observationSpace, actionSpace: env.actionSpace });
    const obs = Array.from({ length: SESSIONS }, (_, i) => env.reset({ seed: i }).obs);
    for (const n of [SESSIONS / 2, SESSIONS]) {
      const t0 = performance.now();
      const calls = QUICK ? 100 : 400;
      for (let i = 0; i < calls; i++) await policy.act(obs.slice(0, n), { sessions: [] });
      emit(`policy_batch${n}_ms`, (performance.now() - t0) / calls, 'ms', { model: m.name, floor: true });
    }
    const headline = m === MODELS[MODELS.length - 1];
    await compare(m.name, 'local', headline);
    if (headline) {
      await client.close();
      client = await connect(link.url);
      url = link.url;
      await compare(m.name, 'lan', false);
    }
  }
} finally {
  await client.close();
  await policy?.close();
  link.close();
  child.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
}
