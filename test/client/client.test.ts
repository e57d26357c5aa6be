import { afterEach, describe, expect, it } from 'vitest';

import { connect } from '../../client/ts/client.ts';
import { ProtocolError, SdkError } from '../../client/ts/errors.ts';
import { wsConnector } from '../../client/ts/transport.ts';
import { testRegistry } from '../helpers/envs.ts';
import { startTestServer } from '../helpers/servers.ts';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

describe('client', () => {
  it('fails a request that gets no answer in time with a local REQUEST_TIMEOUT', async () => {
    const srv = await startTestServer('ws', { registry: testRegistry() });
    cleanups.push(() => srv.close());
    // The deadline must cover make and reset on a loaded CI machine; only the step (5 s) outlasts it.
    const c = await connect(srv.connector, { requestTimeoutMs: 1500 });
    cleanups.push(() => c.close());
    const env = await c.make('test/Counter-v0', { delay_ms: 5000 });
    await env.reset();
    const err = await env.step(0).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SdkError);
    expect((err as SdkError).code).toBe('REQUEST_TIMEOUT');
  });

  it('refuses to send a request over max_frame_bytes (which could otherwise loop through reconnects)', async () => {
    const srv = await startTestServer('ws', { registry: testRegistry(), limits: { max_frame_bytes: 4096 } });
    cleanups.push(() => srv.close());
    const c = await connect(srv.connector);
    cleanups.push(() => c.close());
    const err = await c.ping(new Uint8Array(10_000)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SdkError);
    expect((err as SdkError).code).toBe('FRAME_TOO_LARGE');
    expect(await c.ping()).toBeGreaterThanOrEqual(0);
  });

  it('refuses over-deep kwargs and options with TOO_DEEP before sending, and keeps working', async () => {
    const srv = await startTestServer('memory', { registry: testRegistry() });
    cleanups.push(() => srv.close());
    const c = await connect(srv.connector);
    cleanups.push(() => c.close());
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 20_000; i++) deep = { deep };
    const made = await c.make('test/Counter-v0', deep).catch((e: unknown) => e);
    expect(made).toBeInstanceOf(SdkError);
    expect(made).toMatchObject({ code: 'TOO_DEEP', details: { max_depth: 512 } });
    const env = await c.make('test/Counter-v0');
    await expect(env.reset({ options: deep })).rejects.toMatchObject({ code: 'TOO_DEEP' });
    await env.reset();
    expect((await env.step(0)).reward).toBeTypeOf('number');
  });

  it('holds requests past maxInFlight in the client and refuses past maxQueued with TOO_MANY_PENDING', async () => {
    const srv = await startTestServer('memory', { registry: testRegistry() });
    cleanups.push(() => srv.close());
    const c = await connect(srv.connector, { maxInFlight: 2, maxQueued: 3 });
    cleanups.push(() => c.close());
    const pings = Array.from({ length: 5 }, () => c.ping());
    const refused = await c.ping().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(SdkError);
    expect(refused).toMatchObject({ code: 'TOO_MANY_PENDING', details: { max_queued: 3 } });
    // The five held are sent as answers come, and all answered.
    expect((await Promise.all(pings)).length).toBe(5);
  });

  it('reports a server that is not there as CONNECT_FAILED', async () => {
    const err = await connect(wsConnector('ws://127.0.0.1:1'), { reconnect: false }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SdkError);
    expect((err as SdkError).code).toBe('CONNECT_FAILED');
  });

  it('rebuilds wire errors as ProtocolError with code and details', async () => {
    const srv = await startTestServer('memory', { registry: testRegistry() });
    cleanups.push(() => srv.close());
    const c = await connect(srv.connector);
    cleanups.push(() => c.close());
    const err = await c.make('test/Missing-v0').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProtocolError);
    expect((err as ProtocolError).code).toBe('ENV_ERR_UNKNOWN_ENV');
    expect((err as ProtocolError).details.available).toContain('test/Counter-v0');
    expect((err as ProtocolError).fault).toBe('client');
  });

  it('fails waiting requests with CONNECTION_LOST when the server is gone for good', async () => {
    const srv = await startTestServer('ws', { registry: testRegistry() });
    const c = await connect(srv.connector, { reconnectTimeoutMs: 300, reconnectDelayMs: 20 });
    cleanups.push(() => c.close());
    const env = await c.make('test/Counter-v0', { delay_ms: 2000 });
    await env.reset();
    const pending = env.step(0).catch((e: unknown) => e);
    await srv.server.transport.close(); // the socket dies without an answer, and nothing listens any more
    const err = await pending;
    expect(err).toBeInstanceOf(SdkError);
    expect((err as SdkError).code).toBe('CONNECTION_LOST');
    await srv.close();
  });

  it('marks sessions lost when a restarted server no longer knows the client', async () => {
    const first = await startTestServer('ws', { registry: testRegistry() });
    const port = first.server.port;
    const c = await connect(wsConnector(`ws://127.0.0.1:${port}`), { reconnectDelayMs: 20 });
    cleanups.push(() => c.close());
    const env = await c.make('test/Counter-v0');
    await env.reset();
    await first.close();
    const { startServer } = await import('../../server/index.ts');
    const second = await startServer({ port, registry: testRegistry() });
    cleanups.push(() => second.close());
    await expect.poll(() => c.isOpen, { timeout: 5000 }).toBe(true);
    await expect.poll(() => env.closed, { timeout: 5000 }).toBe(true);
    const err = await env.step(0).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProtocolError);
    expect((err as ProtocolError).code).toBe('ENV_ERR_UNKNOWN_SESSION');
  });
});
