/**
 * The TypeScript client's side of test/bench/python_wire.bench.py: the same work against the same
 * server, so the Python SDK's figures have a TypeScript floor from the same run. Prints one JSON line.
 *   node --import tsx test/bench/python-peer.ts seq URL STEPS         -> {p50_us, p99_us}
 *   node --import tsx test/bench/python-peer.ts image URL SECONDS     -> {mb_s, steps}
 *   node --import tsx test/bench/python-peer.ts concurrent URL SESSIONS SECONDS -> {steps_per_s}
 */
import { connect } from '../../client/ts/client.ts';

const FRAME_BYTES = 224 * 224 * 3;
const [mode, url, a, b] = process.argv.slice(2) as [string, string, string, string?];

async function seq(steps: number): Promise<Record<string, number>> {
  const client = await connect(url);
  const env = await client.make('gymwire/CartPole-v1');
  await env.reset({ seed: 0 });
  const run = async (n: number): Promise<number[]> => {
    const times: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      const r = await env.step(i % 2);
      times.push(performance.now() - t0);
      if (r.terminated || r.truncated) await env.reset();
    }
    return times;
  };
  await run(5000); // the JIT needs a few thousand steps before round trips settle
  const times = (await run(steps)).sort((x, y) => x - y);
  await client.close();
  return { p50_us: times[Math.floor(times.length / 2)]! * 1000, p99_us: times[Math.floor(times.length * 0.99)]! * 1000 };
}

async function image(seconds: number): Promise<Record<string, number>> {
  const client = await connect(url);
  const env = await client.make('bench/Image-v0');
  await env.reset();
  for (let i = 0; i < 200; i++) await env.step(0);
  let steps = 0;
  const start = performance.now();
  while (performance.now() - start < seconds * 1000) {
    await env.step(0);
    steps++;
  }
  const elapsed = (performance.now() - start) / 1000;
  await client.close();
  return { mb_s: (steps * FRAME_BYTES) / elapsed / 1e6, steps };
}

async function concurrent(sessions: number, seconds: number): Promise<Record<string, number>> {
  const client = await connect(url);
  const envs = await Promise.all(Array.from({ length: sessions }, () => client.make('gymwire/CartPole-v1')));
  await Promise.all(envs.map((env) => env.reset({ seed: 0 })));
  let steps = 0;
  let counting = false;
  let stop = false;
  const loop = async (env: (typeof envs)[number]): Promise<void> => {
    while (!stop) {
      const r = await env.step(1);
      if (counting) steps++;
      if (r.terminated || r.truncated) await env.reset();
    }
  };
  const loops = envs.map(loop);
  await new Promise((r) => setTimeout(r, 500)); // warm-up
  counting = true;
  const start = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const counted = steps;
  const elapsed = (performance.now() - start) / 1000;
  stop = true;
  await Promise.all(loops);
  await client.close();
  return { steps_per_s: counted / elapsed };
}

const result =
  mode === 'seq' ? await seq(Number(a)) : mode === 'image' ? await image(Number(a)) : mode === 'concurrent' ? await concurrent(Number(a), Number(b)) : null;
if (result === null) throw new Error(`unknown mode ${mode}; use seq, image or concurrent`);
process.stdout.write(`${JSON.stringify(result)}\n`);
