/**
 * Ping round trips measured while another client does heavy env work in its own process: the
 * event-loop test and bench share it.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import type { GymwireClient } from '../../client/ts/client.ts';

/**
 * Runs test/helpers/heavy-client.ts against `url` in a child process and pings back to back
 * until it exits; returns the slowest round trip (ms), every round trip (`samples`, ms), how many
 * pings were sent and its lines. `envId` defaults to Bench2Drive.
 */
export async function pingGapsDuringHeavyClient(
  client: GymwireClient,
  url: string,
  kwargs: Record<string, unknown>,
  steps: number,
  envId = 'gymwire/Bench2Drive-v0',
): Promise<{ maxMs: number; pings: number; samples: number[]; lines: string[]; maxByPhase: Record<string, number> }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('./heavy-client.ts', import.meta.url)), url, JSON.stringify(kwargs), String(steps), envId],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  let exited = false;
  const exit = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      exited = true;
      resolve(code);
    }),
  );
  let maxMs = 0;
  let pings = 0;
  const samples: number[] = [];
  const maxByPhase: Record<string, number> = {};
  const phases = ['make', 'reset', 'step'];
  while (!exited) {
    const phase = phases[Math.min(out.split('\n').length - 1, phases.length - 1)]!;
    const t0 = performance.now();
    await client.ping();
    const ms = performance.now() - t0;
    maxMs = Math.max(maxMs, ms);
    samples.push(ms);
    maxByPhase[phase] = Math.max(maxByPhase[phase] ?? 0, ms);
    pings++;
  }
  const code = await exit;
  if (code !== 0) throw new Error(`the heavy client exited with code ${code}: ${out}`);
  return { maxMs, pings, samples, lines: out.trim().split('\n'), maxByPhase };
}
