/**
 * What huge /mcp bodies cost a real `gymwire serve` process, measured from outside through
 * /proc/PID/status: the peak resident size (VmHWM, reset before the probes) may grow by a few
 * MiB of bookkeeping, never by the size of the bodies (it grew by 1.4 GiB for one 64 MiB body
 * when bodies were read and parsed before the token check).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { rawPost } from './raw-http.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MiB = 1024 * 1024;
const TOKEN = 'front-door-token';

let child: ChildProcess | null = null;
let mcpUrl = '';

/** VmRSS and VmHWM of a process, in bytes. */
function memory(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]) * 1024;
  return { rss: kib('VmRSS'), peak: kib('VmHWM') };
}

beforeAll(async () => {
  // GYMWIRE_NO_REEXEC: the process spawned is the server itself, not a launcher around it.
  child = spawn(
    process.execPath,
    ['bin/gymwire.js', 'serve', '--port', '0', '--token', TOKEN, '--log-level', 'error', '--mcp-max-body-bytes', String(4 * MiB)],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, GYMWIRE_NO_REEXEC: '1' },
    },
  );
  for await (const line of createInterface({ input: child.stdout! })) {
    const m = /on ws:\/\/([\d.]+):(\d+)/.exec(line);
    if (m) {
      mcpUrl = `http://${m[1]}:${m[2]}/mcp`;
      break;
    }
  }
}, 60_000);

afterAll(() => {
  child?.kill('SIGKILL');
});

describe('huge /mcp bodies against a gymwire serve process', () => {
  it('cost bounded memory: 401 unread without the token, 413 after the bound with it', async () => {
    const pid = child!.pid!;
    const probe = async () => {
      const unauthenticated = await rawPost(mcpUrl, { bodyBytes: 64 * MiB });
      expect(unauthenticated.status).toBe(401);
      const authenticated = await rawPost(mcpUrl, { bodyBytes: 64 * MiB, headers: { authorization: `Bearer ${TOKEN}` } });
      expect(authenticated.status).toBe(413);
    };
    // One round first, so code paths loaded once (JIT, sockets) do not count as growth.
    await probe();
    // Resets VmHWM to the current size; where /proc forbids it, samples of VmRSS stand in for the peak.
    let peakReset = true;
    try {
      writeFileSync(`/proc/${pid}/clear_refs`, '5');
    } catch {
      peakReset = false;
    }
    const before = memory(pid);
    let sampled = before.rss;
    const sampler = setInterval(() => (sampled = Math.max(sampled, memory(pid).rss)), 5);
    try {
      for (let i = 0; i < 3; i++) await probe();
    } finally {
      clearInterval(sampler);
    }
    const peak = peakReset ? memory(pid).peak : Math.max(sampled, memory(pid).rss);
    // Three rounds of 2 x 64 MiB: reading them would cost hundreds of MiB; the bound lets 4 MiB in per request.
    expect(peak - before.rss).toBeLessThan(48 * MiB);
  }, 60_000);
});
