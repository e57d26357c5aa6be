import { Tensor } from '../../../protocol/tensor.ts';
import type { Env } from '../../../envs/core/env.ts';
import { unwrap } from '../../../envs/core/wrappers.ts';
import type { EvacObs } from '../../../envs/evac/env.ts';
import { scriptedChunk } from '../../../envs/evac/tiny/policy.ts';

export function chunkTensor(rows: number[][]): Tensor<'float32'> {
  return new Tensor('float32', [rows.length, rows[0]!.length], Float32Array.from(rows.flat()));
}

export function filled(value: number, gripper = -1, chunk = 8): Tensor<'float32'> {
  return chunkTensor(Array.from({ length: chunk }, () => [value, value, value, 0, 0, 0, gripper]));
}

/** Runs the scripted policy until the episode ends; returns the chunk steps taken and whether it succeeded. */
export async function runScripted(env: Env, obs: EvacObs, size: number, limit = 40): Promise<{ steps: number; success: boolean; rewards: number[] }> {
  const rewards: number[] = [];
  for (let k = 0; k < limit; k++) {
    const a = scriptedChunk(obs.full_image.data, obs.state.data, size, 8);
    const s = await env.step(chunkTensor(a));
    rewards.push(s.reward);
    obs = s.obs as EvacObs;
    if (s.terminated || s.truncated) return { steps: k + 1, success: s.terminated, rewards };
  }
  return { steps: limit, success: false, rewards };
}

export { unwrap };
