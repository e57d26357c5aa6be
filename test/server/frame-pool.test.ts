/**
 * Pooled memory for large answers: a buffer is reused only after every holder let go of it, so no
 * answer is ever overwritten while a socket write or the reply cache still needs it.
 */
import { afterEach, describe, expect, it } from 'vitest';

import { connect } from '../../client/ts/client.ts';
import { decode, encode, SplitFrame } from '../../protocol/codec.ts';
import type { EncodedFrame } from '../../protocol/codec.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { FramePool, POOLED_FRAME_MIN_BYTES } from '../../server/frame-pool.ts';
import { RawConnection } from '../../conformance/suite.ts';
import { FramesEnv, testRegistry } from '../helpers/envs.ts';
import { startServer } from '../../server/index.ts';
import type { MemoryTransport } from '../../server/transports/memory.ts';
import { startTestServer, TRANSPORTS } from '../helpers/servers.ts';
import type { TestServer } from '../helpers/servers.ts';

const big = (fill: number) => ({ obs: new Tensor('uint8', [POOLED_FRAME_MIN_BYTES * 2], new Uint8Array(POOLED_FRAME_MIN_BYTES * 2).fill(fill)) });
const obsOf = (frame: Uint8Array) => (decode(frame) as { obs: Tensor }).obs;
/** A frame encoded whole (tensors under a megabyte are copied into it, never split out). */
function whole(frame: EncodedFrame): Uint8Array {
  if (frame instanceof SplitFrame) throw new Error('expected a whole frame');
  return frame;
}

describe('FramePool', () => {
  it('encodes small expected answers the ordinary way', () => {
    const pool = new FramePool();
    const frame = whole(pool.encode(big(1), 100));
    expect(pool.isPooled(frame)).toBe(false);
    expect(obsOf(frame).data[5]).toBe(1);
  });

  it('reuses a buffer only once every holder released it', () => {
    const pool = new FramePool();
    const first = whole(pool.encode(big(1), POOLED_FRAME_MIN_BYTES * 2));
    expect(pool.isPooled(first)).toBe(true);
    pool.retain(first); // a socket write in flight
    pool.release(first); // the request's own hold
    expect(pool.outstanding).toBe(1);
    const second = whole(pool.encode(big(2), POOLED_FRAME_MIN_BYTES * 2));
    expect(second.buffer).not.toBe(first.buffer);
    expect(obsOf(first).data.every((b) => b === 1)).toBe(true);
    pool.release(first); // the write is done
    expect(pool.outstanding).toBe(1);
    const third = whole(pool.encode(big(3), POOLED_FRAME_MIN_BYTES * 2));
    expect(third.buffer).toBe(first.buffer);
    expect(obsOf(third).data.every((b) => b === 3)).toBe(true);
    expect(obsOf(second).data.every((b) => b === 2)).toBe(true);
  });

  it('falls back to fresh memory when the answer outgrew the expectation, and copies answers far smaller than it', () => {
    const pool = new FramePool();
    const grown = whole(pool.encode({ obs: new Tensor('uint8', [(1 << 20) - 64], new Uint8Array((1 << 20) - 64)) }, POOLED_FRAME_MIN_BYTES));
    expect(pool.isPooled(grown)).toBe(false);
    expect(obsOf(grown).size).toBe((1 << 20) - 64);
    const shrunk = whole(pool.encode({ obs: 1 }, 1 << 20));
    expect(pool.isPooled(shrunk)).toBe(false);
    expect(shrunk.byteLength).toBeLessThan(64);
    expect(pool.outstanding).toBe(0);
  });

  it('leaves unrelated messages encoded after a pooled one out of the pooled buffer, and earlier ones intact', () => {
    const pool = new FramePool();
    const before = encode({ before: 1 });
    const pooled = whole(pool.encode(big(1), POOLED_FRAME_MIN_BYTES * 2));
    const after = whole(pool.encode({ hello: 'world' }, 0));
    expect(after.buffer).not.toBe(pooled.buffer);
    // msgpackr resumes in its own buffer after the last frame it wrote there.
    expect(after.buffer).toBe(before.buffer);
    expect(after.byteOffset).toBeGreaterThanOrEqual(before.byteOffset + before.byteLength);
    expect(decode(before)).toEqual({ before: 1 });
    expect(decode(after)).toEqual({ hello: 'world' });
  });

  it('shrinks: free buffers unused for idleMs are released by trim, and no more than maxFreeBytes wait', () => {
    const size = POOLED_FRAME_MIN_BYTES * 2;
    const pool = new FramePool({ idleMs: 1000, maxFreeBytes: 3 * 2 ** Math.ceil(Math.log2(size + 1024)) });
    const frames = Array.from({ length: 5 }, (_, i) => whole(pool.encode(big(i), size)));
    const perBuffer = frames[0]!.buffer.byteLength;
    for (const f of frames) pool.release(f);
    expect(pool.outstanding).toBe(0);
    // Five came back, three fit under the cap; the rest went to the GC.
    expect(pool.freeBytes).toBe(3 * perBuffer);
    pool.trim(Date.now() + 500);
    expect(pool.freeBytes).toBe(3 * perBuffer);
    pool.trim(Date.now() + 1500);
    expect(pool.freeBytes).toBe(0);
    // It grows back on demand.
    const again = whole(pool.encode(big(9), size));
    expect(pool.isPooled(again)).toBe(true);
    pool.release(again);
    expect(pool.freeBytes).toBe(perBuffer);
  });
});

describe('frame pool in a server', () => {
  it('releases a burst’s buffers once they sit idle past the pool’s idle time (the reaper trims it)', async () => {
    const server = await startServer({ port: 0, transport: 'memory', registry: testRegistry(), reapIntervalMs: 50, framePool: { idleMs: 1000 } });
    cleanups.push(() => server.close(2000));
    const c = await connect(async () => (server.transport as MemoryTransport).connect());
    cleanups.push(() => c.close());
    const envs = await Promise.all(Array.from({ length: 4 }, () => c.make('test/Frames-v0')));
    for (const env of envs) await env.reset();
    // Pipelined steps of four sessions: several pooled frames in flight at once.
    await Promise.all(envs.flatMap((env) => [env.step(0), env.step(1), env.step(0)]));
    // Later requests acknowledge those answers, so the reply cache lets go of their frames.
    for (const env of envs) await env.step(0);
    await envs[0]!.step(0);
    expect(server.core.frames.freeBytes).toBeGreaterThan(0);
    for (let i = 0; i < 300 && server.core.frames.freeBytes > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(server.core.frames.freeBytes).toBe(0);
  });
});

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

describe.each(TRANSPORTS)('pooled answers over %s', (transport) => {
  async function serve(): Promise<TestServer> {
    const srv = await startTestServer(transport, { registry: testRegistry() });
    cleanups.push(() => srv.close());
    return srv;
  }

  it('delivers every pipelined large answer intact, sync and async envs alike', async () => {
    const srv = await serve();
    const c = await connect(srv.connector);
    cleanups.push(() => c.close());
    const envs = await Promise.all([c.make('test/Frames-v0'), c.make('test/Frames-v0'), c.make('test/Frames-v0', { delay_ms: 1 })]);
    await Promise.all(envs.map((e) => e.reset()));
    await Promise.all(
      envs.map(async (env) => {
        // Eight steps in flight per session, 64 in all: answers are pooled, cached and written concurrently.
        for (let batch = 0; batch < 8; batch++) {
          const results = await Promise.all(Array.from({ length: 8 }, () => env.step(0)));
          results.forEach((r, k) => {
            const count = batch * 8 + k + 1;
            const obs = r.obs as Tensor;
            expect(r.info.count).toBe(count);
            expect(obs.size).toBe(FramesEnv.SIDE * FramesEnv.SIDE * 3);
            expect(obs.data.every((b) => b === (count & 0xff))).toBe(true);
          });
        }
      }),
    );
    expect(srv.server.core.frames.outstanding).toBeLessThanOrEqual(envs.length * 8 + 8);
  });

  it('answers a retried step from the cache with its original bytes after many more pooled answers', async () => {
    const srv = await serve();
    const raw = new RawConnection(await srv.connector());
    cleanups.push(async () => raw.close());
    await raw.hello();
    raw.send({ id: 1, type: 'make', env_id: 'test/Frames-v0', kwargs: {} });
    const a = ((await raw.next()).result as { session_id: string }).session_id;
    raw.send({ id: 2, type: 'make', env_id: 'test/Frames-v0', kwargs: {} });
    const b = ((await raw.next()).result as { session_id: string }).session_id;
    raw.send({ id: 3, type: 'reset', session_id: a, seed: null, options: null });
    await raw.next();
    raw.send({ id: 4, type: 'reset', session_id: b, seed: null, options: null });
    await raw.next();
    raw.send({ id: 5, type: 'step', session_id: a, action: 0 });
    const first = (await raw.next()).result as { obs: Tensor };
    expect(first.obs.data.every((x) => x === 1)).toBe(true);
    // Session b's answers take pooled buffers: had id 5's been handed back early (a write callback
    // releasing twice, say), one of them would overwrite it.
    for (let id = 6; id < 40; id++) {
      raw.send({ id, type: 'step', session_id: b, action: 0 });
      await raw.next();
    }
    raw.send({ id: 5, type: 'step', session_id: a, action: 0 });
    const again = (await raw.next()).result as { obs: Tensor };
    expect(again.obs.data.every((x) => x === 1)).toBe(true);
  });
});
