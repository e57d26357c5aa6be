/**
 * The `gymwire` command re-runs itself once with a larger initial old generation, from a checkout
 * (bin/gymwire.js) and installed (dist/bin/main.js) alike. V8 sizes the old generation only at
 * start-up; with its small default, the external memory of large frames (camera observations)
 * triggers a mark-compact every few tens of milliseconds and halves throughput.
 */
import { spawn } from 'node:child_process';

export const HEAP_FLAG = '--initial-old-space-size=';
/** Set in the re-run child: its parent is the command the user started, and its life bounds the child's. */
const CHILD_MARK = 'GYMWIRE_REEXEC_CHILD';

/**
 * Re-runs `entry` (this command's script) with the heap flag unless this process has it already
 * (or GYMWIRE_NO_REEXEC is set). Returns true when this process is now only the parent waiting
 * for that child: the caller must then do nothing else.
 */
export function reexecWithLargerHeap(entry: string): boolean {
  if (process.execArgv.some((a) => a.startsWith(HEAP_FLAG)) || process.env.GYMWIRE_NO_REEXEC) {
    if (process.env[CHILD_MARK] && process.channel) {
      delete process.env[CHILD_MARK];
      // The channel must not keep the command alive once its work is done, only report the parent's death.
      process.channel.unref();
      process.on('disconnect', () => {
        // Ended as if by SIGTERM: `serve` shuts down gracefully within its drain time, others exit.
        process.kill(process.pid, 'SIGTERM');
      });
    }
    return false;
  }
  // The IPC channel is the child's lifeline: it closes when this process dies in any way (kill -9
  // included), and the child then ends too instead of holding the port as an orphan.
  const child = spawn(process.execPath, [`${HEAP_FLAG}256`, ...process.execArgv, entry, ...process.argv.slice(2)], {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, [CHILD_MARK]: '1' },
  });
  // Ctrl-C reaches the child through the terminal's process group; other signals are passed on.
  process.on('SIGINT', () => {});
  for (const signal of ['SIGTERM', 'SIGHUP', 'SIGQUIT'] as const) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    if (signal) {
      // Die of the same signal (its handler is removed first, or it would only be passed on again).
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    } else process.exit(code ?? 1);
  });
  return true;
}
