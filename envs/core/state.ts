/**
 * Helpers for envs' `getState`/`setState`: state as msgpack bytes with a format tag, so a state
 * taken from one env is refused (clearly) by another.
 */
import { decode, encode } from '../../protocol/codec.ts';
import { previewValue } from '../../protocol/errors.ts';
import { InvalidStateError } from './env.ts';

export function packState(format: string, state: unknown): Uint8Array {
  return encode({ format, state });
}

export function unpackState<T = unknown>(format: string, bytes: Uint8Array): T {
  let value: unknown;
  try {
    value = decode(bytes);
  } catch (err) {
    throw new InvalidStateError(`state bytes are not a gymwire state: ${(err as Error).message}`);
  }
  const tagged = value as { format?: unknown; state?: unknown } | null;
  if (!tagged || typeof tagged !== 'object' || tagged.format !== format) {
    throw new InvalidStateError(`state was not taken from ${format} (its format is ${previewValue(tagged?.format ?? null)})`);
  }
  return tagged.state as T;
}
