/**
 * Finding a client's sessions and holding their locks while a request runs: requests for one
 * session run in order, batches lock every session they touch, and a session's queue is bounded.
 */
import { ProtocolError } from '../../protocol/errors.ts';
import type { ClientState } from '../client-state.ts';
import type { ServerCore } from '../core.ts';
import type { Session } from '../session.ts';

/** The client's open session `sessionId`; another client's session is reported as unknown. */
export function lookup(core: ServerCore, client: ClientState, sessionId: string): Session {
  const s = core.sessions.get(sessionId);
  // Another client's session is reported as unknown: ids are capabilities, not something to probe.
  if (!s || s.closed || s.ownerId !== client.id) {
    throw new ProtocolError('ENV_ERR_UNKNOWN_SESSION', `no open session ${sessionId} (never made, closed, or reaped)`, { session_id: sessionId });
  }
  return s;
}

/** Runs fn with the session's lock held; synchronously when the lock is free and fn is sync. */
export function withSession<T>(core: ServerCore, client: ClientState, sessionId: string, fn: (s: Session) => T | Promise<T>): T | Promise<T> {
  const s = lookup(core, client, sessionId);
  if (s.lock.pending >= core.limits.max_pending_per_session) {
    throw new ProtocolError(
      'ENV_ERR_TOO_MANY_PENDING',
      `session ${sessionId} already has ${s.lock.pending} requests waiting (max_pending_per_session ${core.limits.max_pending_per_session})`,
      { session_id: sessionId },
    );
  }
  const run = (): T | Promise<T> => {
    if (s.closed) {
      s.lock.release();
      throw new ProtocolError('ENV_ERR_UNKNOWN_SESSION', `session ${sessionId} was closed`, { session_id: sessionId });
    }
    s.touch();
    let out: T | Promise<T>;
    try {
      out = fn(s);
    } catch (err) {
      s.lock.release();
      throw err;
    }
    if (out instanceof Promise) return out.finally(() => s.lock.release());
    s.lock.release();
    return out;
  };
  if (s.lock.tryAcquire()) return run();
  return s.lock.acquire().then(run);
}

/**
 * Locks every session of a batch (in request order, so batches cannot deadlock), then runs fn;
 * synchronously when every lock is free and fn is sync (a batch of sync envs costs no promise).
 */
export function withSessions<T>(core: ServerCore, client: ClientState, ids: readonly string[], fn: (sessions: Session[]) => T | Promise<T>): T | Promise<T> {
  if (new Set(ids).size !== ids.length) throw new ProtocolError('ENV_ERR_INVALID_MESSAGE', 'session_ids lists a session more than once');
  const sessions = ids.map((id) => lookup(core, client, id));
  for (const s of sessions) {
    if (s.lock.pending >= core.limits.max_pending_per_session) {
      throw new ProtocolError('ENV_ERR_TOO_MANY_PENDING', `session ${s.id} already has ${s.lock.pending} requests waiting`, { session_id: s.id });
    }
  }
  let waits: Promise<void>[] | null = null;
  for (const s of sessions) if (!s.lock.tryAcquire()) (waits ??= []).push(s.lock.acquire());
  if (waits) return Promise.all(waits).then(() => runLocked(sessions, fn));
  return runLocked(sessions, fn);
}

/** Runs fn on sessions whose locks this request holds, and releases them when fn is done. */
function runLocked<T>(sessions: Session[], fn: (sessions: Session[]) => T | Promise<T>): T | Promise<T> {
  let out: T | Promise<T>;
  try {
    const closed = sessions.find((s) => s.closed);
    if (closed) throw new ProtocolError('ENV_ERR_UNKNOWN_SESSION', `session ${closed.id} was closed`, { session_id: closed.id });
    const now = Date.now();
    for (const s of sessions) s.lastActive = now;
    out = fn(sessions);
  } catch (err) {
    releaseAll(sessions);
    throw err;
  }
  if (out instanceof Promise) return out.finally(() => releaseAll(sessions));
  releaseAll(sessions);
  return out;
}

function releaseAll(sessions: Session[]): void {
  for (const s of sessions) s.lock.release();
}
