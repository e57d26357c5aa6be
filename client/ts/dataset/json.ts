/**
 * Wire values as JSON (docs/datasets.md, "JSON values"): tensors as `{"__tensor__": {dtype, shape,
 * data}}`, bytes as `{"__bytes__": base64}`, unsafe 64-bit integers as decimal strings, non-finite
 * floats as "inf" / "-inf" / "nan". Used for info dicts, json-encoded columns and dataset.json.
 */
import { Tensor, isBigIntDType } from '../../../protocol/tensor.ts';

function num(x: number): number | string {
  if (Number.isFinite(x)) return x;
  return Number.isNaN(x) ? 'nan' : x > 0 ? 'inf' : '-inf';
}

function big(x: bigint): number | string {
  return x >= BigInt(Number.MIN_SAFE_INTEGER) && x <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(x) : x.toString();
}

/** A JSON-safe copy of a wire value. */
export function toJsonValue(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') return num(value);
  if (typeof value === 'bigint') return big(value);
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  if (value instanceof Tensor) {
    const data = isBigIntDType(value.dtype) ? Array.from(value.data as BigInt64Array, big) : value.toNumbers().map(num);
    return { __tensor__: { dtype: value.dtype, shape: [...value.shape], data } };
  }
  if (value instanceof Uint8Array) return { __bytes__: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64') };
  if (Array.isArray(value)) return value.map(toJsonValue);
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = toJsonValue(v);
    return out;
  }
  return String(value);
}

export function toJsonText(value: unknown): string {
  return JSON.stringify(toJsonValue(value));
}
