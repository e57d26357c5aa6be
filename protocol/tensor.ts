/**
 * Tensors on the wire: `{dtype, shape, data}` with little-endian, row-major raw bytes.
 *
 * A tensor travels as msgpack extension type {@link TENSOR_EXT_TYPE} whose payload is
 * `[dtype code: u8][ndim: u8][dims: ndim x u32 LE][raw data]`. Decoding returns a typed-array
 * view over the received frame when the data happens to be aligned for its element size, and a
 * copy otherwise. float16 has no typed array on Node 20, so its elements are kept as raw IEEE
 * half bits in a Uint16Array (see {@link float16ToNumber}).
 *
 * @example
 * const t = Tensor.from('float32', [2, 2], new Float32Array([1, 2, 3, 4]));
 * t.get(1, 0); // 3
 */

export const DTYPES = ['bool', 'int8', 'int16', 'int32', 'int64', 'uint8', 'uint16', 'uint32', 'uint64', 'float16', 'float32', 'float64'] as const;
export type DType = (typeof DTYPES)[number];

/** Wire code of each dtype: its index in {@link DTYPES}. */
export const DTYPE_CODE: Readonly<Record<DType, number>> = Object.fromEntries(DTYPES.map((d, i) => [d, i])) as Record<DType, number>;

export const TENSOR_EXT_TYPE = 1;

export type TypedArrayFor<D extends DType> = D extends 'bool' | 'uint8'
  ? Uint8Array
  : D extends 'int8'
    ? Int8Array
    : D extends 'int16'
      ? Int16Array
      : D extends 'uint16' | 'float16'
        ? Uint16Array
        : D extends 'int32'
          ? Int32Array
          : D extends 'uint32'
            ? Uint32Array
            : D extends 'int64'
              ? BigInt64Array
              : D extends 'uint64'
                ? BigUint64Array
                : D extends 'float32'
                  ? Float32Array
                  : Float64Array;

export type AnyTypedArray =
  Uint8Array | Int8Array | Int16Array | Uint16Array | Int32Array | Uint32Array | BigInt64Array | BigUint64Array | Float32Array | Float64Array;

type TypedArrayCtor = {
  new (length: number): AnyTypedArray;
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): AnyTypedArray;
  readonly BYTES_PER_ELEMENT: number;
};

const CTOR: Readonly<Record<DType, TypedArrayCtor>> = {
  bool: Uint8Array,
  int8: Int8Array,
  int16: Int16Array,
  int32: Int32Array,
  int64: BigInt64Array,
  uint8: Uint8Array,
  uint16: Uint16Array,
  uint32: Uint32Array,
  uint64: BigUint64Array,
  float16: Uint16Array,
  float32: Float32Array,
  float64: Float64Array,
} as Record<DType, TypedArrayCtor>;

export function itemSize(dtype: DType): number {
  return CTOR[dtype].BYTES_PER_ELEMENT;
}

export function isDType(value: unknown): value is DType {
  return typeof value === 'string' && (DTYPES as readonly string[]).includes(value);
}

export function isIntegerDType(dtype: DType): boolean {
  return dtype !== 'float16' && dtype !== 'float32' && dtype !== 'float64' && dtype !== 'bool';
}

export function isFloatDType(dtype: DType): boolean {
  return dtype === 'float16' || dtype === 'float32' || dtype === 'float64';
}

export function isBigIntDType(dtype: DType): dtype is 'int64' | 'uint64' {
  return dtype === 'int64' || dtype === 'uint64';
}

/** Thrown when bytes, dtype and shape do not describe the same tensor. */
export class TensorFormatError extends Error {
  override readonly name = 'TensorFormatError';
}

export function shapeSize(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

export class Tensor<D extends DType = DType> {
  readonly dtype: D;
  readonly shape: readonly number[];
  readonly data: TypedArrayFor<D>;

  constructor(dtype: D, shape: readonly number[], data: TypedArrayFor<D>) {
    // Hot path (every observation is built here): one pass over the shape, no copies.
    const ctor = CTOR[dtype];
    if (ctor === undefined) throw new TensorFormatError(`unknown dtype ${String(dtype)}`);
    let expected = 1;
    for (let k = 0; k < shape.length; k++) {
      const d = shape[k]!;
      if (!Number.isInteger(d) || d < 0) throw new TensorFormatError(`invalid dimension ${d} in shape [${shape.join(', ')}]`);
      expected *= d;
    }
    if (data.length !== expected) {
      throw new TensorFormatError(`${dtype} tensor of shape [${shape.join(', ')}] needs ${expected} elements, got ${data.length}`);
    }
    if (!(data instanceof ctor)) {
      throw new TensorFormatError(`${dtype} tensor needs a ${ctor.name}, got ${data.constructor.name}`);
    }
    this.dtype = dtype;
    this.shape = shape;
    this.data = data;
  }

  /** Wraps (or, for plain number arrays, converts) data as a tensor. */
  static from<D extends DType>(dtype: D, shape: readonly number[], data: TypedArrayFor<D> | ArrayLike<number> | ArrayLike<bigint>): Tensor<D> {
    if (ArrayBuffer.isView(data) && data instanceof CTOR[dtype]) return new Tensor(dtype, shape, data as TypedArrayFor<D>);
    const out = new CTOR[dtype](shapeSize(shape));
    const src = data as ArrayLike<number | bigint>;
    if (src.length !== out.length)
      throw new TensorFormatError(`${dtype} tensor of shape [${shape.join(', ')}] needs ${out.length} elements, got ${src.length}`);
    for (let i = 0; i < out.length; i++) {
      const v = src[i]!;
      if (isBigIntDType(dtype)) (out as BigInt64Array)[i] = typeof v === 'bigint' ? v : BigInt(Math.trunc(v));
      else if (dtype === 'float16') (out as Uint16Array)[i] = numberToFloat16(Number(v));
      else if (dtype === 'bool') (out as Uint8Array)[i] = v ? 1 : 0;
      else (out as Float64Array)[i] = Number(v);
    }
    return new Tensor(dtype, shape, out as TypedArrayFor<D>);
  }

  static zeros<D extends DType>(dtype: D, shape: readonly number[]): Tensor<D> {
    return new Tensor(dtype, shape, new CTOR[dtype](shapeSize(shape)) as TypedArrayFor<D>);
  }

  get size(): number {
    return this.data.length;
  }

  get byteLength(): number {
    return this.data.byteLength;
  }

  /** Element i of the flat data as a JS number (float16 decoded, 64-bit integers converted). */
  at(i: number): number {
    const v = this.data[i];
    if (v === undefined) throw new RangeError(`index ${i} out of range for ${this.size} elements`);
    if (this.dtype === 'float16') return float16ToNumber(v as number);
    return Number(v);
  }

  /** Element at a multi-index, as a JS number. */
  get(...index: number[]): number {
    let flat = 0;
    for (let k = 0; k < this.shape.length; k++) flat = flat * this.shape[k]! + (index[k] ?? 0);
    return this.at(flat);
  }

  /** Flat contents as JS numbers (float16 decoded, 64-bit integers converted). */
  toNumbers(): number[] {
    const out = new Array<number>(this.size);
    for (let i = 0; i < out.length; i++) out[i] = this.at(i);
    return out;
  }

  /** Raw little-endian bytes (a view, no copy). */
  bytes(): Uint8Array {
    return new Uint8Array(this.data.buffer, this.data.byteOffset, this.data.byteLength);
  }

  equals(other: Tensor): boolean {
    if (this.dtype !== other.dtype || this.shape.length !== other.shape.length) return false;
    if (this.shape.some((d, i) => d !== other.shape[i])) return false;
    return Buffer.from(this.bytes()).equals(Buffer.from(other.bytes()));
  }
}

/** Builds a tensor over `bytes` without copying when aligned; copies otherwise. */
export function tensorFromBytes(dtype: DType, shape: readonly number[], bytes: Uint8Array): Tensor {
  const ctor = CTOR[dtype];
  const size = shapeSize(shape);
  if (bytes.byteLength !== size * ctor.BYTES_PER_ELEMENT) {
    throw new TensorFormatError(`${dtype} tensor of shape [${shape.join(', ')}] needs ${size * ctor.BYTES_PER_ELEMENT} bytes, got ${bytes.byteLength}`);
  }
  let data: AnyTypedArray;
  if (bytes.byteOffset % ctor.BYTES_PER_ELEMENT === 0) {
    data = new ctor(bytes.buffer, bytes.byteOffset, size);
  } else {
    const copy = new Uint8Array(bytes.byteLength);
    copy.set(bytes);
    data = new ctor(copy.buffer, 0, size);
  }
  return new Tensor(dtype, shape, data as TypedArrayFor<typeof dtype>);
}

/** Size of a tensor's extension payload: the header then the raw bytes. */
export function tensorPayloadSize(t: Tensor): number {
  return 2 + 4 * t.shape.length + t.byteLength;
}

/** Writes the extension payload at `offset` (the codec writes straight into its output buffer); returns the end. */
export function writeTensorPayload(t: Tensor, target: Uint8Array, offset: number): number {
  const p = writeTensorHeader(t, target, offset);
  target.set(t.bytes(), p);
  return p + t.byteLength;
}

/** Writes the payload's header (dtype code, ndim, dims) at `offset`; returns where the raw data starts. */
export function writeTensorHeader(t: Tensor, target: Uint8Array, offset: number): number {
  const ndim = t.shape.length;
  if (ndim > 255) throw new TensorFormatError(`tensors have at most 255 dimensions, got ${ndim}`);
  let p = offset;
  target[p++] = DTYPE_CODE[t.dtype];
  target[p++] = ndim;
  for (const d of t.shape) {
    target[p++] = d & 0xff;
    target[p++] = (d >>> 8) & 0xff;
    target[p++] = (d >>> 16) & 0xff;
    target[p++] = (d >>> 24) & 0xff;
  }
  return p;
}

/** The extension payload as its own buffer. */
export function encodeTensorPayload(t: Tensor): Uint8Array {
  const out = new Uint8Array(tensorPayloadSize(t));
  writeTensorPayload(t, out, 0);
  return out;
}

export function decodeTensorPayload(payload: Uint8Array): Tensor {
  const length = payload.byteLength;
  if (length < 2) throw new TensorFormatError('tensor payload shorter than its 2-byte header');
  const dtype = DTYPES[payload[0]!];
  if (dtype === undefined) throw new TensorFormatError(`unknown dtype code ${payload[0]}`);
  const ndim = payload[1]!;
  const header = 2 + 4 * ndim;
  if (length < header) throw new TensorFormatError(`tensor header declares ${ndim} dimensions but the payload is too short`);
  // Dimensions read byte by byte: a DataView per tensor costs more than the whole decode of a small one.
  const shape = new Array<number>(ndim);
  for (let k = 0, p = 2; k < ndim; k++, p += 4) {
    shape[k] = (payload[p]! | (payload[p + 1]! << 8) | (payload[p + 2]! << 16) | (payload[p + 3]! << 24)) >>> 0;
  }
  return tensorFromBytes(dtype, shape, payload.subarray(header));
}

// IEEE 754 half precision conversions, exact for every half value (round-to-nearest-even on encode).
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

export function float16ToNumber(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >> 10) & 0x1f;
  const frac = bits & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 0x1f) return frac ? Number.NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

export function numberToFloat16(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rem > mid || (rem === mid && half & 1)) half++;
    return sign | half;
  }
  // Rounding may carry into the exponent; that is still the correctly rounded half (or infinity).
  let half = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && half & 1)) half++;
  return sign | half;
}
