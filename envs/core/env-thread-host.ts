/**
 * The worker side of an {@link EnvThreadPool}: a thread that builds envs with the family's
 * `create` and runs their calls in order, answering with packed values (tensors' bytes
 * transferred) and packed errors.
 *
 * @example
 * // envs/navsim/thread.ts, the family's thread entry
 * serveEnvThread((args) => new NavsimEnv((args as NavsimThreadArgs).version, ...));
 */
import { parentPort } from 'node:worker_threads';

import type { Env } from './env.ts';
import type { EnvThreadRequest, EnvThreadResponse } from './env-threads.ts';
import { packError, packValue, unpackValue } from './thread-values.ts';

/** What an env on a thread logs with: the line reaches the env's logger on the calling thread. */
export interface ThreadLog {
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

/** Serves env calls on this worker thread; `create` builds an env from its make arguments and a logger. */
export function serveEnvThread(create: (args: unknown, log: ThreadLog) => Env | Promise<Env>): void {
  const port = parentPort;
  if (!port) throw new Error('serveEnvThread runs on a worker thread');
  const envs = new Map<number, Env>();
  const answer = (res: EnvThreadResponse, transfer: ArrayBuffer[] = []) => port.postMessage(res, transfer);
  // One call at a time, in arrival order: an env sees its calls as a single thread would make them.
  let queue: Promise<void> = Promise.resolve();
  port.on('message', (msg: EnvThreadRequest) => {
    queue = queue.then(async () => {
      try {
        const transfer: ArrayBuffer[] = [];
        const value = packValue(await run(msg), transfer);
        answer({ id: msg.id, ok: true, value }, transfer);
      } catch (err) {
        answer({ id: msg.id, ok: false, error: packError(err) });
      }
    });
  });

  async function run(msg: EnvThreadRequest): Promise<unknown> {
    if (msg.method === 'make') {
      const envId = msg.envId;
      // Errors are not cloneable with their class: they travel as name and message.
      const line = (level: 'warn' | 'error') => (fields: Record<string, unknown>, message: string) =>
        answer({
          log: {
            envId,
            level,
            fields: packValue(Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, v instanceof Error ? packError(v) : v]))) as Record<
              string,
              unknown
            >,
            message,
          },
        });
      envs.set(envId, await create(msg.args[0], { warn: line('warn'), error: line('error') }));
      return null;
    }
    const env = envs.get(msg.envId);
    if (!env) throw new Error(`env thread holds no env ${msg.envId}`);
    const args = msg.args.map(unpackValue);
    switch (msg.method) {
      case 'reset':
        return env.reset(args[0] as Parameters<Env['reset']>[0]);
      case 'step':
        return env.step(args[0]);
      case 'render':
        return env.render ? env.render() : null;
      case 'getState':
        if (!env.getState) throw new Error('this env has no getState');
        return env.getState();
      case 'setState':
        if (!env.setState) throw new Error('this env has no setState');
        return env.setState(args[0] as Uint8Array);
      case 'tool': {
        const tool = (env.tools ?? []).find((t) => t.name === args[0]);
        if (!tool) throw new Error(`this env has no tool ${String(args[0])}`);
        // Arguments were validated against the same schema on the calling thread.
        return tool.handler(args[1] as never, { env, wrapped: env });
      }
      case 'close':
        envs.delete(msg.envId);
        return env.close?.();
    }
  }
}
