/**
 * What unauthenticated peers can make a uws server hold (docs/security.md). uWebSockets.js has
 * one maximum message size per app (twice max_frame_bytes, so frames between the limit and twice
 * it get a typed error) and hands a message over only once it is whole: a peer that has not said
 * hello can have uWS buffer up to that much. The bound is per peer, the per-IP pre-auth cap
 * bounds the peers of one address, and a frame declared larger is refused at its header.
 * Measured on a real `gymwire serve --transport uws` process through /proc (Linux).
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { rssOf, serveProcess } from '../helpers/serve-process.ts';
import { servedUrl } from '../helpers/serve-url.ts';

const MAX_FRAME_BYTES = 4 * 1024 * 1024;
const PREAUTH_PER_IP = 6;

/** A masked binary frame header (mask key 0: the payload goes as is) declaring `length` bytes. */
function frameHeader(length: number): Buffer {
  const header = Buffer.alloc(14);
  header[0] = 0x82;
  header[1] = 0x80 | 127;
  header.writeBigUInt64BE(BigInt(length), 2);
  return header; // bytes 10..13: the zero mask key
}

async function open(url: string): Promise<WebSocket> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  ws.on('error', () => {});
  await once(ws, 'open');
  return ws;
}

const rawSocket = (ws: WebSocket) => (ws as unknown as { _socket: Socket })._socket;

describe('an unauthenticated uws peer', () => {
  let child: ChildProcess;
  let url = '';
  let dir = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gymwire-preauth-'));
    writeFileSync(join(dir, 'token'), 'sekrit\n');
    child = serveProcess(
      [
        '--port',
        '0',
        '--transport',
        'uws',
        '--token-file',
        join(dir, 'token'),
        '--max-frame-bytes',
        String(MAX_FRAME_BYTES),
        '--max-preauth-per-ip',
        String(PREAUTH_PER_IP),
        '--hello-timeout',
        '60000',
        '--log-level',
        'warn',
      ],
      { env: { GYMWIRE_TOKEN: '' }, stderr: 'inherit' },
    );
    url = await servedUrl(child);
  }, 120_000);

  afterAll(() => {
    child?.kill('SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('holds at most twice max_frame_bytes per peer, at most max-preauth-per-ip peers per address, and refuses the frame undecoded', async () => {
    // Each peer sends all but the last byte of the largest frame uWS accepts: uWS holds it, unfinished.
    const length = 2 * MAX_FRAME_BYTES;
    const peers = await Promise.all(Array.from({ length: PREAUTH_PER_IP }, () => open(url)));
    const before = rssOf(child.pid!);
    const body = Buffer.alloc(length - 1, 0xc0); // msgpack nil bytes: never decoded anyway
    await Promise.all(
      peers.map(
        (ws) =>
          new Promise<void>((resolve) => {
            const socket = rawSocket(ws);
            socket.write(frameHeader(length));
            socket.write(body, () => resolve());
          }),
      ),
    );
    // Let the server read what was written.
    for (let i = 0; i < 50 && rssOf(child.pid!) - before < PREAUTH_PER_IP * MAX_FRAME_BYTES; i++) await new Promise((r) => setTimeout(r, 100));
    const held = rssOf(child.pid!) - before;
    // One more connection from this address is refused at the upgrade (429): the peers of one address are capped.
    const refused = new WebSocket(url, { perMessageDeflate: false });
    const status = await new Promise<number>((resolve) => {
      refused.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      refused.on('open', () => resolve(101));
      refused.on('error', () => {});
    });
    expect(status).toBe(429);
    // The bound of docs/security.md: 2 x max_frame_bytes per peer (uWS's buffer), plus slack for the process.
    expect(held).toBeLessThan(PREAUTH_PER_IP * 2 * MAX_FRAME_BYTES + 32 * 1024 * 1024);
    // The last byte completes each frame: it is refused by its size (ENV_ERR_FRAME_TOO_LARGE) and the peer closed (1008).
    const codes = peers.map((ws) => new Promise<number>((resolve) => ws.once('close', (code) => resolve(code))));
    for (const ws of peers) rawSocket(ws).write(Buffer.from([0xc0]));
    expect(await Promise.all(codes)).toEqual(peers.map(() => 1008));
    expect(child.exitCode).toBeNull();
  }, 120_000);

  it('is closed at the header of a frame declared larger than twice max_frame_bytes, before uWS buffers it', async () => {
    const ws = await open(url);
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    const before = rssOf(child.pid!);
    rawSocket(ws).write(frameHeader(2 * MAX_FRAME_BYTES + 1));
    rawSocket(ws).write(Buffer.alloc(64 * 1024, 0xc0), () => {});
    const code = await closed;
    // uWS closes a too-big message with 1006 (no close frame) or 1009 depending on timing; either way no hello and no buffer.
    expect([1006, 1009]).toContain(code);
    expect(rssOf(child.pid!) - before).toBeLessThan(MAX_FRAME_BYTES);
  }, 60_000);
});
