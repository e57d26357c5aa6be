/**
 * hello: the handshake. Agrees the protocol version, checks the token, and binds the connection
 * to a client: a new one, or the one its resume token names (taking over a half-open socket).
 */
import { randomBytes } from 'node:crypto';

import { encode } from '../../protocol/codec.ts';
import { ProtocolError } from '../../protocol/errors.ts';
import { SUPPORTED_PROTOCOL_VERSIONS } from '../../protocol/messages.ts';
import type { RequestOf, ResultOf } from '../../protocol/messages.ts';
import { GYMWIRE_VERSION } from '../../protocol/version.ts';
import { ClientState } from '../client-state.ts';
import type { Connection } from '../connection.ts';
import type { ServerCore } from '../core.ts';
import { refuse } from './reply.ts';

export const SERVER_NAME = 'gymwire';
export const SERVER_VERSION = GYMWIRE_VERSION;

/** Answers hello with welcome, or refuses it and closes the connection. */
export function hello(core: ServerCore, conn: Connection, req: RequestOf<'hello'>): void {
  if (conn.client) return refuse(core, conn, req.id, new ProtocolError('ENV_ERR_INVALID_MESSAGE', 'hello was already received on this connection'));
  if (!SUPPORTED_PROTOCOL_VERSIONS.includes(req.protocol_version)) {
    refuse(
      core,
      conn,
      req.id,
      new ProtocolError(
        'ENV_ERR_VERSION_MISMATCH',
        `protocol version ${req.protocol_version} is not supported; this server speaks ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}`,
        { supported: SUPPORTED_PROTOCOL_VERSIONS },
      ),
    );
    conn.transport.close(1002, 'protocol version mismatch');
    return;
  }
  if (!core.authorizes(req.token)) {
    refuse(
      core,
      conn,
      req.id,
      new ProtocolError('ENV_ERR_UNAUTHORIZED', req.token === undefined ? 'this server needs an auth token (hello.token)' : 'the auth token is wrong'),
    );
    conn.transport.close(1008, 'unauthorized');
    return;
  }
  let client = req.resume_token ? core.clientsByToken.get(req.resume_token) : undefined;
  const resumed = client !== undefined;
  if (client) {
    const old = client.connection;
    if (old && old !== conn) {
      // The old socket is half-open (the client would not reconnect otherwise): take over.
      old.client = null;
      old.transport.terminate();
    }
    conn.log.info({ client: client.id, sessions: client.sessions.size }, 'client resumed');
  } else {
    const clientId = `k_${randomBytes(6).toString('base64url')}`;
    client = new ClientState(clientId, randomBytes(18).toString('base64url'), req.client_name ?? 'unnamed', core.frames);
    core.clients.set(clientId, client);
    core.clientsByToken.set(client.resumeToken, client);
    conn.log.debug({ client: clientId, name: client.name }, 'client greeted');
  }
  client.connection = conn;
  client.detachedAt = null;
  client.protocolVersion = req.protocol_version;
  conn.client = client;
  conn.admission?.greeted();
  const welcome: ResultOf<'hello'> = {
    // The version the client asked for (one this server speaks): answers take its forms.
    protocol_version: req.protocol_version,
    server_name: SERVER_NAME,
    server_version: SERVER_VERSION,
    connection_id: conn.id,
    resume_token: client.resumeToken,
    resumed,
    sessions: [...client.sessions],
    limits: core.limits,
  };
  conn.send(encode({ id: req.id, type: 'result', result: welcome }));
}
