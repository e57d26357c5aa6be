/**
 * Columns of a record batch built straight into typed arrays. apache-arrow's own builders
 * (`vectorFromArray`) go through a per-value dispatch and re-encode every string; for step rows
 * (a dozen small values each) that was most of the writer's time, ~8 µs per step. Here a row
 * costs a few typed-array stores; `finish()` hands the filled prefix to `makeData` without copying.
 *
 * Nulls: a column keeps no validity bitmap until its first null, then one with every earlier row
 * valid (Arrow allows a missing bitmap when nothing is null).
 */
import { Binary, Bool, Float64, Int32, Int64, makeData, Utf8 } from 'apache-arrow';
import type { Data, DataType } from 'apache-arrow';

export interface ColumnBuilder {
  readonly length: number;
  /** Appends one value (null or undefined: a null). */
  push(value: unknown): void;
  /** The column so far as Arrow data; the builder starts over empty. */
  finish(): Data;
}

/** Grows `a` to hold at least `n` elements, doubling. */
function grow<A extends { length: number; set(src: ArrayLike<number | bigint>): void }>(a: A, n: number, make: (size: number) => A): A {
  if (n <= a.length) return a;
  const b = make(Math.max(n, a.length * 2));
  b.set(a as unknown as ArrayLike<number | bigint>);
  return b;
}

/** The validity bitmap, kept lazily. */
class Validity {
  private bits: Uint8Array | null = null;
  nulls = 0;

  mark(row: number, valid: boolean): void {
    if (valid && this.bits === null) return;
    if (this.bits === null) {
      // First null: every earlier row was valid.
      this.bits = new Uint8Array(Math.max(64, (row >> 3) * 2 + 1)).fill(0xff);
    }
    this.bits = grow(this.bits, (row >> 3) + 1, (n) => new Uint8Array(n).fill(0xff));
    if (valid) this.bits[row >> 3]! |= 1 << (row & 7);
    else {
      this.bits[row >> 3]! &= ~(1 << (row & 7));
      this.nulls++;
    }
  }

  /** The bitmap for `length` rows (undefined when nothing was null), and resets. */
  take(length: number): { nullCount: number; nullBitmap?: Uint8Array } {
    const out = this.bits === null ? { nullCount: 0 } : { nullCount: this.nulls, nullBitmap: this.bits.subarray(0, (length + 7) >> 3) };
    this.bits = null;
    this.nulls = 0;
    return out;
  }
}

type FixedKind = 'int32' | 'int64' | 'float64' | 'bool';

class FixedBuilder implements ColumnBuilder {
  private values: Int32Array | BigInt64Array | Float64Array | Uint8Array;
  private readonly validity = new Validity();
  length = 0;

  constructor(private readonly kind: FixedKind) {
    this.values = this.alloc(1024);
  }

  private alloc(n: number): Int32Array | BigInt64Array | Float64Array | Uint8Array {
    switch (this.kind) {
      case 'int32':
        return new Int32Array(n);
      case 'int64':
        return new BigInt64Array(n);
      case 'float64':
        return new Float64Array(n);
      default:
        return new Uint8Array(n); // one byte per row until finish() packs the bits
    }
  }

  push(value: unknown): void {
    const row = this.length++;
    if (row >= this.values.length) {
      const wider = this.alloc(this.values.length * 2);
      (wider as Float64Array).set(this.values as Float64Array);
      this.values = wider;
    }
    const valid = value !== null && value !== undefined;
    this.validity.mark(row, valid);
    if (!valid) return;
    const v = this.values;
    if (v instanceof BigInt64Array) v[row] = typeof value === 'bigint' ? value : BigInt(Math.trunc(Number(value)));
    else if (v instanceof Uint8Array) v[row] = value ? 1 : 0;
    else v[row] = Number(value);
  }

  finish(): Data {
    const length = this.length;
    const nulls = this.validity.take(length);
    const values = this.values.subarray(0, length);
    this.values = this.alloc(Math.max(1024, length));
    this.length = 0;
    switch (this.kind) {
      case 'int32':
        return makeData({ type: new Int32(), length, ...nulls, data: values as Int32Array });
      case 'int64':
        return makeData({ type: new Int64(), length, ...nulls, data: values as BigInt64Array });
      case 'float64':
        return makeData({ type: new Float64(), length, ...nulls, data: values as Float64Array });
      default: {
        const bits = new Uint8Array((length + 7) >> 3);
        for (let i = 0; i < length; i++) if ((values as Uint8Array)[i]) bits[i >> 3]! |= 1 << (i & 7);
        return makeData({ type: new Bool(), length, ...nulls, data: bits });
      }
    }
  }
}

const utf8 = new TextEncoder();

/** Utf8 or Binary: offsets into one growing byte buffer. */
class VariableBuilder implements ColumnBuilder {
  private offsets = new Int32Array(1025);
  private bytes = new Uint8Array(16 * 1024);
  private end = 0;
  private readonly validity = new Validity();
  /** The last string and its bytes: session and server repeat for every row of an episode. */
  private lastString: string | null = null;
  private lastBytes: Uint8Array = new Uint8Array(0);
  length = 0;

  constructor(private readonly text: boolean) {}

  push(value: unknown): void {
    const row = this.length++;
    this.offsets = grow(this.offsets, row + 2, (n) => new Int32Array(n));
    const valid = value !== null && value !== undefined;
    this.validity.mark(row, valid);
    if (valid) {
      if (typeof value === 'string') this.pushString(value);
      else this.pushBytes(value as Uint8Array);
    }
    this.offsets[row + 1] = this.end;
  }

  private pushBytes(src: Uint8Array): void {
    this.bytes = grow(this.bytes, this.end + src.byteLength, (n) => new Uint8Array(n));
    this.bytes.set(src, this.end);
    this.end += src.byteLength;
  }

  private pushString(s: string): void {
    if (s === this.lastString) {
      this.pushBytes(this.lastBytes);
      return;
    }
    // At most 3 bytes per UTF-16 unit.
    this.bytes = grow(this.bytes, this.end + s.length * 3, (n) => new Uint8Array(n));
    const { written } = utf8.encodeInto(s, this.bytes.subarray(this.end));
    if (s.length <= 256) {
      this.lastString = s;
      this.lastBytes = this.bytes.slice(this.end, this.end + written);
    }
    this.end += written;
  }

  finish(): Data {
    const length = this.length;
    const nulls = this.validity.take(length);
    const props = { length, ...nulls, valueOffsets: this.offsets.subarray(0, length + 1), data: this.bytes.subarray(0, this.end) };
    this.offsets = new Int32Array(Math.max(1025, length + 1));
    this.bytes = new Uint8Array(Math.max(16 * 1024, this.end));
    this.end = 0;
    this.length = 0;
    return this.text ? makeData({ type: new Utf8(), ...props }) : makeData({ type: new Binary(), ...props });
  }
}

/** A builder for a field of one of the types the dataset uses. */
export function columnBuilder(type: DataType): ColumnBuilder {
  if (type instanceof Int32) return new FixedBuilder('int32');
  if (type instanceof Int64) return new FixedBuilder('int64');
  if (type instanceof Float64) return new FixedBuilder('float64');
  if (type instanceof Bool) return new FixedBuilder('bool');
  if (type instanceof Utf8) return new VariableBuilder(true);
  if (type instanceof Binary) return new VariableBuilder(false);
  throw new TypeError(`no column builder for Arrow type ${String(type)}`);
}
