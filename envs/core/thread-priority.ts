/**
 * Heavy env work (scene loading, camera rendering, world-model inference) runs on worker threads
 * at a lower scheduling priority than the event loop: on a busy machine the event loop, ready to
 * answer another client's `ping`, is scheduled ahead of a render instead of waiting for its time
 * slice to end. The worker lowers its own priority before it loads its modules (see
 * threads.ts), and threads it starts later (onnxruntime's pool) inherit it.
 *
 * Linux only: elsewhere a thread has no id that `setpriority` takes, and the threads run at the
 * process's priority.
 */

/** The niceness worker threads run at unless `GYMWIRE_THREAD_NICE` says otherwise (0: the event loop's). */
export const DEFAULT_THREAD_NICE = 10;

/** The niceness worker threads take: `GYMWIRE_THREAD_NICE` (an integer 0 to 19), else {@link DEFAULT_THREAD_NICE}. */
export function threadNice(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.GYMWIRE_THREAD_NICE;
  if (raw === undefined || raw === '') return DEFAULT_THREAD_NICE;
  const nice = Number(raw);
  if (!Number.isInteger(nice) || nice < 0 || nice > 19) throw new Error(`GYMWIRE_THREAD_NICE must be an integer from 0 to 19, got ${JSON.stringify(raw)}`);
  return nice;
}

/**
 * Source that a worker's eval entry runs first: it sets its own thread's niceness to `nice`.
 * /proc/thread-self links to /proc/<pid>/task/<tid>, and setpriority(PRIO_PROCESS, tid) on Linux
 * sets that one thread. A failure (no /proc, a sandbox refusing the call) leaves the thread at the
 * process's priority: slower answers to others under load, never a failed worker.
 */
export function lowerPrioritySource(nice: number): string {
  if (nice === 0) return '';
  return (
    `if (process.platform === 'linux') { try { require('node:os').setPriority(` +
    `Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop()), ${nice}); } catch {} }\n`
  );
}
