/**
 * `gymwire serve` re-runs itself in a child process (bin/gymwire.js); the two live and die together:
 * `kill -9` of the PID the user started leaves no server holding the port, and SIGTERM lets a slow
 * reader read every answer, the `shutdown` event and a 1001 close before the process exits.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import { afterEach, describe, expect, it } from 'vitest';

import { slowReaderThroughShutdown } from '../client/slow-reader.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const started: ChildProcess[] = [];

afterEach(() => {
  for (const child of started.splice(0)) {
    // Each runs in a process group of its own: a failed test must not leave the re-run child behind.
    if (child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
});

/** Starts `gymwire serve` and resolves with it and its port once it serves, or with null when it exits first. */
async function serve(port: number): Promise<{ child: ChildProcess; port: number; output: string } | null> {
  const child = spawn(process.execPath, ['bin/gymwire.js', 'serve', '--port', String(port), '--log-level', 'warn'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  started.push(child);
  let output = '';
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  for await (const line of createInterface({ input: child.stdout! })) {
    const m = /^gymwire serving .* on ws:\/\/127\.0\.0\.1:(\d+) /.exec(line);
    if (m) return { child, port: Number(m[1]), output };
  }
  await new Promise((r) => (child.exitCode === null ? child.once('exit', r) : r(null)));
  return null;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('gymwire serve lifecycle', () => {
  it('leaves no server behind when its PID is killed with SIGKILL: the port can be served again', async () => {
    const first = await serve(0);
    expect(first).not.toBeNull();
    const { child, port } = first!;
    const children = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(/\s+/).map(Number);
    expect(children).toHaveLength(1);
    const server = children[0]!;
    child.kill('SIGKILL');
    // The re-run child notices its parent's death and shuts down (within its drain time, 10 s by default).
    while (alive(server)) await new Promise((r) => setTimeout(r, 50));
    const second = await serve(port);
    expect(second?.port).toBe(port);
    second!.child.kill('SIGTERM');
  }, 120_000);

  it('on SIGTERM lets a slow reader read every answer, then the shutdown event and a 1001 close', async () => {
    const running = await serve(0);
    expect(running).not.toBeNull();
    const { child, port } = running!;
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const outcome = await slowReaderThroughShutdown(`ws://127.0.0.1:${port}`, () => child.kill('SIGTERM'));
    expect(outcome.answered).toEqual(outcome.sent);
    expect(outcome.events).toEqual(['shutdown']);
    expect(outcome.closeCode).toBe(1001);
    expect(await exited).toBe(0);
  }, 120_000);

  it('`npm start` stops on SIGTERM and frees its port', async () => {
    // npm signals its script's shell; `exec` in the script makes that shell the server itself.
    const child = spawn('npm', ['start', '--', '--port', '0', '--log-level', 'warn'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    started.push(child);
    let port = 0;
    for await (const line of createInterface({ input: child.stdout! })) {
      const m = /^gymwire serving .* on ws:\/\/127\.0\.0\.1:(\d+) /.exec(line);
      if (m) {
        port = Number(m[1]);
        break;
      }
    }
    expect(port).toBeGreaterThan(0);
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
    const listens = () =>
      new Promise<boolean>((resolve) => {
        const probe = createServer();
        probe.once('error', () => resolve(false));
        probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
      });
    const deadline = Date.now() + 15_000;
    while (!(await listens()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(await listens()).toBe(true);
  }, 60_000);
});
