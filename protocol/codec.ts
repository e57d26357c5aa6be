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
import { decodeTensorPayload, Tensor, TENSOR_EXT_TYPE, tensorPayloadSize, writeTensorPayload } from './tensor.ts';

type AllocateForWrite = (size: number) => { target: Uint8Array; position: number };

/**
 * Writes a tensor as ext type 1 straight into msgpackr's output buffer: one copy of the data
 * (large observations are most of a frame's bytes, so an intermediate payload buffer doubles the cost).
 */
function packTensor(t: Tensor, allocateForWrite: AllocateForWrite): undefined {
  const length = tensorPayloadSize(t);
  const extHeader = length < 0x100 ? 3 : length < 0x10000 ? 4 : 6;
  const { target, position } = allocateForWrite(extHeader + length);
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
  writeTensorPayload(t, target, p);
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
