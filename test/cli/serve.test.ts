/**
 * `gymwire serve` as a process: SIGTERM shuts it down, also when whoever read its output has gone
 * (`gymwire serve 2>&1 | head`), which used to leave it hanging forever in its exit handler.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Starts `gymwire serve` on a free port and waits for the line saying it serves. */
async function serve(): Promise<ReturnType<typeof spawn>> {
  // detached: a process group of its own, so a failed test can kill the re-run child (bin/gymwire.js) too.
  const child = spawn(process.execPath, ['bin/gymwire.js', 'serve', '--port', '0', '--log-level', 'info'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const lines = createInterface({ input: child.stdout! });
  for await (const line of lines) if (line.startsWith('gymwire serving')) break;
  return child;
}

/** Resolves with the exit code (or signal), or rejects after `ms`. */
function exited(child: ReturnType<typeof spawn>, ms: number): Promise<number | string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gymwire serve did not exit within ${ms} ms of SIGTERM`)), ms);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve(code ?? signal ?? -1);
    });
  });
}

describe('gymwire serve process', () => {
  it('shuts down on SIGTERM, logging it', async () => {
    const child = await serve();
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.kill('SIGTERM');
    expect(await exited(child, 15_000)).toBe(0);
    expect(stderr).toContain('server shut down');
  }, 30_000);

  it('shuts down on SIGTERM after its stdout and stderr readers have gone', async () => {
    const child = await serve();
    // Whoever read the output is gone: the server's next log line meets a broken pipe.
    child.stdout!.destroy();
    child.stderr!.destroy();
    await new Promise((r) => setTimeout(r, 100));
    child.kill('SIGTERM');
    try {
      await exited(child, 15_000);
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
    }
  }, 30_000);
});
