/**
 * How a space becomes dataset columns (docs/datasets.md, "Encodings" and "Paths"): one column per
 * leaf of Dict/Tuple spaces, each with an encoding, dtype and per-step shape, and the functions that
 * pick a leaf out of a value and encode it.
 */
import sharp from 'sharp';

import type { Space } from '../../../protocol/spaces.ts';
import { Tensor, isFloatDType } from '../../../protocol/tensor.ts';
import type { DType } from '../../../protocol/tensor.ts';
import { toJsonText } from './json.ts';

export type Encoding = 'raw' | 'png' | 'jpeg' | 'scalar' | 'json';
export type ImageFormat = 'raw' | 'png' | 'jpeg';

export interface ColumnPlan {
  /** Column name suffix after the prefix: '' for the whole value, '.key', '.0', '.a.b'. */
  path: string;
  /** Keys from the value's root to this leaf. */
  keys: (string | number)[];
  encoding: Encoding;
  dtype: DType | null;
  shape: readonly number[];
}

/** uint8 [H, W, C] or a stack [T, H, W, C], C in 1/3/4, at least 32x32: worth storing as an image. */
function isImage(dtype: string, shape: readonly number[]): boolean {
  const s = shape.length === 4 ? shape.slice(1) : shape;
  return dtype === 'uint8' && s.length === 3 && [1, 3, 4].includes(s[2]!) && s[0]! >= 32 && s[1]! >= 32;
}

export function planColumns(space: Space, images: ImageFormat = 'raw', keys: (string | number)[] = []): ColumnPlan[] {
  const path = keys.map((k) => `.${k}`).join('');
  switch (space.type) {
    case 'box':
      return [{ path, keys, encoding: images !== 'raw' && isImage(space.dtype, space.shape) ? images : 'raw', dtype: space.dtype, shape: space.shape }];
    case 'discrete':
      return [{ path, keys, encoding: 'scalar', dtype: space.dtype, shape: [] }];
    case 'multi_discrete':
      return [{ path, keys, encoding: 'raw', dtype: space.dtype, shape: space.nvec.shape }];
    case 'multi_binary':
      return [{ path, keys, encoding: 'raw', dtype: 'int8', shape: space.n }];
    case 'dict':
      return Object.entries(space.spaces).flatMap(([k, s]) => planColumns(s, images, [...keys, k]));
    case 'tuple':
      return space.spaces.flatMap((s, i) => planColumns(s, images, [...keys, i]));
    default:
      return [{ path, keys, encoding: 'json', dtype: null, shape: [] }];
  }
}

export function pick(value: unknown, keys: readonly (string | number)[]): unknown {
  let v = value;
  for (const k of keys) v = v === null || v === undefined ? undefined : (v as Record<string | number, unknown>)[k];
  return v;
}

/**
 * Encodes one leaf value for a column of any encoding but png/jpeg; null stays null. Raw bytes may
 * be a view of the observation's tensor: copy them before the tensor changes.
 */
export function encodeLeafSync(col: ColumnPlan, value: unknown): Uint8Array | number | bigint | string | null {
  if (value === null || value === undefined) return null;
  switch (col.encoding) {
    case 'scalar':
      if (col.dtype && isFloatDType(col.dtype)) return Number(value);
      return typeof value === 'bigint' ? value : BigInt(Math.trunc(Number(value)));
    case 'json':
      return toJsonText(value);
    case 'raw':
      return asTensor(value, col).bytes();
    default:
      throw new TypeError(`column${col.path} is ${col.encoding}-encoded: use encodeLeaf`);
  }
}

/** Encodes one leaf value for its column (images with sharp, off the main thread); null stays null. */
export async function encodeLeaf(col: ColumnPlan, value: unknown): Promise<Uint8Array | number | bigint | string | null> {
  if (value === null || value === undefined) return null;
  if (col.encoding !== 'png' && col.encoding !== 'jpeg') {
    const v = encodeLeafSync(col, value);
    return v instanceof Uint8Array ? v.slice() : v;
  }
  const t = asTensor(value, col);
  // A stack [T, H, W, C] is one image of its frames one above the other (T*H rows).
  const [height, width, channels] = (t.shape.length === 4 ? [t.shape[0]! * t.shape[1]!, t.shape[2]!, t.shape[3]!] : t.shape) as [number, number, 1 | 3 | 4];
  const img = sharp(Buffer.from(t.bytes()), { raw: { width, height, channels } });
  return new Uint8Array(await (col.encoding === 'png' ? img.png({ compressionLevel: 1 }) : img.jpeg({ quality: 90 })).toBuffer());
}

function asTensor(value: unknown, col: ColumnPlan): Tensor {
  const dtype = col.dtype ?? 'float64';
  if (value instanceof Tensor) return value.dtype === dtype ? value : Tensor.from(dtype, value.shape, value.toNumbers());
  if (typeof value === 'number' || typeof value === 'boolean') return Tensor.from(dtype, [], [Number(value)]);
  throw new TypeError(`column${col.path} expects a ${dtype} tensor of shape [${col.shape.join(', ')}], got ${typeof value}`);
}
