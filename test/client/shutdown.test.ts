/**
 * A server shutting down (SIGTERM, server.close()) answers what is in flight, lets a slow reader
 * read every queued answer, then sends the `shutdown` event and a 1001 close; the client fails
 * at once with SERVER_SHUTDOWN instead of reconnecting to a server that is going away.
 */
import { afterEach, describe, expect, it } from 'vitest';

import { connect } from '../../client/ts/client.ts';
import type { ClientEvent } from '../../client/ts/client.ts';
import { SdkError } from '../../client/ts/errors.ts';
import type { TransportName } from '../../server/index.ts';
import { testRegistry } from '../helpers/envs.ts';
import { startTestServer } from '../helpers/servers.ts';
import { slowReaderThroughShutdown } from './slow-reader.ts';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

describe.each(['ws', 'uws', 'memory'] as TransportName[])('shutdown over %s', (transport) => {
  it('answers the step in flight, then fails requests for its sessions at once with SERVER_SHUTDOWN', async () => {
    const srv = await startTestServer(transport, { registry: testRegistry() });
    cleanups.push(() => srv.close());
    const events: ClientEvent[] = [];
    // Default reconnect settings: a step that waited for a reconnect would fail only after a minute.
    const c = await connect(srv.connector, { onEvent: (e) => events.push(e) });
    cleanups.push(() => c.close());
    const env = await c.make('test/Counter-v0', { delay_ms: 200 });
    await env.reset();
    const inFlight = env.step(0);
    await new Promise((r) => setTimeout(r, 20));
    const closing = srv.server.close(5000);
    expect((await inFlight).obs).toBe(1);
    await closing;
    await until(() => events.some((e) => e.type === 'event' && e.event === 'shutdown'));
    expect(env.closed).toBe(true);
    const err = await env.step(0).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SdkError);
    expect((err as SdkError).code).toBe('SERVER_SHUTDOWN');
  });

  it('without reconnects, closes the client with SERVER_SHUTDOWN', async () => {
    const srv = await startTestServer(transport, { registry: testRegistry() });
    cleanups.push(() => srv.close());
    const c = await connect(srv.connector, { reconnect: false });
    cleanups.push(() => c.close());
    await srv.server.close(5000);
    await until(() => !c.isOpen);
    const err = await c.ping().catch((e: unknown) => e);
    expect((err as SdkError).code).toBe('SERVER_SHUTDOWN');
  });
});

describe.each(['ws', 'uws'] as TransportName[])('shutdown with a slow reader over %s', (transport) => {
  it('delivers every queued answer, then the shutdown event, then a 1001 close', async () => {
    const srv = await startTestServer(transport, { registry: testRegistry() });
    cleanups.push(() => srv.close());
    const outcome = await slowReaderThroughShutdown(srv.server.url, () => void srv.server.close(20_000));
    expect(outcome.answered).toEqual(outcome.sent);
    expect(outcome.events).toEqual(['shutdown']);
    expect(outcome.closeCode).toBe(1001);
  }, 60_000);
});

/** Polls `done` until it holds (the test's own timeout bounds it). */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((r) => setTimeout(r, 10));
}
