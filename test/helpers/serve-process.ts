/**
 * A `gymwire serve` process whose own figures a test reads: GYMWIRE_NO_REEXEC keeps the server in
 * the spawned process (no re-run child), so /proc/<pid> is the server's (Linux).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Starts `gymwire serve <args>`; stdout is piped (see servedUrl), stderr as asked. */
export function serveProcess(args: string[], opts: { env?: NodeJS.ProcessEnv; stderr?: 'pipe' | 'inherit' } = {}): ChildProcess {
  return spawn(process.execPath, ['bin/gymwire.js', 'serve', ...args], {
    cwd: ROOT,
    env: { ...process.env, GYMWIRE_NO_REEXEC: '1', ...opts.env },
    stdio: ['ignore', 'pipe', opts.stderr ?? 'pipe'],
  });
}

/** The resident memory of a process, in bytes. */
export function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN) * 1024;
}
