/**
 * Collects a CartPole dataset with an ONNX policy over 16 sessions and checks it: a server starts
 * in-process, a seeded MLP is written with scripts/onnx/mlp.ts, the rollout runs pipelined into an
 * Arrow dataset (docs/datasets.md), and the dataset is read back.
 *
 *   npx tsx examples/rollout-cartpole/main.ts [--out DIR] [--episodes N]
 *
 * Fails (exit 1) unless every episode was written, each session's step counter runs 0..k-1 without
 * gap or repeat, and the dataset's returns sum to the rollout's. The Python SDK's tests can use
 * `--out` to get a dataset to read with pyarrow.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { connect } from '../../client/ts/client.ts';
import { decodeColumn, readDataset } from '../../client/ts/dataset/reader.ts';
import { TrajectoryWriter } from '../../client/ts/dataset/writer.ts';
import { OnnxPolicy } from '../../client/ts/policies/onnx.ts';
import { Rollout } from '../../client/ts/rollout/engine.ts';
import { startServer } from '../../server/index.ts';
import { writeMlp } from '../../scripts/onnx/mlp.ts';

const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};

const out = arg('--out') ?? join(await mkdtemp(join(tmpdir(), 'gymwire-rollout-example-')), 'dataset');
const episodes = Number(arg('--episodes') ?? 100);
const server = await startServer({ port: 0 });
const client = await connect(server.url);
const modelPath = join(tmpdir(), `gymwire-cartpole-mlp-${process.pid}.onnx`);
await writeMlp(modelPath);
const policy = await OnnxPolicy.load(modelPath, { seed: 0 });
async function collectAndCheck(): Promise<boolean> {
  const probe = await client.make('gymwire/CartPole-v1');
  const writer = await TrajectoryWriter.create(out, { envId: probe.envId, observationSpace: probe.observationSpace, actionSpace: probe.actionSpace });
  await probe.close();
  const summary = await new Rollout({
    envId: 'gymwire/CartPole-v1',
    targets: [{ client, url: server.url, sessions: 16 }],
    policy,
    episodes,
    seed: 0,
    writer,
  }).run();
  const manifest = await writer.close({ policy: policy.name });
  console.log(
    `${summary.episodes} episodes, ${summary.steps} steps at ${summary.stepsPerSec.toFixed(0)} steps/s, mean return ${summary.meanReturn?.toFixed(2)} -> ${out}`,
  );
  const ds = await readDataset(out);
  const sessions = decodeColumn(ds.steps, 'session') as string[];
  const counters = decodeColumn(ds.steps, 'session_step') as number[];
  const seen = new Map<string, number[]>();
  sessions.forEach((s, i) => seen.set(s, [...(seen.get(s) ?? []), counters[i]!]));
  const gapless = [...seen.values()].every((c) => [...c].sort((a, b) => a - b).every((v, i) => v === i));
  const returns = (decodeColumn(ds.episodes, 'return') as number[]).reduce((a, b) => a + b, 0);
  const checks: [string, boolean][] = [
    [`all ${episodes} episodes written`, manifest.counts.episodes === episodes && manifest.counts.terminated + manifest.counts.truncated === episodes],
    ['rows = steps', ds.steps.numRows === summary.steps],
    ['session counters gapless', gapless],
    ['returns match', Math.abs(returns - (summary.meanReturn ?? 0) * episodes) < 1e-6],
  ];
  for (const [name, ok] of checks) console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}`);
  return checks.every(([, ok]) => ok);
}

const passed = await collectAndCheck().finally(async () => {
  await policy.close();
  await client.closeAll();
  await server.close();
});
process.exit(passed ? 0 : 1);
