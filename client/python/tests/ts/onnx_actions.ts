/**
 * Writes the ONNX contract models (scripts/onnx/contract-models.ts) into DIR and acts on the
 * observations in IN.json with the TypeScript SDK's OnnxPolicy, printing one JSON line, so the
 * Python tests can check that both SDKs read the same contract and sample the same actions.
 *
 * Usage: npx tsx client/python/tests/ts/onnx_actions.ts DIR IN.json
 */
import { readFileSync } from 'node:fs';

import { writeContractModels } from '../../../../scripts/onnx/contract-models.ts';
import { box, dict, discrete } from '../../../../protocol/spaces.ts';
import { Tensor } from '../../../../protocol/tensor.ts';
import { OnnxPolicy } from '../../../ts/policies/onnx.ts';
import type { PolicyOutput } from '../../../ts/policy.ts';

interface Input {
  seed: number;
  bench2drive: { speed: number[]; target_point: number[]; command: number }[];
  cartpole: number[][];
}

const [dir, inPath] = process.argv.slice(2);
if (!dir || !inPath) throw new Error('usage: onnx_actions.ts DIR IN.json');
const input = JSON.parse(readFileSync(inPath, 'utf8')) as Input;
const models = await writeContractModels(dir);

const f32 = (shape: number[], low = -Infinity, high = Infinity) => box({ low, high, shape, dtype: 'float32' });
const b2dSpaces = {
  observationSpace: dict({ speed: f32([1], 0), target_point: f32([2]), command: discrete(8, -1) }),
  actionSpace: box({ low: [0, -1, 0], high: [1, 1, 1], dtype: 'float32' }),
};
const cartSpaces = { observationSpace: f32([4]), actionSpace: discrete(2) };
const b2dObs = input.bench2drive.map((o) => ({
  speed: Tensor.from('float32', [1], o.speed),
  target_point: Tensor.from('float32', [2], o.target_point),
  command: o.command,
}));
const cartObs = input.cartpole.map((o) => Tensor.from('float32', [4], o));

const plain = (out: PolicyOutput) => ({
  actions: out.actions.map((a) => (a instanceof Tensor ? (a.toNumbers() as number[]) : a)),
  logProbs: Array.from(out.logProbs ?? []),
  values: Array.from(out.values ?? []),
});

async function run(path: string, spaces: typeof cartSpaces | typeof b2dSpaces, obs: unknown[], opts: Parameters<typeof OnnxPolicy.load>[1]) {
  const policy = await OnnxPolicy.load(path, { seed: input.seed, thread: 'main', ...opts });
  try {
    policy.check(spaces);
    return plain(await policy.act(obs, { sessions: [] }));
  } finally {
    await policy.close();
  }
}

const result = {
  gaussian: await run(models['gaussianDict']!, b2dSpaces, b2dObs, { inputs: { route_command: 'command' } }),
  discrete: await run(models['cartpole']!, cartSpaces, cartObs, {}),
  fixed: await run(models['cartpoleFixedBatch']!, cartSpaces, cartObs, {}),
};
process.stdout.write(`${JSON.stringify(result)}\n`);
