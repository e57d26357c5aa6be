#!/usr/bin/env node
// The `gymwire` command. The sources are TypeScript run through tsx, so there is no build step.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const HEAP_FLAG = '--initial-old-space-size=';
/** Set in the re-run child: its parent is the command the user started, and its life bounds the child's. */
const CHILD_MARK = 'GYMWIRE_REEXEC_CHILD';

if (!process.execArgv.some((a) => a.startsWith(HEAP_FLAG)) && !process.env.GYMWIRE_NO_REEXEC) {
  // V8 sizes the old generation only at start-up. With its small default, the external memory of
  // large frames (camera observations) triggers a mark-compact every few tens of milliseconds and
  // halves throughput, so the command re-runs itself once with a generous initial size.
  // The IPC channel is the child's lifeline: it closes when this process dies in any way (kill -9
  // included), and the child then ends too instead of holding the port as an orphan.
  const child = spawn(process.execPath, [`${HEAP_FLAG}256`, ...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, [CHILD_MARK]: '1' },
  });
  // Ctrl-C reaches the child through the terminal's process group; other signals are passed on.
  process.on('SIGINT', () => {});
  for (const signal of ['SIGTERM', 'SIGHUP', 'SIGQUIT']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    if (signal) {
      // Die of the same signal (its handler is removed first, or it would only be passed on again).
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    } else process.exit(code ?? 1);
  });
} else {
  if (process.env[CHILD_MARK] && process.channel) {
    delete process.env[CHILD_MARK];
    // The channel must not keep the command alive once its work is done, only report the parent's death.
    process.channel.unref();
    process.on('disconnect', () => {
      // Ended as if by SIGTERM: `serve` shuts down gracefully within its drain time, others exit.
      process.kill(process.pid, 'SIGTERM');
    });
  }
  const { register } = await import('tsx/esm/api');
  register();
  const { main } = await import('./cli.ts');
  await main(process.argv);
}
