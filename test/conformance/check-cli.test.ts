/**
 * `gymwire check` as a person runs it: a server whose welcome fails its schema stops the run at
 * once (exit 2, the reason on stderr) instead of leaving the command hanging on an open socket.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import { afterEach, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const started: ChildProcess[] = [];
afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL');
});

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const start = Date.now();
  const child = spawn(process.execPath, ['bin/gymwire.js', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr, ms: Date.now() - start })));
}

describe('gymwire check against a server that cannot be checked', () => {
  it('exits 2 at once with the reason when the welcome fails its schema', { timeout: 60_000 }, async () => {
    const server = spawn(process.execPath, ['--import', 'tsx', 'test/conformance/fixtures/bad-welcome-server.ts'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    started.push(server);
    const lines = createInterface({ input: server.stdout! });
    const port = Number((await lines[Symbol.asyncIterator]().next()).value);
    const out = await run(['check', `ws://127.0.0.1:${port}`]);
    expect(out.code, out.stderr).toBe(2);
    expect(out.stderr).toMatch(/cannot be checked: the welcome fails its schema .*resume_token/);
    // The command's own start-up (tsx, the re-exec) takes a few seconds here; the verdict itself is immediate.
    expect(out.ms).toBeLessThan(30_000);
  });
});

describe('gymwire check --serve: the suite starts, limits and stops the server itself', () => {
  it('runs the lifecycle cases against `gymwire serve` with small limits and stops it with SIGTERM', { timeout: 120_000 }, async () => {
    const serve = `${JSON.stringify(process.execPath)} bin/gymwire.js serve --port {port} --max-sessions 3 --idle-timeout 1s --drain-timeout 3s`;
    const out = await run(['check', '--serve', serve, '--env', 'gymwire/CartPole-v1', '--filter', 'lifecycle', '--json']);
    expect(out.code, `${out.stdout}\n${out.stderr}`).toBe(0);
    const reports = out.stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { name: string; status: string; message?: string });
    expect(reports.map((r) => [r.name.replace(/:.*/, ''), r.status])).toEqual(Array.from({ length: 4 }, () => ['lifecycle', 'pass']));
    // The SIGTERM case ran last, and the server it stopped has exited when the command returns.
    expect(reports.at(-1)!.name).toMatch(/stopping the server/);
    expect(out.stdout).toMatch(/the served server exited/);
  });

  it('says why when the command exits before it listens (exit 2, its output quoted)', { timeout: 60_000 }, async () => {
    const out = await run(['check', '--serve', 'echo "no such env server here" >&2; exit 3']);
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(/needs the server URL|exited \(3\) before it listened/);
  });

  it('skips each lifecycle case with the flag to use when the suite does not control the server', { timeout: 60_000 }, async () => {
    const out = await run([
      'check',
      '--serve',
      `${JSON.stringify(process.execPath)} bin/gymwire.js serve --port {port}`,
      '--env',
      'gymwire/CartPole-v1',
      '--filter',
      'lifecycle: make past',
      '--json',
    ]);
    const report = JSON.parse(out.stdout.split('\n').find((l) => l.startsWith('{'))!) as { status: string; message: string };
    expect(report.status).toBe('skip');
    expect(report.message).toMatch(/--max-sessions 4/);
  });
});
