#!/usr/bin/env node
// The `gymwire` command. The sources are TypeScript run through tsx, so there is no build step.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const HEAP_FLAG = '--initial-old-space-size=';

if (!process.execArgv.some((a) => a.startsWith(HEAP_FLAG)) && !process.env.GYMWIRE_NO_REEXEC) {
  // V8 sizes the old generation only at start-up. With its small default, the external memory of
  // large frames (camera observations) triggers a mark-compact every few tens of milliseconds and
  // halves throughput, so the command re-runs itself once with a generous initial size.
  const child = spawn(process.execPath, [`${HEAP_FLAG}256`, ...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
  });
  // Ctrl-C reaches the child through the terminal's process group; other signals are passed on.
  process.on('SIGINT', () => {});
  for (const signal of ['SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    if (signal) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
} else {
  const { register } = await import('tsx/esm/api');
  register();
  const { main } = await import('./cli.ts');
  await main(process.argv);
}
