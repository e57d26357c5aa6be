/**
 * The request path for one frame: the size limit (tighter before hello), decoding and validation
 * at the boundary, the handshake gate, the reply cache, then dispatch by type to the request's
 * handler, synchronously when the handler is.
 */
import type { EncodedFrame } from '../../protocol/codec.ts';
import { ProtocolError } from '../../protocol/errors.ts';
import { frameRequestId } from '../../protocol/frame-scan.ts';
import type { RequestOf, RequestType, ResultOf } from '../../protocol/messages.ts';
import { requestFacts } from '../../protocol/messages.ts';
import { PRE_HELLO_MAX_FRAME_BYTES } from '../admission.ts';
import type { ClientState } from '../client-state.ts';
import type { Connection } from '../connection.ts';
import type { ServerCore } from '../core.ts';
import { toolDescriptions } from '../tools.ts';
import { resetBatch, stepBatch } from './batch.ts';
import { hello } from './handshake.ts';
import { make } from './make.ts';
import { parseRequest, Refusal } from './parse-request.ts';
import { answeredFromCache, encodeAnswer, encodeFailure, refuse } from './reply.ts';
import { withSession } from './session-scope.ts';
import { closeRequest, execute, getState, render, reset, setState, step } from './session-ops.ts';

type Handler<T extends RequestType> = (core: ServerCore, conn: Connection, client: ClientState, req: RequestOf<T>) => ResultOf<T> | Promise<ResultOf<T>>;

/** One handler per request type (hello is answered before a client exists, in handleFrame). */
const HANDLERS: { readonly [T in RequestType]: Handler<T> } = {
  hello: () => {
    throw new ProtocolError('ENV_ERR_INVALID_MESSAGE', 'hello was already received on this connection');
  },
  list_envs: (core) => ({ envs: core.registry.list() }),
  make: (core, conn, client, req) => make(core, conn, client, req),
  reset: (core, _c, client, req) => reset(core, client, req),
  step: (core, _c, client, req) => step(core, client, req),
  reset_batch: (core, _c, client, req) => resetBatch(core, client, req),
  step_batch: (core, _c, client, req) => stepBatch(core, client, req),
  render: (core, _c, client, req) => render(core, client, req),
  list_tools: (core, _c, client, req) => withSession(core, client, req.session_id, (s) => ({ tools: toolDescriptions(s.env.tools ?? []) })),
  execute: (core, _c, client, req) => execute(core, client, req),
  get_state: (core, _c, client, req) => getState(core, client, req),
  set_state: (core, _c, client, req) => setState(core, client, req),
  close: (core, _c, client, req) => closeRequest(core, client, req),
  // No payload, no payload field: an absent value has no msgpack encoding (msgpackr would send ext 0).
  ping: (_core, _c, _client, req) => (req.payload === undefined ? { server_time_ms: Date.now() } : { payload: req.payload, server_time_ms: Date.now() }),
};

/** Handles one frame from a connection: every request gets exactly one answer (or a cached one on retry). */
export function handleFrame(core: ServerCore, conn: Connection, frame: Uint8Array): void {
  // Nothing from a peer that has not said hello is decoded beyond the size a hello needs.
  const greeted = conn.client !== null;
  const maxBytes = greeted ? core.limits.max_frame_bytes : Math.min(PRE_HELLO_MAX_FRAME_BYTES, core.limits.max_frame_bytes);
  if (frame.byteLength > maxBytes) {
    // Refused without decoding; the id comes from a bounded scan so the client can match the
    // refusal to its request instead of waiting for a timeout.
    const limit = greeted ? `max_frame_bytes ${maxBytes}` : `the ${maxBytes} bytes allowed before hello`;
    refuse(
      core,
      conn,
      frameRequestId(frame),
      new ProtocolError('ENV_ERR_FRAME_TOO_LARGE', `frame of ${frame.byteLength} bytes exceeds ${limit}`, {
        max_frame_bytes: maxBytes,
        size: frame.byteLength,
      }),
    );
    if (!greeted) conn.transport.close(1008, 'frame too large before hello');
    return;
  }
  const req = parseRequest(frame);
  if (req instanceof Refusal) return refuse(core, conn, req.id, req.error);
  core.metrics.requestCell(req.type).n++;
  if (req.type === 'hello') return hello(core, conn, req);
  const client = conn.client;
  if (!client) return refuse(core, conn, req.id, new ProtocolError('ENV_ERR_HANDSHAKE_REQUIRED', 'the first message on a connection must be hello'));
  if (core.isShuttingDown)
    return refuse(core, conn, req.id, new ProtocolError('ENV_ERR_SHUTTING_DOWN', 'the server is shutting down and accepts no new requests'));

  const cacheable = requestFacts(req.type).answerKept;
  if (cacheable && answeredFromCache(core, conn, client, req)) return;
  client.highestId = Math.max(client.highestId, req.id);
  if (req.ack !== undefined) client.forgetUpTo(req.ack);
  const bytes = run(core, conn, client, req);
  if (cacheable) client.remember(req.id, req.type, bytes);
  // The client may have reconnected while this ran: answer on its current connection. Then let
  // go of this request's hold on the answer (the socket write and the reply cache hold their own).
  if (!(bytes instanceof Promise)) {
    (client.connection ?? conn).send(bytes);
    core.frames.release(bytes);
  } else {
    void bytes.then((b) => {
      (client.connection ?? conn).send(b);
      core.frames.release(b);
    });
  }
}

/** Runs a request; synchronously when its handler is (a sync env's step costs no promise at all). */
function run(core: ServerCore, conn: Connection, client: ClientState, req: RequestOf<RequestType>): EncodedFrame | Promise<EncodedFrame> {
  let out: unknown;
  try {
    const handler = HANDLERS[req.type] as Handler<RequestType>;
    out = handler(core, conn, client, req);
  } catch (err) {
    return encodeFailure(core, conn, req, err);
  }
  // The sync path (a sync env's step) allocates no closure and no promise.
  if (!(out instanceof Promise)) return encodeAnswer(core, conn, client, req, out);
  core.inFlight++;
  return out
    .then(
      (result: unknown) => encodeAnswer(core, conn, client, req, result),
      (err: unknown) => encodeFailure(core, conn, req, err),
    )
    .finally(() => core.inFlight--);
}
