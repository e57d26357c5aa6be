/**
 * The worker hop of hosted Python envs (issue 16): one CartPole-v1 step from the server to a
 * Python worker and back (HostedEnv.step: msgpack both ways, Gymnasium's env step, value
 * conversions), against a bare pipe round trip of the same bytes to a Python process that only
 * reads and writes them (the floor, same run, same kind of socketpair). The hop's overhead is its
 * round trip less the env's own step (Gymnasium's CartPole-v1 stepped in a plain Python loop, same
 * run). Prints JSON lines; the target is an overhead of at most 2x the bare round trip.
 *   npx tsx test/bench/hosted-hop.bench.ts [--quick]   (python: $GYMWIRE_PYTHON or client/python/.venv/bin/python)
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Duplex } from 'node:stream';

import pino from 'pino';

import { encode } from '../../protocol/codec.ts';
import { makeHostedEnv } from '../../envs/hosted/env.ts';
import { WorkerPool } from '../../envs/hosted/pool.ts';

const QUICK = process.argv.includes('--quick');
const STEPS = QUICK ? 2_000 : 20_000;
const ROUNDS = 5;
const VENV_PYTHON = 'client/python/.venv/bin/python';
const PYTHON = process.env.GYMWIRE_PYTHON ?? (existsSync(VENV_PYTHON) ? VENV_PYTHON : 'python3');

function emit(metric: string, value: number, unit: string, extra: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ bench: 'hosted_hop', metric, value: Number(value.toFixed(3)), unit, ...extra })}\n`);
}

/** The floor's Python side: length-prefixed frames in, a reply of the size the frame's first 4 bytes ask for out. */
const ECHO = `
import os, struct
fd = 3
os.set_blocking(fd, True)
buf = bytearray()
while True:
    while len(buf) < 4 or len(buf) < 4 + struct.unpack_from("<I", buf)[0]:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            raise SystemExit(0)
        buf += chunk
    n = struct.unpack_from("<I", buf)[0]
    frame = bytes(buf[4:4 + n]); del buf[:4 + n]
    reply = struct.unpack_from("<I", frame)[0]
    os.write(fd, struct.pack("<I", reply) + bytes(reply))
`;

async function bareRoundTrips(requestBytes: number, replyBytes: number, count: number): Promise<number> {
  const child = spawn(PYTHON, ['-c', ECHO], { stdio: ['ignore', 'inherit', 'inherit', 'pipe'] });
  const socket = child.stdio[3] as Duplex;
  const frame = Buffer.alloc(4 + requestBytes, 1);
  frame.writeUInt32LE(requestBytes, 0);
  frame.writeUInt32LE(replyBytes, 4);
  let waiting: (() => void) | null = null;
  let received = 0;
  socket.on('data', (chunk: Buffer) => {
    received += chunk.byteLength;
    if (received >= 4 + replyBytes) {
      received -= 4 + replyBytes;
      waiting?.();
    }
  });
  const once = () =>
    new Promise<void>((resolve) => {
      waiting = resolve;
      socket.write(frame);
    });
  for (let i = 0; i < 200; i++) await once();
  const t0 = performance.now();
  for (let i = 0; i < count; i++) await once();
  const us = ((performance.now() - t0) * 1000) / count;
  child.kill();
  return us;
}

/**
 * Gymnasium's own CartPole-v1 step in a Python loop (µs of CPU time, median of rounds): what the
 * hop carries, not what it costs. CPU time, not wall time, so other load on the machine does not
 * inflate it (which would flatter the hop's overhead).
 */
async function envStepUs(count: number): Promise<number> {
  const code = `
import gymnasium as gym, time, statistics
env = gym.make("CartPole-v1"); env.reset(seed=0)
rounds = []
for r in range(${ROUNDS}):
    t = time.process_time()
    for i in range(${count}):
        _, _, te, tr, _ = env.step(i & 1)
        if te or tr: env.reset()
    rounds.append((time.process_time() - t) * 1e6 / ${count})
print(statistics.median(rounds))
`;
  const child = spawn(PYTHON, ['-c', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  await new Promise((resolve) => child.on('exit', resolve));
  return Number(out.trim());
}

async function main(): Promise<void> {
  const pool = new WorkerPool({ python: PYTHON, size: 1, logger: pino({ level: 'warn' }) });
  const env = await makeHostedEnv(pool, { kind: 'gym', id: 'CartPole-v1' }, {}, 'gym/CartPole-v1');
  // The bytes of one hop: the step call, and a typical answer.
  await env.reset({ seed: 0 });
  const answer = await env.step(1);
  const requestBytes = encode({ ids: [1], calls: [{ op: 'step', action: 1, handle: 1 }] }).byteLength;
  const replyBytes = encode({ ids: [1], results: [{ ok: [answer.obs, answer.reward, answer.terminated, answer.truncated, answer.info] }] }).byteLength;
  const hops: number[] = [];
  const floors: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    let ended = false;
    await env.reset({ seed: round });
    const t0 = performance.now();
    for (let i = 0; i < STEPS; i++) {
      if (ended) {
        await env.reset({ seed: null });
      }
      const r = await env.step(i & 1);
      ended = r.terminated || r.truncated;
    }
    hops.push(((performance.now() - t0) * 1000) / STEPS);
    floors.push(await bareRoundTrips(requestBytes, replyBytes, STEPS));
  }
  await env.close();
  await pool.close();
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const hop = median(hops);
  const floor = median(floors);
  const envStep = await envStepUs(STEPS);
  emit('hosted_step_round_trip_us', hop, 'us', { request_bytes: requestBytes, reply_bytes: replyBytes, rounds: hops.map((x) => Number(x.toFixed(1))) });
  emit('bare_pipe_round_trip_us', floor, 'us', { rounds: floors.map((x) => Number(x.toFixed(1))) });
  emit('env_step_in_python_cpu_us', envStep, 'us');
  emit('ratio_round_trip_over_bare_pipe', hop / floor, 'x', { python: PYTHON });
  emit('ratio_hop_overhead_over_bare_pipe', (hop - envStep) / floor, 'x', { target: 2 });
  // Rounds alternate hop and floor, so a per-round ratio is less exposed to other load on the machine.
  emit('ratio_hop_overhead_over_bare_pipe_per_round_median', median(hops.map((h, i) => (h - envStep) / floors[i]!)), 'x', { target: 2 });
}

await main();
