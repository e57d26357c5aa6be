/**
 * The wire contract as a library: message schemas, the msgpack codec, tensors, spaces and error codes,
 * for clients in other stacks and for tools that read or write gymwire frames.
 *
 * @example
 * import { decode, encode, spaces } from 'gymwire/protocol';
 * const frame = encode({ id: 1, type: 'ping' });
 */
export { decode, encode, encodeInto } from './codec.ts';
export { ERROR_CODES, isErrorCode, ProtocolError } from './errors.ts';
export type { ErrorCode, Fault } from './errors.ts';
export * from './messages.ts';
export * as spaces from './spaces.ts';
export type { Space } from './spaces.ts';
export * from './tensor.ts';
export { GYMWIRE_VERSION } from './version.ts';
