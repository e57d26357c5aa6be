/**
 * The boundary: a frame's bytes to a validated request. msgpack decode (bounded), then the
 * message's zod schema; step and step_batch, most of the traffic, take a hand-written check first.
 * Handlers never see a message that did not pass here.
 */
import type { z } from 'zod';

import { decodeUntrusted } from '../../protocol/codec.ts';
import { previewValue, ProtocolError } from '../../protocol/errors.ts';
import { floatsUnder, frameRequestId } from '../../protocol/frame-scan.ts';
import { AUTORESET_MODES, REQUEST_SCHEMAS } from '../../protocol/messages.ts';
import type { RequestOf, RequestType } from '../../protocol/messages.ts';
import { isPlainObject } from '../../protocol/spaces.ts';
import { decodeError } from './error-handler.ts';

/** A frame that is not a valid request: the error to answer with, and the id to answer it under. */
export class Refusal {
  constructor(
    readonly id: number | null,
    readonly error: ProtocolError,
  ) {}
}

/** Decodes and validates one frame (already known to be within the size limit). */
export function parseRequest(frame: Uint8Array): RequestOf<RequestType> | Refusal {
  let msg: unknown;
  try {
    msg = decodeUntrusted(frame);
  } catch (err) {
    return new Refusal(frameRequestId(frame), decodeError(err, frame.byteLength));
  }
  if (!isPlainObject(msg)) return new Refusal(null, new ProtocolError('ENV_ERR_INVALID_MESSAGE', 'a message must be a msgpack map with id and type'));
  const id = typeof msg.id === 'number' && Number.isInteger(msg.id) && msg.id >= 0 ? msg.id : null;
  const type = msg.type;
  if (typeof type !== 'string' || !Object.hasOwn(REQUEST_SCHEMAS, type)) {
    return new Refusal(id, new ProtocolError('ENV_ERR_UNKNOWN_TYPE', `unknown message type ${previewValue(type)}`, { known: Object.keys(REQUEST_SCHEMAS) }));
  }
  if ((type === 'step' && isWellFormedStep(msg)) || (type === 'step_batch' && isWellFormedStepBatch(msg))) {
    return markFloatActions(msg as RequestOf<'step' | 'step_batch'>, frame);
  }
  const parsed = (REQUEST_SCHEMAS[type as RequestType] as z.ZodType).safeParse(msg);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
    return new Refusal(
      id,
      new ProtocolError('ENV_ERR_INVALID_MESSAGE', `invalid ${type}: ${issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ')}`, { issues }),
    );
  }
  const req = parsed.data as RequestOf<RequestType>;
  return req.type === 'step' || req.type === 'step_batch' ? markFloatActions(req, frame) : req;
}

/**
 * Set on a step (true) or step_batch (one flag per action) whose numeric actions were sent as
 * msgpack floats: decoded, 1.0 is the integer 1, and a Discrete space refuses floats as
 * Gymnasium's does.
 */
export const FLOAT_ACTIONS = Symbol('actions sent as msgpack floats');

/** A request's float-action flags, when it has any. */
export function floatActions(req: object): boolean | boolean[] | undefined {
  return (req as { [FLOAT_ACTIONS]?: boolean | boolean[] })[FLOAT_ACTIONS];
}

function markFloatActions<R extends RequestOf<'step' | 'step_batch'>>(req: R, frame: Uint8Array): R {
  // Only integral numbers are in question (non-integral ones fail the space check anyway).
  const numeric = req.type === 'step' ? Number.isInteger(req.action) : Array.isArray(req.actions) && req.actions.some((a) => Number.isInteger(a));
  if (!numeric) return req;
  const flags = floatsUnder(frame, req.type === 'step' ? 'action' : 'actions');
  if (flags === true || (Array.isArray(flags) && flags.some(Boolean))) (req as { [FLOAT_ACTIONS]?: boolean | boolean[] })[FLOAT_ACTIONS] = flags;
  return req;
}

const STEP_KEYS: ReadonlySet<string> = new Set(['id', 'type', 'session_id', 'action', 'ack']);
const STEP_BATCH_KEYS: ReadonlySet<string> = new Set(['id', 'type', 'session_ids', 'actions', 'autoreset_mode', 'ack']);
const AUTORESET_MODE_SET: ReadonlySet<unknown> = new Set(AUTORESET_MODES);

/*
 * Step and step_batch requests checked by hand: they are most of the traffic, and zod's parse costs
 * about as much as the rest of a CartPole step. Each accepts a subset of what its schema accepts;
 * anything else goes through the schema, which also words the error.
 */

function hasEnvelope(m: Record<string, unknown>, keys: ReadonlySet<string>): boolean {
  for (const key in m) if (!keys.has(key)) return false;
  return Number.isSafeInteger(m.id) && (m.id as number) >= 0 && (m.ack === undefined || Number.isSafeInteger(m.ack));
}

function isSessionId(v: unknown): boolean {
  return typeof v === 'string' && v.length >= 1 && v.length <= 128;
}

function isWellFormedStep(m: Record<string, unknown>): boolean {
  return hasEnvelope(m, STEP_KEYS) && isSessionId(m.session_id) && m.action !== undefined;
}

/** Also fills in the schema's default autoreset mode. */
function isWellFormedStepBatch(m: Record<string, unknown>): boolean {
  if (!hasEnvelope(m, STEP_BATCH_KEYS) || m.actions === undefined) return false;
  const ids = m.session_ids;
  if (!Array.isArray(ids) || ids.length === 0) return false;
  for (const id of ids) if (!isSessionId(id)) return false;
  if (m.autoreset_mode === undefined) m.autoreset_mode = 'next_step';
  return AUTORESET_MODE_SET.has(m.autoreset_mode);
}
