/**
 * Reading an MCP request body with a bound: a declared Content-Length past the bound is refused
 * before a byte is read, and a body that grows past it while streaming stops being read (what
 * arrived is dropped), so a refused body costs at most the bound in memory.
 *
 * @example
 * const body = await readBoundedJson(req, 4 * 1024 * 1024);
 * if (body.kind === 'too_large') return refuse(413);
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Transform } from 'node:stream';
import type { Readable, Writable } from 'node:stream';

import { MAX_FRAME_DEPTH, nestsDeeperThan } from '../../protocol/frame-scan.ts';

export type BoundedBody = { kind: 'json'; value: unknown } | { kind: 'too_large' } | { kind: 'not_json' } | { kind: 'too_deep'; maxDepth: number };

/**
 * Reads the whole body as JSON unless it is larger than `maxBytes` or nests deeper than the
 * protocol's depth limit (MAX_FRAME_DEPTH, as for frames): the MCP SDK's schema checks recurse,
 * and a body too deep for them must be refused before it reaches them.
 */
export function readBoundedJson(req: IncomingMessage, maxBytes: number): Promise<BoundedBody> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return Promise.resolve({ kind: 'too_large' });
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > maxBytes) {
        stop();
        // Paused, not destroyed: the socket must stay open to carry the 413.
        req.pause();
        chunks.length = 0;
        resolve({ kind: 'too_large' });
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      stop();
      let value: unknown;
      try {
        value = JSON.parse(Buffer.concat(chunks, size).toString('utf8')) as unknown;
      } catch {
        return resolve({ kind: 'not_json' });
      }
      resolve(nestsDeeperThan(value, MAX_FRAME_DEPTH) ? { kind: 'too_deep', maxDepth: MAX_FRAME_DEPTH } : { kind: 'json', value });
    };
    const onError = (err: Error) => {
      stop();
      reject(err);
    };
    // A client that goes away mid-body may close the request without an error.
    const onClose = () => onError(new Error('the client closed the request before its body ended'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/** How long a refused request's unread body is drained before its connection is closed. */
export const DRAIN_MS = 2000;

/**
 * For an answer that leaves the body unread (401, 413): once the answer is written, what the
 * client still sends is read and dropped (no memory) for up to `ms`, so the client reads the
 * answer instead of a connection reset, and then the connection is closed unless the body ended.
 * Call it before ending the response.
 */
export function drainThenClose(req: IncomingMessage, res: ServerResponse, ms = DRAIN_MS): void {
  res.once('finish', () => {
    if (req.complete) return;
    const timer = setTimeout(() => req.socket.destroy(), ms);
    timer.unref();
    const done = () => clearTimeout(timer);
    req.once('end', done);
    req.once('close', done);
    req.resume();
  });
}

/**
 * The stdio bridge's counterpart of readBoundedJson: a filter between stdin and the MCP SDK's stdio
 * transport that passes each newline-delimited JSON-RPC message through unless it nests deeper
 * than MAX_FRAME_DEPTH, which is answered on `out` with the same -32600 error /mcp gives and
 * dropped before the SDK's recursive schema check sees it. A line longer than `maxLineBytes` is
 * dropped too (-32600), so a peer that never sends a newline costs at most that much memory.
 */
export function depthGuardedLines(input: Readable, out: Writable, maxLineBytes: number): Readable {
  let held: Buffer[] = [];
  let heldBytes = 0;
  let skipping = false;
  const refuse = (id: unknown, message: string) => {
    const validId = typeof id === 'string' || typeof id === 'number' ? id : null;
    out.write(`${JSON.stringify({ jsonrpc: '2.0', id: validId, error: { code: -32600, message } })}\n`);
  };
  const filter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      let start = 0;
      for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
        const part = chunk.subarray(start, nl);
        start = nl + 1;
        if (skipping) {
          skipping = false;
          continue;
        }
        const line = held.length > 0 ? Buffer.concat([...held, part]) : part;
        held = [];
        heldBytes = 0;
        let value: unknown;
        try {
          value = JSON.parse(line.toString('utf8')) as unknown;
        } catch {
          this.push(Buffer.concat([line, Buffer.from('\n')])); // not JSON: the SDK answers its parse error
          continue;
        }
        if (nestsDeeperThan(value, MAX_FRAME_DEPTH)) {
          refuse((value as { id?: unknown }).id, `Invalid Request: the message nests arrays and objects deeper than ${MAX_FRAME_DEPTH} levels`);
          continue;
        }
        this.push(Buffer.concat([line, Buffer.from('\n')]));
      }
      const rest = chunk.subarray(start);
      if (!skipping && rest.byteLength > 0) {
        heldBytes += rest.byteLength;
        if (heldBytes > maxLineBytes) {
          held = [];
          heldBytes = 0;
          skipping = true;
          refuse(null, `Invalid Request: a message is longer than ${maxLineBytes} bytes`);
        } else held.push(Buffer.from(rest));
      }
      done();
    },
  });
  input.pipe(filter);
  return filter;
}
