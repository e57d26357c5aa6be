/**
 * The msgpack codec: the only place bytes become messages and back.
 *
 * Tensors travel as msgpack extension type 1 (see `tensor.ts`); everything else is plain msgpack.
 * Maps decode to plain objects, binary to Uint8Array, 64-bit integers beyond 2^53 to bigint.
 *
 * @example
 * const bytes = encode({ id: 1, type: 'ping' });
 * decode(bytes); // { id: 1, type: 'ping' }
 */
import { addExtension, Packr } from 'msgpackr';

import { checkFrame, decodedBudget, MAX_FRAME_DEPTH } from './frame-scan.ts';
import { decodeTensorPayload, Tensor, TENSOR_EXT_TYPE, tensorPayloadSize, writeTensorHeader, writeTensorPayload } from './tensor.ts';

type AllocateForWrite = (size: number) => { target: Uint8Array; position: number };

/**
 * A frame whose largest tensors' bytes were not copied into it: `parts`, concatenated, are exactly
 * the bytes {@link encode} returns for the same value. The frame's own bytes (the envelope, small
 * values, tensor headers) lie between the tensors' data, which the parts reference where the env
 * left them. A transport writes the parts one after another as fragments of one WebSocket message,
 * so a 200 MB camera answer is never copied on the event loop.
 */
export class SplitFrame {
  /** Bytes on the wire, every part together. */
  readonly byteLength: number;
  /** Bytes of the frame's own (copied) parts: what encoding it cost. */
  readonly inlineBytes: number;

  constructor(
    readonly parts: readonly Uint8Array[],
    inlineBytes: number,
  ) {
    this.byteLength = parts.reduce((n, p) => n + p.byteLength, 0);
    this.inlineBytes = inlineBytes;
  }

  /** The frame as one buffer (one copy): for transports that cannot write parts. */
  join(): Uint8Array {
    return Buffer.concat(this.parts as Uint8Array[], this.byteLength);
  }
}

/** A frame as the server sends it: one buffer, or parts that reference large tensors in place. */
export type EncodedFrame = Uint8Array | SplitFrame;

/** Tensors at least this large are left out of a frame by {@link encodeSplit} (referenced, not copied). */
export const SPLIT_TENSOR_MIN_BYTES = 1024 * 1024;

/**
 * While encodeSplit packs (msgpackr's extension hook takes no context, so this lives here): the
 * size from which a tensor is left out, else Infinity; and where each tensor left out goes. One
 * array for every frame, emptied before each: a step's answer allocates nothing for it.
 */
let holesMinBytes = Infinity;
const holes: Hole[] = [];

/**
 * Writes a tensor as ext type 1 straight into msgpackr's output buffer: one copy of the data
 * (large observations are most of a frame's bytes, so an intermediate payload buffer doubles the cost).
 * While a frame is being split, a large tensor's data is not written: only where it goes is noted.
 */
function packTensor(t: Tensor, allocateForWrite: AllocateForWrite): undefined {
  const length = tensorPayloadSize(t);
  const extHeader = length < 0x100 ? 3 : length < 0x10000 ? 4 : 6;
  const leftOut = t.byteLength >= holesMinBytes;
  const { target, position } = allocateForWrite(extHeader + (leftOut ? length - t.byteLength : length));
  let p = position;
  if (length < 0x100) {
    target[p++] = 0xc7;
    target[p++] = length;
  } else if (length < 0x10000) {
    target[p++] = 0xc8;
    target[p++] = length >> 8;
    target[p++] = length & 0xff;
  } else {
    target[p++] = 0xc9;
    target[p++] = (length >>> 24) & 0xff;
    target[p++] = (length >>> 16) & 0xff;
    target[p++] = (length >>> 8) & 0xff;
    target[p++] = length & 0xff;
  }
  target[p++] = TENSOR_EXT_TYPE;
  if (leftOut) holes.push({ at: writeTensorHeader(t, target, p), target, bytes: t.bytes() });
  else writeTensorPayload(t, target, p);
  return undefined;
}

addExtension({
  Class: Tensor,
  type: TENSOR_EXT_TYPE,
  pack: packTensor as never,
  unpack: (payload: Uint8Array) => decodeTensorPayload(payload),
});

// useRecords: false keeps the output plain msgpack that any language's library reads.
// int64AsType 'auto' (supported at runtime, missing from the typings) gives numbers when safe and bigints beyond 2^53.
const packr = new Packr({ useRecords: false, mapsAsObjects: true, int64AsType: 'auto' as 'bigint', variableMapSize: true });
/**
 * msgpackr writes messages one after another into a buffer and starts a new one of the same size
 * when it fills up. Its default 8 KiB means a new buffer every few dozen small messages, a few
 * percent of a small round trip; 64 KiB makes that rare.
 */
const SCRATCH_BYTES = 64 * 1024;
packr.useBuffer(Buffer.allocUnsafeSlow(SCRATCH_BYTES));
/** The latest frame `encode` returned: where msgpackr's buffer and position are. */
let lastFrame: Uint8Array | null = null;

export function encode(value: unknown): Uint8Array {
  const frame = packr.pack(value);
  lastFrame = frame;
  return frame;
}

/** Decodes one msgpack value; throws on malformed input (the caller maps that to ENV_ERR_BAD_FRAME or ENV_ERR_BAD_TENSOR). */
export function decode(bytes: Uint8Array): unknown {
  return packr.unpack(bytes);
}

/**
 * Decodes a frame from a peer the server does not trust: the bytes are walked first
 * (protocol/frame-scan.ts) and refused with a FrameScanError when they nest deeper than
 * MAX_FRAME_DEPTH or would decode to more than decodedBudget(frame size), so no frame costs
 * more memory than a fixed multiple of its size.
 */
export function decodeUntrusted(bytes: Uint8Array): unknown {
  checkFrame(bytes, { maxDepth: MAX_FRAME_DEPTH, maxDecodedBytes: decodedBudget(bytes.byteLength) });
  return packr.unpack(bytes);
}

/**
 * Encodes into `buffer` from its start when the message fits, and returns the frame: a view of
 * `buffer` if it fit, otherwise a fresh allocation (compare `frame.buffer`). Lets a server reuse
 * memory for large answers instead of having msgpackr allocate new buffers for each.
 */
export function encodeInto(value: unknown, buffer: Buffer): Uint8Array {
  const resume = lastFrame;
  packr.useBuffer(buffer);
  try {
    return packr.pack(value);
  } finally {
    // Give msgpackr its own buffer back, positioned after the last frame it wrote there, so nothing
    // else ever lands in (or aliases) the caller's buffer and no earlier frame is overwritten.
    if (resume) {
      packr.useBuffer(Buffer.from(resume.buffer));
      (packr as unknown as { position: number }).position = resume.byteOffset + resume.byteLength;
    } else {
      packr.useBuffer(Buffer.allocUnsafeSlow(SCRATCH_BYTES));
    }
  }
}

interface Hole {
  /** Where the tensor's data goes, in `target`. */
  at: number;
  target: Uint8Array;
  bytes: Uint8Array;
}

/**
 * Encodes `value` (into `buffer` as {@link encodeInto} does, or msgpackr's own buffer when null)
 * leaving out large tensors' data, and makes the frame's parts: the frame alone when nothing was
 * left out.
 */
function split(value: unknown, buffer: Buffer | null, minTensorBytes: number): EncodedFrame {
  let frame: Uint8Array;
  holes.length = 0;
  holesMinBytes = minTensorBytes;
  try {
    frame = buffer === null ? encode(value) : encodeInto(value, buffer);
  } catch (err) {
    holes.length = 0; // the tensors noted before the failure are not held until the next frame
    throw err;
  } finally {
    holesMinBytes = Infinity;
  }
  if (holes.length === 0) return frame;
  // msgpackr outgrew its buffer after a tensor was noted and moved the bytes: pack again into
  // msgpackr's own buffer, which has grown to hold the frame.
  if (holes.some((h) => h.target.buffer !== frame.buffer)) return split(value, null, minTensorBytes);
  // The frame's own bytes leave the packing buffer (reused by the next message): a small copy.
  const own = Buffer.from(frame);
  const parts: Uint8Array[] = [];
  let from = 0;
  for (const { at, target, bytes } of holes) {
    const offset = at - (frame.byteOffset - target.byteOffset);
    parts.push(own.subarray(from, offset), bytes);
    from = offset;
  }
  parts.push(own.subarray(from));
  // The tensors stay referenced by the parts only, not by this module.
  holes.length = 0;
  return new SplitFrame(parts, own.byteLength);
}

/**
 * Encodes `value` as {@link encode} does, leaving out the data of every tensor of at least
 * `minTensorBytes`: a {@link SplitFrame} when some were left out, else the frame. The tensors'
 * memory is referenced, so it must not be written while the frame is in use (see envs/core/env.ts).
 */
export function encodeSplit(value: unknown, minTensorBytes = SPLIT_TENSOR_MIN_BYTES): EncodedFrame {
  return split(value, null, minTensorBytes);
}

/** {@link encodeInto} leaving out large tensors' data as {@link encodeSplit} does. */
export function encodeIntoSplit(value: unknown, buffer: Buffer, minTensorBytes = SPLIT_TENSOR_MIN_BYTES): EncodedFrame {
  return split(value, buffer, minTensorBytes);
}
