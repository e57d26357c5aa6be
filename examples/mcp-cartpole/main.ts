/**
 * A scripted agent drives CartPole through MCP tools to the end of an episode, using only the
 * official MCP TypeScript client: make_env, reset, step until terminated or truncated, close_env.
 *
 *   npx tsx examples/mcp-cartpole/main.ts
 *
 * The agent pushes the cart the way the pole is falling (angle plus half the angular velocity),
 * which balances it for the whole 500-step episode; the example fails unless the return reaches
 * CartPole's "solved" threshold of 195 and matches the server's running episode_return.
 */
import { run, startHarness } from '../mcp-common/harness.ts';

const SOLVED = 195;

run(async () => {
  const h = await startHarness('mcp-cartpole-example');
  try {
    const { tools } = await h.client.listTools();
    console.log(`tools: ${tools.map((t) => t.name).join(', ')}`);
    const made = await h.call('make_env', { env_id: 'gymwire/CartPole-v1' });
    const session = made.session_id as string;
    console.log(`session ${session}: observation ${String(made.observation_space)}, action ${String(made.action_space)}`);
    let obs = ((await h.call('reset', { session_id: session, seed: 42 })).obs as { values: number[] }).values;
    let total = 0;
    let last: Record<string, unknown> = {};
    for (let step = 0; step < 1000; step++) {
      const [, , angle, angularVelocity] = obs as [number, number, number, number];
      last = await h.call('step', { session_id: session, action: angle + 0.5 * angularVelocity > 0 ? 1 : 0 });
      total += last.reward as number;
      obs = (last.obs as { values: number[] }).values;
      if (last.terminated || last.truncated) break;
    }
    console.log(
      `episode over after ${String(last.episode_steps)} steps: return ${total}, terminated ${String(last.terminated)}, truncated ${String(last.truncated)}`,
    );
    await h.call('close_env', { session_id: session });
    if (!last.terminated && !last.truncated) throw new Error('the episode did not end');
    if (last.episode_return !== total) throw new Error(`server episode_return ${String(last.episode_return)} != summed rewards ${total}`);
    if (total < SOLVED) throw new Error(`return ${total} is below ${SOLVED}`);
    console.log('OK');
  } finally {
    await h.close();
  }
});
