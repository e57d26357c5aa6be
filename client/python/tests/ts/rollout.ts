/**
 * Seeded rollouts through the TypeScript client, printed as one JSON line, so the Python tests can
 * check that both clients see identical observations and rewards for the same seeds.
 *
 * Usage: npx tsx client/python/tests/ts/rollout.ts ws://127.0.0.1:PORT
 */
import { connect, Tensor } from '../../../ts/index.ts';

interface Episode {
  seed: number;
  obs: number[][];
  rewards: number[];
  terminated: boolean[];
  truncated: boolean[];
}

export const CARTPOLE_SEEDS = [0, 42, 1234];
export const CONFORMANCE_SEED = 3;
export const MAX_STEPS = 60;

/** The action schedule both clients follow. */
export function cartpoleAction(seed: number, t: number): number {
  return (t * 7 + seed) % 3 === 0 ? 1 : 0;
}

export function conformanceAction(t: number): [number, number] {
  return [0.1 * ((t % 5) - 2), 0.05];
}

async function main(): Promise<void> {
  const url = process.argv[2];
  if (!url) throw new Error('usage: rollout.ts <ws url>');
  const client = await connect(url);
  const out: { cartpole: Episode[]; conformance: Episode } = {
    cartpole: [],
    conformance: { seed: CONFORMANCE_SEED, obs: [], rewards: [], terminated: [], truncated: [] },
  };
  const cart = await client.make('gymwire/CartPole-v1');
  for (const seed of CARTPOLE_SEEDS) {
    const ep: Episode = { seed, obs: [], rewards: [], terminated: [], truncated: [] };
    const r = await cart.reset({ seed });
    ep.obs.push((r.obs as Tensor).toNumbers());
    for (let t = 0; t < MAX_STEPS; t++) {
      const s = await cart.step(cartpoleAction(seed, t));
      ep.obs.push((s.obs as Tensor).toNumbers());
      ep.rewards.push(s.reward);
      ep.terminated.push(s.terminated);
      ep.truncated.push(s.truncated);
      if (s.terminated || s.truncated) break;
    }
    out.cartpole.push(ep);
  }
  const conf = await client.make('gymwire/Conformance-v0');
  const r = await conf.reset({ seed: CONFORMANCE_SEED });
  out.conformance.obs.push(((r.obs as Record<string, Tensor>).position as Tensor).toNumbers());
  for (let t = 0; t < MAX_STEPS; t++) {
    const s = await conf.step(Tensor.from('float32', [2], conformanceAction(t)));
    out.conformance.obs.push(((s.obs as Record<string, Tensor>).position as Tensor).toNumbers());
    out.conformance.rewards.push(s.reward);
    out.conformance.terminated.push(s.terminated);
    out.conformance.truncated.push(s.truncated);
    if (s.terminated || s.truncated) break;
  }
  await client.closeAll();
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

await main();
