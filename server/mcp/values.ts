/**
 * Wire values <-> JSON for MCP. Results go out as JSON an LLM can read cheaply: fractions to
 * {@link SIGNIFICANT_DIGITS} significant digits, tensors as `{dtype, shape, values}` when small and
 * `{dtype, shape, min, max, mean}` when large (plain arrays of numbers likewise), and camera frames
 * (uint8 [H, W, 3|4]) as PNG image content. Actions come in as JSON and are shaped into
 * the wire values the env's action space asks for (a Box becomes a tensor of its dtype and shape).
 *
 * @example
 * const images: FoundImage[] = [];
 * const json = toJson({ obs: Tensor.zeros('float32', [4]) }, images); // { obs: { dtype: 'float32', shape: [4], values: [0, 0, 0, 0] } }
 * const action = fromJson(box({ low: -1, high: 1, shape: [2] }), [0.5, -0.5]); // Tensor float32 [2]
 */
import sharp from 'sharp';

import { isPlainObject } from '../../protocol/spaces.ts';
import type { Space } from '../../protocol/spaces.ts';
import { shapeSize, Tensor } from '../../protocol/tensor.ts';
import type { DType } from '../../protocol/tensor.ts';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A camera frame found in a result, to be sent as image content. */
export interface FoundImage {
  /** Where it was in the result, e.g. `obs.cameras.front`. */
  path: string;
  tensor: Tensor;
}

/** Tensors and arrays of numbers with at most this many numbers are written out in full. */
export const MAX_LIST_ELEMENTS = 256;
/** Fractions are written to this many significant digits: what a model reads, at a third of the tokens. */
export const SIGNIFICANT_DIGITS = 5;
/** Frames beyond this many per result are summarised, not attached. */
export const MAX_IMAGES = 8;
const MAX_DEPTH = 32;

/** Frames are scaled down to fit this many pixels on their long side before they are attached. */
export const MAX_IMAGE_SIDE = 1024;

/** Whether a tensor is an RGB(A) frame [H, W, 3|4], or a stack of them [N, H, W, 3|4] (camera history). */
export function isImageTensor(t: Tensor): boolean {
  const r = t.shape.length;
  return (
    t.dtype === 'uint8' && (r === 3 || r === 4) && (t.shape[r - 1] === 3 || t.shape[r - 1] === 4) && t.shape[r - 3]! >= 8 && t.shape[r - 2]! >= 8 && t.size > 0
  );
}

/** The frame to show: the tensor itself, or the last (current) frame of a stack, as a view. */
function lastFrame(t: Tensor): Tensor {
  if (t.shape.length === 3) return t;
  const frame = t.shape.slice(1);
  const per = shapeSize(frame);
  return new Tensor('uint8', frame, (t.data as Uint8Array).subarray(t.size - per));
}

/** A number for reading: integers as they are, fractions rounded, non-finite values named. */
export function readable(v: number): Json {
  if (!Number.isFinite(v)) return String(v);
  return Number.isInteger(v) ? v : Number(v.toPrecision(SIGNIFICANT_DIGITS));
}

/** Converts a wire value to JSON; frames are collected into `images` (and summarised in place). */
export function toJson(value: unknown, images: FoundImage[] = [], path = '', depth = 0): Json {
  if (value === null || value === undefined) return null;
  if (typeof value === 'boolean' || typeof value === 'string') return value;
  if (typeof value === 'number') return readable(value);
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (value instanceof Tensor) return tensorToJson(value, images, path);
  if (value instanceof Uint8Array) return { bytes: value.byteLength };
  if (depth >= MAX_DEPTH) return '(nested too deep)';
  if (Array.isArray(value)) {
    const numbers = numericLeaves(value);
    if (numbers && numbers.length > MAX_LIST_ELEMENTS) return { shape: arrayShape(value), ...summary(numbers) };
    return value.map((v, i) => toJson(v, images, `${path}[${i}]`, depth + 1));
  }
  if (isPlainObject(value)) {
    const out: Record<string, Json> = {};
    for (const [k, v] of Object.entries(value)) out[k] = toJson(v, images, path ? `${path}.${k}` : k, depth + 1);
    return out;
  }
  return String(value);
}

/** The numbers of a (nested) array of numbers, or null when it holds anything else. */
function numericLeaves(value: unknown[], out: number[] = [], depth = 0): number[] | null {
  if (depth > 8) return null;
  for (const v of value) {
    if (typeof v === 'number') out.push(v);
    else if (Array.isArray(v)) {
      if (!numericLeaves(v, out, depth + 1)) return null;
    } else return null;
  }
  return out;
}

function arrayShape(value: unknown[]): number[] {
  const shape: number[] = [];
  let level: unknown = value;
  while (Array.isArray(level)) {
    shape.push(level.length);
    level = level[0];
  }
  return shape;
}

/** Range and mean of the finite numbers, for arrays too long to read. */
function summary(values: Iterable<number>): Record<string, Json> {
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  let finite = 0;
  let count = 0;
  for (const v of values) {
    count++;
    if (!Number.isFinite(v)) continue;
    if (v < min) min = v;
    if (v > max) max = v;
    sum += v;
    finite++;
  }
  const note = `${count} numbers, summarised`;
  return finite ? { min: readable(min), max: readable(max), mean: readable(sum / finite), note } : { finite: 0, note };
}

function tensorToJson(t: Tensor, images: FoundImage[], path: string): Json {
  const head = { dtype: t.dtype, shape: [...t.shape] };
  if (isImageTensor(t) && images.length < MAX_IMAGES) {
    images.push({ path, tensor: lastFrame(t) });
    const which = t.shape.length === 4 ? `the last of ${t.shape[0]} frames ` : '';
    return { ...head, image: `${which}attached as image ${images.length} (${path || 'frame'})` };
  }
  if (t.size <= MAX_LIST_ELEMENTS) {
    const numbers = t.toNumbers();
    const values = t.dtype === 'bool' ? numbers.map((v) => v !== 0) : numbers.map(readable);
    return { ...head, values: nest(values, t.shape) };
  }
  const all = function* () {
    for (let i = 0; i < t.size; i++) yield t.at(i);
  };
  return { ...head, ...summary(all()) };
}

function nest(flat: Json[], shape: readonly number[]): Json {
  if (shape.length === 0) return flat[0] ?? null;
  if (shape.length === 1) return flat;
  const [first, ...rest] = shape;
  const stride = shapeSize(rest);
  return Array.from({ length: first! }, (_, i) => nest(flat.slice(i * stride, (i + 1) * stride), rest));
}

/** Encodes an RGB(A) uint8 frame [H, W, 3|4] as PNG, scaled down to MAX_IMAGE_SIDE when larger. */
export async function encodePng(t: Tensor): Promise<Buffer> {
  const [height, width, channels] = t.shape as [number, number, 3 | 4];
  let img = sharp(Buffer.from(t.bytes()), { raw: { width, height, channels } });
  if (Math.max(width, height) > MAX_IMAGE_SIDE) img = img.resize({ width: MAX_IMAGE_SIDE, height: MAX_IMAGE_SIDE, fit: 'inside' });
  return img.png().toBuffer();
}

/** An action that cannot be shaped into the action space. */
export class ActionFormatError extends Error {
  override readonly name = 'ActionFormatError';
}

function flatten(value: unknown, out: unknown[] = []): unknown[] {
  if (Array.isArray(value)) for (const v of value) flatten(v, out);
  else out.push(value);
  return out;
}

function toTensor(dtype: DType, shape: readonly number[], value: unknown, what: string): Tensor {
  const flat = flatten(value);
  const n = shapeSize(shape);
  if (flat.length !== n) throw new ActionFormatError(`${what} needs ${n} numbers for shape [${shape.join(', ')}], got ${flat.length}`);
  const numbers = flat.map((v, i) => {
    if (typeof v === 'boolean') return v ? 1 : 0;
    if (typeof v !== 'number') throw new ActionFormatError(`${what}: element ${i} must be a number, got ${JSON.stringify(v)}`);
    return v;
  });
  return Tensor.from(dtype, shape, numbers);
}

/**
 * Shapes a JSON action into the wire value `space` asks for. Values that do not fit the space's
 * layout raise ActionFormatError; bounds are left to the server, which answers with its own
 * ENV_ERR_INVALID_ACTION message.
 */
export function fromJson(space: Space, value: unknown, what = 'action'): unknown {
  // Strict tool schemas carry composite actions (Dict, Tuple...) as JSON text; Text actions are strings.
  if (typeof value === 'string' && space.type !== 'text') {
    try {
      value = JSON.parse(value) as unknown;
    } catch (err) {
      throw new ActionFormatError(`${what} is a string but not JSON text (${(err as Error).message})`);
    }
  }
  switch (space.type) {
    case 'box':
      return toTensor(space.dtype, space.shape, value, what);
    case 'multi_discrete':
      return toTensor(space.dtype, space.nvec.shape, value, what);
    case 'multi_binary':
      return toTensor('int8', space.n, value, what);
    case 'discrete':
      // [3] is a common way for an agent to write 3.
      return Array.isArray(value) && value.length === 1 ? value[0] : value;
    case 'dict':
      if (!isPlainObject(value)) return value;
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, space.spaces[k] ? fromJson(space.spaces[k], v, `${what}.${k}`) : v]));
    case 'tuple':
      if (!Array.isArray(value)) return value;
      return value.map((v, i) => (space.spaces[i] ? fromJson(space.spaces[i], v, `${what}[${i}]`) : v));
    case 'sequence': {
      if (!Array.isArray(value)) return value;
      const inner = space.space;
      if (space.stack && inner.type === 'box') return toTensor(inner.dtype, [value.length, ...inner.shape], value, what);
      return value.map((v, i) => fromJson(inner, v, `${what}[${i}]`));
    }
    case 'oneof': {
      if (!Array.isArray(value) || value.length !== 2 || typeof value[0] !== 'number') return value;
      const chosen = space.spaces[value[0]];
      return chosen ? [value[0], fromJson(chosen, value[1], `${what}[1]`)] : value;
    }
    default:
      return value;
  }
}

/** The JSON Schema of the JSON form of an action in `space` (what `fromJson` accepts). */
export function actionJsonSchema(space: Space): Record<string, unknown> {
  const numbers = (shape: readonly number[], item: Record<string, unknown>): Record<string, unknown> => {
    if (shape.length === 0) return item;
    const [first, ...rest] = shape;
    return { type: 'array', items: numbers(rest, item), minItems: first, maxItems: first };
  };
  switch (space.type) {
    case 'box': {
      const integer = space.dtype.startsWith('int') || space.dtype.startsWith('uint');
      const item: Record<string, unknown> = { type: space.dtype === 'bool' ? 'boolean' : integer ? 'integer' : 'number' };
      // A uniform finite bound is worth stating; per-element bounds are in the description.
      const lo = space.low.size ? space.low.at(0) : NaN;
      const hi = space.high.size ? space.high.at(0) : NaN;
      if (space.dtype !== 'bool' && Number.isFinite(lo) && space.low.toNumbers().every((v) => v === lo)) item.minimum = lo;
      if (space.dtype !== 'bool' && Number.isFinite(hi) && space.high.toNumbers().every((v) => v === hi)) item.maximum = hi;
      return numbers(space.shape, item);
    }
    case 'discrete':
      return { type: 'integer', minimum: space.start, maximum: space.start + space.n - 1 };
    case 'multi_discrete':
      return numbers(space.nvec.shape, { type: 'integer' });
    case 'multi_binary':
      return numbers(space.n, { type: 'integer', enum: [0, 1] });
    case 'text':
      return { type: 'string', minLength: space.min_length, maxLength: space.max_length };
    case 'dict':
      return {
        type: 'object',
        properties: Object.fromEntries(Object.entries(space.spaces).map(([k, s]) => [k, actionJsonSchema(s)])),
        required: Object.keys(space.spaces),
        additionalProperties: false,
      };
    case 'tuple':
      return { type: 'array', prefixItems: space.spaces.map(actionJsonSchema), minItems: space.spaces.length, maxItems: space.spaces.length };
    case 'sequence':
      return { type: 'array', items: actionJsonSchema(space.space) };
    default:
      return {};
  }
}
