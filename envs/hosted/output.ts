/**
 * A worker's stdout and stderr, line by line into the server log, with a bound: a line longer than
 * `maxLineBytes` is logged cut (its first `maxLineBytes`, and how many bytes were dropped) and the
 * rest of it is skipped as it arrives, never held. An env that prints 700 MiB without a newline
 * costs the server `maxLineBytes`, not a string longer than V8 allows.
 *
 * @example
 * captureLines(child.stdout!, 64 * 1024, (line, cut) => log.info({ stream: 'stdout', cut_bytes: cut }, line));
 */
import type { Readable } from 'node:stream';

/** Longest line of a worker's output kept whole by default; the rest of a longer one is dropped. */
export const DEFAULT_MAX_OUTPUT_LINE_BYTES = 64 * 1024;

/** Calls `onLine(text, cutBytes)` for each line of `stream` (cutBytes: what was dropped from it, 0 for a whole line). */
export function captureLines(stream: Readable, maxLineBytes: number, onLine: (line: string, cutBytes: number) => void): void {
  let parts: Buffer[] = [];
  let kept = 0;
  let cut = 0;
  const emit = () => {
    const text = Buffer.concat(parts, kept).toString('utf8').replace(/\r$/, '');
    onLine(text, cut);
    parts = [];
    kept = 0;
    cut = 0;
  };
  const take = (piece: Buffer) => {
    const room = maxLineBytes - kept;
    if (piece.byteLength <= room) {
      // A copy: a view would keep the stream's whole chunk alive.
      parts.push(Buffer.from(piece));
      kept += piece.byteLength;
      return;
    }
    if (room > 0) {
      parts.push(Buffer.from(piece.subarray(0, room)));
      kept += room;
    }
    cut += piece.byteLength - Math.max(0, room);
  };
  stream.on('data', (chunk: Buffer) => {
    let start = 0;
    for (let nl = chunk.indexOf(10, start); nl >= 0; nl = chunk.indexOf(10, start)) {
      take(chunk.subarray(start, nl));
      emit();
      start = nl + 1;
    }
    if (start < chunk.byteLength) take(chunk.subarray(start));
  });
  stream.on('end', () => {
    if (kept > 0 || cut > 0) emit();
  });
}
