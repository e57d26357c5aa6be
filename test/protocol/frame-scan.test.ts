import { describe, expect, it } from 'vitest';

import { decode, decodeUntrusted, encode } from '../../protocol/codec.ts';
import { checkFrame, decodedBudget, FrameScanError, frameRequestId, MAX_FRAME_DEPTH } from '../../protocol/frame-scan.ts';
import { Random } from '../../runtime/random.ts';
import { Tensor } from '../../protocol/tensor.ts';

const bounds = (bytes: Uint8Array) => ({ maxDepth: MAX_FRAME_DEPTH, maxDecodedBytes: decodedBudget(bytes.byteLength) });
const problem = (bytes: Uint8Array): string | null => {
  try {
    checkFrame(bytes, bounds(bytes));
    return null;
  } catch (err) {
    return err instanceof FrameScanError ? err.problem : `other: ${(err as Error).message}`;
  }
};

describe('checkFrame', () => {
  it('passes every message shape the protocol uses, as msgpackr decodes it', () => {
    const messages = [
      { id: 1, type: 'hello', protocol_version: 1, client_name: 'x', token: 't' },
      { id: 2, type: 'step', session_id: 's', action: Tensor.from('float32', [2, 3], [1, 2, 3, 4, 5, 6]) },
      { id: 3, type: 'ping', payload: { a: [1, 2.5, -3, 2 ** 40, -(2 ** 40), null, true, false, 'é', new Uint8Array(300)], b: 'x'.repeat(70_000), c: {} } },
      { id: 4, type: 'step_batch', session_ids: ['a', 'b'], actions: Tensor.from('int64', [2], [1n, 0n]), autoreset_mode: 'next_step' },
      { id: 5, type: 'set_state', session_id: 's', state: new Uint8Array(70_000) },
    ];
    for (const m of messages) {
      const bytes = encode(m);
      expect(problem(bytes), JSON.stringify(Object.keys(m))).toBeNull();
      expect(decodeUntrusted(bytes)).toEqual(decode(bytes));
    }
  });

  it('refuses truncated frames, trailing bytes, lying lengths and 0xc1 as malformed', () => {
    const good = Buffer.from(encode({ id: 1, type: 'ping', payload: [1, 2, 3] }));
    expect(problem(good.subarray(0, good.length - 1))).toBe('malformed');
    expect(problem(Buffer.concat([good, Buffer.from([0xc0])]))).toBe('malformed');
    expect(problem(Buffer.from([0xdd, 0xff, 0xff, 0xff, 0xff, 0x00]))).toBe('malformed');
    expect(problem(Buffer.from([0xc6, 0x7f, 0xff, 0xff, 0xff]))).toBe('malformed');
    expect(problem(Buffer.from([0xc1]))).toBe('malformed');
    expect(problem(Buffer.alloc(0))).toBe('malformed');
  });

  it('refuses nesting past the depth bound and frames of small containers past the decoded-size budget', () => {
    const nested = (depth: number) => Buffer.concat([Buffer.alloc(depth, 0x91), Buffer.from([0x00])]);
    expect(problem(nested(MAX_FRAME_DEPTH))).toBeNull();
    expect(problem(nested(MAX_FRAME_DEPTH + 1))).toBe('too_deep');
    const maps = (n: number) => Buffer.concat([Buffer.from([0xdd, n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]), Buffer.alloc(n, 0x80)]);
    expect(problem(maps(1000))).toBeNull(); // the 1 MiB slack
    expect(problem(maps(1 << 20))).toBe('too_costly');
    // Plain numbers and tensors cost about their size: a large frame of them is fine.
    expect(problem(encode({ xs: Array.from({ length: 200_000 }, (_, i) => i % 100) }))).toBeNull();
    expect(problem(encode({ t: Tensor.from('uint8', [1 << 22], new Uint8Array(1 << 22)) }))).toBeNull();
  });

  it('never throws anything but FrameScanError on random bytes', () => {
    const rng = new Random(23);
    for (let i = 0; i < 2000; i++) {
      const bytes = new Uint8Array(1 + Math.floor(rng.random() * 64)).map(() => Math.floor(rng.random() * 256));
      const p = problem(bytes);
      expect(p === null || ['malformed', 'too_deep', 'too_costly'].includes(p), String(p)).toBe(true);
    }
  });
});

describe('frameRequestId', () => {
  it('reads a non-negative integer id wherever it sits in the top-level map, skipping values without decoding', () => {
    expect(frameRequestId(encode({ id: 7, type: 'ping' }))).toBe(7);
    expect(
      frameRequestId(encode({ type: 'step', action: Tensor.from('float64', [1000], new Float64Array(1000)), nested: { a: [[1], { id: 3 }] }, id: 2 ** 40 })),
    ).toBe(2 ** 40);
    expect(frameRequestId(encode({ id: 300 }))).toBe(300);
    expect(frameRequestId(encode({ id: 70_000 }))).toBe(70_000);
    expect(frameRequestId(encode({ id: 3.0 }))).toBe(3);
  });

  it('is null without a usable id: negative, fractional, huge, a string, not a map, malformed', () => {
    for (const m of [{ id: -1 }, { id: 1.5 }, { id: '1' }, { type: 'ping' }, [1, 2], 5, { id: 2n ** 60n }])
      expect(
        frameRequestId(encode(m)),
        JSON.stringify(m, (_k, v) => (typeof v === 'bigint' ? String(v) : v)),
      ).toBeNull();
    const truncated = encode({ type: 'ping', id: 9 });
    expect(frameRequestId(truncated.subarray(0, truncated.length - 1))).toBeNull();
  });
});
