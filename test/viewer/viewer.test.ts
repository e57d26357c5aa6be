/**
 * The live viewer in real headless Chromium (Debian's `chromium`, driven by playwright-core; nothing
 * downloaded): the page lists envs and live sessions and shows a NAVSIM session's camera and BEV
 * frames. Skipped, saying why, only when /usr/bin/chromium is absent.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import sharp from 'sharp';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connect } from '../../client/ts/client.ts';
import type { GymwireClient } from '../../client/ts/client.ts';
import { registerClassic } from '../../envs/classic/index.ts';
import { Registry } from '../../envs/core/registry.ts';
import { registerNavsim } from '../../envs/navsim/index.ts';
import { startServer } from '../../server/index.ts';
import type { RunningServer } from '../../server/index.ts';
import { mountViewer } from '../../server/viewer/index.ts';
import { HAVE_CHROMIUM, launchChromium } from './chromium.ts';

let srv: RunningServer;
let client: GymwireClient;
let httpBase: string;
let profile: string;
let navsimSession: string;
let cartpoleSession: string;

beforeAll(async () => {
  const registry = new Registry();
  registerClassic(registry);
  registerNavsim(registry);
  srv = await startServer({ port: 0, registry, mountRoutes: mountViewer });
  httpBase = srv.url.replace('ws://', 'http://');
  client = await connect(srv.url);
  const nav = await client.make('gymwire/NavsimEnv-v1', { cameras: true, bev: true, camera_width: 256, camera_height: 144 });
  await nav.reset({ seed: 3 });
  navsimSession = nav.sessionId;
  const cp = await client.make('gymwire/CartPole-v1', { render_mode: 'rgb_array' });
  await cp.reset({ seed: 1 });
  for (let i = 0; i < 5; i++) await cp.step(i % 2);
  cartpoleSession = cp.sessionId;
  profile = await mkdtemp(join(tmpdir(), 'gymwire-chromium-'));
});

afterAll(async () => {
  await client?.closeAll();
  await srv?.close();
  if (profile) await rm(profile, { recursive: true, force: true });
});

describe('viewer JSON endpoints', () => {
  it('list envs and sessions, describe a session and serve its frames as PNG', async () => {
    const envs = (await (await fetch(`${httpBase}/api/envs`)).json()) as { envs: { id: string }[] };
    expect(envs.envs.map((e) => e.id)).toContain('gymwire/NavsimEnv-v1');
    const sessions = (await (await fetch(`${httpBase}/api/sessions`)).json()) as { sessions: { session_id: string; steps: number }[] };
    expect(sessions.sessions.find((s) => s.session_id === cartpoleSession)?.steps).toBe(5);
    const view = (await (await fetch(`${httpBase}/api/sessions/${navsimSession}`)).json()) as { frames: { key: string; kind: string; width: number }[] };
    expect(view.frames).toContainEqual({ key: 'cameras.cam_f0', kind: 'camera', width: 256, height: 144 });
    expect(view.frames.some((f) => f.kind === 'bev')).toBe(true);
    const png = await fetch(`${httpBase}/api/sessions/${navsimSession}/frame.png?key=cameras.cam_f0`);
    expect(png.headers.get('content-type')).toBe('image/png');
    const meta = await sharp(Buffer.from(await png.arrayBuffer())).metadata();
    expect([meta.width, meta.height]).toEqual([256, 144]);
    const render = await fetch(`${httpBase}/api/sessions/${cartpoleSession}/frame.png?key=render`);
    expect(render.status).toBe(200);
    expect((await fetch(`${httpBase}/api/sessions/nope`)).status).toBe(404);
    expect((await fetch(`${httpBase}/api/sessions/${navsimSession}/frame.png?key=nope`)).status).toBe(404);
  });
});

describe('viewer on a server with a token', () => {
  let guarded: RunningServer;
  let base: string;
  let sessionId: string;
  let owner: GymwireClient;
  beforeAll(async () => {
    const registry = new Registry();
    registerClassic(registry);
    guarded = await startServer({ port: 0, registry, token: 's3cret', mountRoutes: mountViewer });
    base = guarded.url.replace('ws://', 'http://');
    owner = await connect(guarded.url, { token: 's3cret' });
    const env = await owner.make('gymwire/CartPole-v1', { render_mode: 'rgb_array' });
    await env.reset({ seed: 1 });
    sessionId = env.sessionId;
  });
  afterAll(async () => {
    await owner?.closeAll();
    await guarded?.close();
  });

  it('shows session data only to holders of the token (header or ?token=); the page itself stays public', async () => {
    expect((await fetch(`${base}/`)).status).toBe(200);
    for (const path of ['/api/envs', '/api/sessions', `/api/sessions/${sessionId}`, `/api/sessions/${sessionId}/frame.png?key=render`]) {
      const refused = await fetch(`${base}${path}`);
      expect(refused.status, path).toBe(401);
      expect(refused.headers.get('www-authenticate')).toContain('Bearer');
      expect((await fetch(`${base}${path}`, { headers: { authorization: 'Bearer wrong' } })).status, path).toBe(401);
      expect((await fetch(`${base}${path}`, { headers: { authorization: 'Bearer s3cret' } })).status, path).toBe(200);
      expect((await fetch(`${base}${path}${path.includes('?') ? '&' : '?'}token=s3cret`)).status, path).toBe(200);
    }
    expect((await fetch(`${base}/api/sessions/%E0%A4%A?token=s3cret`)).status).toBe(404);
  });

  it.skipIf(!HAVE_CHROMIUM)(
    'in Chromium: /?token= lists the sessions, without it the page says what is missing',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'gymwire-chromium-token-'));
      const context = await launchChromium(dir);
      try {
        const page = await context.newPage();
        await page.goto(`${base}/?token=s3cret&session=${sessionId}`);
        await page.waitForSelector(`tr.session[data-session="${sessionId}"]`);
        await page.locator('[id="frame-render"] img[data-loaded]').waitFor({ timeout: 20_000 });
        await page.goto(`${base}/`);
        await page.waitForFunction(() => document.getElementById('status')?.textContent?.includes('auth token'));
      } finally {
        await context.close();
        await rm(dir, { recursive: true, force: true });
      }
    },
    60_000,
  );
});

describe.skipIf(!HAVE_CHROMIUM)('viewer in headless Chromium', () => {
  let context: BrowserContext;
  beforeAll(async () => {
    context = await launchChromium(profile, { viewport: { width: 1400, height: 1000 } });
  }, 60_000);
  afterAll(async () => {
    await context?.close();
  });

  it('shows live sessions and a NAVSIM camera frame; screenshot', async () => {
    const page = await context.newPage();
    await page.goto(`${httpBase}/?session=${navsimSession}&frame_ms=300`);
    await page.waitForSelector(`tr.session[data-session="${navsimSession}"]`);
    expect(await page.locator('#envs li').count()).toBeGreaterThanOrEqual(3);
    const cam = page.locator('[id="frame-cameras.cam_f0"] img[data-loaded]');
    await cam.waitFor({ timeout: 20_000 });
    await page.locator('[id="frame-bev"] img[data-loaded]').waitFor({ timeout: 20_000 });
    expect(await cam.evaluate((img: HTMLImageElement) => [img.naturalWidth, img.naturalHeight])).toEqual([256, 144]);
    // The camera image as the browser drew it: a real scene, not a blank frame.
    const shot = await cam.screenshot();
    const { data, info } = await sharp(shot).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    const colours = new Set<number>();
    for (let p = 0; p < info.width * info.height; p += 7) colours.add((data[p * 3]! << 16) | (data[p * 3 + 1]! << 8) | data[p * 3 + 2]!);
    expect(colours.size).toBeGreaterThan(20);
    const full = await page.screenshot({ fullPage: true });
    const out = process.env.GYMWIRE_SCREENSHOT_DIR ?? profile;
    await writeFile(join(out, 'viewer-navsim.png'), full);
    expect((await sharp(full).metadata()).width).toBe(1400);
    // Picking another session swaps the panel to its frames.
    await page.locator(`tr.session[data-session="${cartpoleSession}"]`).click();
    await page.locator('[id="frame-render"] img[data-loaded]').waitFor({ timeout: 20_000 });
    expect(await page.locator('#session-title').textContent()).toContain('CartPole');
  }, 60_000);
});
