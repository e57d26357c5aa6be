/**
 * Answers whose tensors are large leave as split frames (protocol/codec.ts SplitFrame): the
 * frame's own bytes plus the tensors' memory, written as fragments of one WebSocket message.
 * The parts join to exactly the bytes a whole encode gives, and on real sockets (ws, uws) the
 * client reads every answer intact and in order, pipelined small answers included.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { connect } from '../../client/ts/client.ts';
import type { Env, StepResult } from '../../envs/core/env.ts';
import { Registry } from '../../envs/core/registry.ts';
import { encode, encodeIntoSplit, encodeSplit, SPLIT_TENSOR_MIN_BYTES, SplitFrame } from '../../protocol/codec.ts';
import { box, dict, discrete } from '../../protocol/spaces.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { startServer } from '../../server/index.ts';
import type { RunningServer } from '../../server/index.ts';
import { FRAGMENT_BYTES, UwsOutbox } from '../../server/transports/uws-outbox.ts';
import type { UwsSendSocket } from '../../server/transports/uws-outbox.ts';

const SIDE = 1024; // 3 MiB per camera: split
const camera = (fill: number) => new Tensor('uint8', [SIDE, SIDE, 3], new Uint8Array(SIDE * SIDE * 3).fill(fill));

/** Two fresh large cameras and a small vector per step, each step's pixels its own value. */
class CamerasEnv implements Env {
  readonly observationSpace = dict({
    front: box({ low: 0, high: 255, shape: [SIDE, SIDE, 3], dtype: 'uint8' }),
    back: box({ low: 0, high: 255, shape: [SIDE, SIDE, 3], dtype: 'uint8' }),
    speed: box({ low: 0, high: 100, shape: [1], dtype: 'float32' }),
  });
  readonly actionSpace = discrete(2);
  readonly metadata = { render_modes: [] };
  private count = 0;

  reset() {
    this.count = 0;
    return { obs: this.observe(), info: {} };
  }

  step(): StepResult {
    this.count++;
    return { obs: this.observe(), reward: this.count, terminated: false, truncated: false, info: { count: this.count } };
  }

  private observe() {
    return { front: camera(this.count), back: camera(200 - this.count), speed: Tensor.from('float32', [1], [this.count]) };
  }
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

describe('encodeSplit', () => {
  it('leaves out exactly the tensors of a megabyte or more, and its parts join to the whole encoding', () => {
    const values = [
      { id: 7, type: 'result', result: { obs: { front: camera(1), back: camera(2), speed: Tensor.from('float32', [1], [3]) }, reward: 1.5 } },
      // A large tensor last: the frame ends with its data.
      { id: 8, type: 'result', result: { info: { n: 2n ** 60n, s: 'x'.repeat(300) }, obs: camera(9) } },
      { list: [camera(3), 1, new Tensor('float32', [SPLIT_TENSOR_MIN_BYTES / 4], new Float32Array(SPLIT_TENSOR_MIN_BYTES / 4).fill(0.5))] },
    ];
    for (const value of values) {
      const split = encodeSplit(value);
      expect(split).toBeInstanceOf(SplitFrame);
      const frame = split as SplitFrame;
      expect(Buffer.from(frame.join()).equals(Buffer.from(encode(value)))).toBe(true);
      expect(frame.inlineBytes).toBeLessThan(1024);
    }
    // Below the size every byte is copied, as before.
    const small = { obs: new Tensor('uint8', [SPLIT_TENSOR_MIN_BYTES - 1], new Uint8Array(SPLIT_TENSOR_MIN_BYTES - 1)) };
    const whole = encodeSplit(small);
    expect(whole).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(whole as Uint8Array).equals(Buffer.from(encode(small)))).toBe(true);
  });

  it('splits the same when the packing buffer is outgrown after a tensor was noted, and notes nothing for the next frame', () => {
    // 200 kB of text after the camera outgrows both msgpackr's 64 KiB buffer and the caller's 1 KiB one.
    const value = { obs: camera(5), note: 'y'.repeat(200_000) };
    for (const split of [encodeSplit(value), encodeIntoSplit(value, Buffer.alloc(1024))]) {
      expect(split).toBeInstanceOf(SplitFrame);
      expect(Buffer.from((split as SplitFrame).join()).equals(Buffer.from(encode(value)))).toBe(true);
    }
    const small = { id: 1, type: 'pong' };
    const next = encodeSplit(small);
    expect(next).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(next as Uint8Array).equals(Buffer.from(encode(small)))).toBe(true);
  });

  it('references the tensors’ memory instead of copying it', () => {
    const front = camera(4);
    const frame = encodeSplit({ obs: front }) as SplitFrame;
    expect(frame.parts.some((p) => p.buffer === front.data.buffer)).toBe(true);
  });
});

describe('UwsOutbox', () => {
  /** A uWS socket that takes `accept` bytes before it reports backpressure. */
  function fakeSocket(accept: number) {
    const log: string[] = [];
    let buffered = 0;
    const take = (kind: string, m: Uint8Array) => {
      log.push(`${kind}:${m.byteLength}`);
      buffered += Math.max(0, m.byteLength - accept);
      return true;
    };
    const ws: UwsSendSocket & { drainAll(): void } = {
      send: (m) => (take('whole', m), 1),
      sendFirstFragment: (m) => take('first', m),
      sendFragment: (m) => take('more', m),
      sendLastFragment: (m) => take('last', m),
      getBufferedAmount: () => buffered,
      end: (code) => void log.push(`end:${code}`),
      drainAll: () => (buffered = 0),
    };
    return { ws, log };
  }

  it('writes a split message as fragments, holding later messages and the close behind it until uWS drains', () => {
    // This socket buffers every byte it is given: the outbox waits for drain once uWS holds two fragments.
    const { ws, log } = fakeSocket(0);
    const outbox = new UwsOutbox(ws);
    const parts = [new Uint8Array(10), new Uint8Array(3 * FRAGMENT_BYTES), new Uint8Array(5)];
    outbox.sendParts(parts);
    let done = 0;
    outbox.send(new Uint8Array(7), () => done++);
    outbox.close(1001, 'bye');
    // Two fragments filled uWS's buffer to its low-water mark: nothing else leaves until it drains.
    expect(log).toEqual(['first:10', `more:${FRAGMENT_BYTES}`, `more:${FRAGMENT_BYTES}`]);
    expect(done).toBe(0);
    for (let i = 0; i < 10 && outbox.queuedMessages > 0; i++) {
      ws.drainAll();
      outbox.pump();
    }
    expect(log).toEqual(['first:10', `more:${FRAGMENT_BYTES}`, `more:${FRAGMENT_BYTES}`, `more:${FRAGMENT_BYTES}`, 'last:5', 'whole:7', 'end:1001']);
    expect(done).toBe(1);
  });

  it('hands a held frame back (onDone) when the socket closes first', () => {
    const { ws } = fakeSocket(0);
    const outbox = new UwsOutbox(ws);
    outbox.sendParts([new Uint8Array(10), new Uint8Array(3 * FRAGMENT_BYTES)]);
    let done = 0;
    outbox.send(new Uint8Array(7), () => done++);
    outbox.dispose();
    expect(done).toBe(1);
  });
});

async function serve(transport: 'ws' | 'uws'): Promise<RunningServer> {
  const registry = new Registry();
  registry.register({ id: 'test/Cameras-v0', entryPoint: () => new CamerasEnv(), kwargsSchema: z.object({}).strict() });
  const server = await startServer({ port: 0, transport, registry });
  cleanups.push(() => server.close(2000));
  return server;
}

describe.each(['ws', 'uws'] as const)('split answers over %s', (transport) => {
  it('delivers pipelined large answers intact and in order, small answers between them included', async () => {
    const server = await serve(transport);
    const client = await connect(server.url);
    cleanups.push(() => client.close());
    const env = await client.make('test/Cameras-v0');
    const first = await env.reset({ seed: 0 });
    expect((first.obs as { front: Tensor }).front.shape).toEqual([SIDE, SIDE, 3]);
    const pending = Array.from({ length: 4 }, () => [env.step(0), client.ping({ n: 1 }), client.listEnvs()] as const);
    for (const [i, [step, ping, list]] of pending.entries()) {
      const r = await step;
      const obs = r.obs as { front: Tensor; back: Tensor; speed: Tensor };
      expect(r.reward).toBe(i + 1);
      expect(obs.front.data.every((b) => b === i + 1)).toBe(true);
      expect(obs.back.data.every((b) => b === 200 - (i + 1))).toBe(true);
      expect(obs.speed.toNumbers()).toEqual([i + 1]);
      expect(await ping).toBeTruthy();
      expect((await list).map((e) => e.id)).toContain('test/Cameras-v0');
    }
  });
});
