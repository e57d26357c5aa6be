/**
 * A server the conformance suite starts itself (`gymwire check --serve "<command>"`), so that the
 * lifecycle cases may read its /healthz, drive it to its limits and stop it with SIGTERM. The
 * command runs in a shell of its own process group; `{port}` in it becomes a free loopback port.
 */
import { spawn } from 'node:child_process';
import { connect as tcpConnect, createServer } from 'node:net';

import type { ServerLifecycle } from './harness.ts';

/** How much of the command's output is kept for the error that says why it did not start. */
const OUTPUT_TAIL_BYTES = 16 * 1024;
/** How long a stopped server may take to exit before it is killed (the default drain time and slack). */
const EXIT_WAIT_MS = 15_000;

export interface ServedServer {
  url: string;
  lifecycle: ServerLifecycle;
  /** The last lines the command printed (stdout and stderr together). */
  output(): string;
  /** Resolves with the exit code (or the signal's name) once the command has exited. */
  exited: Promise<number | string>;
  /** Stops the server if it still runs: SIGTERM, then SIGKILL after the drain time. */
  dispose(): Promise<void>;
}

/** The command exited or never listened: its output says why. */
export class ServeFailedError extends Error {
  override readonly name = 'ServeFailedError';
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => probe.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** How long one connection attempt may take (a remote host that drops packets never refuses). */
const CONNECT_ATTEMPT_MS = 1000;

function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tcpConnect({ host, port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.setTimeout(CONNECT_ATTEMPT_MS, () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
  });
}

export async function startServed(command: string, opts: { url?: string; waitMs?: number } = {}): Promise<ServedServer> {
  let url = opts.url;
  if (command.includes('{port}')) {
    const port = await freePort();
    command = command.replaceAll('{port}', String(port));
    url ??= `ws://127.0.0.1:${port}`;
  }
  if (!url) throw new ServeFailedError('--serve needs the server URL as the argument, or {port} in the command for a free port');
  const where = new URL(url);
  const port = Number(where.port || (where.protocol === 'wss:' ? 443 : 80));
  const httpBase = `${where.protocol === 'wss:' ? 'https' : 'http'}://${where.host}`;

  const child = spawn('sh', ['-c', command], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-OUTPUT_TAIL_BYTES);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let exitedWith: number | string | null = null;
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => {
      exitedWith = code ?? signal ?? 'unknown';
      resolve(exitedWith);
    }),
  );
  // The whole group: `sh -c` may have forked the server (npx, a wrapper script) rather than exec'd it.
  const signal = (sig: NodeJS.Signals) => {
    if (exitedWith !== null || child.pid === undefined) return;
    try {
      process.kill(-child.pid, sig);
    } catch {
      // Already gone.
    }
  };
  const served: ServedServer = {
    url,
    lifecycle: { httpBase, stop: () => signal('SIGTERM') },
    output: () => tail,
    exited,
    async dispose() {
      signal('SIGTERM');
      const timer = setTimeout(() => signal('SIGKILL'), EXIT_WAIT_MS);
      await exited;
      clearTimeout(timer);
    },
  };

  const deadline = Date.now() + (opts.waitMs ?? 30_000);
  for (;;) {
    if (exitedWith !== null) throw new ServeFailedError(`the server command exited (${exitedWith}) before it listened on ${url}:\n${tail.trimEnd()}`);
    if (await accepts(where.hostname, port)) return served;
    if (Date.now() > deadline) {
      await served.dispose();
      throw new ServeFailedError(`the server command did not listen on ${url} within ${opts.waitMs ?? 30_000} ms:\n${tail.trimEnd()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
