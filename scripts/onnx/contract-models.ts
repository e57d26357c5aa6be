/**
 * Writes the seeded ONNX models that exercise the ONNX policy contract (docs/policies.md) in both
 * SDKs' tests: `npx tsx scripts/onnx/contract-models.ts --out DIR`.
 *
 * - `gaussian-dict.onnx`: a Bench2Drive-shaped Gaussian policy. Inputs `speed [N, 1]`,
 *   `target_point [N, 2]` (float32 Box keys) and `route_command [N, 1]` (int64, the Discrete
 *   `command` key, fed through an input mapping); outputs `mean [N, 3]`, a state-independent
 *   `log_std [3]`, `value [N, 1]` and `features [N, 4]` (an extra output: it reaches the dataset as
 *   `extras/features`). The weights come from {@link gaussianWeights}; tests recompute it in plain code.
 * - `cartpole-fixed-batch.onnx`: the CartPole MLP of mlp.ts exported with a fixed batch of 1.
 * - `cartpole.onnx`: the same MLP with a symbolic batch.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Random } from '../../runtime/random.ts';
import { GraphBuilder } from '../../envs/evac/onnx/writer.ts';
import { buildMlp, CARTPOLE_MLP, mlpWeights } from './mlp.ts';

export interface GaussianWeights {
  /** [4, 3] row-major: rows speed, target x, target y, command. */
  w: number[];
  b: number[];
  logStd: number[];
  /** [4, 1] value head. */
  wv: number[];
  bv: number;
}

export function gaussianWeights(seed = 11): GaussianWeights {
  const rng = new Random(seed);
  const r = (n: number, s: number) => Array.from({ length: n }, () => Math.fround(rng.uniform(-s, s)));
  return { w: r(12, 0.03), b: [0.4, 0, 0.05], logStd: [-1.5, -2, -2.5].map(Math.fround), wv: r(4, 0.5), bv: Math.fround(0.1) };
}

export function buildGaussianDict(w: GaussianWeights): Uint8Array {
  const g = new GraphBuilder();
  const speed = g.input('speed', 'float32', ['N', 1]);
  const target = g.input('target_point', 'float32', ['N', 2]);
  const command = g.input('route_command', 'int64', ['N', 1]);
  const x = g.op('Concat', [speed, target, g.op('Cast', [command], { to: 1 })], { axis: 1 });
  g.output(g.op('Gemm', [x, g.f32(w.w, [4, 3]), g.f32(w.b, [3])]), 'mean', 'float32', ['N', 3]);
  g.output(g.f32(w.logStd, [3]), 'log_std', 'float32', [3]);
  g.output(g.op('Gemm', [x, g.f32(w.wv, [4, 1]), g.f32([w.bv], [1])]), 'value', 'float32', ['N', 1]);
  g.output(g.op('Tanh', [x]), 'features', 'float32', ['N', 4]);
  return g.toModel({ producer: 'gymwire scripts/onnx/contract-models.ts' });
}

/** The Gaussian policy's mean and value in plain TS (float64 on the float32 weights). */
export function gaussianForward(w: GaussianWeights, speed: number, target: readonly number[], command: number): { mean: number[]; value: number } {
  const x = [Math.fround(speed), Math.fround(target[0]!), Math.fround(target[1]!), command];
  const mean = [0, 1, 2].map((k) => x.reduce((s, xi, i) => s + xi * w.w[i * 3 + k]!, w.b[k]!));
  return { mean, value: x.reduce((s, xi, i) => s + xi * w.wv[i]!, w.bv) };
}

export async function writeContractModels(dir: string): Promise<Record<string, string>> {
  await mkdir(dir, { recursive: true });
  const paths = {
    gaussianDict: join(dir, 'gaussian-dict.onnx'),
    cartpoleFixedBatch: join(dir, 'cartpole-fixed-batch.onnx'),
    cartpole: join(dir, 'cartpole.onnx'),
  };
  await writeFile(paths.gaussianDict, buildGaussianDict(gaussianWeights()));
  await writeFile(paths.cartpoleFixedBatch, buildMlp(mlpWeights({ ...CARTPOLE_MLP, batch: 1 })));
  await writeFile(paths.cartpole, buildMlp(mlpWeights(CARTPOLE_MLP)));
  return paths;
}

if (process.argv[1]?.endsWith('contract-models.ts') && fileURLToPath(import.meta.url) === process.argv[1]) {
  const i = process.argv.indexOf('--out');
  const out = i >= 0 ? process.argv[i + 1] : undefined;
  if (!out) throw new Error('usage: tsx scripts/onnx/contract-models.ts --out DIR');
  process.stdout.write(`${JSON.stringify(await writeContractModels(out))}\n`);
}
