import sharp from 'sharp';
import { describe, expect, it } from 'vitest';

import { box, dict, discrete, multiDiscrete, sequence, tuple } from '../../protocol/spaces.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { actionJsonSchema, fromJson, toJson } from '../../server/mcp/index.ts';
import { ActionFormatError, encodePng, MAX_IMAGE_SIDE } from '../../server/mcp/values.ts';
import type { FoundImage } from '../../server/mcp/values.ts';

describe('MCP values', () => {
  it('writes small tensors in full and summarises large ones', () => {
    expect(toJson(Tensor.from('float32', [2, 2], [1, 2, 3, 4]))).toEqual({
      dtype: 'float32',
      shape: [2, 2],
      values: [
        [1, 2],
        [3, 4],
      ],
    });
    expect(toJson(Tensor.from('bool', [2], [1, 0]))).toEqual({ dtype: 'bool', shape: [2], values: [true, false] });
    expect(toJson(Tensor.from('int64', [], [7]))).toEqual({ dtype: 'int64', shape: [], values: 7 });
    const big = Tensor.from(
      'float64',
      [1000],
      Array.from({ length: 1000 }, (_, i) => i),
    );
    expect(toJson(big)).toEqual({ dtype: 'float64', shape: [1000], min: 0, max: 999, mean: 499.5, note: '1000 numbers, summarised' });
    expect(toJson({ a: 1n, b: 2n ** 70n, c: NaN, d: new Uint8Array(5), e: [Infinity] })).toEqual({
      a: 1,
      b: '1180591620717411303424',
      c: 'NaN',
      d: { bytes: 5 },
      e: ['Infinity'],
    });
  });

  it('collects camera frames (and the current frame of a stack) as images', () => {
    const images: FoundImage[] = [];
    const frame = Tensor.zeros('uint8', [10, 12, 3]);
    const stack = Tensor.from(
      'uint8',
      [2, 10, 12, 3],
      Array.from({ length: 720 }, (_, i) => (i < 360 ? 0 : 200)),
    );
    const json = toJson({ cameras: { front: frame, history: stack }, mask: Tensor.zeros('uint8', [20, 20]) }, images) as Record<
      string,
      Record<string, unknown>
    >;
    expect(images.map((i) => i.path)).toEqual(['cameras.front', 'cameras.history']);
    expect(images[1]!.tensor.shape).toEqual([10, 12, 3]);
    expect(images[1]!.tensor.at(0)).toBe(200);
    expect(json.cameras!.history).toMatchObject({ shape: [2, 10, 12, 3], image: expect.stringMatching(/last of 2 frames/) });
    expect(json.mask).toEqual({ dtype: 'uint8', shape: [20, 20], min: 0, max: 0, mean: 0, note: '400 numbers, summarised' });
  });

  it('encodes PNG, scaling frames larger than MAX_IMAGE_SIDE', async () => {
    const meta = await sharp(await encodePng(Tensor.zeros('uint8', [600, 2048, 3]))).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['png', MAX_IMAGE_SIDE, 300]);
  });

  it('shapes JSON actions into the action space', () => {
    const a = fromJson(box({ low: -1, high: 1, shape: [2, 2], dtype: 'float32' }), [
      [1, 0],
      [0, -1],
    ]) as Tensor;
    expect([a.dtype, a.shape, a.toNumbers()]).toEqual(['float32', [2, 2], [1, 0, 0, -1]]);
    expect(fromJson(discrete(3), [2])).toBe(2);
    const md = fromJson(multiDiscrete([3, 4]), [2, 3]) as Tensor;
    expect([md.dtype, md.toNumbers()]).toEqual(['int64', [2, 3]]);
    const d = fromJson(dict({ steer: box({ low: -1, high: 1, shape: [1] }), gear: discrete(2) }), { steer: [0.5], gear: 1 }) as Record<string, unknown>;
    expect(d.gear).toBe(1);
    expect((d.steer as Tensor).toNumbers()).toEqual([0.5]);
    const tup = fromJson(tuple([discrete(2), box({ low: 0, high: 1, shape: [2] })]), [1, [0, 1]]) as unknown[];
    expect((tup[1] as Tensor).shape).toEqual([2]);
    const seq = fromJson(sequence(box({ low: 0, high: 1, shape: [2] }), true), [
      [0, 1],
      [1, 0],
      [0, 0],
    ]) as Tensor;
    expect(seq.shape).toEqual([3, 2]);
    expect(() => fromJson(box({ low: -1, high: 1, shape: [2] }), [1, 'x'])).toThrow(ActionFormatError);
    expect(() => fromJson(box({ low: -1, high: 1, shape: [2] }), [1])).toThrow('action needs 2 numbers for shape [2], got 1');
  });

  it('describes the JSON an action must be', () => {
    expect(actionJsonSchema(box({ low: -1, high: 1, shape: [8, 3], dtype: 'float32' }))).toEqual({
      type: 'array',
      minItems: 8,
      maxItems: 8,
      items: { type: 'array', minItems: 3, maxItems: 3, items: { type: 'number', minimum: -1, maximum: 1 } },
    });
    expect(actionJsonSchema(discrete(5, -2))).toEqual({ type: 'integer', minimum: -2, maximum: 2 });
  });
});

describe('MCP values for reading', () => {
  it('rounds fractions to 5 significant digits, keeps integers, and summarises long plain arrays of numbers', () => {
    expect(toJson({ r: 0.123456789, big: 123456.789, n: 42, tiny: 1.23456789e-7 })).toEqual({ r: 0.12346, big: 123460, n: 42, tiny: 1.2346e-7 });
    const states = Array.from({ length: 41 }, (_, i) => Array.from({ length: 11 }, (_, j) => i + j / 10));
    expect(toJson({ states })).toEqual({ states: { shape: [41, 11], min: 0, max: 41, mean: 20.5, note: '451 numbers, summarised' } });
    expect(
      toJson([
        [1, 2],
        [3, 4],
      ]),
    ).toEqual([
      [1, 2],
      [3, 4],
    ]);
  });

  it('reads composite actions from JSON text, as strict tool schemas send them', () => {
    const space = dict({ move: box({ low: -1, high: 1, shape: [2] }), jump: discrete(2) });
    const action = fromJson(space, '{"move": [0.5, -0.5], "jump": 1}') as { move: Tensor; jump: number };
    expect(action.move.toNumbers()).toEqual([0.5, -0.5]);
    expect(action.jump).toBe(1);
    expect(() => fromJson(space, '{oops')).toThrow(/not JSON text/);
  });
});
