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
