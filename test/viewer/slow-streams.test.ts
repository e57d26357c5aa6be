/**
 * Ten `/api/events` streams that stop reading while a session steps fast (every update carries
 * the new steps) against a real `gymwire serve` process: the server holds back their updates once
 * 64 KiB wait unread, closes each after the 2 s drain timeout, and its RSS (from /proc: Linux)
 * stays bounded; a viewer that reads keeps getting updates.
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect as connectTcp } from 'node:net';
import type { Socket } from 'node:net';

import { afterEach, describe, expect, it } from 'vitest';

import { connect } from '../../client/ts/client.ts';
import { rssOf, serveProcess } from '../helpers/serve-process.ts';
import { servedUrl } from '../helpers/serve-url.ts';

const MIB = 1024 * 1024;
const started: ChildProcess[] = [];

afterEach(() => {
  for (const child of started.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

async function metric(base: string, name: string): Promise<number> {
  const body = await (await fetch(`${base}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(body)?.[1] ?? NaN);
}

/** Opens an SSE stream over a bare socket and stops reading it once its headers are in. */
async function stalledStream(port: number, path: string): Promise<Socket> {
  const socket = connectTcp(port, '127.0.0.1');
  await once(socket, 'connect');
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\n\r\n`);
  await once(socket, 'data');
  socket.pause();
  return socket;
}

describe('viewer streams that stop reading', () => {
  it('get no unbounded backlog: updates are held back, then the streams are closed', async () => {
    const child = serveProcess(['--port', '0', '--log-level', 'warn', '--viewer-max-backlog', '64k', '--outbound-drain-timeout', '2s']);
    started.push(child);
    const url = await servedUrl(child);
    const base = url.replace('ws://', 'http://');
    const port = Number(new URL(base).port);

    const client = await connect(url);
    const env = await client.make('gymwire/CartPole-v1');
    await env.reset({ seed: 1 });
    let stepping = true;
    let steps = 0;
    const stepper = (async () => {
      while (stepping) {
        const r = await env.step(steps++ % 2);
        if (r.terminated || r.truncated) await env.reset();
      }
    })();

    const baseline = rssOf(child.pid!);
    const streams = await Promise.all(Array.from({ length: 10 }, () => stalledStream(port, `/api/events?session=${env.sessionId}&interval_ms=50`)));
    let peak = baseline;
    const sampling = setInterval(() => (peak = Math.max(peak, rssOf(child.pid!))), 100);
    const deadline = Date.now() + 45_000;
    while ((await metric(base, 'gymwire_viewer_slow_streams_closed_total')) < 10 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    clearInterval(sampling);
    expect(await metric(base, 'gymwire_viewer_slow_streams_closed_total')).toBe(10);
    expect(peak - baseline).toBeLessThan(100 * MIB);

    // A viewer that reads still gets updates with the new steps.
    const abort = new AbortController();
    const res = await fetch(`${base}/api/events?session=${env.sessionId}&interval_ms=50`, { signal: abort.signal });
    const reader = res.body!.getReader();
    let text = '';
    while ((text.match(/event: update/g) ?? []).length < 3) text += new TextDecoder().decode((await reader.read()).value);
    abort.abort();

    stepping = false;
    await stepper;
    for (const s of streams) s.destroy();
    await client.closeAll();
  }, 90_000);
});
