/**
 * The live viewer served at `/` by `gymwire serve`: a static page (no build step, nothing fetched
 * from elsewhere) polling JSON endpoints over the server's read-only observer API.
 *
 *   GET /                                   the page (static/index.html + /viewer/app.js)
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
import type { ServerResponse } from 'node:http';

import type { ServerCore } from '../core.ts';
import type { HttpRoutes } from '../http.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { frameRgb, infoSummary, listFrames, toPng } from './frames.ts';

const STATIC = new URL('./static/', import.meta.url);

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body));
}

export function mountViewer(routes: HttpRoutes, core: ServerCore): void {
  const page = readFileSync(new URL('index.html', STATIC));
  const app = readFileSync(new URL('app.js', STATIC));
  routes
    .add('/', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
    })
    .add('/viewer/app.js', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(app);
    })
    .add('/api/envs', (_req, res) => {
      json(res, 200, { envs: core.registry.list().map(({ id, description, max_episode_steps, tags }) => ({ id, description, max_episode_steps, tags })) });
    })
    .add('/api/sessions', (_req, res) => {
      json(res, 200, { sessions: core.listSessions() });
    })
    .add('/api/sessions/*', async (req, res) => {
      const url = new URL(req.url ?? '/', 'http://viewer');
      const [, , , rawId, leaf] = url.pathname.split('/');
      const id = decodeURIComponent(rawId ?? '');
      const summary = core.listSessions().find((s) => s.session_id === id);
      const peek = core.peek(id);
      if (!summary || !peek) return json(res, 404, { error: `no live session ${id}` });
      if (leaf === undefined || leaf === '') {
        const renders = (peek.env.metadata.render_modes ?? []).includes('rgb_array') && peek.env.renderMode === 'rgb_array';
        return json(res, 200, { session: summary, frames: listFrames(peek.obs), can_render: renders, info: infoSummary(peek.info), metadata: { bev_channels: peek.env.metadata['bev_channels'] ?? null } });
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
    });
}
