/**
 * A link that goes silent (no FIN, no RST: a frozen NAT entry, a pulled cable) is noticed by the
 * client's keepalive pings; it drops the connection, reconnects and resumes, and the request sent
 * into the dead link is answered. The silent link is a real TCP proxy on loopback that stops
 * forwarding without closing anything.
 */
import { createConnection, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';

import { afterEach, describe, expect, it } from 'vitest';

import { connect } from '../../client/ts/client.ts';
import type { ClientEvent } from '../../client/ts/client.ts';
import { testRegistry } from '../helpers/envs.ts';
import { startTestServer } from '../helpers/servers.ts';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

/** Forwards TCP to `upstreamPort`; freeze() stops the connections open now dead, in both directions; new ones forward. */
class FreezableProxy {
  private readonly pairs: [Socket, Socket][] = [];
  private server: Server | null = null;
  connections = 0;

  constructor(private readonly upstreamPort: number) {}

  async start(): Promise<number> {
    const server = createServer((down) => {
      this.connections++;
      const up = createConnection({ host: '127.0.0.1', port: this.upstreamPort });
      down.pipe(up);
      up.pipe(down);
      // A reset from either side is not this proxy's business: a frozen pair holds both sockets open.
      down.on('error', () => up.destroy());
      up.on('error', () => down.destroy());
      this.pairs.push([down, up]);
    });
    this.server = server;
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return (server.address() as AddressInfo).port;
  }

  freeze(): void {
    for (const [down, up] of this.pairs) {
      down.unpipe(up);
      up.unpipe(down);
      // Stop reading: the bytes stay in the kernel, as on a link that delivers nothing.
      down.pause();
      up.pause();
    }
  }

  async close(): Promise<void> {
    for (const [down, up] of this.pairs) {
      down.destroy();
      up.destroy();
    }
    await new Promise((r) => this.server?.close(r));
  }
}

describe('client keepalive', () => {
  it('notices a frozen link, reconnects and resumes: the step sent into it is answered', async () => {
    const srv = await startTestServer('ws', { registry: testRegistry() });
    cleanups.push(() => srv.close());
    const proxy = new FreezableProxy(srv.server.port);
    const port = await proxy.start();
    cleanups.push(() => proxy.close());
    const events: ClientEvent[] = [];
    const c = await connect(`ws://127.0.0.1:${port}`, {
      keepaliveIntervalMs: 200,
      keepaliveTimeoutMs: 500,
      requestTimeoutMs: 60_000,
      onEvent: (e) => events.push(e),
    });
    cleanups.push(() => c.close());
    const env = await c.make('test/Counter-v0');
    await env.reset();
    expect((await env.step(0)).obs).toBe(1);
    proxy.freeze();
    expect((await env.step(0)).obs).toBe(2);
    expect(events).toContainEqual({ type: 'reconnected', resumed: true });
    expect(events.find((e) => e.type === 'disconnected')).toMatchObject({ reason: expect.stringContaining('keepalive') });
    expect(proxy.connections).toBe(2);
  }, 60_000);

  it('stays quiet on a live link: no reconnect while the server answers its pings', async () => {
    const srv = await startTestServer('ws', { registry: testRegistry() });
    cleanups.push(() => srv.close());
    const events: ClientEvent[] = [];
    const c = await connect(srv.server.url, { keepaliveIntervalMs: 50, keepaliveTimeoutMs: 5000, onEvent: (e) => events.push(e) });
    cleanups.push(() => c.close());
    await new Promise((r) => setTimeout(r, 600));
    expect(await c.ping()).toBeGreaterThanOrEqual(0);
    expect(events).toEqual([]);
  });
});
