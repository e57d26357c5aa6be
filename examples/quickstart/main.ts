/**
 * Quick start: serve CartPole, connect, play one seeded episode with a simple controller, and
 * check the result. Exits non-zero when something is off.
 *   npx tsx examples/quickstart/main.ts [ws://HOST:PORT]
 */
import assert from 'node:assert/strict';

import { connect } from '../../client/ts/index.ts';
import type { Tensor } from '../../client/ts/index.ts';
import { startServer } from '../../server/index.ts';

const external = process.argv[2];
const server = external ? null : await startServer({ port: 0 });
const client = await connect(external ?? server!.url, { clientName: 'quickstart' });

const env = await client.make('gymwire/CartPole-v1');
let obs = (await env.reset({ seed: 42 })).obs as Tensor;
let episodeReturn = 0;
for (;;) {
  // Push the cart under the pole: angle plus a little angular velocity.
  const action = obs.at(2) + 0.5 * obs.at(3) > 0 ? 1 : 0;
  const step = await env.step(action);
  obs = step.obs as Tensor;
  episodeReturn += step.reward;
  if (step.terminated || step.truncated) {
    assert.equal(step.truncated, true, 'the controller should balance the pole until the time limit');
    break;
  }
}
assert.equal(episodeReturn, 500);
console.log(`CartPole-v1 episode return ${episodeReturn} (truncated at the 500-step limit)`);

await client.closeAll();
await server?.close();
