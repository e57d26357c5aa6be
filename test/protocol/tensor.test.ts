import { describe, expect, it } from 'vitest';

import { decode, encode } from '../../protocol/codec.ts';
import { decodeTensorPayload, DTYPES, encodeTensorPayload, float16ToNumber, numberToFloat16, Tensor, TensorFormatError } from '../../protocol/tensor.ts';

describe('Tensor', () => {
  it.each(DTYPES)('round-trips %s exactly through the codec', (dtype) => {
    const values =
      dtype === 'bool'
        ? [0, 1, 1, 0, 1, 0]
        : dtype.startsWith('float')
          ? [0, -1.5, Infinity, -Infinity, 65504, 1e-3]
          : dtype.startsWith('uint')
            ? [0, 1, 2, 3, 100, 255]
            : [0, -1, 2, -3, 100, -128];
    const t = Tensor.from(dtype, [2, 3], values);
    const back = decode(encode({ t })) as { t: Tensor };
    expect(back.t).toBeInstanceOf(Tensor);
    expect(back.t.dtype).toBe(dtype);
    expect(back.t.shape).toEqual([2, 3]);
    expect(back.t.equals(t)).toBe(true);
  });

  it('keeps 64-bit integers exact beyond 2^53', () => {
    const big = 2n ** 62n + 7n;
    const t = Tensor.from('int64', [2], [big, -big]);
    const back = decode(encode(t)) as Tensor<'int64'>;
    expect(back.data[0]).toBe(big);
    expect(back.data[1]).toBe(-big);
    const u = Tensor.from('uint64', [1], [2n ** 64n - 1n]);
    expect((decode(encode(u)) as Tensor<'uint64'>).data[0]).toBe(2n ** 64n - 1n);
  });

  it('keeps NaN payloads and float extremes bit for bit', () => {
    const t = Tensor.from('float64', [3], [Number.NaN, Number.MIN_VALUE, Number.MAX_VALUE]);
    expect((decode(encode(t)) as Tensor).bytes()).toEqual(t.bytes());
  });

  it('decodes to a view without copying when aligned', () => {
    const t = Tensor.from('float32', [4], [1, 2, 3, 4]);
    const payload = encodeTensorPayload(t);
    // Header is 2 + 4 bytes; place the payload so the data starts 4-aligned.
    const buf = new Uint8Array(payload.byteLength + 2);
    buf.set(payload, 2);
    const view = decodeTensorPayload(buf.subarray(2));
    expect(view.data.buffer).toBe(buf.buffer);
    buf[2 + 6] = 0xff; // mutate underlying bytes: the view sees it
    expect(view.data[0]).not.toBe(1);
  });

  it('copies when the data is misaligned, with the same values', () => {
    const t = Tensor.from('float64', [2], [1.25, -2.5]);
    const payload = encodeTensorPayload(t);
    const buf = new Uint8Array(payload.byteLength + 1);
    buf.set(payload, 1);
    const copy = decodeTensorPayload(buf.subarray(1));
    expect(copy.toNumbers()).toEqual([1.25, -2.5]);
  });

  it('rejects bytes that do not match dtype and shape', () => {
    const bad = new Uint8Array([10, 1, 4, 0, 0, 0, 1, 2, 3]);
    expect(() => decodeTensorPayload(bad)).toThrow(TensorFormatError);
    expect(() => decodeTensorPayload(new Uint8Array([99, 0]))).toThrow(/unknown dtype/);
    expect(() => Tensor.from('float32', [3], [1, 2])).toThrow(/needs 3 elements/);
  });

  it('converts float16 exactly, with round-to-nearest-even', () => {
    for (const v of [0, 1, -2, 0.5, 65504, 6.103515625e-5, 5.960464477539063e-8, Infinity, -Infinity]) {
      expect(float16ToNumber(numberToFloat16(v))).toBe(v);
    }
    expect(Number.isNaN(float16ToNumber(numberToFloat16(Number.NaN)))).toBe(true);
    expect(float16ToNumber(numberToFloat16(1 + 2 ** -11))).toBe(1); // tie rounds to even
    expect(float16ToNumber(numberToFloat16(70000))).toBe(Infinity);
    // Every half value round-trips.
    for (let bits = 0; bits < 0x7c00; bits += 7) expect(numberToFloat16(float16ToNumber(bits))).toBe(bits);
  });
});
