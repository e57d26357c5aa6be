/**
 * Bounded reads of msgpack bytes that allocate nothing: the guard in front of the decoder, and the
 * request id of a frame the server refuses without decoding.
 *
 * msgpack is compact where JavaScript is not: an empty map is one byte on the wire and a heap
 * object of dozens of bytes once decoded, so a 64 MiB frame of empty maps would cost gigabytes.
 * {@link checkFrame} walks the bytes first and refuses a frame whose nesting is too deep or whose
 * decoded values would cost more than a budget proportional to the frame's size.
 *
 * @example
 * checkFrame(bytes, { maxDepth: 512, maxDecodedBytes: decodedBudget(bytes.byteLength) });
 * frameRequestId(bytes); // 7 for {id: 7, type: 'step', ...}, null when it has no readable id
 */

export interface FrameBounds {
  /** Containers (maps, arrays) nested deeper than this are refused. */
  maxDepth: number;
  /** Estimated heap bytes of the decoded value beyond which the frame is refused. */
  maxDecodedBytes: number;
}

/**
 * Nesting the protocol's messages never come near; deep enough for any observation or ping payload.
 * The one depth limit for every input the server takes: frames, and JSON (/mcp bodies, the make
 * kwargs and reset options in them) through {@link nestsDeeperThan}.
 */
export const MAX_FRAME_DEPTH = 512;

/**
 * Whether `value` (parsed JSON, decoded msgpack) nests arrays and objects deeper than `maxDepth`
 * levels. Walks without recursion, so a value too deep for a recursive reader (a schema check,
 * an encoder) is measured without overflowing the stack.
 */
export function nestsDeeperThan(value: unknown, maxDepth = MAX_FRAME_DEPTH): boolean {
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: v, depth } = stack.pop()!;
    if (typeof v !== 'object' || v === null || ArrayBuffer.isView(v)) continue;
    if (depth + 1 > maxDepth) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push({ value: child, depth: depth + 1 });
  }
  return false;
}

/**
 * The decoded size a frame may reach: 16 bytes of heap per wire byte plus 1 MiB. Plain numbers
 * and tensors cost about their wire size (tensors decode to views); small maps and arrays cost far
 * more per byte, and a frame made of nothing else is what the budget refuses.
 */
export function decodedBudget(frameBytes: number): number {
  return 16 * frameBytes + 1024 * 1024;
}

/** Rough V8 heap costs of decoded values (objects, arrays, strings, typed-array views). */
const COST = { map: 56, mapEntry: 32, array: 32, arrayItem: 8, string: 24, bytes: 96, heapNumber: 16 } as const;

export type FrameScanProblem = 'malformed' | 'too_deep' | 'too_costly';

/** Why {@link checkFrame} refused a frame; `problem` picks the wire error. */
export class FrameScanError extends Error {
  override readonly name = 'FrameScanError';
  constructor(
    readonly problem: FrameScanProblem,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The header of the msgpack item at `pos`: where its body starts, how many child items follow it
 * (map entries count two) and, for strings, binaries and extensions, how many raw bytes its body
 * holds. Returns false when the header runs past `end` or the byte is never used (0xc1).
 */
interface Item {
  /** Offset after the header (and after the body for scalars and raw bodies). */
  next: number;
  /** Child items that follow (0 for scalars). */
  children: number;
  kind: 'scalar' | 'float' | 'map' | 'array' | 'string' | 'bytes';
  /** Body length of raw items, entries of containers. */
  length: number;
}

function setRaw(out: Item, next: number, length: number, kind: Item['kind'], end: number): boolean {
  out.next = next + length;
  out.children = 0;
  out.kind = kind;
  out.length = length;
  return out.next <= end;
}

function setContainer(out: Item, next: number, entries: number, kind: 'map' | 'array', end: number): boolean {
  out.next = next;
  out.children = kind === 'map' ? entries * 2 : entries;
  out.kind = kind;
  out.length = entries;
  // Every child takes at least one byte: a count beyond the bytes left is a lie, refused at once.
  return next <= end && out.children <= end - next;
}

/** Big-endian unsigned integer of `n` bytes at `pos` (n <= 4), or -1 past `end`. */
function uint(b: Uint8Array, pos: number, n: number, end: number): number {
  if (pos + n > end) return -1;
  let v = 0;
  for (let i = 0; i < n; i++) v = v * 256 + b[pos + i]!;
  return v;
}

// Written as one flat switch without closures: it runs once per item of every frame.
function readItem(b: Uint8Array, pos: number, end: number, out: Item): boolean {
  if (pos >= end) return false;
  const t = b[pos]!;
  const p = pos + 1;
  if (t <= 0x7f || t >= 0xe0 || t === 0xc0 || t === 0xc2 || t === 0xc3) return setRaw(out, p, 0, 'scalar', end);
  if (t <= 0x8f) return setContainer(out, p, t & 0x0f, 'map', end);
  if (t <= 0x9f) return setContainer(out, p, t & 0x0f, 'array', end);
  if (t <= 0xbf) return setRaw(out, p, t & 0x1f, 'string', end);
  let n: number;
  switch (t) {
    case 0xc4:
    case 0xc5:
    case 0xc6:
      n = uint(b, p, 1 << (t - 0xc4), end);
      return n >= 0 && setRaw(out, p + (1 << (t - 0xc4)), n, 'bytes', end);
    // ext 8/16/32: the length, the type byte, then the body.
    case 0xc7:
    case 0xc8:
    case 0xc9:
      n = uint(b, p, 1 << (t - 0xc7), end);
      return n >= 0 && setRaw(out, p + (1 << (t - 0xc7)) + 1, n, 'bytes', end);
    case 0xca:
      return setRaw(out, p, 4, 'float', end);
    case 0xcb:
      return setRaw(out, p, 8, 'float', end);
    case 0xcc:
    case 0xd0:
      return setRaw(out, p, 1, 'scalar', end);
    case 0xcd:
    case 0xd1:
      return setRaw(out, p, 2, 'scalar', end);
    case 0xce:
    case 0xd2:
      return setRaw(out, p, 4, 'float', end);
    case 0xcf:
    case 0xd3:
      return setRaw(out, p, 8, 'float', end);
    // fixext 1/2/4/8/16: the type byte, then the body.
    case 0xd4:
    case 0xd5:
    case 0xd6:
    case 0xd7:
    case 0xd8:
      return setRaw(out, p + 1, 1 << (t - 0xd4), 'bytes', end);
    case 0xd9:
    case 0xda:
    case 0xdb:
      n = uint(b, p, 1 << (t - 0xd9), end);
      return n >= 0 && setRaw(out, p + (1 << (t - 0xd9)), n, 'string', end);
    case 0xdc:
    case 0xdd:
      n = uint(b, p, 2 << (t - 0xdc), end);
      return n >= 0 && setContainer(out, p + (2 << (t - 0xdc)), n, 'array', end);
    case 0xde:
    case 0xdf:
      n = uint(b, p, 2 << (t - 0xde), end);
      return n >= 0 && setContainer(out, p + (2 << (t - 0xde)), n, 'map', end);
    default:
      return false; // 0xc1: never used
  }
}

function itemCost(item: Item): number {
  switch (item.kind) {
    case 'map':
      return COST.map + COST.mapEntry * item.length;
    case 'array':
      return COST.array + COST.arrayItem * item.length;
    case 'string':
      return COST.string + item.length;
    // Tensors decode to views, but copy when their data is misaligned: count the bytes too.
    case 'bytes':
      return COST.bytes + item.length;
    case 'float':
      return COST.heapNumber;
    default:
      return 0;
  }
}

/**
 * Checks that `bytes` hold exactly one msgpack value within `bounds`, without decoding it or
 * allocating per item. Throws {@link FrameScanError}; returns normally when the decoder may run.
 */
export function checkFrame(bytes: Uint8Array, bounds: FrameBounds): void {
  const end = bytes.byteLength;
  // remaining[d]: items still to read in the container open at depth d (depth 0: the one top value).
  const remaining = new Float64Array(bounds.maxDepth + 2);
  remaining[0] = 1;
  let depth = 0;
  let pos = 0;
  let cost = 0;
  const item: Item = { next: 0, children: 0, kind: 'scalar', length: 0 };
  while (depth >= 0) {
    if (remaining[depth] === 0) {
      depth--;
      continue;
    }
    if (!readItem(bytes, pos, end, item)) {
      throw new FrameScanError(
        'malformed',
        pos >= end
          ? `the frame ends inside a value (at byte ${pos})`
          : `byte 0x${bytes[pos]!.toString(16)} at ${pos} starts no msgpack value, or its length runs past the frame`,
      );
    }
    remaining[depth]!--;
    pos = item.next;
    cost += itemCost(item);
    if (cost > bounds.maxDecodedBytes) {
      throw new FrameScanError(
        'too_costly',
        `the frame would decode to more than ${bounds.maxDecodedBytes} bytes of values (${end} bytes on the wire: too many small maps, arrays or strings)`,
      );
    }
    if (item.children > 0) {
      if (depth + 1 > bounds.maxDepth) throw new FrameScanError('too_deep', `the frame nests maps and arrays deeper than ${bounds.maxDepth} levels`);
      remaining[++depth] = item.children;
    }
  }
  if (pos !== end) throw new FrameScanError('malformed', `the frame holds ${end - pos} bytes after its msgpack value`);
}

/** Items {@link frameRequestId} reads at most: the id comes first in every client we know of. */
const ID_SCAN_ITEMS = 4096;

/**
 * The request id of a frame that is a map with a non-negative integer `id`, read by a bounded
 * scan of the top-level map (no decoding, no allocation); null when it has none or the scan
 * gives up (malformed bytes, an id past the first few thousand items).
 */
export function frameRequestId(bytes: Uint8Array): number | null {
  const pos = topLevelValue(bytes, ID_KEY);
  return pos === null ? null : readId(bytes, pos, bytes.byteLength);
}

const ID_KEY = [0x69, 0x64]; // 'id'

/** Where the value of the top-level map's string key `key` (its bytes) starts, by a bounded scan; null when absent or the scan gives up. */
function topLevelValue(bytes: Uint8Array, key: readonly number[]): number | null {
  const end = bytes.byteLength;
  const item: Item = { next: 0, children: 0, kind: 'scalar', length: 0 };
  if (!readItem(bytes, 0, end, item) || item.kind !== 'map') return null;
  let entries = item.length;
  let pos = item.next;
  let budget = ID_SCAN_ITEMS;
  while (entries-- > 0) {
    if (!readItem(bytes, pos, end, item)) return null;
    const isKey = (item.kind as Item['kind']) === 'string' && item.length === key.length && key.every((c, i) => bytes[item.next - key.length + i] === c);
    pos = item.next;
    if (isKey) return pos;
    // Skip the key's children (a key that is a container) and the value, item by item.
    let pending = item.children + 1;
    while (pending > 0) {
      if (--budget < 0 || !readItem(bytes, pos, end, item)) return null;
      pending += item.children - 1;
      pos = item.next;
    }
  }
  return null;
}

const isFloatByte = (t: number | undefined) => t === 0xca || t === 0xcb;

/**
 * Which numbers in the top-level value under `key` were sent as msgpack floats (decoded, 1.0 and
 * 1 are the same JavaScript number): for a scalar, whether it is one; for an array, one flag per
 * element; null when the key is absent, holds something else, or the scan gives up. Gymnasium's
 * Discrete refuses floats, so the server needs to know.
 */
export function floatsUnder(bytes: Uint8Array, key: string): boolean | boolean[] | null {
  const pos = topLevelValue(
    bytes,
    [...key].map((c) => c.charCodeAt(0)),
  );
  if (pos === null) return null;
  const end = bytes.byteLength;
  const item: Item = { next: 0, children: 0, kind: 'scalar', length: 0 };
  if (!readItem(bytes, pos, end, item)) return null;
  if (item.kind !== 'array') return isFloatByte(bytes[pos]);
  const flags: boolean[] = [];
  const count = item.length;
  let at = item.next;
  for (let i = 0; i < count; i++) {
    if (!readItem(bytes, at, end, item)) return null;
    // Elements that are containers (tensors are extensions, not containers) are not numbers: skip their children.
    if (item.children > 0) return null;
    flags.push(isFloatByte(bytes[at]));
    at = item.next;
  }
  return flags;
}

function readId(b: Uint8Array, pos: number, end: number): number | null {
  if (pos >= end) return null;
  const t = b[pos]!;
  const need = (n: number) => pos + 1 + n <= end;
  const view = () => new DataView(b.buffer, b.byteOffset + pos + 1);
  let v: number;
  if (t <= 0x7f) v = t;
  else if ((t === 0xcc || t === 0xd0) && need(1)) v = t === 0xcc ? b[pos + 1]! : view().getInt8(0);
  else if ((t === 0xcd || t === 0xd1) && need(2)) v = t === 0xcd ? view().getUint16(0) : view().getInt16(0);
  else if ((t === 0xce || t === 0xd2) && need(4)) v = t === 0xce ? view().getUint32(0) : view().getInt32(0);
  else if ((t === 0xcf || t === 0xd3) && need(8)) v = Number(t === 0xcf ? view().getBigUint64(0) : view().getBigInt64(0));
  else if (t === 0xca && need(4)) v = view().getFloat32(0);
  else if (t === 0xcb && need(8)) v = view().getFloat64(0);
  else return null;
  return Number.isSafeInteger(v) && v >= 0 ? v : null;
}
