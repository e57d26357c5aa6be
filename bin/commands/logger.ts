/**
 * The commands' logger: pino JSON lines on stderr, written synchronously. pino's default
 * asynchronous destination buffers lines and flushes them when the process exits; when stderr is a
 * pipe whose reader has gone (`gymwire serve 2>&1 | head`), that flush retries the EPIPE forever
 * (sonic-boom 4's flushSync retries every error, not only EAGAIN), so the process never exits and,
 * stuck in the exit handler, no longer hears signals. Written synchronously, a broken pipe is
 * reported by the write itself and pino stops writing to it. The commands log a few lines per
 * session or connection, so the synchronous writes cost nothing that matters.
 */
import pino from 'pino';
import type { Logger } from 'pino';

export function stderrLogger(level: string): Logger {
  return pino({ level }, pino.destination({ dest: 2, sync: true }));
}
