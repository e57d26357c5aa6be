/**
 * make: a new session, admitted against the session limits and the memory budget before its env
 * is built, so a session past a limit costs the server nothing.
 */
import { randomBytes } from 'node:crypto';

import type { Env } from '../../envs/core/env.ts';
import { TimeLimit, Wrapper } from '../../envs/core/wrappers.ts';
import { ProtocolError } from '../../protocol/errors.ts';
import type { RequestOf, ResultOf } from '../../protocol/messages.ts';
import { spaceBytes } from '../../protocol/spaces.ts';
import type { ClientState } from '../client-state.ts';
import type { Connection } from '../connection.ts';
import { EnvGuard } from '../env-guard.ts';
import type { ServerCore } from '../core.ts';
import { Session } from '../session.ts';
import { toolDescriptions } from '../tools.ts';

export async function make(core: ServerCore, conn: Connection, client: ClientState, req: RequestOf<'make'>): Promise<ResultOf<'make'>> {
  if (client.sessions.size + client.reserved >= core.limits.max_sessions_per_client) {
    throw new ProtocolError(
      'ENV_ERR_TOO_MANY_SESSIONS',
      `this client already has ${client.sessions.size} sessions (max_sessions_per_client ${core.limits.max_sessions_per_client}); close some first`,
      { limit: 'max_sessions_per_client', max: core.limits.max_sessions_per_client },
    );
  }
  if (core.sessions.size + reservedTotal(core) >= core.limits.max_sessions) {
    throw new ProtocolError('ENV_ERR_TOO_MANY_SESSIONS', `the server has ${core.sessions.size} sessions open (max_sessions ${core.limits.max_sessions})`, {
      limit: 'max_sessions',
      max: core.limits.max_sessions,
    });
  }
  const id = `s_${randomBytes(9).toString('base64url')}`;
  // Before anything is built: a session past a memory budget costs the server nothing.
  core.memory.reserve(client.id, id, core.registry.estimateBytes(req.env_id, req.kwargs ?? {}), req.env_id);
  client.reserved++;
  let env: Env;
  try {
    env = new EnvGuard(await core.registry.make(req.env_id, req.kwargs ?? {}, { check: core.checkEnvs }), req.env_id, core.envCallTimeoutMs);
  } catch (err) {
    core.memory.release(id);
    throw err;
  } finally {
    client.reserved--;
  }
  const maxSteps = findTimeLimit(env);
  const session = new Session(id, req.env_id, env, client.id, conn.log.child({ session: id, env: req.env_id }), maxSteps, core.metrics.forEnv(req.env_id));
  // Sized from the space, a camera session's first reset is encoded into pooled memory too
  // (msgpackr growing its own buffer through a 100 MB answer took the event loop ~0.7 s).
  session.replyBytes = spaceBytes(env.observationSpace);
  core.sessions.set(id, session);
  client.sessions.add(id);
  core.metrics.openSessions.inc({ env_id: req.env_id });
  session.log.debug('session made');
  return {
    session_id: id,
    env_id: req.env_id,
    observation_space: env.observationSpace,
    action_space: env.actionSpace,
    metadata: env.metadata,
    render_mode: env.renderMode ?? null,
    max_episode_steps: maxSteps,
    tools: toolDescriptions(env.tools ?? []),
  };
}

function reservedTotal(core: ServerCore): number {
  let n = 0;
  for (const c of core.clients.values()) n += c.reserved;
  return n;
}

/** The registry's time limit on `env`, else the step at which the env truncates by itself, else null. */
function findTimeLimit(env: Env): number | null {
  let e: Env = env;
  while (e instanceof Wrapper) {
    if (e instanceof TimeLimit) return e.maxEpisodeSteps;
    e = e.env;
  }
  return e.maxEpisodeSteps ?? null;
}
