import { PassThrough } from 'node:stream';

import { describe, expect, it } from 'vitest';

import { encode } from '../../../protocol/codec.ts';
import { Tensor } from '../../../protocol/tensor.ts';
import { FrameChannel } from '../../../envs/hosted/channel.ts';

/** A channel reading what is written to `socket` (a loopback: enough to check the framing). */
function loopback() {
  const socket = new PassThrough();
  const received: unknown[] = [];
  const errors: Error[] = [];
  const channel = new FrameChannel(
    socket,
    (m) => received.push(m),
    (e) => errors.push(e),
  );
  return { socket, channel, received, errors };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('FrameChannel', () => {
  it('round-trips messages with tensors, small and large', async () => {
    const { channel, received } = loopback();
    const big = Tensor.from(
      'float32',
      [300, 300],
      new Float32Array(90_000).map((_, i) => i),
    );
    channel.send({ id: 1, calls: [{ op: 'step', action: 1 }] });
    channel.send({ id: 2, results: [{ ok: [big, 1.5, false, true, {}] }] });
    await tick();
    expect(received).toHaveLength(2);
    expect(received[0]).toEqual({ id: 1, calls: [{ op: 'step', action: 1 }] });
    const [obs] = (received[1] as { results: { ok: unknown[] }[] }).results[0]!.ok as [Tensor];
    expect(obs.equals(big)).toBe(true);
  });

  it('reassembles frames split at any byte and several frames in one chunk', async () => {
    const { socket, received } = loopback();
    const frames = [{ id: 1, a: 'x'.repeat(10) }, { id: 2, b: [1, 2, 3] }, { id: 3 }].map((m) => {
      const body = Buffer.from(encode(m));
      const header = Buffer.alloc(4);
      header.writeUInt32LE(body.byteLength, 0);
      return Buffer.concat([header, body]);
    });
    const all = Buffer.concat(frames);
    for (let i = 0; i < all.byteLength; i += 3) socket.write(all.subarray(i, i + 3));
    await tick();
    expect(received.map((m) => (m as { id: number }).id)).toEqual([1, 2, 3]);
  });

  it('reports a frame that is not msgpack instead of throwing', async () => {
    const { socket, errors } = loopback();
    socket.write(Buffer.from([2, 0, 0, 0, 0x93, 0x01])); // an array of 3 that ends after 1
    await tick();
    expect(errors).toHaveLength(1);
  });

  it('refuses a frame header larger than its limit, and buffers nothing after it', async () => {
    const socket = new PassThrough();
    const errors: Error[] = [];
    const channel = new FrameChannel(
      socket,
      () => undefined,
      (e) => errors.push(e),
      1024,
    );
    socket.write(Buffer.from([0, 8, 0, 0, 1, 2, 3])); // announces 2048 bytes
    socket.write(Buffer.alloc(4096));
    await tick();
    expect(errors.map((e) => e.message)).toEqual(['a frame of 2048 bytes is larger than the limit of 1024']);
    expect(channel.send({ id: 1 })).toBe(true);
  });
});
