/**
 * Collects a dataset with the TypeScript rollout engine and a seeded deterministic driving policy,
 * so the Python tests can check that `gymwire.collect` records the same episodes (test_collect.py
 * mirrors these policies). Prints the rollout summary as one JSON line.
 *
 * Usage: npx tsx client/python/tests/ts/collect.ts <ws url> <env id> <out dir> <episodes> <sessions> <seed> <groups> [kwargs JSON]
 */
import { connect, Tensor } from '../../../ts/index.ts';
import { Rollout } from '../../../ts/rollout/engine.ts';
import { TrajectoryWriter } from '../../../ts/dataset/writer.ts';
import type { Policy, PolicyOutput } from '../../../ts/policy.ts';

const clamp = (x: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, x));

/** Bench2Drive: steer at the target point, hold about 5 m/s. */
export function bench2driveAction(targetX: number, targetY: number, speed: number): [number, number, number] {
  return [speed < 5 ? 0.6 : 0, clamp((-0.8 * targetY) / Math.max(targetX, 2), -1, 1), 0];
}

/** NAVSIM: 8 poses 0.5 s apart at the current speed, bending with the driving command. */
export function navsimTrajectory(speed: number, command: readonly number[]): number[] {
  const out: number[] = [];
  for (let k = 0; k < 8; k++) out.push((k + 1) * 0.5 * Math.max(speed, 1), 0.02 * (k + 1) * (command[0]! - command[2]!), 0);
  return out;
}

function drivingPolicy(envId: string): Policy {
  const bench2drive = envId.includes('Bench2Drive');
  return {
    name: 'parity-driver',
    check() {},
    act(observations): PolicyOutput {
      const obs = observations as Record<string, Tensor>[];
      if (bench2drive) {
        const tp = obs.map((o) => o['target_point']!.toNumbers());
        const speed = obs.map((o) => o['speed']!.toNumbers()[0]!);
        return {
          actions: obs.map((_, i) => Tensor.from('float32', [3], bench2driveAction(tp[i]![0]!, tp[i]![1]!, speed[i]!))),
          extras: { aim: tp.map((t) => Float32Array.from(t)), speed },
        };
      }
      const speed = obs.map((o) => o['ego_status']!.toNumbers()[3 * 7 + 3]!);
      return {
        actions: obs.map((o, i) => Tensor.from('float32', [8, 3], navsimTrajectory(speed[i]!, o['driving_command']!.toNumbers()))),
        extras: { speed },
      };
    },
  };
}

async function main(): Promise<void> {
  const [url, envId, out, episodes, sessions, seed, groups, kwargsJson] = process.argv.slice(2);
  if (!url || !envId || !out || !episodes || !sessions || !seed || !groups) throw new Error('usage: collect.ts <url> <env id> <out dir> <episodes> <sessions> <seed> <groups> [kwargs JSON]');
  const kwargs = kwargsJson ? (JSON.parse(kwargsJson) as Record<string, unknown>) : {};
  const client = await connect(url);
  try {
    const probe = await client.make(envId, kwargs);
    const writer = await TrajectoryWriter.create(out, { envId, envKwargs: kwargs, observationSpace: probe.observationSpace, actionSpace: probe.actionSpace, overwrite: true });
    await probe.close();
    const policy = drivingPolicy(envId);
    const summary = await new Rollout({
      envId,
      kwargs,
      targets: [{ client, url, sessions: Number(sessions) }],
      policy,
      episodes: Number(episodes),
      seed: Number(seed),
      groups: Number(groups),
      writer,
    }).run();
    await writer.close({ policy: policy.name });
    process.stdout.write(`${JSON.stringify(summary)}\n`);
  } finally {
    await client.closeAll();
  }
}

await main();
