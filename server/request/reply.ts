/**
 * Answers: results and errors to frames (large ones into pooled memory), and the reply cache's
 * gate, which answers a retried request from what its first attempt produced and refuses ids
 * that are done or expired, so no request runs twice.
 */

import { EnvContractError } from '../../envs/core/wrappers.ts';
import { encode } from '../../protocol/codec.ts';
import type { EncodedFrame } from '../../protocol/codec.ts';
import { ProtocolError } from '../../protocol/errors.ts';
import type { RequestOf, RequestType } from '../../protocol/messages.ts';
import { REPLY_CACHE_BYTES, REPLY_CACHE_ENTRIES } from '../client-state.ts';
import type { ClientState } from '../client-state.ts';
import type { Connection } from '../connection.ts';
import type { ServerCore } from '../core.ts';
import { encodedBytes } from '../frame-pool.ts';
import { toProtocolError } from './error-handler.ts';

/** Sends an error answer for a request that never reached a handler, and counts it. */
export function refuse(core: ServerCore, conn: Connection, id: number | null, err: ProtocolError): void {
  core.metrics.countError(err.code, conn.client?.name);
  conn.log.debug({ code: err.code, id }, err.message);
  conn.sendError(id, err);
}

/**
 * For a cacheable request: answers a retry from the cache, or refuses an id that is reused for
 * another type, acknowledged, or below the highest id with no answer held. Returns true when the
 * request was dealt with here and must not run.
 */
export function answeredFromCache(core: ServerCore, conn: Connection, client: ClientState, req: RequestOf<RequestType>): boolean {
  const cached = client.replies.get(req.id);
  if (cached && cached.type !== req.type) {
    refuse(
      core,
      conn,
      req.id,
      new ProtocolError(
        'ENV_ERR_INVALID_MESSAGE',
        `request id ${req.id} was already used by a ${cached.type} request; ids must be unique per client (a retry resends the same request)`,
        { id: req.id, used_by: cached.type },
      ),
    );
    return true;
  }
  if (cached) {
    // A retry after a reconnect: answer with what the first attempt produced, never act twice.
    if (!(cached.bytes instanceof Promise)) client.connection?.send(cached.bytes);
    // Still running: answer once it is done, from the cache, which holds the answer's memory.
    else
      void cached.bytes.then(() => {
        const done = client.replies.get(req.id)?.bytes;
        if (done !== undefined && !(done instanceof Promise)) client.connection?.send(done);
      });
    return true;
  }
  if (req.id <= client.acked) {
    refuse(
      core,
      conn,
      req.id,
      new ProtocolError(
        'ENV_ERR_INVALID_MESSAGE',
        `request id ${req.id} is at or below your ack ${client.acked}: those ids are done; use a new id above every id you sent`,
        { id: req.id, ack: client.acked },
      ),
    );
    return true;
  }
  if (req.id <= client.highestId) {
    refuse(
      core,
      conn,
      req.id,
      new ProtocolError(
        'ENV_ERR_REPLY_EXPIRED',
        `request id ${req.id} (${req.type}) is below the highest id ${client.highestId} this client sent and no answer is held for it: either it already ran and its answer was evicted (more than ${REPLY_CACHE_ENTRIES} answers or ${REPLY_CACHE_BYTES / 2 ** 20} MiB unacknowledged), or the id was never used (ids must increase); it was not run`,
        { id: req.id, type: req.type, highest_id: client.highestId },
      ),
    );
    return true;
  }
  return false;
}

/**
 * The result's frame, or an error answer when it cannot be encoded: an env fault when the env
 * returned something msgpack cannot carry (a symbol, a cycle, an integer past 64 bits). A bad
 * value must not reject the answer's promise, which nothing awaits, and take the process down.
 */
export function encodeAnswer(core: ServerCore, conn: Connection, client: ClientState, req: RequestOf<RequestType>, result: unknown): EncodedFrame {
  try {
    return encodeResult(core, client, req, result);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    // ping echoes the client's own payload (one nested past what the encoder's stack allows);
    // every other result carries what an env produced.
    const fault =
      req.type === 'ping'
        ? new ProtocolError('ENV_ERR_INVALID_MESSAGE', `the ping payload cannot be echoed back: ${why}`)
        : new EnvContractError(
            `the ${req.type} result cannot be sent: ${why} (observations, rewards and infos must be msgpack values: docs/PROTOCOL.md, sections 1 and 2)`,
          );
    return encodeFailure(core, conn, req, fault);
  }
}

/**
 * Encodes a result, into pooled memory when the same stream's previous answer was large (a
 * session's steps and resets, a client's batches), and remembers its size for the next one.
 */
function encodeResult(core: ServerCore, client: ClientState, req: RequestOf<RequestType>, result: unknown): EncodedFrame {
  const message = { id: req.id, type: 'result', result };
  if (req.type === 'step' || req.type === 'reset') {
    const s = core.sessions.get(req.session_id);
    if (!s) return encode(message);
    const frame = core.frames.encode(message, s.replyBytes);
    s.replyBytes = encodedBytes(frame);
    return frame;
  }
  if (req.type === 'step_batch' || req.type === 'reset_batch') {
    const frame = core.frames.encode(message, client.batchReplyBytes[req.type]);
    client.batchReplyBytes[req.type] = encodedBytes(frame);
    return frame;
  }
  return encode(message);
}

/** The error answer for a request whose handler threw (or whose result could not be encoded). */
export function encodeFailure(core: ServerCore, conn: Connection, req: RequestOf<RequestType>, err: unknown): Uint8Array {
  const pe = toProtocolError(err, conn.log, req.type);
  core.metrics.countError(pe.code, conn.client?.name);
  return encode({ id: req.id, type: 'error', error: pe.toWire() });
}
