/**
 * Where benchmark processes run. On a VM, a round trip between two cores pays an idle-core wake-up
 * (tens of µs here) that one core shared by both does not, and left alone the scheduler co-locates
 * some process pairs and not others, so a figure and its floor could be measured under different
 * placements. Benchmarks therefore pin themselves to core 0 and start servers on core 1, like a
 * client and a server on two machines (BENCH_NO_PIN=1 leaves placement to the scheduler).
 */
import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';

export const CLIENT_CORE = 0;
export const SERVER_CORE = 1;

function pinSelf(): boolean {
  try {
    // -a: every thread of this process (V8's helpers and the policy worker included).
    execFileSync('taskset', ['-a', '-p', '-c', String(CLIENT_CORE), String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false; // no taskset: leave placement to the scheduler
  }
}

/** True when this process is pinned to CLIENT_CORE and `onCore` pins what it starts. */
export const PINNED = !process.env.BENCH_NO_PIN && availableParallelism() >= 2 && pinSelf();

/** The command and arguments that run `command args` on `core` (unchanged when not pinning). */
export function onCore(core: number, command: string, args: readonly string[]): [string, string[]] {
  return PINNED ? ['taskset', ['-c', String(core), command, ...args]] : [command, [...args]];
}
