/**
 * `GET /api/events`: the viewer's pushed updates as Server-Sent Events. Every `interval_ms`
 * (default 250) a subscriber gets an `update` event when anything changed: the live sessions with
 * their step rates, an overview across sessions, and with `?session=ID` that session's steps and
 * episodes since the previous event (the first event carries the whole recent history).
 *
 * @example
 * const es = new EventSource('/api/events?session=' + id + '&token=' + token);
 * es.addEventListener('update', (e) => draw(JSON.parse(e.data)));
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

import type { ServerCore } from '../core.ts';
import type { EpisodeRecord, SessionHistory, StepRecord } from './history.ts';
import { infoSummary, listFrames } from './frames.ts';

/** Episodes that count toward the overview's rate and return statistics. */
const OVERVIEW_WINDOW_MS = 60_000;
/** An idle stream still gets an update this often, so step rates fall to 0 and proxies keep it open. */
const IDLE_UPDATE_MS = 2_000;
/** Bytes of updates one stream may leave unread (gymwire serve --viewer-max-backlog). */
export const DEFAULT_VIEWER_MAX_BACKLOG_BYTES = 1024 * 1024;

export interface EnvOverview {
  env_id: string;
  sessions: number;
  steps_per_s: number;
  /** Episodes finished in the last minute across the env's sessions. */
  episodes_per_min: number;
  /** Over the episodes still in the sessions' histories. */
  episodes: number;
  mean_return: number | null;
  std_return: number | null;
  mean_score: number | null;
}

export interface Overview {
  sessions: number;
  steps_per_s: number;
  episodes_per_min: number;
  envs: EnvOverview[];
  /** Error answers since the server started, by code. */
  /** Error answers by code, to every client but the conformance suite. */
  errors: Record<string, number>;
  /** Error answers by code to the conformance suite (its deliberate probes), kept apart. */
  conformance_errors: Record<string, number>;
}

function meanStd(xs: number[]): [number | null, number | null] {
  if (xs.length === 0) return [null, null];
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const variance = xs.reduce((a, b) => a + (b - mean) ** 2, 0) / xs.length;
  return [mean, Math.sqrt(variance)];
}

/** Aggregates across live sessions, per env. */
export async function overview(core: ServerCore, now = Date.now()): Promise<Overview> {
  const byEnv = new Map<string, { histories: SessionHistory[] }>();
  for (const s of core.listSessions()) {
    const peek = core.peek(s.session_id);
    if (!peek) continue;
    const entry = byEnv.get(s.env_id) ?? { histories: [] };
    entry.histories.push(peek.history);
    byEnv.set(s.env_id, entry);
  }
  const envs: EnvOverview[] = [];
  for (const [envId, { histories }] of byEnv) {
    const episodes: EpisodeRecord[] = histories.flatMap((h) => h.episodesSince(0));
    const [mean, std] = meanStd(episodes.map((e) => e.return));
    const scores = episodes.flatMap((e) => (e.score === null ? [] : [e.score]));
    envs.push({
      env_id: envId,
      sessions: histories.length,
      steps_per_s: histories.reduce((a, h) => a + h.stepRate(now), 0),
      episodes_per_min: episodes.filter((e) => now - e.ended_ms <= OVERVIEW_WINDOW_MS).length,
      episodes: episodes.length,
      mean_return: mean,
      std_return: std,
      mean_score: meanStd(scores)[0],
    });
  }
  const byCode = async (counter: typeof core.metrics.errors) => {
    const counts: Record<string, number> = {};
    for (const v of (await counter.get()).values) counts[String(v.labels['code'])] = v.value;
    return counts;
  };
  const errors = await byCode(core.metrics.errors);
  const conformanceErrors = await byCode(core.metrics.conformanceErrors);
  return {
    sessions: envs.reduce((a, e) => a + e.sessions, 0),
    steps_per_s: envs.reduce((a, e) => a + e.steps_per_s, 0),
    episodes_per_min: envs.reduce((a, e) => a + e.episodes_per_min, 0),
    envs,
    errors,
    conformance_errors: conformanceErrors,
  };
}

export interface SessionDetail {
  session_id: string;
  env_id: string;
  /** True on the first detail of a stream: `steps` and `episodes` are the whole recent history. */
  full: boolean;
  steps: StepRecord[];
  episodes: EpisodeRecord[];
  frames: ReturnType<typeof listFrames>;
  can_render: boolean;
  /** The action space's shape when it is a box (the page lays a chunk of actions out in rows). */
  action_shape: number[] | null;
  info: Record<string, unknown>;
  bev_channels: unknown;
}

/** One subscriber: what it has seen, so each event carries only what is new. */
class Subscription {
  private stepCursor = 0;
  private episodeCursor = 0;
  private lastKey: string | null = null;
  private sentDetail = false;

  constructor(
    private readonly core: ServerCore,
    private readonly sessionId: string | null,
  ) {}

  /** The next event's payload, or null when nothing changed since the last one (unless `force`). */
  async next(force = false): Promise<unknown> {
    const sessions = this.core.listSessions();
    const peek = this.sessionId ? this.core.peek(this.sessionId) : null;
    const key = sessions.map((s) => `${s.session_id}:${s.steps}:${s.last_active_ms}`).join(',');
    if (!force && key === this.lastKey && this.sentDetail === (peek !== null)) return null;
    this.lastKey = key;
    const now = Date.now();
    const rates = new Map(sessions.map((s) => [s.session_id, this.core.peek(s.session_id)?.history.stepRate(now) ?? 0]));
    let detail: SessionDetail | null = null;
    if (peek && this.sessionId) {
      const renders = (peek.env.metadata.render_modes ?? []).includes('rgb_array') && peek.env.renderMode === 'rgb_array';
      detail = {
        session_id: this.sessionId,
        env_id: peek.envId,
        full: !this.sentDetail,
        steps: peek.history.stepsSince(this.stepCursor),
        episodes: peek.history.episodesSince(this.episodeCursor),
        frames: listFrames(peek.obs),
        can_render: renders,
        action_shape: peek.env.actionSpace.type === 'box' ? [...peek.env.actionSpace.shape] : null,
        info: infoSummary(peek.info),
        bev_channels: peek.env.metadata['bev_channels'] ?? null,
      };
      this.stepCursor = peek.history.lastSeq;
      this.episodeCursor = peek.history.episodesFinished;
    }
    this.sentDetail = peek !== null;
    return {
      t_ms: now,
      sessions: sessions.map((s) => ({ ...s, steps_per_s: rates.get(s.session_id) ?? 0 })),
      overview: await overview(this.core, now),
      session: detail,
      session_closed: this.sessionId !== null && peek === null,
    };
  }
}

/**
 * Serves one SSE stream until the client goes away. A reader that leaves more than `maxBacklogBytes`
 * unread gets no new update until it has read its way below (each update carries everything since
 * the last one it got, so skipped ticks coalesce into the next); one that stays over the bound for
 * the server's outbound drain timeout is disconnected.
 */
export function serveEvents(core: ServerCore, req: IncomingMessage, res: ServerResponse, maxBacklogBytes = DEFAULT_VIEWER_MAX_BACKLOG_BYTES): void {
  const url = new URL(req.url ?? '/', 'http://viewer');
  const sessionId = url.searchParams.get('session');
  const interval = Math.min(5000, Math.max(50, Number(url.searchParams.get('interval_ms')) || 250));
  const sub = new Subscription(core, sessionId);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no' });
  res.write(`retry: 1000\n\n`);
  let busy = false;
  let lastWrite = Date.now();
  let backedUpSince: number | null = null;
  const push = async (): Promise<void> => {
    if (busy || res.writableEnded) return;
    if (res.writableLength > maxBacklogBytes) {
      backedUpSince ??= Date.now();
      if (Date.now() - backedUpSince > core.outbound.drainTimeoutMs) {
        core.metrics.slowViewerStreams.inc();
        core.log.info({ unread_bytes: res.writableLength, max_backlog_bytes: maxBacklogBytes }, 'viewer stream left its updates unread; closing it');
        res.destroy();
      }
      return;
    }
    backedUpSince = null;
    busy = true;
    try {
      const payload = await sub.next(Date.now() - lastWrite >= IDLE_UPDATE_MS);
      if (payload !== null) {
        res.write(`event: update\ndata: ${JSON.stringify(payload)}\n\n`);
        lastWrite = Date.now();
      }
    } catch {
      // A session closing mid-read: the next tick reports it as closed.
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void push(), interval);
  timer.unref();
  core.viewers++;
  void push();
  let stopped = false;
  const stop = (): void => {
    if (stopped) return;
    stopped = true;
    core.viewers--;
    clearInterval(timer);
  };
  req.on('close', stop);
  res.on('close', stop);
}
