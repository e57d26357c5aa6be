/**
 * Golden frames: wire messages with the awkward values (every dtype, empty and 0-d tensors, 64-bit
 * integers, bin bytes, nested infos, whole-number floats) encoded by this codec and written with a
 * language-neutral JSON description, so every SDK's tests can decode the same bytes and agree.
 * `npm run gen:frames` (scripts/fixtures/golden-frames.ts) writes test/fixtures/frames/; a test fails when they are stale.
 *
 * JSON forms: a tensor is `{"$tensor": {dtype, shape, hex}}` (its raw little-endian bytes), bin is
 * `{"$bin": hex}`, an integer beyond 2^53 is `{"$int": "decimal"}`.
 */
import { encode } from '../../protocol/codec.ts';
import { DTYPES, Tensor } from '../../protocol/tensor.ts';
import type { DType } from '../../protocol/tensor.ts';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/** The JSON form of a decoded wire value. */
export function toJsonForm(value: unknown): unknown {
  if (value instanceof Tensor) return { $tensor: { dtype: value.dtype, shape: [...value.shape], hex: hex(value.bytes()) } };
  if (value instanceof Uint8Array) return { $bin: hex(value) };
  if (typeof value === 'bigint') return { $int: value.toString() };
  if (Array.isArray(value)) return value.map(toJsonForm);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toJsonForm(v)]));
  return value;
}

const sample = (dtype: DType): Tensor => {
  const values: Record<DType, (number | bigint)[]> = {
    bool: [1, 0, 1],
    int8: [-128, 0, 127],
    int16: [-32768, 1, 32767],
    int32: [-2147483648, 2, 2147483647],
    int64: [-(2n ** 63n), 3n, 2n ** 63n - 1n],
    uint8: [0, 128, 255],
    uint16: [0, 4, 65535],
    uint32: [0, 5, 4294967295],
    uint64: [0n, 6n, 2n ** 64n - 1n],
    float16: [-0, 0.5, 65504],
    float32: [-Infinity, 1.5, Number.NaN],
    float64: [Number.MIN_VALUE, -2.25, Infinity],
  };
  return Tensor.from(dtype, [3], values[dtype] as never);
};

/** name -> the message it encodes. */
export function goldenMessages(): Record<string, unknown> {
  return {
    'request.hello': { id: 0, type: 'hello', protocol_version: 1, client_name: 'golden', token: 'sécret' },
    'request.step.discrete': { id: 7, type: 'step', session_id: 's_abc', action: 1, ack: 6 },
    'request.step.box': { id: 8, type: 'step', session_id: 's_abc', action: Tensor.from('float32', [2], [0.25, -1]) },
    'request.set_state': { id: 9, type: 'set_state', session_id: 's_abc', state: new Uint8Array([0, 1, 2, 255]) },
    'request.reset.big_seed_rejected': { id: 10, type: 'reset', session_id: 's_abc', seed: 2n ** 60n },
    'result.step': {
      id: 11,
      type: 'result',
      result: {
        obs: Tensor.from('float32', [4], [0.1, -0.2, 0.3, -0.4]),
        reward: 1,
        terminated: false,
        truncated: true,
        info: { nested: { list: [1, 'two', null], ok: true }, pdms: 0.875 },
      },
    },
    'result.step_batch': {
      id: 12,
      type: 'result',
      result: {
        obs: Tensor.from(
          'uint8',
          [2, 2, 2, 3],
          Array.from({ length: 24 }, (_, i) => i * 10),
        ),
        rewards: Tensor.from('float64', [2], [1, -0.5]),
        terminated: Tensor.from('bool', [2], [0, 1]),
        truncated: Tensor.from('bool', [2], [0, 0]),
        infos: [{}, { final_obs: Tensor.zeros('uint8', [2, 2, 3]) }],
        errors: [null, null],
      },
    },
    'result.tensors.every_dtype': { id: 13, type: 'result', result: Object.fromEntries(DTYPES.map((d) => [d, sample(d)])) },
    'result.tensors.edge_shapes': {
      id: 14,
      type: 'result',
      result: { scalar: Tensor.from('float64', [], [3.5]), empty: Tensor.zeros('int32', [0, 3]), big_int: 2n ** 62n, negative_big_int: -(2n ** 62n) },
    },
    'response.error': {
      id: 15,
      type: 'error',
      error: { code: 'ENV_ERR_INVALID_ACTION', message: 'action 3 is above high 1', details: { session_id: 's_abc' } },
    },
    'event.shutdown': { type: 'event', event: 'shutdown', reason: 'the server is shutting down' },
  };
}

/** name -> [frame bytes, JSON form of what decoding it gives]. */
export function goldenFrames(): Record<string, { frame: Uint8Array; value: unknown }> {
  return Object.fromEntries(Object.entries(goldenMessages()).map(([name, message]) => [name, { frame: encode(message), value: toJsonForm(message) }]));
}
