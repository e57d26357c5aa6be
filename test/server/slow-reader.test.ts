/**
 * A client that stops reading while it keeps asking for frames (CartPole with render_mode
 * rgb_array, `render` in a loop: 720 KB per answer) against a real `gymwire serve` process, on
 * both WebSocket transports. The server stops reading from it once 8 MiB wait unread, closes it
 * with SLOW_READER (4008) when it has not drained within 2 s, and stays within a bounded RSS the
 * whole time (read from /proc: Linux); another client's pings are answered meanwhile.
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';

import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

import { CLOSE_CODES } from '../../protocol/close-codes.ts';
import { decode, encode } from '../../protocol/codec.ts';
import { PROTOCOL_VERSION } from '../../protocol/messages.ts';
import { rssOf, serveProcess } from '../helpers/serve-process.ts';
import { servedUrl } from '../helpers/serve-url.ts';

const MIB = 1024 * 1024;
/**
 * The slow client's grace (--outbound-drain-timeout) before it is closed with 4008, and again before
 * its socket is dropped (1006) if it still does not read: long enough that the test, on a loaded
 * machine, notices the close and reads again within the second window.
 */
const DRAIN_TIMEOUT_MS = 4_000;
const started: ChildProcess[] = [];

afterEach(() => {
  for (const child of started.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** A bare protocol client: requests by id, answers by id (a paused one reads none). */
async function open(
  url: string,
): Promise<{ ws: WebSocket; ask: (msg: Record<string, unknown>) => Promise<Record<string, unknown>>; send: (msg: Record<string, unknown>) => void }> {
  const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 1 << 30 });
  ws.on('error', () => {});
  await once(ws, 'open');
  let nextId = 1;
  const waiting = new Map<number, (m: Record<string, unknown>) => void>();
  ws.on('message', (data: Buffer) => {
    const msg = decode(data) as Record<string, unknown>;
    waiting.get(msg.id as number)?.(msg);
    waiting.delete(msg.id as number);
  });
  const send = (msg: Record<string, unknown>) => ws.send(encode({ id: nextId++, ...msg }));
  const ask = (msg: Record<string, unknown>) =>
    new Promise<Record<string, unknown>>((resolve) => {
      waiting.set(nextId, resolve);
      send(msg);
    });
  await ask({ type: 'hello', protocol_version: PROTOCOL_VERSION });
  return { ws, ask, send };
}

async function metric(url: string, name: string): Promise<number> {
  const body = await (await fetch(`${url.replace('ws://', 'http://')}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(body)?.[1] ?? NaN);
}

describe.each(['ws', 'uws'])('a client that stops reading its answers (--transport %s)', (transport) => {
  it('is paused, then closed with SLOW_READER; the server stays bounded and other clients are answered', async () => {
    const child = serveProcess([
      '--port',
      '0',
      '--transport',
      transport,
      '--log-level',
      'warn',
      '--max-outbound-bytes',
      '8m',
      '--outbound-drain-timeout',
      `${DRAIN_TIMEOUT_MS}ms`,
    ]);
    started.push(child);
    let log = '';
    child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
    const url = await servedUrl(child);

    const slow = await open(url);
    const made = await slow.ask({ type: 'make', env_id: 'gymwire/CartPole-v1', kwargs: { render_mode: 'rgb_array' } });
    const sessionId = (made.result as { session_id: string }).session_id;
    await slow.ask({ type: 'reset', session_id: sessionId, seed: 1 });
    const frame = await slow.ask({ type: 'render', session_id: sessionId });
    expect((frame.result as { frame: { shape: number[] } }).frame.shape).toEqual([400, 600, 3]);
    const closeCode = new Promise<number>((r) => slow.ws.once('close', (code) => r(code)));

    const other = await open(url);
    await other.ask({ type: 'ping' });
    const baseline = rssOf(child.pid!);

    // From here the slow client reads nothing and asks for a frame every millisecond or so.
    slow.ws.pause();
    let asked = 0;
    const asking = setInterval(() => {
      for (let i = 0; i < 8; i++, asked++) slow.send({ type: 'render', session_id: sessionId });
    }, 5);
    let peak = baseline;
    const sampling = setInterval(() => (peak = Math.max(peak, rssOf(child.pid!))), 50);
    const pingMs: number[] = [];
    const pinging = (async () => {
      while ((await metric(url, 'gymwire_slow_reader_closes_total')) < 1) {
        const t0 = performance.now();
        await other.ask({ type: 'ping' });
        pingMs.push(performance.now() - t0);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    await pinging;
    // Keep asking a moment longer: a closing connection takes nothing more.
    await new Promise((r) => setTimeout(r, 500));
    clearInterval(asking);
    clearInterval(sampling);
    // It reads again: behind the answers it left unread comes the close frame with the code.
    slow.ws.resume();
    expect(await closeCode).toBe(CLOSE_CODES.SLOW_READER);
    expect(log).toContain('SLOW_READER');

    // Unbounded, the asked-for frames would have cost the server asked * 720 KB.
    expect(asked * 720_000).toBeGreaterThan(1024 * MIB);
    expect(peak - baseline).toBeLessThan(200 * MIB);
    // The other client is served all along, not after the slow one is closed. On a loaded 2-core CI
    // machine one ping may meet a scheduler or GC pause, so the typical ping is held tight and the
    // slowest only below half the slow client's drain timeout: a server that served the other
    // client behind the slow one's backlog would answer it no sooner than that close.
    expect(pingMs.length).toBeGreaterThan(5);
    const sorted = [...pingMs].sort((a, b) => a - b);
    expect(sorted[Math.floor(sorted.length / 2)]).toBeLessThan(250);
    expect(sorted.at(-1)).toBeLessThan(DRAIN_TIMEOUT_MS / 2);
    // The other client is still served, on the same server.
    expect((await other.ask({ type: 'ping' })).type).toBe('result');
    other.ws.close();
  }, 60_000);
});
