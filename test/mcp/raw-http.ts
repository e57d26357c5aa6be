/**
 * Raw HTTP probes of /mcp where the official client cannot go: a body that is never sent or is far
 * too large, a request from another loopback address (127.0.0.2 is another caller).
 */
import { request } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';

export interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** Body bytes written before the answer came (or the connection ended). */
  sent: number;
}

export interface RawPostOptions {
  headers?: Record<string, string>;
  /** Body bytes to stream ('x' repeated, so a parser would choke on it); chunked unless headers set content-length. */
  bodyBytes?: number;
  /** Send this JSON instead. */
  json?: unknown;
  /** Send this text as it is (JSON too deep for JSON.stringify). */
  text?: string;
  /** Send the headers only and never the body (the declared content-length is a lie). */
  withholdBody?: boolean;
  localAddress?: string;
}

const CHUNK = Buffer.alloc(64 * 1024, 'x');

/** POSTs to `url` and resolves with the first answer, however much of the body was written. */
export function rawPost(url: string, opts: RawPostOptions = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const req = request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...opts.headers },
      ...(opts.localAddress ? { localAddress: opts.localAddress } : {}),
    });
    req.on('response', (res) => {
      answered = true;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, sent });
        req.destroy();
      });
      res.on('error', reject);
    });
    // The server closing on a refused body shows up as a write error after (or instead of) the answer.
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    if (opts.json !== undefined || opts.text !== undefined) {
      const text = opts.text ?? JSON.stringify(opts.json);
      sent = Buffer.byteLength(text);
      req.end(text);
      return;
    }
    if (opts.withholdBody) {
      req.flushHeaders();
      return;
    }
    const total = opts.bodyBytes ?? 0;
    const pump = () => {
      while (!answered && !req.destroyed && sent < total) {
        const n = Math.min(CHUNK.byteLength, total - sent);
        sent += n;
        if (!req.write(n === CHUNK.byteLength ? CHUNK : CHUNK.subarray(0, n))) return void req.once('drain', pump);
      }
      if (!answered && !req.destroyed) req.end();
    };
    pump();
  });
}

export const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw-probe', version: '0' } },
};

/** The JSON-RPC message of an answer, whether it came as JSON or as one SSE `data:` event. */
export function jsonRpcAnswer(body: string): unknown {
  const data = body.startsWith('event:') || body.startsWith('data:') ? body.split('\n').find((line) => line.startsWith('data:')) : undefined;
  return JSON.parse(data !== undefined ? data.slice(5) : body) as unknown;
}
