import { describe, expect, it } from 'vitest';

import { ProtocolError } from '../../protocol/errors.ts';
import { Channel, describeThrown, peerError, withDeadline } from '../../runtime/channel.ts';
import type { Outcome } from '../../runtime/channel.ts';

/** A channel whose peer is this test: `sent` holds what went out, `answer` settles it. */
function harness(limits: ConstructorParameters<typeof Channel>[0]['limits'] = {}, accept = () => true as boolean) {
  const sent: { id: number; body: unknown }[] = [];
  const deadlines: string[] = [];
  const channel = new Channel<unknown>({
    name: 'the test peer',
    send: (id, body) => {
      sent.push({ id, body });
      return accept();
    },
    limits,
    onDeadline: (late) => deadlines.push(late.what),
  });
  const answer = (id: number, outcome: Outcome) => channel.settle(id, outcome);
  return { channel, sent, answer, deadlines };
}

const throwingToString = { toString: () => { throw new Error('no'); } }; // prettier-ignore

describe('Channel', () => {
  it('replays what still waits in id order, and fails some waiting requests without ending the channel', async () => {
    const { channel, sent, answer } = harness({ maxInFlight: 2 });
    const a = channel.request({ type: 'keep' });
    const b = channel.request({ type: 'drop' });
    const c = channel.request({ type: 'keep' }); // queued behind maxInFlight
    expect(channel.oldestInFlight).toBe(sent[0]!.id);
    expect(channel.bodyOf(sent[1]!.id)).toEqual({ type: 'drop' });
    sent.length = 0;
    channel.replay();
    expect(sent.map((s) => s.body)).toEqual([{ type: 'keep' }, { type: 'drop' }]);
    const gone = new Error('that state is gone');
    channel.rejectWaiting(gone, (body) => (body as { type: string }).type === 'drop');
    await expect(b).rejects.toBe(gone);
    // The freed slot sends the queued request; the channel stays alive.
    expect(sent.at(-1)!.body).toEqual({ type: 'keep' });
    answer(sent[0]!.id, { ok: true, value: 'a' });
    answer(sent.at(-1)!.id, { ok: true, value: 'c' });
    expect([await a, await c]).toEqual(['a', 'c']);
    answer(sent[1]!.id, { ok: true, value: 'late b' });
    expect(channel.stats.late).toBe(1);
    expect(channel.alive).toBe(true);
  });

  it('pairs answers with their requests by id, in any order', async () => {
    const { channel, sent, answer } = harness();
    const a = channel.request('a');
    const b = channel.request('b');
    answer(sent[1]!.id, { ok: true, value: 'B' });
    answer(sent[0]!.id, { ok: true, value: 'A' });
    expect([await a, await b]).toEqual(['A', 'B']);
    expect(channel.pending).toBe(0);
  });

  it('counts and drops answers that come twice, late, or for ids never sent', async () => {
    const { channel, sent, answer } = harness({ deadlineMs: 20 });
    const first = channel.request('x');
    answer(sent[0]!.id, { ok: true, value: 1 });
    await first;
    answer(sent[0]!.id, { ok: true, value: 2 });
    answer(999, { ok: true, value: 3 });
    answer(-1, { ok: false, error: Object.create(null) });
    const slow = channel.request('slow', { what: 'slow' });
    await expect(slow).rejects.toMatchObject({ code: 'ENV_ERR_ENV_FAILURE', details: { timed_out: true } });
    answer(sent[1]!.id, { ok: true, value: 'too late' });
    expect(channel.stats).toMatchObject({ duplicate: 1, unknown: 2, late: 1, timedOut: 1 });
  });

  it('rejects a request past its deadline and tells the link', async () => {
    const { channel, deadlines } = harness({ deadlineMs: 0 });
    const started = performance.now();
    await expect(channel.request('hang', { deadlineMs: 30, what: 'step' })).rejects.toThrow(/did not answer step within 30 ms/);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(deadlines).toEqual(['step']);
  });

  it('queues past maxInFlight and while the transport is full, and refuses past maxQueued', async () => {
    let full = false;
    const { channel, sent, answer } = harness({ maxInFlight: 2, maxQueued: 2 }, () => !full);
    const r = [channel.request(1), channel.request(2), channel.request(3), channel.request(4)];
    expect(sent.length).toBe(2);
    expect(channel.queued).toBe(2);
    expect(channel.saturated).toBe(true);
    await expect(channel.request(5)).rejects.toMatchObject({ code: 'ENV_ERR_ENV_FAILURE', details: { backpressure: true } });
    full = true;
    answer(sent[0]!.id, { ok: true, value: 'one' });
    // The transport said it is full after the third went out: the fourth waits for resume().
    expect(sent.length).toBe(3);
    full = false;
    channel.resume();
    expect(sent.length).toBe(3); // still two in flight
    answer(sent[1]!.id, { ok: true, value: 'two' });
    expect(sent.length).toBe(4);
    answer(sent[2]!.id, { ok: true, value: 'three' });
    answer(sent[3]!.id, { ok: true, value: 'four' });
    expect(await Promise.all(r)).toEqual(['one', 'two', 'three', 'four']);
    expect(channel.stats.refused).toBe(1);
  });

  it('cancels queued and in-flight requests; a cancelled request’s answer counts as late', async () => {
    const { channel, sent, answer } = harness({ maxInFlight: 1 });
    const inFlight = new AbortController();
    const queued = new AbortController();
    const a = channel.request('a', { signal: inFlight.signal });
    const b = channel.request('b', { signal: queued.signal });
    queued.abort(new Error('not wanted'));
    await expect(b).rejects.toThrow('not wanted');
    inFlight.abort();
    await expect(a).rejects.toThrow();
    answer(sent[0]!.id, { ok: true, value: 'late' });
    expect(channel.stats.late).toBe(1);
    expect(sent.length).toBe(1);
  });

  it('fails everything waiting, and every later request, when the peer is lost', async () => {
    const { channel } = harness({ maxInFlight: 1 });
    const a = channel.request('a', { what: 'step' });
    const b = channel.request('b');
    channel.fail('it exited with code 1');
    await expect(a).rejects.toMatchObject({ code: 'ENV_ERR_ENV_FAILURE', details: { peer_lost: true } });
    await expect(b).rejects.toThrow(/exited with code 1/);
    await expect(channel.request('c')).rejects.toThrow(/is gone/);
    expect(channel.alive).toBe(false);
  });

  it('fails only the request whose body the transport refuses', async () => {
    const channel = new Channel<number>({
      name: 'p',
      send: (_id, body) => {
        if (body === 2) throw new TypeError('cannot encode');
      },
    });
    await expect(channel.request(2)).rejects.toThrow('cannot encode');
    expect(channel.alive).toBe(true);
    expect(channel.pending).toBe(0);
  });

  it('maps whatever the peer rejects with to a typed env fault, never a crash', async () => {
    const odd: unknown[] = [Object.create(null), throwingToString, undefined, null, 42, 'text', Symbol('s'), [1, 2]];
    for (const value of odd) {
      const { channel, sent, answer } = harness();
      const p = channel.request('x', { what: 'step' });
      answer(sent[0]!.id, { ok: false, error: value });
      const err = await p.catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ProtocolError);
      expect((err as ProtocolError).code).toBe('ENV_ERR_ENV_FAILURE');
      expect((err as ProtocolError).fault).toBe('env');
      expect((err as ProtocolError).message).toMatch(/step failed in the test peer/);
    }
    // A real Error passes through, so callers keep mapping their own classes.
    const real = new RangeError('bad');
    expect(peerError(real, { peer: 'p' })).toBe(real);
    const weird = new Error('x');
    Object.defineProperty(weird, 'message', {
      get() {
        throw new Error('getter');
      },
    });
    expect(peerError(weird, { peer: 'p' })).toBeInstanceOf(ProtocolError);
  });
});

describe('describeThrown', () => {
  it('never throws', () => {
    expect(describeThrown(Object.create(null))).toBe('[object Object]');
    expect(describeThrown(throwingToString)).toBe('[object Object]');
    expect(describeThrown(undefined)).toMatch(/undefined/);
    expect(describeThrown(new TypeError('t'))).toBe('TypeError: t');
    expect(describeThrown({ a: 1 })).toBe('[object Object] {"a":1}');
    expect(describeThrown('x'.repeat(10_000)).length).toBeLessThan(600);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(describeThrown(cyclic)).toBe('[object Object]');
  });
});

describe('withDeadline', () => {
  it('passes sync values through and maps sync and async throws', async () => {
    expect(withDeadline(() => 3, { peer: 'p', what: 'w', deadlineMs: 10 })).toBe(3);
    expect(() =>
      withDeadline(
        () => {
          throw Object.create(null);
        },
        { peer: 'p', what: 'w', deadlineMs: 10 },
      ),
    ).toThrow(ProtocolError);
    await expect(withDeadline(() => Promise.reject(throwingToString), { peer: 'the plugin env', what: 'step', deadlineMs: 100 })).rejects.toMatchObject({
      code: 'ENV_ERR_ENV_FAILURE',
    });
  });

  it('rejects a call that never settles, and drops its outcome', async () => {
    let late = 0;
    let settle!: () => void;
    const never = new Promise<void>((r) => (settle = r));
    await expect(withDeadline(() => never, { peer: 'p', what: 'step', deadlineMs: 20, onLate: () => late++ })).rejects.toMatchObject({
      details: { timed_out: true },
    });
    settle();
    await new Promise((r) => setTimeout(r, 5));
    expect(late).toBe(1);
  });
});
