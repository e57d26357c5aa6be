/**
 * Seeded malformed frames for fuzzing a gymwire server: random bytes, random msgpack values,
 * requests of every type with fields of the wrong kind, well-formed requests on the fuzzer's own
 * sessions with one field replaced, and bit-flipped or truncated requests. Used by the conformance
 * suite (`gymwire check`) and test/server/fuzz.test.ts.
 */
import { encode } from '../protocol/codec.ts';
import { REQUEST_TYPES } from '../protocol/messages.ts';
import type { Random } from '../runtime/random.ts';
import { Tensor } from '../protocol/tensor.ts';

const FIELDS = [
  'id',
  'type',
  'session_id',
  'session_ids',
  'action',
  'actions',
  'seed',
  'seeds',
  'options',
  'env_id',
  'kwargs',
  'autoreset_mode',
  'tool',
  'arguments',
  'state',
  'ack',
  'token',
  'protocol_version',
  'payload',
  'mode',
];
const ENV_IDS = ['gymwire/CartPole-v1', 'gymwire/Conformance-v0', 'nope/Nothing-v0'];

/** A random wire value, nested up to `depth` levels; `own` is a session id the fuzzer may hit. */
function value(rng: Random, own: string, depth = 2): unknown {
  const pick = rng.integer(0, depth > 0 ? 16 : 12);
  switch (pick) {
    case 0:
      return null;
    case 1:
      return rng.random() < 0.5;
    case 2:
      return rng.integer(-5, 10);
    case 3:
      return [2 ** 53 + 2, -(2 ** 31) - 1, 2 ** 32, Number.MAX_SAFE_INTEGER][rng.integer(0, 4)];
    case 4:
      return [Number.NaN, Number.POSITIVE_INFINITY, -0, 1e308, 0.5][rng.integer(0, 5)];
    case 5:
      return String.fromCharCode(...Array.from({ length: rng.integer(0, 12) }, () => rng.integer(32, 0x2fff)));
    case 6:
      return 'x'.repeat(rng.integer(1000, 20_000));
    case 7:
      return own;
    case 8:
      return ENV_IDS[rng.integer(0, ENV_IDS.length)];
    case 9:
      return Uint8Array.from({ length: rng.integer(0, 40) }, () => rng.integer(0, 256));
    case 10:
      return Tensor.zeros(
        (['float32', 'float64', 'int64', 'uint8', 'bool'] as const)[rng.integer(0, 5)]!,
        Array.from({ length: rng.integer(0, 3) }, () => rng.integer(0, 4)),
      );
    case 11:
      return REQUEST_TYPES[rng.integer(0, REQUEST_TYPES.length)];
    case 12:
      return 'next_step';
    case 13:
    case 14:
      return Array.from({ length: rng.integer(0, 5) }, () => value(rng, own, depth - 1));
    default:
      return Object.fromEntries(Array.from({ length: rng.integer(0, 5) }, () => [FIELDS[rng.integer(0, FIELDS.length)]!, value(rng, own, depth - 1)]));
  }
}

/** Well-formed requests on our own sessions, for mutating one field at a time (close left out: it would end the run's sessions). */
function templates(own: string[], action: unknown): Record<string, unknown>[] {
  const [a, b] = own as [string, string];
  return [
    { type: 'reset', session_id: a, seed: 1 },
    { type: 'step', session_id: a, action },
    { type: 'reset_batch', session_ids: [a, b], seeds: [1, 2], options: null },
    { type: 'step_batch', session_ids: [a, b], actions: [action, action], autoreset_mode: 'same_step' },
    { type: 'render', session_id: a, format: 'tensor' },
    { type: 'list_tools', session_id: a },
    { type: 'execute', session_id: a, tool: 'echo', args: {} },
    { type: 'get_state', session_id: a },
    { type: 'set_state', session_id: a, state: new Uint8Array(8) },
    { type: 'make', env_id: 'gymwire/CartPole-v1', kwargs: {} },
    { type: 'ping', payload: 1 },
    { type: 'list_envs' },
  ];
}

/**
 * One malformed (or merely odd) frame with request id `id`. `own` are two session ids of the
 * fuzzer's (made and reset), `action` a valid action for them.
 */
export function fuzzFrame(rng: Random, own: string[], id: number, action: unknown = 0): Uint8Array {
  const kind = rng.integer(0, 10);
  if (kind === 0) return Uint8Array.from({ length: rng.integer(0, 64) }, () => rng.integer(0, 256));
  if (kind === 1) return encode(value(rng, own[0]!));
  let request: Record<string, unknown>;
  if (kind < 4) {
    // A request of a real type with random fields: the validators' paths.
    request = { id, type: REQUEST_TYPES[rng.integer(0, REQUEST_TYPES.length)] };
    for (let k = rng.integer(0, 5); k > 0; k--) request[FIELDS[rng.integer(2, FIELDS.length)]!] = value(rng, own[0]!);
    if (rng.random() < 0.4) request['session_id'] = own[0];
  } else {
    // A well-formed request with one field (or an action) replaced: the handlers' paths.
    const all = templates(own, action);
    request = { id, ...all[rng.integer(0, all.length)]! };
    const keys = Object.keys(request).filter((k) => k !== 'id');
    const key = keys[rng.integer(0, keys.length)]!;
    if (key !== 'type' || rng.random() < 0.2) request[key] = value(rng, own[0]!);
    if ('action' in request && rng.random() < 0.7) request['action'] = value(rng, own[0]!);
    if ('actions' in request && rng.random() < 0.7) request['actions'] = [value(rng, own[0]!), value(rng, own[0]!)];
  }
  const bytes = encode(request);
  if (kind < 8) return bytes;
  // Bit flips and truncation of an encoded request: the decoder's paths.
  const flipped = bytes.slice(0, kind === 8 ? bytes.length : rng.integer(1, bytes.length + 1));
  for (let k = rng.integer(1, 4); k > 0; k--) flipped[rng.integer(0, flipped.length)]! ^= 1 << rng.integer(0, 8);
  return flipped;
}
