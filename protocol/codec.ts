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

import { decodeTensorPayload, encodeTensorPayload, Tensor, TENSOR_EXT_TYPE } from './tensor.ts';

addExtension({
  Class: Tensor,
  type: TENSOR_EXT_TYPE,
  pack: (t: Tensor) => encodeTensorPayload(t),
  unpack: (payload: Uint8Array) => decodeTensorPayload(payload),
});

// useRecords: false keeps the output plain msgpack that any language's library reads.
// int64AsType 'auto' (supported at runtime, missing from the typings) gives numbers when safe and bigints beyond 2^53.
const packr = new Packr({ useRecords: false, mapsAsObjects: true, int64AsType: 'auto' as 'bigint', variableMapSize: true });

export function encode(value: unknown): Uint8Array {
  return packr.pack(value);
}

/** Decodes one msgpack value; throws on malformed input (the caller maps that to ENV_ERR_BAD_FRAME or ENV_ERR_BAD_TENSOR). */
export function decode(bytes: Uint8Array): unknown {
  return packr.unpack(bytes);
}
