/**
 * One suite over every transport: ordering, isolation, bad input, limits, lifecycle.
 */
import WebSocket from 'ws';
import type { z } from 'zod';
import { afterEach, describe, expect, it } from 'vitest';

import { connect } from '../../client/ts/client.ts';
import { CartPoleEnv } from '../../envs/classic/cartpole.ts';
import type { ClientEvent, GymwireClient } from '../../client/ts/client.ts';
import { ProtocolError } from '../../protocol/errors.ts';
import { PROTOCOL_VERSION, StepBatchRequestSchema, StepRequestSchema } from '../../protocol/messages.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { RawConnection, valuesEqual } from '../../conformance/suite.ts';
import { testRegistry } from '../helpers/envs.ts';
import { startTestServer, TRANSPORTS } from '../helpers/servers.ts';
import type { TestServer } from '../helpers/servers.ts';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

async function serve(transport: (typeof TRANSPORTS)[number], opts: Parameters<typeof startTestServer>[1] = {}): Promise<TestServer> {
  const srv = await startTestServer(transport, { registry: testRegistry(), ...opts });
  cleanups.push(() => srv.close());
  return srv;
}

async function client(srv: TestServer, opts: Parameters<typeof connect>[1] = {}): Promise<GymwireClient> {
  const c = await connect(srv.connector, { reconnectDelayMs: 10, ...opts });
  cleanups.push(() => c.close());
  return c;
}

const codeOf = async (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: unknown) => (e instanceof ProtocolError ? e.code : String(e)),
  );

describe.each(TRANSPORTS)('transport %s', (transport) => {
  it('answers pipelined requests for one session in order', async () => {
    const srv = await serve(transport);
    const c = await client(srv);
    const env = await c.make('test/Counter-v0');
    await env.reset();
    const results = await Promise.all(Array.from({ length: 200 }, () => env.step(0)));
    expect(results.map((r) => r.obs)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
  });

  it('keeps pipelined answers whole and in order across sizes that are batched and sizes that are not', async () => {
    // Small answers of one tick leave framed together (server/transports/tick-batch.ts); large ones
    // leave at once through the library: the order on the wire must still be the order sent.
    const srv = await serve(transport);
    const c = await client(srv);
    const sizes = Array.from({ length: 120 }, (_, i) => [0, 10, 125, 126, 300, 65_535, 16_383, 16_384, 40_000][i % 9]!);
    const payloads = sizes.map((n, i) => new Uint8Array(n).fill(i & 0xff));
    const answers = await Promise.all(payloads.map((payload) => c.request('ping', { payload })));
    answers.forEach((a, i) => expect(Buffer.from(a.payload as Uint8Array).equals(Buffer.from(payloads[i]!))).toBe(true));
  });

  it('runs sessions independently: a slow session does not hold up another', async () => {
    const srv = await serve(transport);
    const c = await client(srv);
    const slow = await c.make('test/Counter-v0', { delay_ms: 2000 });
    const fast = await c.make('test/Counter-v0');
    await Promise.all([slow.reset(), fast.reset()]);
    let slowDone = false;
    const slowStep = slow.step(0).then(() => (slowDone = true));
    // Ordering, not a stopwatch: 20 steps of the fast session all finish while the slow one is still busy.
    for (let i = 0; i < 20; i++) await fast.step(0);
    expect(slowDone).toBe(false);
    await slowStep;
  });

  it('isolates an env that throws: env-failure code, other sessions unaffected, session still usable', async () => {
    const srv = await serve(transport);
    const c = await client(srv);
    const [a, b] = await Promise.all([c.make('test/Counter-v0'), c.make('test/Counter-v0')]);
    await Promise.all([a.reset(), b.reset()]);
    const [failed, fine] = await Promise.all([codeOf(a.step(1)), b.step(0)]);
    expect(failed).toBe('ENV_ERR_ENV_FAILURE');
    expect(fine.obs).toBe(1);
    expect((await a.step(0)).obs).toBe(1);
  });

  it('answers an env result msgpack cannot carry with ENV_ERR_ENV_FAILURE, sync or async, and goes on serving', async () => {
    const srv = await serve(transport);
    const c = await client(srv);
    for (const delay_ms of [0, 5]) {
      const env = await c.make('test/Counter-v0', { delay_ms });
      await env.reset();
      const err = await env.step(2).then(
        () => null,
        (e: unknown) => e as ProtocolError,
      );
      expect(err?.code).toBe('ENV_ERR_ENV_FAILURE');
      expect(err?.message).toContain('cannot be sent');
      expect((await env.step(0)).obs).toBe(2);
    }
    const vec = await c.makeVec('test/Counter-v0', 2, { autoresetMode: 'disabled' });
    await vec.reset();
    expect(await codeOf(c.request('step_batch', { session_ids: vec.sessionIds, actions: [0, 2], autoreset_mode: 'disabled' }))).toBe('ENV_ERR_ENV_FAILURE');
  });

  it('reports an env failure inside a batch per session and keeps the others', async () => {
    const srv = await serve(transport);
    const c = await client(srv);
    const vec = await c.makeVec('test/Counter-v0', 3, { autoresetMode: 'disabled' });
    await vec.reset();
    const r = await c.request('step_batch', { session_ids: vec.sessionIds, actions: [0, 1, 0], autoreset_mode: 'disabled' });
    expect(r.errors[0]).toBeNull();
    expect(r.errors[1]?.code).toBe('ENV_ERR_ENV_FAILURE');
    expect((r.obs as Tensor).toNumbers()).toEqual([1, 0, 1]);
  });

  it('refuses NaN and out-of-space actions without touching the env', async () => {
    const srv = await serve(transport);
    const c = await client(srv);
    const env = await c.make('gymwire/Conformance-v0');
    await env.reset({ seed: 1 });
    const state = await env.getState();
    expect(await codeOf(env.step(Tensor.from('float32', [2], [Number.NaN, 0])))).toBe('ENV_ERR_INVALID_ACTION');
    expect(await codeOf(env.step(Tensor.from('float32', [2], [5, 0])))).toBe('ENV_ERR_INVALID_ACTION');
    expect(valuesEqual(await env.getState(), state)).toBe(true);
  });

  it('enforces the pending-requests limit per session', async () => {
    const srv = await serve(transport, { limits: { max_pending_per_session: 4 } });
    const c = await client(srv);
    const env = await c.make('test/Counter-v0', { delay_ms: 20 });
    await env.reset();
    const codes = await Promise.all(Array.from({ length: 12 }, () => codeOf(env.step(0))));
    expect(codes).toContain('ENV_ERR_TOO_MANY_PENDING');
    expect(codes).toContain('ok');
  });

  /** A raw connection (requests by hand) with one reset Counter session; ids 1 and 2 are used. */
  async function rawSession(): Promise<{ raw: RawConnection; sid: string }> {
    const srv = await serve(transport);
    const raw = new RawConnection(await srv.connector());
    cleanups.push(async () => raw.close());
    await raw.hello();
    raw.send({ id: 1, type: 'make', env_id: 'test/Counter-v0' });
    const sid = ((await raw.next()).result as { session_id: string }).session_id;
    raw.send({ id: 2, type: 'reset', session_id: sid });
    await raw.next();
    return { raw, sid };
  }

  it('answers a retried request id from memory, and refuses an old one whose answer was forgotten', async () => {
    const { raw, sid } = await rawSession();
    raw.send({ id: 3, type: 'step', session_id: sid, action: 0 });
    const first = await raw.next();
    raw.send({ id: 3, type: 'step', session_id: sid, action: 0 }); // a retry: same answer, not a second step
    const again = await raw.next();
    expect(again).toEqual(first);
    raw.send({ id: 4, type: 'step', session_id: sid, action: 0, ack: 3 }); // the client confirms it has 1..3
    expect(((await raw.next()).result as { obs: number }).obs).toBe(2);
    raw.send({ id: 3, type: 'step', session_id: sid, action: 0 }); // at or below the ack: the client said it has it
    expect(((await raw.next()).error as { code: string }).code).toBe('ENV_ERR_INVALID_MESSAGE');
    raw.send({ id: 5, type: 'step', session_id: sid, action: 0 });
    expect(((await raw.next()).result as { obs: number }).obs).toBe(3);
  });

  it('keeps request ids unique: another type under a remembered id is refused, a never-used id below the highest is not run', async () => {
    const { raw, sid } = await rawSession();
    raw.send({ id: 5, type: 'step', session_id: sid, action: 0 });
    expect(((await raw.next()).result as { obs: number }).obs).toBe(1);
    raw.send({ id: 5, type: 'make', env_id: 'test/Counter-v0' }); // reuses the step's id
    const reused = await raw.next();
    expect(reused.id).toBe(5);
    expect((reused.error as { code: string; message: string }).code).toBe('ENV_ERR_INVALID_MESSAGE');
    expect((reused.error as { message: string }).message).toMatch(/already used by a step/);
    raw.send({ id: 4, type: 'step', session_id: sid, action: 0 }); // never used, below the highest id 5
    const expired = (await raw.next()).error as { code: string; message: string };
    expect(expired.code).toBe('ENV_ERR_REPLY_EXPIRED');
    expect(expired.message).toMatch(/never used/);
    raw.send({ id: 6, type: 'step', session_id: sid, action: 0 }); // the refused requests changed nothing
    expect(((await raw.next()).result as { obs: number }).obs).toBe(2);
  });

  it('answers ping without a payload with no payload field (nothing msgpack cannot name)', async () => {
    const { raw } = await rawSession();
    raw.send({ id: 3, type: 'ping' });
    const pong = await raw.next();
    expect(pong.type).toBe('result');
    expect(Object.keys(pong.result as object)).toEqual(['server_time_ms']);
  });

  it('accepts exactly the step and step_batch requests their schemas accept (the hand-checked fast paths included)', async () => {
    const { raw, sid } = await rawSession();
    let id = 3;
    const cases: [string, z.ZodType, Record<string, unknown>[]][] = [
      [
        'step',
        StepRequestSchema,
        [
          { session_id: sid, action: 0 },
          { session_id: sid, action: 0, ack: 1 },
          { session_id: sid, action: 0, ack: -1 },
          { session_id: sid, action: 0, extra: true },
          { session_id: sid, action: 0, ack: 1.5 },
          { session_id: sid, action: 0, ack: 'x' },
          { session_id: sid },
          { session_id: '', action: 0 },
          { session_id: 'x'.repeat(129), action: 0 },
          { session_id: 7, action: 0 },
          { action: 0 },
        ],
      ],
      [
        'step_batch',
        StepBatchRequestSchema,
        [
          { session_ids: [sid], actions: [0] },
          { session_ids: [sid], actions: [0], autoreset_mode: 'same_step', ack: 2 },
          { session_ids: [sid], actions: [0], autoreset_mode: 'sometimes' },
          { session_ids: [], actions: [] },
          { session_ids: [sid, ''], actions: [0, 0] },
          { session_ids: sid, actions: [0] },
          { session_ids: [sid] },
          { session_ids: [sid], actions: [0], extra: 1 },
        ],
      ],
    ];
    for (const [type, schema, variants] of cases) {
      for (const fields of variants) {
        const message = { id: id++, type, ...fields };
        raw.send(message);
        const answer = await raw.next();
        const invalid = answer.type === 'error' && (answer.error as { code: string }).code === 'ENV_ERR_INVALID_MESSAGE';
        expect(invalid, JSON.stringify(message)).toBe(!schema.safeParse(message).success);
      }
    }
    for (const badId of [-1, 1.5, 2 ** 53]) {
      raw.send({ id: badId, type: 'step', session_id: sid, action: 0 });
      const answer = await raw.next();
      expect((answer.error as { code: string }).code).toBe('ENV_ERR_INVALID_MESSAGE');
    }
  });

  it('enforces the auth token', async () => {
    const srv = await serve(transport, { token: 'sesame' });
    await expect(connect(srv.connector, { token: 'wrong', reconnect: false })).rejects.toMatchObject({ code: 'ENV_ERR_UNAUTHORIZED' });
    await expect(connect(srv.connector, { reconnect: false })).rejects.toMatchObject({ code: 'ENV_ERR_UNAUTHORIZED' });
    const ok = await client(srv, { token: 'sesame' });
    expect(ok.welcome.protocol_version).toBe(PROTOCOL_VERSION);
  });

  it('reaps the sessions of a client that vanishes mid-step', async () => {
    const srv = await serve(transport, { limits: { resume_grace_ms: 100 }, reapIntervalMs: 25 });
    const c = await connect(srv.connector, { reconnect: false });
    const env = await c.make('test/Counter-v0', { delay_ms: 50 });
    await env.reset();
    void env.step(0).catch(() => {});
    c.simulateConnectionLoss();
    await expect.poll(() => srv.server.core.sessionCount, { timeout: 3000 }).toBe(0);
  });

  it('closes idle sessions and tells the client', async () => {
    const srv = await serve(transport, { limits: { idle_timeout_ms: 100 }, reapIntervalMs: 25 });
    const events: ClientEvent[] = [];
    const c = await client(srv, { onEvent: (e) => events.push(e) });
    const env = await c.make('test/Counter-v0');
    await expect
      .poll(() => events.some((e) => e.type === 'event' && e.event === 'session_closed' && e.session_id === env.sessionId), { timeout: 3000 })
      .toBe(true);
    expect(env.closed).toBe(true);
    expect(await codeOf(c.request('reset', { session_id: env.sessionId }))).toBe('ENV_ERR_UNKNOWN_SESSION');
  });

  it('answers in-flight steps before a graceful shutdown closes', async () => {
    const srv = await startTestServer(transport, { registry: testRegistry() });
    const c = await connect(srv.connector, { reconnect: false });
    const env = await c.make('test/Counter-v0', { delay_ms: 200 });
    await env.reset();
    const inFlight = env.step(0);
    await new Promise((r) => setTimeout(r, 20));
    const closing = srv.close();
    expect((await inFlight).obs).toBe(1);
    await closing;
    expect(srv.server.core.sessionCount).toBe(0);
    await c.close();
  });

  it('gives the same seeded episode as every other transport', async () => {
    const srv = await serve(transport);
    const c = await client(srv);
    const env = await c.make('gymwire/CartPole-v1');
    const first = await env.reset({ seed: 2024 });
    const trace: number[] = [...(first.obs as Tensor).toNumbers()];
    for (let i = 0; i < 30; i++) {
      const r = await env.step(i % 3 === 0 ? 1 : 0);
      trace.push(...(r.obs as Tensor).toNumbers(), r.reward);
      if (r.terminated) break;
    }
    // The same episode run in process, with no transport at all: every transport must match it.
    const local = new CartPoleEnv();
    const expected: number[] = [...local.reset({ seed: 2024 }).obs.toNumbers()];
    for (let i = 0; i < 30; i++) {
      const r = local.step(i % 3 === 0 ? 1 : 0);
      expected.push(...r.obs.toNumbers(), r.reward);
      if (r.terminated) break;
    }
    expect(trace).toEqual(expected);
  });
});

describe('ws transport', () => {
  it('drops a peer that stops answering heartbeats', async () => {
    const srv = await serve('ws', { limits: { heartbeat_ms: 100 } });
    const ws = new WebSocket(srv.server.url, { autoPong: false });
    await new Promise((r) => ws.once('open', r));
    const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
    expect(await closed).toBe(1006);
  });

  it('serves /healthz and /metrics on the same port', async () => {
    const srv = await serve('ws');
    const c = await client(srv);
    const env = await c.make('gymwire/CartPole-v1');
    await env.reset({ seed: 1 });
    await env.step(0);
    await codeOf(env.step(7));
    const base = srv.server.url.replace('ws://', 'http://');
    const health = await (await fetch(`${base}/healthz`)).json();
    expect(health).toMatchObject({ status: 'ok', sessions: 1, connections: 1 });
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/gymwire_open_sessions\{env_id="gymwire\/CartPole-v1"\} 1/);
    expect(metrics).toMatch(/gymwire_steps_total\{env_id="gymwire\/CartPole-v1"\} 1/);
    expect(metrics).toMatch(/gymwire_step_latency_seconds_bucket/);
    expect(metrics).toMatch(/gymwire_errors_total\{code="ENV_ERR_INVALID_ACTION"\} 1/);
  });
});

describe('uws transport', () => {
  it('serves /healthz and /metrics on the same port', async () => {
    const srv = await serve('uws');
    const base = srv.server.url.replace('ws://', 'http://');
    expect(await (await fetch(`${base}/healthz`)).json()).toMatchObject({ status: 'ok' });
    expect(await (await fetch(`${base}/metrics`)).text()).toMatch(/gymwire_connections/);
  });
});
