/**
 * `gymwire rollout` as a process, stopped the way a scheduler (SIGTERM) or a closed terminal
 * (SIGHUP) stops it, against a real `gymwire serve`: it stops as on Ctrl-C, writes dataset.json
 * with every finished part readable, closes its sessions on the server (the server's /metrics
 * counts none open at once, not after the resume grace), and exits with 128 + the signal's number.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { STOP_EXIT_CODES } from '../../bin/commands/rollout.ts';
import { readDataset } from '../../client/ts/dataset/reader.ts';
import { serveProcess } from '../helpers/serve-process.ts';
import { servedUrl } from '../helpers/serve-url.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'gymwire-rollout-signals-'));
let server: ChildProcess;
let url = '';

beforeAll(async () => {
  server = serveProcess(['--port', '0', '--log-level', 'warn']);
  url = await servedUrl(server);
}, 60_000);
afterAll(() => {
  server?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

async function openSessions(): Promise<number> {
  const body = await (await fetch(`${url.replace('ws://', 'http://')}/metrics`)).text();
  return [...body.matchAll(/^gymwire_open_sessions\{[^}]*\} (\S+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
}

describe.each(['SIGTERM', 'SIGHUP'] as const)('gymwire rollout stopped with %s', (signal) => {
  it('writes a readable dataset, closes its sessions and exits with 128 + the signal number', async () => {
    const out = join(dir, signal);
    // The command as a user starts it (bin/gymwire.js re-runs itself in a child and passes the signal on).
    const rollout = spawn(
      process.execPath,
      ['bin/gymwire.js', 'rollout', '--url', url, '--env', 'gymwire/CartPole-v1', '--sessions', '4', '--episodes', '1000000', '--out', out, '--no-progress'],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    rollout.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    rollout.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((r) => rollout.once('exit', (code) => r(code)));
    // Running: its sessions are open on the server, and a moment later some episodes are done.
    while ((await openSessions()) < 4) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 1500));
    rollout.kill(signal);
    expect(await exited, output).toBe(STOP_EXIT_CODES[signal]);
    expect(await openSessions()).toBe(0);
    const dataset = await readDataset(out);
    expect(dataset.manifest.counts.steps).toBeGreaterThan(0);
    expect(dataset.steps.numRows).toBe(dataset.manifest.counts.steps);
    expect(dataset.episodes.numRows).toBeGreaterThan(0);
  }, 90_000);
});
