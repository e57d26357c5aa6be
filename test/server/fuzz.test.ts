/**
 * Seeded fuzzing of the server's frame handling: random bytes, random msgpack values, requests of
 * every type with fields of the wrong kind, and bit-flipped valid requests. Every frame must get
 * exactly one answer, a result or an error with a documented code; the connection must stay open;
 * another client's session must step exactly as it would have without the noise.
 */
import { describe, expect, it } from 'vitest';

import { connect } from '../../client/ts/client.ts';
import { encode } from '../../protocol/codec.ts';
import { ERROR_CODES } from '../../protocol/errors.ts';
import { PROTOCOL_VERSION, REQUEST_TYPES } from '../../protocol/messages.ts';
import { Random } from '../../protocol/random.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { RawConnection } from '../conformance/suite.ts';
import { startTestServer, TRANSPORTS } from '../helpers/servers.ts';

const FRAMES = 600;
const FIELDS = ['id', 'type', 'session_id', 'session_ids', 'action', 'actions', 'seed', 'seeds', 'options', 'env_id', 'kwargs', 'autoreset_mode', 'tool', 'arguments', 'state', 'ack', 'token', 'protocol_version', 'payload', 'mode'];
const ENV_IDS = ['gymwire/CartPole-v1', 'gymwire/Conformance-v0', 'nope/Nothing-v0'];

/** A random wire value, nested up to `depth` levels; `own` is a session id the fuzzer may hit. */
function value(rng: Random, own: string, depth = 2): unknown {
  const pick = rng.integer(0, depth > 0 ? 16 : 12);
  switch (pick) {
    case 0:
      return null;
    case 1:
      return rng.random() < 0.5;
    case 2:
      return rng.integer(-5, 10);
    case 3:
      return [2 ** 53 + 2, -(2 ** 31) - 1, 2 ** 32, Number.MAX_SAFE_INTEGER][rng.integer(0, 4)];
    case 4:
      return [Number.NaN, Number.POSITIVE_INFINITY, -0, 1e308, 0.5][rng.integer(0, 5)];
    case 5:
      return String.fromCharCode(...Array.from({ length: rng.integer(0, 12) }, () => rng.integer(32, 0x2fff)));
    case 6:
      return 'x'.repeat(rng.integer(1000, 20_000));
    case 7:
      return own;
    case 8:
      return ENV_IDS[rng.integer(0, ENV_IDS.length)];
    case 9:
      return Uint8Array.from({ length: rng.integer(0, 40) }, () => rng.integer(0, 256));
    case 10:
      return Tensor.zeros((['float32', 'float64', 'int64', 'uint8', 'bool'] as const)[rng.integer(0, 5)]!, Array.from({ length: rng.integer(0, 3) }, () => rng.integer(0, 4)));
    case 11:
      return REQUEST_TYPES[rng.integer(0, REQUEST_TYPES.length)];
    case 12:
      return 'next_step';
    case 13:
    case 14:
      return Array.from({ length: rng.integer(0, 5) }, () => value(rng, own, depth - 1));
    default:
      return Object.fromEntries(Array.from({ length: rng.integer(0, 5) }, () => [FIELDS[rng.integer(0, FIELDS.length)]!, value(rng, own, depth - 1)]));
  }
}

/** Well-formed requests on our own sessions, for mutating one field at a time (close left out: it would end the run's sessions). */
function templates(own: string[]): Record<string, unknown>[] {
  const [a, b] = own as [string, string];
  return [
    { type: 'reset', session_id: a, seed: 1 },
    { type: 'step', session_id: a, action: 0 },
    { type: 'reset_batch', session_ids: [a, b], seeds: [1, 2], options: null },
    { type: 'step_batch', session_ids: [a, b], actions: [0, 1], autoreset_mode: 'same_step' },
    { type: 'render', session_id: a, format: 'tensor' },
    { type: 'list_tools', session_id: a },
    { type: 'execute', session_id: a, tool: 'echo', args: {} },
    { type: 'get_state', session_id: a },
    { type: 'set_state', session_id: a, state: new Uint8Array(8) },
    { type: 'make', env_id: 'gymwire/CartPole-v1', kwargs: {} },
    { type: 'ping', payload: 1 },
    { type: 'list_envs' },
  ];
}

/** One malformed (or merely odd) frame. */
function frame(rng: Random, own: string[], id: number): Uint8Array {
  const kind = rng.integer(0, 10);
  if (kind === 0) return Uint8Array.from({ length: rng.integer(0, 64) }, () => rng.integer(0, 256));
  if (kind === 1) return encode(value(rng, own[0]!));
  let request: Record<string, unknown>;
  if (kind < 4) {
    // A request of a real type with random fields: the validators' paths.
    request = { id, type: REQUEST_TYPES[rng.integer(0, REQUEST_TYPES.length)] };
    for (let k = rng.integer(0, 5); k > 0; k--) request[FIELDS[rng.integer(2, FIELDS.length)]!] = value(rng, own[0]!);
    if (rng.random() < 0.4) request['session_id'] = own[0];
  } else {
    // A well-formed request with one field (or an action) replaced: the handlers' paths.
    const all = templates(own);
    request = { id, ...all[rng.integer(0, all.length)]! };
    const keys = Object.keys(request).filter((k) => k !== 'id');
    const key = keys[rng.integer(0, keys.length)]!;
    if (key !== 'type' || rng.random() < 0.2) request[key] = value(rng, own[0]!);
    if ('action' in request && rng.random() < 0.7) request['action'] = value(rng, own[0]!);
    if ('actions' in request && rng.random() < 0.7) request['actions'] = [value(rng, own[0]!), value(rng, own[0]!)];
  }
  const bytes = encode(request);
  if (kind < 8) return bytes;
  // Bit flips and truncation of an encoded request: the decoder's paths.
  const flipped = bytes.slice(0, kind === 8 ? bytes.length : rng.integer(1, bytes.length + 1));
  for (let k = rng.integer(1, 4); k > 0; k--) flipped[rng.integer(0, flipped.length)]! ^= 1 << rng.integer(0, 8);
  return flipped;
}

describe.each(TRANSPORTS)('fuzzed frames (%s)', (transport) => {
  it(`${FRAMES} bad frames: one typed answer each, the connection stays open, other sessions untouched`, async () => {
    const srv = await startTestServer(transport);
    const bystander = await connect(srv.connector);
    const reference = await connect(srv.connector);
    try {
      const victim = await bystander.make('gymwire/CartPole-v1');
      const twin = await reference.make('gymwire/CartPole-v1');
      await Promise.all([victim.reset({ seed: 7 }), twin.reset({ seed: 7 })]);
      const raw = new RawConnection(await srv.connector());
      raw.send({ id: 0, type: 'hello', protocol_version: PROTOCOL_VERSION, client_name: 'fuzz' });
      expect((await raw.next()).type).toBe('result');
      // Our own sessions: the everything env (every space type, tools, state) and a CartPole.
      const own: string[] = [];
      for (const [i, envId] of ['gymwire/Conformance-v0', 'gymwire/CartPole-v1'].entries()) {
        raw.send({ id: 1 + 2 * i, type: 'make', env_id: envId, kwargs: {} });
        const made = await raw.next();
        expect(made.type, String((made.error as { message?: string } | undefined)?.message)).toBe('result');
        own.push((made.result as { session_id: string }).session_id);
        raw.send({ id: 2 + 2 * i, type: 'reset', session_id: own[i], seed: i });
        expect((await raw.next()).type).toBe('result');
      }

      // FUZZ_SEED=n runs another sequence (to hunt locally); CI runs this one.
      const rng = new Random(Number(process.env.FUZZ_SEED ?? 20261122));
      const codes = new Set<string>();
      for (let i = 0; i < FRAMES; i++) {
        raw.sendBytes(frame(rng, own, 100 + i));
        const answer = await raw.next(10_000);
        expect(['result', 'error']).toContain(answer.type);
        if (answer.type === 'error') {
          const code = (answer.error as { code: string }).code;
          expect(Object.keys(ERROR_CODES)).toContain(code);
          codes.add(code);
        }
        // The bystander's session steps in between, as it would on a shared server.
        if (i % 50 === 0) {
          const [a, b] = await Promise.all([victim.step(i % 2), twin.step(i % 2)]);
          expect((a.obs as Tensor).equals(b.obs as Tensor)).toBe(true);
          if (a.terminated || a.truncated) await Promise.all([victim.reset({ seed: i }), twin.reset({ seed: i })]);
        }
      }
      expect(raw.closed).toBe(false);
      // Bad input is the client's fault: a server or env fault here is a bug (the crash guard answers ENV_ERR_INTERNAL).
      expect(codes).not.toContain('ENV_ERR_INTERNAL');
      expect(codes).not.toContain('ENV_ERR_ENV_FAILURE');
      // The noise reached the validators, not just the decoder.
      for (const code of ['ENV_ERR_BAD_FRAME', 'ENV_ERR_INVALID_MESSAGE', 'ENV_ERR_UNKNOWN_TYPE']) expect(codes).toContain(code);
      raw.send({ id: 99_999, type: 'ping', payload: 'still here' });
      const pong = await raw.next();
      expect(pong).toMatchObject({ id: 99_999, type: 'result' });
      raw.close();
    } finally {
      await bystander.close();
      await reference.close();
      await srv.close();
    }
  });
});

describe.each(TRANSPORTS)('frames the type check cannot print (%s)', (transport) => {
  it('a type that is a 64-bit tensor or a huge string is refused with ENV_ERR_UNKNOWN_TYPE, not a crash', async () => {
    const srv = await startTestServer(transport);
    const raw = new RawConnection(await srv.connector());
    try {
      raw.send({ id: 0, type: 'hello', protocol_version: PROTOCOL_VERSION, client_name: 'fuzz' });
      await raw.next();
      raw.send({ id: 1, type: ['step', Tensor.from('int64', [2], [1n, 2n])] });
      const answer = await raw.next();
      expect(answer).toMatchObject({ id: 1, type: 'error', error: { code: 'ENV_ERR_UNKNOWN_TYPE' } });
      expect((answer.error as { message: string }).message).toContain('BigInt64Array of 16 bytes');
      raw.send({ id: 2, type: 'x'.repeat(100_000) });
      const long = (await raw.next()).error as { code: string; message: string };
      expect(long.code).toBe('ENV_ERR_UNKNOWN_TYPE');
      expect(long.message.length).toBeLessThan(300);
    } finally {
      raw.close();
      await srv.close();
    }
  });

  it('a failure while handling a frame answers ENV_ERR_INTERNAL and the connection goes on', async () => {
    const srv = await startTestServer(transport);
    const raw = new RawConnection(await srv.connector());
    const core = srv.server.core;
    const original = core.handleFrame.bind(core);
    let armed = true;
    core.handleFrame = (conn, frame) => {
      if (armed) {
        armed = false;
        throw new Error('a bug');
      }
      original(conn, frame);
    };
    try {
      raw.send({ id: 0, type: 'ping' });
      // Answered under the request's id, so a client's request fails at once instead of timing out.
      expect(await raw.next()).toMatchObject({ id: 0, type: 'error', error: { code: 'ENV_ERR_INTERNAL' } });
      raw.send({ id: 1, type: 'hello', protocol_version: PROTOCOL_VERSION, client_name: 'fuzz' });
      expect((await raw.next()).type).toBe('result');
    } finally {
      raw.close();
      await srv.close();
    }
  });
});
