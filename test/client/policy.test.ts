import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { INLINE_BELOW_US, OnnxPolicy } from '../../client/ts/policies/onnx.ts';
import { PolicyMismatchError, RandomPolicy, perSessionPolicy } from '../../client/ts/policy.ts';
import type { PolicyOutput } from '../../client/ts/policy.ts';
import { box, contains, dict, discrete } from '../../protocol/spaces.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { buildMlp, CARTPOLE_MLP, mlpForward, mlpWeights, writeMlp } from '../../scripts/onnx/mlp.ts';

const obsSpace = box({ low: -Infinity, high: Infinity, shape: [4], dtype: 'float32' });
const spaces = { observationSpace: obsSpace, actionSpace: discrete(2) };

let dir: string;
let modelPath: string;
let policy: OnnxPolicy;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gymwire-policy-'));
  modelPath = join(dir, 'cartpole.onnx');
  await writeMlp(modelPath);
  policy = await OnnxPolicy.load(modelPath);
});

afterAll(async () => {
  await policy?.close();
  await rm(dir, { recursive: true, force: true });
});

type PolicyOutputPair = [PolicyOutput, PolicyOutput];

function observations(n: number): Tensor[] {
  return Array.from({ length: n }, (_, i) => Tensor.from('float32', [4], [0.01 * i, -0.3 + 0.02 * i, 0.05 - 0.003 * i, 0.4 * Math.sin(i)]));
}

describe('OnnxPolicy', () => {
  it('matches the MLP computed in plain TS: values, greedy actions and log-probs over a batch', async () => {
    const greedy = await OnnxPolicy.load(modelPath, { greedy: true });
    try {
      greedy.check(spaces);
      const obs = observations(37);
      const out = await greedy.act(obs, { sessions: obs.map((_, i) => `s${i}`) });
      const w = mlpWeights(CARTPOLE_MLP);
      obs.forEach((o, i) => {
        const ref = mlpForward(w, o.data as Float32Array);
        const best = ref.logits[1]! > ref.logits[0]! ? 1 : 0;
        const logZ = Math.log(ref.logits.reduce((s, l) => s + Math.exp(l), 0));
        expect(out.actions[i]).toBe(best);
        expect(out.values![i]).toBeCloseTo(ref.value, 5);
        expect(out.logProbs![i]).toBeCloseTo(ref.logits[best]! - logZ, 5);
      });
      expect(greedy.provider).toBe('cpu');
    } finally {
      await greedy.close();
    }
  });

  it('samples actions whose log-probs match the reference softmax, reproducibly for a seed', async () => {
    policy.check(spaces);
    const obs = observations(16);
    const out = await policy.act(obs, { sessions: [] });
    const w = mlpWeights(CARTPOLE_MLP);
    obs.forEach((o, i) => {
      const ref = mlpForward(w, o.data as Float32Array);
      const a = out.actions[i] as number;
      const logZ = Math.log(ref.logits.reduce((s, l) => s + Math.exp(l), 0));
      expect(contains(discrete(2), a)).toBeNull();
      expect(out.logProbs![i]).toBeCloseTo(ref.logits[a]! - logZ, 5);
    });
    const again = await OnnxPolicy.load(modelPath);
    try {
      again.check(spaces);
      expect((await again.act(obs, { sessions: [] })).actions).toEqual(out.actions);
    } finally {
      await again.close();
    }
  });

  it("runs on the caller's thread or in the worker with the same results, in call order when calls overlap", async () => {
    const obs = observations(64);
    const [inline, worker] = await Promise.all([
      OnnxPolicy.load(modelPath, { thread: 'main', seed: 5 }),
      OnnxPolicy.load(modelPath, { thread: 'worker', seed: 5 }),
    ]);
    try {
      expect([inline.thread, worker.thread]).toEqual(['main', 'worker']);
      for (const p of [inline, worker]) p.check(spaces);
      // Two batches in flight at once: each answer belongs to its own call and the sampler runs in call order.
      const outs = await Promise.all(
        [inline, worker].map((p) => Promise.all([p.act(obs.slice(0, 40), { sessions: [] }), p.act(obs.slice(40), { sessions: [] })])),
      );
      const [a, b] = outs as [PolicyOutputPair, PolicyOutputPair];
      a.forEach((out, k) => {
        expect(out.actions).toEqual(b[k]!.actions);
        expect(Array.from(out.logProbs!)).toEqual(Array.from(b[k]!.logProbs!));
        expect(Array.from(out.values!)).toEqual(Array.from(b[k]!.values!));
      });
      expect(a[0].actions).toHaveLength(40);
      expect(a[1].actions).toHaveLength(24);
    } finally {
      await Promise.all([inline.close(), worker.close()]);
    }
  });

  it('times the model at load and places it by that cost (thread: auto)', async () => {
    const auto = await OnnxPolicy.load(modelPath);
    try {
      expect(auto.probeUs).toBeGreaterThan(0);
      expect(auto.thread).toBe(auto.probeUs! < INLINE_BELOW_US ? 'main' : 'worker');
      auto.check(spaces);
      expect((await auto.act(observations(3), { sessions: [] })).actions).toHaveLength(3);
    } finally {
      await auto.close();
    }
    await auto.close();
    await expect(auto.act(observations(1), { sessions: [] })).rejects.toThrow(/closed/);
  });

  it("finishes a batch already asked for when closed on the caller's thread", async () => {
    const inline = await OnnxPolicy.load(modelPath, { thread: 'main' });
    inline.check(spaces);
    const pending = inline.act(observations(5), { sessions: [] });
    await inline.close();
    expect((await pending).actions).toHaveLength(5);
  });

  it('falls back to CPU when CUDA is asked for and cannot load, and says so once', async () => {
    const warnings: string[] = [];
    const p = await OnnxPolicy.load(modelPath, { device: 'cuda', logger: { warn: (_o, msg) => warnings.push(msg) } });
    try {
      p.check(spaces);
      expect((await p.act(observations(2), { sessions: [] })).actions).toHaveLength(2);
      if (p.provider === 'cpu') expect(warnings).toHaveLength(1);
      else expect(warnings).toHaveLength(0);
    } finally {
      await p.close();
    }
  });

  it('refuses an observation space the model does not fit, naming the mismatch', async () => {
    expect(() => policy.check({ observationSpace: box({ low: -1, high: 1, shape: [6], dtype: 'float32' }), actionSpace: discrete(2) })).toThrow(
      /model input 'obs' has shape \[N, 4\] but the observation is \[6\]/,
    );
    expect(() => policy.check({ observationSpace: obsSpace, actionSpace: discrete(3) })).toThrow(
      /'logits' has 2 actions but the action space is Discrete\(3\)/,
    );
    expect(() => policy.check({ observationSpace: obsSpace, actionSpace: box({ low: -1, high: 1, shape: [2] }) })).toThrow(PolicyMismatchError);
    expect(() => policy.check({ observationSpace: dict({ image: obsSpace }), actionSpace: discrete(2) })).toThrow(
      /model input 'obs' names no observation key; the env has: image; map inputs to keys with the inputs option/,
    );
    const named = join(dir, 'named.onnx');
    await writeFile(named, buildMlp(mlpWeights({ ...CARTPOLE_MLP, inputName: 'state' })));
    const p = await OnnxPolicy.load(named);
    try {
      expect(() => p.check({ observationSpace: dict({ state: obsSpace }), actionSpace: discrete(2) })).not.toThrow();
      expect(() => p.check({ observationSpace: discrete(4), actionSpace: discrete(2) })).toThrow(/a Discrete observation is one value: \[N\] or \[N, 1\]/);
    } finally {
      await p.close();
    }
  });

  it('reports a model that cannot be loaded', async () => {
    const bad = join(dir, 'bad.onnx');
    await writeFile(bad, new Uint8Array([1, 2, 3]));
    await expect(OnnxPolicy.load(bad)).rejects.toThrow(/cannot load ONNX model/);
  });
});

describe('RandomPolicy and perSessionPolicy', () => {
  it('sample from the action space and adapt one-observation functions', async () => {
    const r = new RandomPolicy({ seed: 3 });
    r.check(spaces);
    const { actions } = r.act(observations(5));
    for (const a of actions) expect(contains(discrete(2), a)).toBeNull();
    const p = perSessionPolicy('const', (_o, s) => (s === 'b' ? 1 : 0), {
      accepts: ({ actionSpace }) => (actionSpace.type === 'discrete' ? null : 'needs Discrete'),
    });
    p.check(spaces);
    expect((await p.act(observations(2), { sessions: ['a', 'b'] })).actions).toEqual([0, 1]);
    expect(() => p.check({ observationSpace: obsSpace, actionSpace: box({ low: 0, high: 1, shape: [1] }) })).toThrow(/needs Discrete/);
  });
});
