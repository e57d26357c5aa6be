/**
 * Lifecycle cases: promises a black-box suite can hold only when it controls the server under
 * test (`gymwire check --serve "<command>"`, or a test that hands the suite a server it started).
 * They read the limits the welcome announces and skip with the flag to use when a limit is too
 * large to reach quickly; the case that stops the server runs after every other case.
 */
import { ProtocolError, previewValue } from '../../protocol/errors.ts';
import { check, ConformanceFailure } from '../harness.ts';
import type { CaseContext, CaseResult, ConformanceCase, ServerLifecycle } from '../harness.ts';

/** Limits at most this large are driven to their end (each session is a make on the first env). */
const MAX_SESSIONS_PROBED = 64;
/** Idle timeouts at most this long are waited for. */
const IDLE_TIMEOUT_PROBED_MS = 10_000;
/** How long after SIGTERM (or the stop) the shutdown event and the 1001 close may take: the default drain time and slack. */
const SHUTDOWN_WAIT_MS = 15_000;

function lifecycleOf(ctx: CaseContext): ServerLifecycle | CaseResult {
  return ctx.target.lifecycle ?? { status: 'skip', reason: 'needs a server the suite controls: run `gymwire check --serve "<command that starts it>"`' };
}

function isLifecycle(x: ServerLifecycle | CaseResult): x is ServerLifecycle {
  return x !== undefined && 'stop' in x;
}

async function healthz(lifecycle: ServerLifecycle): Promise<Record<string, unknown>> {
  const res = await fetch(`${lifecycle.httpBase}/healthz`, { signal: AbortSignal.timeout(5000) });
  check(res.status === 200, `GET /healthz answered ${res.status}, not 200`);
  const body = (await res.json()) as Record<string, unknown>;
  for (const key of ['sessions', 'connections', 'uptime_s'])
    check(typeof body[key] === 'number', `GET /healthz lacks the number ${key}: ${previewValue(body, 200)}`);
  check(body.status === 'ok', `GET /healthz says status ${previewValue(body.status)}, not "ok"`);
  return body;
}

export const LIFECYCLE_CASES: ConformanceCase[] = [
  {
    name: 'lifecycle: /healthz reports the sessions and connections the server holds',
    covers: ['P-HTTP-1'],
    perServer: true,
    async run(ctx) {
      const lifecycle = lifecycleOf(ctx);
      if (!isLifecycle(lifecycle)) return lifecycle;
      const c = await ctx.client();
      const before = await healthz(lifecycle);
      check((before.connections as number) >= 1, `GET /healthz counts ${String(before.connections)} connections while the suite holds one`);
      await c.make(ctx.envId);
      await c.make(ctx.envId);
      const after = await healthz(lifecycle);
      check(
        (after.sessions as number) === (before.sessions as number) + 2,
        `GET /healthz counts ${String(after.sessions)} sessions after two makes, ${String(before.sessions)} before`,
      );
      return { status: 'pass' };
    },
  },
  {
    name: 'lifecycle: make past the server-wide max_sessions is ENV_ERR_TOO_MANY_SESSIONS',
    covers: ['P-LIMIT-1', 'E-TOO_MANY_SESSIONS-1'],
    perServer: true,
    async run(ctx) {
      const lifecycle = lifecycleOf(ctx);
      if (!isLifecycle(lifecycle)) return lifecycle;
      const first = await ctx.client();
      const { max_sessions: max, max_sessions_per_client: perClient } = first.limits;
      if (max > MAX_SESSIONS_PROBED)
        return { status: 'skip', reason: `max_sessions is ${max}: serve with a small limit (gymwire serve --max-sessions 4) to check it` };
      // Spread over clients, so the per-client limit never answers first.
      const clients = [first];
      let made = 0;
      while (made < max) {
        const c = clients.at(-1)!;
        const mine = Math.min(perClient, max - made);
        for (let i = 0; i < mine; i++) await c.make(ctx.envId);
        made += mine;
        if (made < max) clients.push(await ctx.client());
      }
      const last = await ctx.client();
      try {
        await last.make(ctx.envId);
      } catch (err) {
        check(err instanceof ProtocolError && err.code === 'ENV_ERR_TOO_MANY_SESSIONS', `make ${max + 1} of max_sessions=${max} refused with ${String(err)}`);
        check(
          err.details.limit === 'max_sessions' && err.details.max === max,
          `ENV_ERR_TOO_MANY_SESSIONS details ${previewValue(err.details, 200)} do not name max_sessions and its value`,
        );
        return { status: 'pass' };
      }
      throw new ConformanceFailure(`make ${max + 1} succeeded past the announced max_sessions=${max}`);
    },
  },
  {
    name: 'lifecycle: an idle session is closed with a session_closed event',
    covers: ['P-LIMIT-4', 'P-EVENT-1', 'E-UNKNOWN_SESSION-1'],
    perServer: true,
    async run(ctx) {
      const lifecycle = lifecycleOf(ctx);
      if (!isLifecycle(lifecycle)) return lifecycle;
      const raw = await ctx.raw();
      const welcome = (await raw.hello(ctx.target.token)).result as { limits: { idle_timeout_ms: number } };
      const idle = welcome.limits.idle_timeout_ms;
      if (idle === 0 || idle > IDLE_TIMEOUT_PROBED_MS)
        return { status: 'skip', reason: `idle_timeout_ms is ${idle}: serve with a short one (gymwire serve --idle-timeout 1s) to check it` };
      raw.send({ id: 1, type: 'make', env_id: ctx.envId, kwargs: {} });
      const made = await raw.next();
      check(made.type === 'result', `make failed: ${previewValue(made.error, 200)}`);
      const sessionId = (made.result as { session_id: string }).session_id;
      const event = await raw.event('session_closed', idle * 2 + 5000);
      check(event.session_id === sessionId, `session_closed names ${previewValue(event.session_id)}, not the idle session ${sessionId}`);
      check(typeof event.reason === 'string' && event.reason.length > 0, 'session_closed carries no reason');
      raw.send({ id: 2, type: 'reset', session_id: sessionId });
      const after = await raw.next();
      check(
        after.type === 'error' && (after.error as { code?: unknown }).code === 'ENV_ERR_UNKNOWN_SESSION',
        `a reset of the reaped session answered ${previewValue(after, 200)}, not ENV_ERR_UNKNOWN_SESSION`,
      );
      return { status: 'pass' };
    },
  },
  {
    name: 'lifecycle: stopping the server sends the shutdown event and closes with 1001',
    covers: ['P-EVENT-2', 'P-SHUTDOWN-1'],
    perServer: true,
    endsServer: true,
    async run(ctx) {
      const lifecycle = lifecycleOf(ctx);
      if (!isLifecycle(lifecycle)) return lifecycle;
      const raw = await ctx.raw();
      await raw.hello(ctx.target.token);
      raw.send({ id: 1, type: 'make', env_id: ctx.envId, kwargs: {} });
      check((await raw.next()).type === 'result', 'make failed before the stop');
      await lifecycle.stop();
      const event = await raw.event('shutdown', SHUTDOWN_WAIT_MS);
      check(typeof event.reason === 'string', `the shutdown event carries no reason: ${previewValue(event, 200)}`);
      const code = await raw.closedWith(SHUTDOWN_WAIT_MS);
      check(code === 1001, `the connection closed with ${code === null ? 'nothing (still open)' : code}, not 1001 (going away)`);
      return { status: 'pass' };
    },
  },
];
