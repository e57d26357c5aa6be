/**
 * Generates small seeded MLP policies as ONNX files: `obs [N, D] float32 -> logits [N, A], value [N, 1]`
 * (a shared tanh trunk with an actor and a critic head). `npx tsx scripts/onnx/mlp.ts --out m.onnx`
 * writes the CartPole one (D=4, A=2, hidden 64). Tests recompute the same network in plain TS from
 * {@link mlpWeights} to check the ONNX policy's outputs.
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

import { Random } from '../../runtime/random.ts';
import { GraphBuilder } from '../../envs/evac/onnx/writer.ts';

export interface MlpSpec {
  obsDim: number;
  actions: number;
  hidden: number;
  seed: number;
  /** Hidden tanh layers of `hidden` units (default 1). */
  depth?: number;
  /** Name of the model's single input (default `obs`). */
  inputName?: string;
  /** The batch dimension: symbolic `N` (default) or a fixed size, as some exporters write it. */
  batch?: number | string;
}

export interface MlpWeights {
  spec: MlpSpec;
  /** Row-major [in, out] matrices and [out] biases, as float32 values. */
  w1: Float32Array;
  b1: Float32Array;
  /** Further hidden layers, [hidden, hidden] each. */
  deep: { w: Float32Array; b: Float32Array }[];
  wPi: Float32Array;
  bPi: Float32Array;
  wV: Float32Array;
  bV: Float32Array;
}

export const CARTPOLE_MLP: MlpSpec = { obsDim: 4, actions: 2, hidden: 64, seed: 7 };

export function mlpWeights(spec: MlpSpec): MlpWeights {
  const rng = new Random(spec.seed);
  const mat = (rows: number, cols: number) => Float32Array.from({ length: rows * cols }, () => rng.normal() / Math.sqrt(rows));
  const vec = (n: number) => Float32Array.from({ length: n }, () => rng.uniform(-0.1, 0.1));
  const w1 = mat(spec.obsDim, spec.hidden);
  const b1 = vec(spec.hidden);
  const deep = Array.from({ length: (spec.depth ?? 1) - 1 }, () => ({ w: mat(spec.hidden, spec.hidden), b: vec(spec.hidden) }));
  return { spec, w1, b1, deep, wPi: mat(spec.hidden, spec.actions), bPi: vec(spec.actions), wV: mat(spec.hidden, 1), bV: vec(1) };
}

export function buildMlp(w: MlpWeights): Uint8Array {
  const { obsDim, hidden, actions } = w.spec;
  const g = new GraphBuilder();
  const batch = w.spec.batch ?? 'N';
  const obs = g.input(w.spec.inputName ?? 'obs', 'float32', [batch, obsDim]);
  const f32 = (a: Float32Array, dims: number[]) => g.f32(Array.from(a), dims);
  let h = g.op('Tanh', [g.op('Gemm', [obs, f32(w.w1, [obsDim, hidden]), f32(w.b1, [hidden])])]);
  for (const layer of w.deep) h = g.op('Tanh', [g.op('Gemm', [h, f32(layer.w, [hidden, hidden]), f32(layer.b, [hidden])])]);
  g.output(g.op('Gemm', [h, f32(w.wPi, [hidden, actions]), f32(w.bPi, [actions])]), 'logits', 'float32', [batch, actions]);
  g.output(g.op('Gemm', [h, f32(w.wV, [hidden, 1]), f32(w.bV, [1])]), 'value', 'float32', [batch, 1]);
  return g.toModel({ producer: 'gymwire scripts/onnx/mlp.ts' });
}

/** The same network in plain TS (float64 arithmetic on the float32 weights). */
export function mlpForward(w: MlpWeights, obs: ArrayLike<number>): { logits: number[]; value: number } {
  const { obsDim, hidden, actions } = w.spec;
  const dense = (x: ArrayLike<number>, m: Float32Array, b: Float32Array, inDim: number) =>
    Array.from({ length: hidden }, (_, j) => {
      let s = b[j]!;
      for (let i = 0; i < inDim; i++) s += x[i]! * m[i * hidden + j]!;
      return Math.tanh(s);
    });
  let h = dense(obs, w.w1, w.b1, obsDim);
  for (const layer of w.deep) h = dense(h, layer.w, layer.b, hidden);
  const head = (m: Float32Array, b: Float32Array, out: number, k: number) => h.reduce((s, x, j) => s + x * m[j * out + k]!, b[k]!);
  return { logits: Array.from({ length: actions }, (_, k) => head(w.wPi, w.bPi, actions, k)), value: head(w.wV, w.bV, 1, 0) };
}

export async function writeMlp(path: string, spec: MlpSpec = CARTPOLE_MLP): Promise<MlpWeights> {
  const w = mlpWeights(spec);
  await writeFile(path, buildMlp(w));
  return w;
}

// Run as a script (a bundle that inlines this module has another name and must not run it).
if (process.argv[1]?.endsWith('mlp.ts') && fileURLToPath(import.meta.url) === process.argv[1]) {
  const i = process.argv.indexOf('--out');
  const out = i >= 0 ? process.argv[i + 1] : undefined;
  if (!out) throw new Error('usage: tsx scripts/onnx/mlp.ts --out model.onnx');
  await writeMlp(out);
  process.stdout.write(`wrote ${out}\n`);
}
