/**
 * Starting a worker thread from one of our modules, whether the process runs the TypeScript
 * sources (through tsx) or compiled JavaScript.
 *
 * @example
 * const worker = startModuleWorker(new URL('./worker.ts', import.meta.url));
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

import { lowerPrioritySource, threadNice } from './thread-priority.ts';

/**
 * A worker running the module at `tsUrl` (a `.ts` URL next to the caller), or its `.js` twin when
 * the caller itself is compiled JavaScript, at niceness `nice` (default: thread-priority.ts's), set
 * before the module loads.
 */
export function startModuleWorker(tsUrl: URL, callerUrl: string, nice = threadNice()): Worker {
  const url = callerUrl.endsWith('.ts') ? tsUrl : new URL(tsUrl.href.replace(/\.ts$/, '.js'));
  // From TypeScript sources the worker is loaded through tsx (Node 20 workers do not inherit
  // the main thread's loader hooks, and `--import tsx` registers them too late for the entry).
  const load = url.pathname.endsWith('.ts')
    ? `import(${JSON.stringify(tsxApi())}).then((m) => m.tsImport(${JSON.stringify(url.href)}, ${JSON.stringify(url.href)}))`
    : `import(${JSON.stringify(url.href)})`;
  // An eval entry runs as a CommonJS script: the priority is set before anything is imported.
  return new Worker(lowerPrioritySource(nice) + load, { eval: true });
}

function tsxApi(): string {
  if (typeof import.meta.resolve === 'function') return import.meta.resolve('tsx/esm/api');
  return pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm/api')).href;
}
