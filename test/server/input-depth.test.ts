/**
 * Over-deep input on every entry point gets one typed refusal from the one depth limit
 * (MAX_FRAME_DEPTH): make kwargs and reset options 2,000 levels deep sent over a real WebSocket
 * (written as msgpack by hand: msgpackr's encoder itself recurses) are refused with
 * ENV_ERR_BAD_FRAME, and the session on the same connection goes on. /mcp bodies:
 * test/mcp/front-door.test.ts.
 */
import { once } from 'node:events';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

import { decode, encode } from '../../protocol/codec.ts';
import { MAX_FRAME_DEPTH, nestsDeeperThan } from '../../protocol/frame-scan.ts';
import { PROTOCOL_VERSION } from '../../protocol/messages.ts';
import { startServer } from '../../server/index.ts';
import type { RunningServer } from '../../server/index.ts';

/** `fields` as a msgpack map with one more key, `key`, whose value is {a: {a: ... 1}} `depth` levels deep. */
function withDeepField(fields: Record<string, unknown>, key: string, depth: number): Uint8Array {
  const head = encode(fields);
  const n = Object.keys(fields).length;
  expect(head[0]).toBe(0x80 | n); // a fixmap
  // Each level: fixmap of one entry, key "a"; the innermost value is 1.
  const deep = Buffer.concat([...Array<Buffer>(depth).fill(Buffer.from('81a161', 'hex')), Buffer.from([0x01])]);
  return Buffer.concat([Buffer.from([0x80 | (n + 1)]), head.subarray(1), encode(key), deep]);
}

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({ port: 0 });
});
afterAll(() => server.close());

describe('input nested past the depth limit', () => {
  it('is measured without recursion', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(nestsDeeperThan(deep)).toBe(true);
    let ok: unknown = new Uint8Array(4);
    for (let i = 0; i < MAX_FRAME_DEPTH; i++) ok = { a: ok };
    expect(nestsDeeperThan(ok)).toBe(false);
    expect(nestsDeeperThan([ok])).toBe(true);
  });

  it('in make kwargs and reset options over a WebSocket gets ENV_ERR_BAD_FRAME; the connection goes on', async () => {
    const ws = new WebSocket(server.url, { perMessageDeflate: false });
    await once(ws, 'open');
    const answers = new Map<number, Record<string, unknown>>();
    ws.on('message', (data: Buffer) => {
      const msg = decode(data) as Record<string, unknown>;
      answers.set(msg.id as number, msg);
    });
    const answer = async (id: number) => {
      while (!answers.has(id)) await new Promise((r) => setTimeout(r, 5));
      return answers.get(id)!;
    };
    ws.send(encode({ id: 1, type: 'hello', protocol_version: PROTOCOL_VERSION }));
    await answer(1);
    ws.send(encode({ id: 2, type: 'make', env_id: 'gymwire/CartPole-v1' }));
    const sessionId = ((await answer(2)).result as { session_id: string }).session_id;

    ws.send(withDeepField({ id: 3, type: 'make', env_id: 'gymwire/CartPole-v1' }, 'kwargs', 2000));
    ws.send(withDeepField({ id: 4, type: 'reset', session_id: sessionId }, 'options', 2000));
    for (const id of [3, 4]) {
      expect(await answer(id)).toMatchObject({
        type: 'error',
        error: { code: 'ENV_ERR_BAD_FRAME', message: expect.stringContaining(`deeper than ${MAX_FRAME_DEPTH} levels`) },
      });
    }
    ws.send(encode({ id: 5, type: 'reset', session_id: sessionId, seed: 1 }));
    expect((await answer(5)).type).toBe('result');
    ws.close();
  });
});
