/**
 * Space descriptions as data, covering every Gymnasium space with exact dtypes and infinite bounds.
 *
 * A description is what crosses the wire (in `make`'s answer); `contains` explains why a value is
 * not in a space, `sample` draws from one. Values follow Gymnasium's: Box, MultiDiscrete and
 * MultiBinary are tensors; Discrete is an integer; Text a string; Dict a map; Tuple and Sequence
 * arrays (a stacked Sequence of Boxes is one tensor); Graph `{nodes, edges, edge_links}`; OneOf
 * `[index, value]`.
 *
 * @example
 * const space = box({ low: -1, high: 1, shape: [2], dtype: 'float32' });
 * contains(space, Tensor.from('float32', [2], [0, 2])); // 'element 1 = 2 is above high 1'
 */
import { z } from 'zod';

import { DTYPES, isBigIntDType, isIntegerDType, itemSize, shapeSize, Tensor } from './tensor.ts';
import type { DType } from './tensor.ts';

export const TensorSchema = z
  .custom<Tensor>((v) => v instanceof Tensor, { message: 'expected a tensor (msgpack extension type 1)' })
  .meta({ id: 'Tensor', description: 'msgpack extension type 1: [dtype u8][ndim u8][ndim x u32 LE dims][raw little-endian row-major data]' });

export const DTypeSchema = z.enum(DTYPES);
const IntDTypeSchema = z.enum(['int8', 'int16', 'int32', 'int64', 'uint8', 'uint16', 'uint32', 'uint64']);
const ShapeSchema = z.array(z.number().int().nonnegative());

export const BoxSpaceSchema = z.object({
  type: z.literal('box'),
  dtype: DTypeSchema,
  shape: ShapeSchema,
  low: TensorSchema.describe(
    'lower bounds in the box’s dtype; shaped like the box or a suffix of its shape, broadcast ([] is one value for every element); -inf kept',
  ),
  high: TensorSchema.describe(
    'upper bounds in the box’s dtype; shaped like the box or a suffix of its shape, broadcast ([] is one value for every element); +inf kept',
  ),
});
export const DiscreteSpaceSchema = z.object({
  type: z.literal('discrete'),
  n: z.number().int().positive(),
  start: z.number().int(),
  dtype: IntDTypeSchema,
});
export const MultiDiscreteSpaceSchema = z.object({
  type: z.literal('multi_discrete'),
  nvec: TensorSchema,
  start: TensorSchema,
  dtype: IntDTypeSchema,
});
export const MultiBinarySpaceSchema = z.object({ type: z.literal('multi_binary'), n: ShapeSchema });
export const TextSpaceSchema = z.object({
  type: z.literal('text'),
  min_length: z.number().int().nonnegative(),
  max_length: z.number().int().nonnegative(),
  charset: z.string(),
});

export type BoxSpace = z.infer<typeof BoxSpaceSchema>;
export type DiscreteSpace = z.infer<typeof DiscreteSpaceSchema>;
export type MultiDiscreteSpace = z.infer<typeof MultiDiscreteSpaceSchema>;
export type MultiBinarySpace = z.infer<typeof MultiBinarySpaceSchema>;
export type TextSpace = z.infer<typeof TextSpaceSchema>;
export interface DictSpace {
  type: 'dict';
  spaces: Record<string, Space>;
}
export interface TupleSpace {
  type: 'tuple';
  spaces: Space[];
}
export interface SequenceSpace {
  type: 'sequence';
  space: Space;
  stack: boolean;
}
export interface GraphSpace {
  type: 'graph';
  node_space: BoxSpace | DiscreteSpace;
  edge_space: BoxSpace | DiscreteSpace | null;
}
export interface OneOfSpace {
  type: 'oneof';
  spaces: Space[];
}
export type Space =
  BoxSpace | DiscreteSpace | MultiDiscreteSpace | MultiBinarySpace | TextSpace | DictSpace | TupleSpace | SequenceSpace | GraphSpace | OneOfSpace;

export const SpaceSchema: z.ZodType<Space> = z.lazy(() =>
  z.discriminatedUnion('type', [
    BoxSpaceSchema,
    DiscreteSpaceSchema,
    MultiDiscreteSpaceSchema,
    MultiBinarySpaceSchema,
    TextSpaceSchema,
    z.object({ type: z.literal('dict'), spaces: z.record(z.string(), SpaceSchema) }),
    z.object({ type: z.literal('tuple'), spaces: z.array(SpaceSchema) }),
    z.object({ type: z.literal('sequence'), space: SpaceSchema, stack: z.boolean() }),
    z.object({
      type: z.literal('graph'),
      node_space: z.union([BoxSpaceSchema, DiscreteSpaceSchema]),
      edge_space: z.union([BoxSpaceSchema, DiscreteSpaceSchema]).nullable(),
    }),
    z.object({ type: z.literal('oneof'), spaces: z.array(SpaceSchema) }),
  ]),
) as z.ZodType<Space>;

/** Every space's tag (its `type`), checked against `Space` both ways by the compiler: a tag added to one is missed by the other. */
const SPACE_TAGS: { readonly [Tag in Space['type']]: true } = {
  box: true,
  discrete: true,
  multi_discrete: true,
  multi_binary: true,
  text: true,
  dict: true,
  tuple: true,
  sequence: true,
  graph: true,
  oneof: true,
};
export const SPACE_TYPES = Object.keys(SPACE_TAGS) as readonly Space['type'][];

// ---------------------------------------------------------------------------------------------
// Constructors

type Bound = number | bigint | readonly number[] | Tensor;

/**
 * A box with more elements than this gets a scalar bound (shape `[]`) when its bound is given as
 * one number: filling an image's bounds element by element cost seconds and hundreds of MB per
 * session. Smaller boxes keep full-shape bounds, the form clients before broadcast bounds expect.
 */
export const BROADCAST_BOUND_MIN_ELEMENTS = 4096;

function boundTensor(bound: Bound, dtype: DType, shape: readonly number[], fallback: number): Tensor {
  if (bound instanceof Tensor) {
    if (!broadcastsTo(bound.shape, shape))
      throw new Error(`a bound of shape [${bound.shape.join(', ')}] does not broadcast to the box's shape [${shape.join(', ')}]`);
    if (bound.dtype !== dtype) return Tensor.from(dtype, bound.shape, bound.toNumbers());
    return bound;
  }
  const n = shapeSize(shape);
  const scalar = typeof bound === 'number' || typeof bound === 'bigint';
  const boundShape = scalar && n > BROADCAST_BOUND_MIN_ELEMENTS ? [] : shape;
  const values = scalar ? new Array<number | bigint>(shapeSize(boundShape)).fill(bound) : Array.from(bound as readonly number[]);
  if (values.length !== shapeSize(boundShape)) throw new Error(`bound has ${values.length} values but the shape [${shape.join(', ')}] needs ${n}`);
  if (isIntegerDType(dtype)) {
    // Integer boxes cannot hold infinity: clamp to the dtype's range, as Gymnasium does.
    const [lo, hi] = intRange(dtype);
    return Tensor.from(dtype, boundShape, values.map((v) => (typeof v === 'bigint' ? v : Number.isFinite(v) ? v : v > 0 ? hi : lo)) as number[]);
  }
  if (dtype === 'bool') return Tensor.from(dtype, boundShape, values.map((v) => (Number.isFinite(Number(v)) ? Number(v) : fallback)) as number[]);
  return Tensor.from(dtype, boundShape, values as number[]);
}

/**
 * Whether a bound of shape `bound` applies to a box of shape `shape`: the same shape, or a suffix
 * of it (NumPy broadcasting with the leading dimensions dropped; `[]` is one value for every
 * element). Element i of the box then uses element `i % bound.size` of the bound.
 */
export function broadcastsTo(bound: readonly number[], shape: readonly number[]): boolean {
  if (bound.length > shape.length) return false;
  const offset = shape.length - bound.length;
  return bound.every((d, k) => d === shape[offset + k]);
}

/** A box's bound for element i of a value (bounds may be broadcast: see broadcastsTo). */
export function boundAt(bound: Tensor, i: number): number {
  return bound.at(i % bound.size);
}

export function intRange(dtype: DType): [number, number] {
  switch (dtype) {
    case 'int8':
      return [-128, 127];
    case 'int16':
      return [-32768, 32767];
    case 'int32':
      return [-(2 ** 31), 2 ** 31 - 1];
    case 'int64':
      return [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER];
    case 'uint8':
      return [0, 255];
    case 'uint16':
      return [0, 65535];
    case 'uint32':
      return [0, 2 ** 32 - 1];
    case 'uint64':
      return [0, Number.MAX_SAFE_INTEGER];
    case 'bool':
      return [0, 1];
    default:
      return [-Infinity, Infinity];
  }
}

export function box(opts: { low: Bound; high: Bound; shape?: readonly number[]; dtype?: DType }): BoxSpace {
  const dtype = opts.dtype ?? 'float32';
  const shape = opts.shape ?? (opts.low instanceof Tensor ? opts.low.shape : Array.isArray(opts.low) ? [(opts.low as number[]).length] : []);
  return { type: 'box', dtype, shape: [...shape], low: boundTensor(opts.low, dtype, shape, 0), high: boundTensor(opts.high, dtype, shape, 1) };
}

export function discrete(n: number, start = 0, dtype: DiscreteSpace['dtype'] = 'int64'): DiscreteSpace {
  return { type: 'discrete', n, start, dtype };
}

export function multiDiscrete(nvec: readonly number[], start?: readonly number[], dtype: MultiDiscreteSpace['dtype'] = 'int64'): MultiDiscreteSpace {
  return {
    type: 'multi_discrete',
    nvec: Tensor.from(dtype, [nvec.length], nvec),
    start: Tensor.from(dtype, [nvec.length], start ?? nvec.map(() => 0)),
    dtype,
  };
}

export function multiBinary(n: number | readonly number[]): MultiBinarySpace {
  return { type: 'multi_binary', n: typeof n === 'number' ? [n] : [...n] };
}

/** Gymnasium's default Text charset: ASCII letters and digits. */
export const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export function text(maxLength: number, opts: { minLength?: number; charset?: string } = {}): TextSpace {
  return { type: 'text', min_length: opts.minLength ?? 1, max_length: maxLength, charset: opts.charset ?? ALPHANUMERIC };
}

export function dict(spaces: Record<string, Space>): DictSpace {
  // Gymnasium sorts Dict keys; do the same so both sides iterate alike.
  const sorted: Record<string, Space> = {};
  for (const key of Object.keys(spaces).sort()) sorted[key] = spaces[key]!;
  return { type: 'dict', spaces: sorted };
}

export function tuple(spaces: Space[]): TupleSpace {
  return { type: 'tuple', spaces };
}

export function sequence(space: Space, stack = false): SequenceSpace {
  return { type: 'sequence', space, stack };
}

export function graph(nodeSpace: BoxSpace | DiscreteSpace, edgeSpace: BoxSpace | DiscreteSpace | null): GraphSpace {
  return { type: 'graph', node_space: nodeSpace, edge_space: edgeSpace };
}

export function oneOf(spaces: Space[]): OneOfSpace {
  return { type: 'oneof', spaces };
}

// ---------------------------------------------------------------------------------------------
// Membership

/** What membership in a box needs to look at, worked out once per space (observations are checked every step). */
interface BoxBounds {
  /** An integer box spanning its dtype's whole range: every value of the right dtype and shape is inside. */
  everything: boolean;
  /** The single low and high shared by every element, or null when they vary. */
  lo: number | null;
  hi: number | null;
}

const boxBoundsCache = new WeakMap<BoxSpace, BoxBounds>();

function boxBounds(space: BoxSpace): BoxBounds {
  let b = boxBoundsCache.get(space);
  if (b) return b;
  const low = space.low.data as ArrayLike<number>;
  const high = space.high.data as ArrayLike<number>;
  let lo: number | null = low.length > 0 ? low[0]! : null;
  let hi: number | null = high.length > 0 ? high[0]! : null;
  for (let i = 1; i < low.length && lo !== null; i++) if (low[i] !== lo) lo = null;
  for (let i = 1; i < high.length && hi !== null; i++) if (high[i] !== hi) hi = null;
  const [min, max] = intRange(space.dtype);
  b = { everything: isIntegerDType(space.dtype) && lo === min && hi === max, lo, hi };
  boxBoundsCache.set(space, b);
  return b;
}

/**
 * The fast membership test for a box of the right dtype and shape: a tight loop over the typed
 * arrays (a 224x224x3 image is checked in tens of microseconds, not hundreds). Returns false when
 * an element is out or NaN, and for float16 and 64-bit dtypes, which the element-wise walk handles.
 */
function boxHolds(space: BoxSpace, value: Tensor): boolean {
  if (space.dtype === 'float16' || isBigIntDType(space.dtype)) return false;
  const b = boxBounds(space);
  if (b.everything) return true;
  const x = value.data as ArrayLike<number>;
  const n = x.length;
  if (b.lo !== null && b.hi !== null) {
    const { lo, hi } = b;
    // Written as !(in range) so that NaN, which compares false, is caught too.
    for (let i = 0; i < n; i++) if (!(x[i]! >= lo && x[i]! <= hi)) return false;
    return true;
  }
  const low = space.low.data as ArrayLike<number>;
  const high = space.high.data as ArrayLike<number>;
  if (low.length === n && high.length === n) {
    for (let i = 0; i < n; i++) if (!(x[i]! >= low[i]! && x[i]! <= high[i]!)) return false;
    return true;
  }
  // Broadcast bounds (a suffix of the shape, e.g. one range per colour channel).
  const nl = low.length;
  const nh = high.length;
  for (let i = 0; i < n; i++) if (!(x[i]! >= low[i % nl]! && x[i]! <= high[i % nh]!)) return false;
  return true;
}

/** Returns null when `value` lies in `space`, otherwise a reason a person can act on. */
export function contains(space: Space, value: unknown, path = ''): string | null {
  const at = path ? ` at ${path}` : '';
  switch (space.type) {
    case 'box': {
      if (!(value instanceof Tensor)) return `expected a ${space.dtype} tensor of shape [${space.shape.join(', ')}]${at}, got ${describe(value)}`;
      const shapeErr = checkTensorShape(value, space.dtype, space.shape, at);
      if (shapeErr) return shapeErr;
      if (boxHolds(space, value)) return null;
      // Something is out: the element-wise walk below names the first offender.
      for (let i = 0; i < value.size; i++) {
        const x = value.at(i);
        const lo = boundAt(space.low, i);
        const hi = boundAt(space.high, i);
        if (Number.isNaN(x)) return `element ${i} is NaN${at}; the box does not allow NaN`;
        if (isBigIntDType(space.dtype)) {
          const bx = value.data[i] as bigint;
          if (bx < (space.low.data[i % space.low.size] as bigint) || bx > (space.high.data[i % space.high.size] as bigint))
            return `element ${i} = ${bx} is outside [${lo}, ${hi}]${at}`;
          continue;
        }
        if (x < lo) return `element ${i} = ${x} is below low ${lo}${at}`;
        if (x > hi) return `element ${i} = ${x} is above high ${hi}${at}`;
      }
      return null;
    }
    case 'discrete': {
      const v = typeof value === 'bigint' ? Number(value) : value;
      if (typeof v !== 'number' || !Number.isInteger(v))
        return `expected an integer in [${space.start}, ${space.start + space.n - 1}]${at}, got ${describe(value)}`;
      if (v < space.start || v >= space.start + space.n) return `${v} is outside [${space.start}, ${space.start + space.n - 1}]${at}`;
      return null;
    }
    case 'multi_discrete': {
      if (!(value instanceof Tensor)) return `expected a ${space.dtype} tensor of shape [${space.nvec.shape.join(', ')}]${at}, got ${describe(value)}`;
      const shapeErr = checkTensorShape(value, space.dtype, space.nvec.shape, at);
      if (shapeErr) return shapeErr;
      for (let i = 0; i < value.size; i++) {
        const x = value.at(i);
        const s = space.start.at(i);
        if (x < s || x >= s + space.nvec.at(i)) return `element ${i} = ${x} is outside [${s}, ${s + space.nvec.at(i) - 1}]${at}`;
      }
      return null;
    }
    case 'multi_binary': {
      if (!(value instanceof Tensor)) return `expected an int8 tensor of 0s and 1s, shape [${space.n.join(', ')}]${at}, got ${describe(value)}`;
      if (!['int8', 'uint8', 'bool'].includes(value.dtype)) return `expected dtype int8${at}, got ${value.dtype}`;
      if (!sameShape(value.shape, space.n)) return `expected shape [${space.n.join(', ')}]${at}, got [${value.shape.join(', ')}]`;
      for (let i = 0; i < value.size; i++) if (value.at(i) !== 0 && value.at(i) !== 1) return `element ${i} = ${value.at(i)} is not 0 or 1${at}`;
      return null;
    }
    case 'text': {
      if (typeof value !== 'string') return `expected a string${at}, got ${describe(value)}`;
      const chars = [...value];
      if (chars.length < space.min_length || chars.length > space.max_length)
        return `text length ${chars.length} is outside [${space.min_length}, ${space.max_length}]${at}`;
      const bad = chars.find((c) => !space.charset.includes(c));
      if (bad !== undefined) return `character ${JSON.stringify(bad)} is not in the charset${at}`;
      return null;
    }
    case 'dict': {
      if (!isPlainObject(value)) return `expected a map with keys ${Object.keys(space.spaces).join(', ')}${at}, got ${describe(value)}`;
      const keys = Object.keys(space.spaces);
      for (const key of Object.keys(value)) if (!keys.includes(key)) return `unexpected key ${JSON.stringify(key)}${at}`;
      for (const key of keys) {
        if (!(key in value)) return `missing key ${JSON.stringify(key)}${at}`;
        const err = contains(space.spaces[key]!, value[key], `${path}.${key}`);
        if (err) return err;
      }
      return null;
    }
    case 'tuple': {
      if (!Array.isArray(value) || value.length !== space.spaces.length)
        return `expected an array of ${space.spaces.length} elements${at}, got ${describe(value)}`;
      for (let i = 0; i < value.length; i++) {
        const err = contains(space.spaces[i]!, value[i], `${path}[${i}]`);
        if (err) return err;
      }
      return null;
    }
    case 'sequence': {
      if (space.stack && value instanceof Tensor && space.space.type === 'box') {
        const inner = space.space;
        if (value.dtype !== inner.dtype || !sameShape(value.shape.slice(1), inner.shape))
          return `expected a stacked ${inner.dtype} tensor [N, ${inner.shape.join(', ')}]${at}`;
        return null;
      }
      if (!Array.isArray(value)) return `expected an array${at}, got ${describe(value)}`;
      for (let i = 0; i < value.length; i++) {
        const err = contains(space.space, value[i], `${path}[${i}]`);
        if (err) return err;
      }
      return null;
    }
    case 'graph': {
      if (!isPlainObject(value) || !(value.nodes instanceof Tensor)) return `expected a graph {nodes, edges, edge_links}${at}, got ${describe(value)}`;
      const nodeErr = checkStacked(space.node_space, value.nodes, `${path}.nodes`);
      if (nodeErr) return nodeErr;
      const numNodes = value.nodes.shape[0] ?? 0;
      if (space.edge_space === null) {
        if (value.edges != null) return `this graph has no edge space but edges were given${at}`;
        return null;
      }
      if (value.edges == null) return null;
      if (!(value.edges instanceof Tensor) || !(value.edge_links instanceof Tensor)) return `graph edges and edge_links must be tensors${at}`;
      const edgeErr = checkStacked(space.edge_space, value.edges, `${path}.edges`);
      if (edgeErr) return edgeErr;
      const numEdges = value.edges.shape[0] ?? 0;
      if (!sameShape(value.edge_links.shape, [numEdges, 2])) return `edge_links must have shape [${numEdges}, 2]${at}`;
      for (let i = 0; i < value.edge_links.size; i++) {
        const n = value.edge_links.at(i);
        if (!Number.isInteger(n) || n < 0 || n >= numNodes) return `edge_links refers to node ${n}, but there are ${numNodes}${at}`;
      }
      return null;
    }
    case 'oneof': {
      if (!Array.isArray(value) || value.length !== 2 || typeof value[0] !== 'number') return `expected [index, value]${at}, got ${describe(value)}`;
      const sub = space.spaces[value[0]];
      if (sub === undefined) return `one-of index ${value[0]} is outside [0, ${space.spaces.length - 1}]${at}`;
      return contains(sub, value[1], `${path}[1]`);
    }
  }
}

function checkStacked(space: BoxSpace | DiscreteSpace, t: Tensor, path: string): string | null {
  if (space.type === 'discrete') {
    if (!isIntegerDType(t.dtype) || t.shape.length !== 1) return `expected a 1-D integer tensor at ${path}`;
    for (let i = 0; i < t.size; i++) {
      const err = contains(space, t.at(i), `${path}[${i}]`);
      if (err) return err;
    }
    return null;
  }
  if (t.dtype !== space.dtype || !sameShape(t.shape.slice(1), space.shape))
    return `expected a ${space.dtype} tensor of shape [N, ${space.shape.join(', ')}] at ${path}`;
  return null;
}

function checkTensorShape(t: Tensor, dtype: DType, shape: readonly number[], at: string): string | null {
  if (t.dtype !== dtype) return `expected dtype ${dtype}${at}, got ${t.dtype}`;
  if (!sameShape(t.shape, shape)) return `expected shape [${shape.join(', ')}]${at}, got [${t.shape.join(', ')}]`;
  return null;
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Tensor) && !ArrayBuffer.isView(v);
}

function describe(v: unknown): string {
  if (v instanceof Tensor) return `a ${v.dtype} tensor of shape [${v.shape.join(', ')}]`;
  if (Array.isArray(v)) return `an array of ${v.length}`;
  if (v === null) return 'null';
  if (ArrayBuffer.isView(v)) return 'raw bytes';
  return typeof v === 'object' ? 'a map' : `${typeof v} ${String(v).slice(0, 40)}`;
}

/** Stacks equally shaped tensors along a new leading axis. */
export function stackTensors(items: readonly Tensor[], dtype: DType, shape: readonly number[]): Tensor {
  const out = Tensor.zeros(dtype, [items.length, ...shape]);
  const per = shapeSize(shape);
  const data = out.data as Float64Array;
  if (per > 16) {
    for (let i = 0; i < items.length; i++) data.set(items[i]!.data as Float64Array, i * per);
    return out;
  }
  // A few elements per item (CartPole's 4): a plain loop beats TypedArray#set's per-call cost.
  for (let i = 0, o = 0; i < items.length; i++) {
    const src = items[i]!.data as Float64Array;
    for (let k = 0; k < per; k++) data[o++] = src[k]!;
  }
  return out;
}

/** True when values of this space can be stacked into one tensor (Box, MultiDiscrete, MultiBinary, Discrete). */
export function isStackable(space: Space): boolean {
  return space.type === 'box' || space.type === 'multi_discrete' || space.type === 'multi_binary' || space.type === 'discrete';
}

/**
 * Roughly the bytes a value of this space takes on the wire: exact for tensors, a small allowance
 * for scalars and strings, nothing for Sequence and Graph (their size is the env's choice). A
 * server sizes the memory for a session's first large answer from it.
 */
export function spaceBytes(space: Space): number {
  switch (space.type) {
    case 'box':
      return shapeSize(space.shape) * itemSize(space.dtype) + 16;
    case 'multi_binary':
      return shapeSize(space.n) + 16;
    case 'multi_discrete':
      return space.nvec.size * itemSize(space.dtype) + 16;
    case 'discrete':
      return 9;
    case 'text':
      return space.max_length * 4 + 5;
    case 'dict':
      return Object.entries(space.spaces).reduce((sum, [key, sub]) => sum + key.length + 2 + spaceBytes(sub), 5);
    case 'tuple':
      return space.spaces.reduce((sum, sub) => sum + spaceBytes(sub), 5);
    case 'oneof':
      return Math.max(0, ...space.spaces.map(spaceBytes)) + 10;
    case 'sequence':
    case 'graph':
      return 0;
  }
}

/** A short human description, e.g. `Box(-inf, inf, (4,), float32)`. */
/** Bounds at most this many elements long are written out when they differ per element. */
const MAX_BOUND_ELEMENTS = 32;

/**
 * A Box bound as Gymnasium's repr shows it: one number when every element is the same, the
 * elements when they differ (`[0, -1, 0]`), and for long bounds their range.
 */
function boundToString(bound: Tensor): string {
  const say = (v: number) => (v === Infinity ? 'inf' : v === -Infinity ? '-inf' : String(Number(v.toPrecision(7))));
  if (bound.size === 0) return '';
  const values = bound.toNumbers();
  const first = values[0]!;
  if (values.every((v) => v === first || (Number.isNaN(v) && Number.isNaN(first)))) return say(first);
  if (values.length <= MAX_BOUND_ELEMENTS) return `[${values.map(say).join(', ')}]`;
  return `[${say(Math.min(...values))} .. ${say(Math.max(...values))}]`;
}

export function spaceToString(space: Space): string {
  switch (space.type) {
    case 'box':
      return `Box(${boundToString(space.low)}, ${boundToString(space.high)}, (${space.shape.join(', ')}${space.shape.length === 1 ? ',' : ''}), ${space.dtype})`;
    case 'discrete':
      return space.start ? `Discrete(${space.n}, start=${space.start})` : `Discrete(${space.n})`;
    case 'multi_discrete':
      return `MultiDiscrete([${space.nvec.toNumbers().join(' ')}])`;
    case 'multi_binary':
      return `MultiBinary(${space.n.length === 1 ? space.n[0] : `[${space.n.join(', ')}]`})`;
    case 'text':
      return `Text(${space.min_length}, ${space.max_length})`;
    case 'dict':
      return `Dict(${Object.entries(space.spaces)
        .map(([k, s]) => `'${k}': ${spaceToString(s)}`)
        .join(', ')})`;
    case 'tuple':
      return `Tuple(${space.spaces.map(spaceToString).join(', ')})`;
    case 'sequence':
      return `Sequence(${spaceToString(space.space)}, stack=${space.stack ? 'True' : 'False'})`;
    case 'graph':
      return `Graph(${spaceToString(space.node_space)}, ${space.edge_space ? spaceToString(space.edge_space) : 'None'})`;
    case 'oneof':
      return `OneOf(${space.spaces.map(spaceToString).join(', ')})`;
  }
}
