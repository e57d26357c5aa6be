import { describe, expect, it } from 'vitest';

import { decode, encode } from '../../protocol/codec.ts';
import { Random } from '../../runtime/random.ts';
import {
  box,
  contains,
  dict,
  discrete,
  graph,
  multiBinary,
  multiDiscrete,
  oneOf,
  sequence,
  SpaceSchema,
  spaceToString,
  text,
  tuple,
} from '../../protocol/spaces.ts';
import { sample } from '../../runtime/space-sample.ts';
import type { Space } from '../../protocol/spaces.ts';
import { Tensor } from '../../protocol/tensor.ts';

const ALL: Space[] = [
  box({ low: [-Infinity, 0], high: [Infinity, 1], dtype: 'float32' }),
  box({ low: -3, high: 3, shape: [2, 2], dtype: 'int16' }),
  discrete(5, -2),
  multiDiscrete([3, 4]),
  multiBinary([2, 3]),
  text(6, { minLength: 2, charset: 'abc' }),
  dict({ b: discrete(2), a: box({ low: 0, high: 1, shape: [1], dtype: 'float64' }) }),
  tuple([discrete(2), text(3)]),
  sequence(discrete(3)),
  sequence(box({ low: 0, high: 1, shape: [2], dtype: 'float32' }), true),
  graph(box({ low: -1, high: 1, shape: [2], dtype: 'float32' }), discrete(3)),
  graph(discrete(4), null),
  oneOf([discrete(2), box({ low: -1, high: 1, shape: [1], dtype: 'float32' })]),
  box({ low: 0, high: 255, shape: [48, 64, 3], dtype: 'uint8' }),
  box({ low: Tensor.from('float32', [3], [-1, 0, 2]), high: Tensor.from('float32', [3], [1, 0.5, 3]), shape: [40, 40, 3], dtype: 'float32' }),
];

describe('spaces', () => {
  it.each(ALL.map((s) => [spaceToString(s), s] as const))('%s: samples lie in the space and descriptions round-trip', (_name, space) => {
    const rng = new Random(0);
    for (let i = 0; i < 50; i++) expect(contains(space, sample(space, rng))).toBeNull();
    const back = decode(encode(space));
    expect(SpaceSchema.safeParse(back).success).toBe(true);
    expect(spaceToString(back as Space)).toBe(spaceToString(space));
  });

  it('keeps infinite bounds', () => {
    const space = decode(encode(box({ low: -Infinity, high: Infinity, shape: [2] }))) as Extract<Space, { type: 'box' }>;
    expect(space.low.toNumbers()).toEqual([-Infinity, -Infinity]);
    expect(space.high.toNumbers()).toEqual([Infinity, Infinity]);
  });

  it('explains why a value is not in a box', () => {
    const space = box({ low: -1, high: 1, shape: [2], dtype: 'float32' });
    expect(contains(space, Tensor.from('float64', [2], [0, 0]))).toMatch(/dtype float32/);
    expect(contains(space, Tensor.from('float32', [3], [0, 0, 0]))).toMatch(/shape \[2\]/);
    expect(contains(space, Tensor.from('float32', [2], [0, 2]))).toMatch(/above high/);
    expect(contains(space, Tensor.from('float32', [2], [Number.NaN, 0]))).toMatch(/NaN/);
    expect(contains(space, [0, 0])).toMatch(/expected a float32 tensor/);
  });

  it('checks discrete, text, dict and oneof values', () => {
    expect(contains(discrete(3), 3)).toMatch(/outside/);
    expect(contains(discrete(3), 1.5)).toMatch(/integer/);
    expect(contains(text(3, { charset: 'ab' }), 'abc')).toMatch(/charset/);
    expect(contains(dict({ a: discrete(2) }), { a: 0, b: 1 })).toMatch(/unexpected key/);
    expect(contains(dict({ a: discrete(2) }), {})).toMatch(/missing key/);
    expect(contains(oneOf([discrete(2)]), [1, 0])).toMatch(/index 1/);
  });

  it('sorts dict keys like Gymnasium', () => {
    expect(Object.keys(dict({ z: discrete(1), a: discrete(1) }).spaces)).toEqual(['a', 'z']);
  });
});

describe('broadcast box bounds', () => {
  it('keeps a large box’s scalar bounds as one value instead of expanding them per element', () => {
    const space = box({ low: 0, high: 255, shape: [1800, 3200, 3], dtype: 'uint8' });
    expect(space.low.shape).toEqual([]);
    expect(space.high.shape).toEqual([]);
    const back = decode(encode(space)) as Extract<Space, { type: 'box' }>;
    expect(back.low.shape).toEqual([]);
    expect(back.high.at(0)).toBe(255);
    expect(encode(space).byteLength).toBeLessThan(200);
  });

  it('keeps full-shape bounds for small boxes (the form older clients read)', () => {
    const space = box({ low: -1, high: 1, shape: [4, 4], dtype: 'float32' });
    expect(space.low.shape).toEqual([4, 4]);
  });

  it('checks values against scalar and per-channel bounds and names the offending element', () => {
    const scalar = box({ low: 10, high: 20, shape: [100, 100], dtype: 'int16' });
    const inside = Tensor.from('int16', [100, 100], new Array(10_000).fill(15));
    expect(contains(scalar, inside)).toBeNull();
    const out = Tensor.from(
      'int16',
      [100, 100],
      new Array(10_000).fill(15).map((v, i) => (i === 123 ? 21 : v)),
    );
    expect(contains(scalar, out)).toBe('element 123 = 21 is above high 20');
    const perChannel = box({ low: Tensor.from('float32', [3], [-1, 0, 2]), high: Tensor.from('float32', [3], [1, 0.5, 3]), shape: [2, 3] });
    expect(contains(perChannel, Tensor.from('float32', [2, 3], [0, 0.5, 2.5, -1, 0, 3]))).toBeNull();
    expect(contains(perChannel, Tensor.from('float32', [2, 3], [0, 0.5, 2.5, -1, 0.75, 3]))).toBe('element 4 = 0.75 is above high 0.5');
  });

  it('clamps infinite scalar bounds of integer boxes to the dtype’s range', () => {
    const space = box({ low: -Infinity, high: Infinity, shape: [64, 64, 2], dtype: 'int8' });
    expect([space.low.shape, space.low.at(0), space.high.at(0)]).toEqual([[], -128, 127]);
    expect(contains(space, Tensor.zeros('int8', [64, 64, 2]))).toBeNull();
  });

  it('refuses a bound whose shape does not broadcast to the box', () => {
    expect(() => box({ low: Tensor.from('float32', [2], [0, 0]), high: 1, shape: [3, 3] })).toThrow(/does not broadcast/);
  });
});

describe('Random', () => {
  it('is deterministic per seed and restores from state', () => {
    const a = new Random(42);
    const b = new Random(42);
    expect(Array.from({ length: 5 }, () => a.random())).toEqual(Array.from({ length: 5 }, () => b.random()));
    const state = a.getState();
    const next = a.random();
    a.setState(state);
    expect(a.random()).toBe(next);
    expect(new Random(1).random()).not.toBe(new Random(2).random());
  });
});
