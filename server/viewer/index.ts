/**
 * The live viewer served at `/` by `gymwire serve`: a static page (no build step, nothing fetched
 * from elsewhere) fed by Server-Sent Events over the server's read-only observer API.
 *
 *   GET /                                   the page (static/index.html + /viewer/app.js)
 *   GET /viewer/uplot.js, /viewer/uplot.css the uPlot charting library, served from its npm package
 *   GET /api/events[?session=ID]            pushed updates (events.ts): sessions, overview, history
 *   GET /api/envs                           registered envs
 *   GET /api/sessions                       live sessions (steps, episodes, returns)
 *   GET /api/sessions/:id                   one session: summary, frames its observation offers, info
 *   GET /api/sessions/:id/frame.png?key=K   a camera or BEV frame from the latest observation;
 *                                           key=render renders the session (between its steps)
 *
 * @example
 * await startServer({ mountRoutes: (routes, core) => mountViewer(routes, core) });
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { IncomingMessage, ServerResponse } from 'node:http';

import type { ServerCore } from '../core.ts';
import { bearerToken } from '../http.ts';
import type { HttpHandler, HttpRoutes } from '../http.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { serveEvents } from './events.ts';
import { frameRgb, infoSummary, listFrames, toPng } from './frames.ts';

const STATIC = new URL('./static/', import.meta.url);

/** uPlot's browser build and stylesheet from node_modules, or null (the page then says charts are missing). */
function readUplot(file: string): Buffer | null {
  try {
    return readFileSync(createRequire(import.meta.url).resolve(`uplot/dist/${file}`));
  } catch {
    return null;
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body));
}

/** The token a viewer request carries: `Authorization: Bearer T`, or `?token=T` (an <img> cannot send headers). */
function requestToken(req: IncomingMessage): string | undefined {
  return bearerToken(req) ?? new URL(req.url ?? '/', 'http://viewer').searchParams.get('token') ?? undefined;
}

/**
 * Session data (ids, observations, frames) is shown only to holders of the server's token when it
 * has one, as on the WebSocket and /mcp; the page itself carries no data and stays public.
 */
function guarded(core: ServerCore, handler: HttpHandler): HttpHandler {
  return (req, res) => {
    if (core.authorizes(requestToken(req))) return handler(req, res);
    res.setHeader('WWW-Authenticate', 'Bearer realm="gymwire"');
    json(res, 401, { error: 'this server needs its auth token: open the viewer as /?token=TOKEN or send Authorization: Bearer TOKEN' });
  };
}

export interface ViewerOptions {
  /** Bytes of updates one /api/events stream may leave unread before updates are held back (default 1 MiB). */
  maxBacklogBytes?: number;
}

export function mountViewer(routes: HttpRoutes, core: ServerCore, opts: ViewerOptions = {}): void {
  const page = readFileSync(new URL('index.html', STATIC));
  const app = readFileSync(new URL('app.js', STATIC));
  const uplot = { js: readUplot('uPlot.iife.min.js'), css: readUplot('uPlot.min.css') };
  const asset =
    (body: Buffer | null, type: string): HttpHandler =>
    (_req, res) => {
      if (body) res.writeHead(200, { 'content-type': type, 'cache-control': 'max-age=3600' }).end(body);
      else json(res, 404, { error: 'the uplot package is not installed: run npm install in the gymwire package' });
    };
  routes
    .add('/', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
    })
    .add('/viewer/app.js', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(app);
    })
    .add('/viewer/uplot.js', asset(uplot.js, 'text/javascript; charset=utf-8'))
    .add('/viewer/uplot.css', asset(uplot.css, 'text/css; charset=utf-8'))
    .add(
      '/api/events',
      guarded(core, (req, res) => serveEvents(core, req, res, opts.maxBacklogBytes)),
    )
    .add(
      '/api/envs',
      guarded(core, (_req, res) => {
        json(res, 200, { envs: core.registry.list().map(({ id, description, max_episode_steps, tags }) => ({ id, description, max_episode_steps, tags })) });
      }),
    )
    .add(
      '/api/sessions',
      guarded(core, (_req, res) => {
        json(res, 200, { sessions: core.listSessions() });
      }),
    )
    .add(
      '/api/sessions/*',
      guarded(core, (req, res) => session(core, req, res)),
    );
}

/** GET /api/sessions/:id and /api/sessions/:id/frame.png. */
async function session(core: ServerCore, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://viewer');
  const [, , , rawId, leaf] = url.pathname.split('/');
  let id: string;
  try {
    id = decodeURIComponent(rawId ?? '');
  } catch {
    return json(res, 404, { error: 'malformed session id in the path' });
  }
  const summary = core.listSessions().find((s) => s.session_id === id);
  const peek = core.peek(id);
  if (!summary || !peek) return json(res, 404, { error: `no live session ${id}` });
  if (leaf === undefined || leaf === '') {
    const renders = (peek.env.metadata.render_modes ?? []).includes('rgb_array') && peek.env.renderMode === 'rgb_array';
    return json(res, 200, {
      session: summary,
      frames: listFrames(peek.obs),
      can_render: renders,
      info: infoSummary(peek.info),
      metadata: { bev_channels: peek.env.metadata['bev_channels'] ?? null },
    });
  }
  if (leaf !== 'frame.png') return json(res, 404, { error: `unknown endpoint ${leaf}` });
  const key = url.searchParams.get('key') ?? 'render';
  let img = key === 'render' ? null : frameRgb(peek.obs, key);
  if (key === 'render') {
    const frame = await core.renderSession(id);
    if (frame instanceof Tensor && frame.dtype === 'uint8' && frame.shape.length === 3) {
      img = { data: frame.data as Uint8Array, width: frame.shape[1]!, height: frame.shape[0]!, channels: frame.shape[2] === 4 ? 4 : 3 };
    }
  }
  if (!img) return json(res, 404, { error: `session ${id} has no frame ${key}` });
  res.writeHead(200, { 'content-type': 'image/png', 'cache-control': 'no-store' }).end(await toPng(img));
}
