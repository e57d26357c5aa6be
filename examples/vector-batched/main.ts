/**
 * Batched stepping: 64 CartPole sessions stepped in one frame per step with Gymnasium's next-step
 * autoreset, counting finished episodes. Checks that every session kept stepping.
 *   npx tsx examples/vector-batched/main.ts [ws://HOST:PORT]
 */
import assert from 'node:assert/strict';

import { connect, Tensor } from '../../client/ts/index.ts';
import { startServer } from '../../server/index.ts';

const N = 64;
const external = process.argv[2];
const server = external ? null : await startServer({ port: 0 });
const client = await connect(external ?? server!.url, { clientName: 'vector-batched' });

const vec = await client.makeVec('gymwire/CartPole-v1', N, { autoresetMode: 'next_step' });
let obs = (await vec.reset({ seed: 0 })).obs as Tensor;
let episodes = 0;
let envSteps = 0;
const start = performance.now();
for (let t = 0; t < 300; t++) {
  const actions = Tensor.from(
    'int64',
    [N],
    Array.from({ length: N }, (_, i) => (obs.get(i, 2) + 0.5 * obs.get(i, 3) > 0 ? 1 : 0)),
  );
  const out = await vec.step(actions);
  obs = out.obs as Tensor;
  envSteps += N;
  episodes += out.terminations.filter(Boolean).length + out.truncations.filter(Boolean).length;
}
const seconds = (performance.now() - start) / 1000;
assert.equal(obs.shape[0], N);
console.log(`${N} sessions, ${envSteps} env-steps in ${seconds.toFixed(2)} s (${Math.round(envSteps / seconds)} steps/s), ${episodes} episodes ended`);

await vec.close();
await client.close();
await server?.close();
