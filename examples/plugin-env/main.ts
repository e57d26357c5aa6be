/**
 * The plugin template checks itself: serves envs.ts with `gymwire serve --plugin`, runs the
 * conformance suite (`gymwire check`) on its env, then walks the corridor through the TS client and
 * uses its tool and state. Exits non-zero when something is off.
 *   npx tsx examples/plugin-env/main.ts
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

import { connect } from '../../client/ts/index.ts';

const root = join(import.meta.dirname, '..', '..');
const cli = join(root, 'bin', 'gymwire.js');

const server = spawn(process.execPath, [cli, 'serve', '--port', '0', '--log-level', 'warn', '--plugin', join(import.meta.dirname, 'envs.ts')], {
  cwd: root,
  stdio: ['ignore', 'pipe', 'inherit'],
});
try {
  let url = '';
  for await (const line of createInterface({ input: server.stdout })) {
    const m = /on (ws:\/\/\S+)/.exec(line);
    if (m) {
      url = m[1]!;
      break;
    }
  }
  assert.ok(url, 'gymwire serve printed no URL');

  const check = spawnSync(process.execPath, [cli, 'check', url, '--env', 'mine/Corridor-v0'], { cwd: root, encoding: 'utf8' });
  assert.equal(check.status, 0, `gymwire check failed:\n${check.stdout}${check.stderr}`);

  const client = await connect(url, { clientName: 'plugin-example' });
  const env = await client.make('mine/Corridor-v0', { length: 6 });
  await env.reset({ seed: 3 });
  const distance = (await env.callTool('distance')) as number;
  const saved = await env.getState();
  let steps = 0;
  let reward = 0;
  for (;;) {
    const r = await env.step(1);
    steps++;
    reward = r.reward;
    if (r.terminated || r.truncated) break;
  }
  assert.equal(steps, distance, 'walking right reaches the goal in `distance` steps');
  assert.equal(reward, 1);
  await env.setState(saved);
  assert.equal(await env.callTool('distance'), distance, 'set_state restores the position');
  console.log(`plugin env mine/Corridor-v0: gymwire check passed; goal reached in ${steps} steps`);
  await client.closeAll();
} finally {
  server.kill('SIGTERM');
  await once(server, 'exit');
}
