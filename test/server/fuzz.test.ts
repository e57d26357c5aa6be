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
import { PROTOCOL_VERSION } from '../../protocol/messages.ts';
import { Random } from '../../runtime/random.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { fuzzFrame } from '../../conformance/fuzz.ts';
import { RawConnection } from '../../conformance/suite.ts';
import { startTestServer, TRANSPORTS } from '../helpers/servers.ts';
import type { TestServer } from '../helpers/servers.ts';

const FRAMES = 600;
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
        raw.sendBytes(fuzzFrame(rng, own, 100 + i));
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

/** A server on `transport` and a raw connection to it, greeted unless `greet` is false; both closed after `body`. */
async function withRawConnection(
  transport: (typeof TRANSPORTS)[number],
  body: (raw: RawConnection, srv: TestServer) => Promise<void>,
  greet = true,
): Promise<void> {
  const srv = await startTestServer(transport);
  const raw = new RawConnection(await srv.connector());
  try {
    if (greet) {
      raw.send({ id: 0, type: 'hello', protocol_version: PROTOCOL_VERSION, client_name: 'fuzz' });
      expect((await raw.next()).type).toBe('result');
    }
    await body(raw, srv);
  } finally {
    raw.close();
    await srv.close();
  }
}

describe.each(TRANSPORTS)('frames the type check cannot print (%s)', (transport) => {
  it('a type that is a 64-bit tensor or a huge string is refused with ENV_ERR_UNKNOWN_TYPE, not a crash', () =>
    withRawConnection(transport, async (raw) => {
      raw.send({ id: 1, type: ['step', Tensor.from('int64', [2], [1n, 2n])] });
      const answer = await raw.next();
      expect(answer).toMatchObject({ id: 1, type: 'error', error: { code: 'ENV_ERR_UNKNOWN_TYPE' } });
      expect((answer.error as { message: string }).message).toContain('BigInt64Array of 16 bytes');
      raw.send({ id: 2, type: 'x'.repeat(100_000) });
      const long = (await raw.next()).error as { code: string; message: string };
      expect(long.code).toBe('ENV_ERR_UNKNOWN_TYPE');
      expect(long.message.length).toBeLessThan(300);
    }));

  it("deeply nested payloads are the client's fault at every depth: echoed, refused as too deep to echo, or not msgpack", () =>
    withRawConnection(transport, async (raw) => {
      // {id, type: 'ping', payload: [[[...0]]]} with the arrays written by hand (encode would overflow too).
      const deep = (id: number, depth: number) => {
        const head = encode({ id, type: 'ping' });
        head[0]! += 1; // one more map entry: the payload
        return Buffer.concat([head, encode('payload'), Buffer.alloc(depth, 0x91), Buffer.from([0x00])]);
      };
      // Where the encoder (echoing) and the decoder run out of stack depends on the machine and the
      // JIT, so sweep the depths: each answer is one of the three, never a server or env fault.
      const seen = new Set<string>();
      let id = 1;
      for (let depth = 500; depth <= 6500; depth += 500) {
        raw.sendBytes(deep(id++, depth));
        const answer = await raw.next();
        const outcome = answer.type === 'result' ? 'result' : (answer.error as { code: string }).code;
        expect(['result', 'ENV_ERR_INVALID_MESSAGE', 'ENV_ERR_BAD_FRAME'], `depth ${depth}`).toContain(outcome);
        seen.add(outcome);
      }
      raw.sendBytes(deep(id++, 100_000));
      expect(await raw.next()).toMatchObject({ type: 'error', error: { code: 'ENV_ERR_BAD_FRAME' } });
      expect(seen).toContain('result');
      raw.send({ id, type: 'ping', payload: [[['fine']]] });
      expect(await raw.next()).toMatchObject({ id, type: 'result', result: { payload: [[['fine']]] } });
    }));

  it('a failure while handling a frame answers ENV_ERR_INTERNAL and the connection goes on', () =>
    withRawConnection(
      transport,
      async (raw, srv) => {
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
        raw.send({ id: 0, type: 'ping' });
        // Answered under the request's id, so a client's request fails at once instead of timing out.
        expect(await raw.next()).toMatchObject({ id: 0, type: 'error', error: { code: 'ENV_ERR_INTERNAL' } });
        raw.send({ id: 1, type: 'hello', protocol_version: PROTOCOL_VERSION, client_name: 'fuzz' });
        expect((await raw.next()).type).toBe('result');
      },
      false,
    ));
});
