/**
 * The ONNX policy contract (docs/policies.md) in the TypeScript SDK, with the seeded models of
 * scripts/onnx/contract-models.ts, on real Bench2Drive and CartPole sessions over a real server.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connect } from '../../client/ts/client.ts';
import type { GymwireClient } from '../../client/ts/client.ts';
import { OnnxPolicy } from '../../client/ts/policies/onnx.ts';
import { PolicyMismatchError } from '../../client/ts/policy.ts';
import { GraphBuilder } from '../../envs/evac/onnx/writer.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { gaussianForward, gaussianWeights, writeContractModels } from '../../scripts/onnx/contract-models.ts';
import { startTestServer } from '../helpers/servers.ts';
import type { TestServer } from '../helpers/servers.ts';

let dir: string;
let models: Record<string, string>;
let srv: TestServer;
let client: GymwireClient;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gymwire-onnx-contract-'));
  models = await writeContractModels(dir);
  srv = await startTestServer('ws');
  client = await connect(srv.connector);
});

afterAll(async () => {
  await client?.close();
  await srv?.close();
  await rm(dir, { recursive: true, force: true });
});

/** Three Bench2Drive observations from real sessions (Dict with a Discrete `command`). */
async function bench2driveObservations() {
  const env = await client.make('gymwire/Bench2Drive-v0', { background_vehicles: 0 });
  const obs: unknown[] = [];
  for (const seed of [0, 1, 2]) {
    const r = await env.reset({ seed });
    obs.push(r.obs);
  }
  const spaces = { observationSpace: env.observationSpace, actionSpace: env.actionSpace };
  await env.close();
  return { obs, spaces };
}

describe('OnnxPolicy contract', () => {
  it('feeds Dict keys by name and a Discrete command through the inputs mapping, and samples the Gaussian head with its seed', async () => {
    const { obs, spaces } = await bench2driveObservations();
    const load = (opts: Parameters<typeof OnnxPolicy.load>[1] = {}) =>
      OnnxPolicy.load(models['gaussianDict']!, { inputs: { route_command: 'command' }, ...opts });
    const [greedy, a, b, other] = await Promise.all([load({ greedy: true }), load({ seed: 3 }), load({ seed: 3 }), load({ seed: 4 })]);
    try {
      for (const p of [greedy, a, b, other]) p.check(spaces);
      const w = gaussianWeights();
      const g = await greedy.act(obs, { sessions: ['s0', 's1', 's2'] });
      obs.forEach((o, i) => {
        const rec = o as Record<string, unknown>;
        const speed = Number((rec['speed'] as Tensor).toNumbers()[0]);
        const target = (rec['target_point'] as Tensor).toNumbers() as number[];
        const { mean, value } = gaussianForward(w, speed, target, rec['command'] as number);
        const bounds = [
          [0, 1],
          [-1, 1],
          [0, 1],
        ] as const;
        const got = (g.actions[i] as Tensor).toNumbers() as number[];
        mean.forEach((m, k) => expect(got[k]).toBeCloseTo(Math.min(bounds[k]![1], Math.max(bounds[k]![0], m)), 5));
        expect(g.values![i]).toBeCloseTo(value, 5);
        // The output the contract does not read is an extra, one row per observation.
        const features = (g as { extras?: Record<string, readonly unknown[]> }).extras!['features']![i] as Tensor;
        expect(features.shape).toEqual([4]);
        expect(features.toNumbers()[3]).toBeCloseTo(Math.tanh(rec['command'] as number), 5);
        // The greedy action is the mean: eps = 0, so the log-prob is the density's peak.
        expect(g.logProbs![i]).toBeCloseTo(-(-1.5 - 2 - 2.5) - 3 * 0.5 * Math.log(2 * Math.PI), 5);
      });
      const [ra, rb, ro] = await Promise.all([a.act(obs, { sessions: [] }), b.act(obs, { sessions: [] }), other.act(obs, { sessions: [] })]);
      const flat = (out: typeof ra) => out.actions.flatMap((t) => (t as Tensor).toNumbers() as number[]);
      expect(flat(ra)).toEqual(flat(rb));
      expect(Array.from(ra.logProbs!)).toEqual(Array.from(rb.logProbs!));
      expect(flat(ra)).not.toEqual(flat(ro));
      expect(flat(ra)).not.toEqual(flat(g));
    } finally {
      await Promise.all([greedy, a, b, other].map((p) => p.close()));
    }
  });

  it('names the unmapped Discrete input, a mapping to no model input, and a Box head without log_std', async () => {
    const { spaces } = await bench2driveObservations();
    const plain = await OnnxPolicy.load(models['gaussianDict']!);
    const typo = await OnnxPolicy.load(models['gaussianDict']!, { inputs: { command: 'command' } });
    try {
      expect(() => plain.check(spaces)).toThrow(
        /model input 'route_command' names no observation key; the env has: .*target_point.*; map inputs to keys with the inputs option/,
      );
      expect(() => typo.check(spaces)).toThrow(/the inputs option maps 'command', which is not a model input/);
    } finally {
      await Promise.all([plain.close(), typo.close()]);
    }
    const g = new GraphBuilder();
    g.output(g.op('Identity', [g.input('x', 'float32', ['N', 2])]), 'mean', 'float32', ['N', 2]);
    const noStd = join(dir, 'no-log-std.onnx');
    await writeFile(noStd, g.toModel());
    const p = await OnnxPolicy.load(noStd);
    try {
      const box = { type: 'box', dtype: 'float32', shape: [2], low: Tensor.from('float32', [2], [-1, -1]), high: Tensor.from('float32', [2], [1, 1]) };
      expect(() => p.check({ observationSpace: box as never, actionSpace: box as never })).toThrow(/'mean' needs a 'log_std' output/);
    } finally {
      await p.close();
    }
  });

  it('runs a fixed-batch model in chunks of its batch, giving what the dynamic-batch model gives', async () => {
    const env = await client.make('gymwire/CartPole-v1');
    const obs: unknown[] = [];
    for (const seed of [0, 1, 2]) obs.push((await env.reset({ seed })).obs);
    const spaces = { observationSpace: env.observationSpace, actionSpace: env.actionSpace };
    await env.close();
    const [fixed, dynamic] = await Promise.all([
      OnnxPolicy.load(models['cartpoleFixedBatch']!, { seed: 9 }),
      OnnxPolicy.load(models['cartpole']!, { seed: 9 }),
    ]);
    try {
      expect(fixed.fixedBatch).toBe(1);
      expect(dynamic.fixedBatch).toBeNull();
      fixed.check(spaces);
      dynamic.check(spaces);
      const [f, d] = await Promise.all([fixed.act(obs, { sessions: [] }), dynamic.act(obs, { sessions: [] })]);
      expect(f.actions).toEqual(d.actions);
      Array.from(d.logProbs!).forEach((lp, i) => expect(f.logProbs![i]).toBeCloseTo(lp, 5));
      Array.from(d.values!).forEach((v, i) => expect(f.values![i]).toBeCloseTo(v, 5));
    } finally {
      await Promise.all([fixed.close(), dynamic.close()]);
    }
  });

  it('refuses at load, before any session, a model whose inputs disagree on the batch dimension', async () => {
    const g = new GraphBuilder();
    const x = g.input('a', 'float32', [1, 2]);
    const y = g.input('b', 'float32', ['N', 2]);
    g.output(g.op('Add', [x, y]), 'action', 'float32', ['N', 2]);
    const path = join(dir, 'mixed-batch.onnx');
    await writeFile(path, g.toModel());
    const err = await OnnxPolicy.load(path).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PolicyMismatchError);
    expect((err as Error).message).toMatch(/inputs disagree on the batch dimension \(a \[1, 2\], b \[N, 2\]\); export it with one dynamic batch axis/);
  });

  it('reports the device that runs: CPU, with a warning, when CUDA cannot load', async () => {
    const warnings: string[] = [];
    const p = await OnnxPolicy.load(models['cartpole']!, { device: 'cuda', logger: { warn: (_o, msg) => warnings.push(msg) } });
    try {
      // This machine may have no CUDA: then the fallback is reported; with CUDA it runs there, silently.
      expect(p.device).toBe(p.provider);
      if (p.device === 'cpu') expect(warnings).toEqual(['CUDA execution provider unavailable; running the ONNX policy on CPU']);
      else expect(warnings).toEqual([]);
    } finally {
      await p.close();
    }
  });
});
