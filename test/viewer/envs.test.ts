/**
 * The viewer page in real headless Chromium (Debian's `chromium` via playwright-core) at 1280 px
 * while real clients step CartPole, NAVSIM, Bench2Drive and EVAC sessions: the charts, the episode
 * table and the action and observation panels show the values the sessions produced, updates
 * arrive pushed, pause and step back work, and nothing scrolls sideways. A screenshot of each env's
 * page is kept under test/viewer/artifacts/ (ignored by git; GYMWIRE_SCREENSHOT_DIR overrides).
 * Skipped, saying why, only when /usr/bin/chromium is absent.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { BrowserContext, Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connect } from '../../client/ts/client.ts';
import type { GymwireClient } from '../../client/ts/client.ts';
import { registerBench2Drive } from '../../envs/bench2drive/index.ts';
import { registerClassic } from '../../envs/classic/index.ts';
import { Registry } from '../../envs/core/registry.ts';
import { EVAC_ENV_ID, registerEvac } from '../../envs/evac/index.ts';
import type { WorldModelRuntime } from '../../envs/evac/runtime.ts';
import { registerNavsim } from '../../envs/navsim/index.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { startServer } from '../../server/index.ts';
import type { RunningServer } from '../../server/index.ts';
import { mountViewer } from '../../server/viewer/index.ts';
import { HAVE_CHROMIUM, launchChromium } from './chromium.ts';

const ARTIFACTS = process.env.GYMWIRE_SCREENSHOT_DIR ?? new URL('./artifacts/', import.meta.url).pathname;
const WIDTH = 1280;

/** What a session produced, as the client saw it. */
interface Produced {
  rewards: number[];
  actions: number[][];
  /** The newest step's vector observation leaves. */
  lastObs: Record<string, number[]>;
  episodes: { return: number; length: number }[];
}

/** The page's number formatting (static/app.js `num`). */
const shown = (x: number): string => (Number.isInteger(x) ? String(x) : x.toFixed(3));

async function stepSession(
  env: { step(a: unknown): Promise<{ obs: unknown; reward: number; terminated: boolean; truncated: boolean }>; reset(o?: object): Promise<unknown> },
  actions: unknown[],
  vector: (obs: unknown) => Record<string, number[]>,
  asNumbers: (a: unknown) => number[],
  opts: { untilEpisodes?: number } = {},
): Promise<Produced> {
  const p: Produced = { rewards: [], actions: [], lastObs: {}, episodes: [] };
  let ret = 0;
  let len = 0;
  for (const a of actions) {
    const r = await env.step(a);
    p.rewards.push(r.reward);
    p.actions.push(asNumbers(a));
    p.lastObs = vector(r.obs);
    ret += r.reward;
    len++;
    if (r.terminated || r.truncated) {
      p.episodes.push({ return: ret, length: len });
      ret = 0;
      len = 0;
      if (p.episodes.length === opts.untilEpisodes) break;
      if (p.rewards.length < actions.length) await env.reset();
    }
  }
  return p;
}

let srv: RunningServer;
let registry: Registry;
let runtime: WorldModelRuntime;
let client: GymwireClient;
let base: string;
let context: BrowserContext;
let profile: string;

beforeAll(async () => {
  registry = new Registry();
  registerClassic(registry);
  registerNavsim(registry);
  registerBench2Drive(registry);
  runtime = registerEvac(registry, { batchWindowMs: 1 });
  srv = await startServer({ port: 0, registry, mountRoutes: mountViewer });
  base = srv.url.replace('ws://', 'http://');
  client = await connect(srv.url);
  await mkdir(ARTIFACTS, { recursive: true });
  profile = await mkdtemp(join(tmpdir(), 'gymwire-chromium-envs-'));
  if (HAVE_CHROMIUM) {
    context = await launchChromium(profile, { viewport: { width: WIDTH, height: 900 } });
  }
}, 120_000);

afterAll(async () => {
  await context?.close();
  await client?.closeAll();
  await srv?.close();
  await runtime?.close();
  await registry?.close?.();
  if (profile) await rm(profile, { recursive: true, force: true });
});

/** Opens a session's page and checks its charts, tables and panels against what it produced. */
async function checkPage(sessionId: string, p: Produced, name: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${base}/?session=${sessionId}&frame_ms=100&interval_ms=100`);
  await page.waitForSelector(`tr.session.selected[data-session="${sessionId}"]`);
  await page.waitForFunction(
    (n) => (document.getElementById('chart-steps') as unknown as { uplot?: { data: number[][] } }).uplot?.data[0]?.length === n,
    p.rewards.length,
  );
  const data = await page.evaluate(() => {
    const chart = (id: string) => (document.getElementById(id) as unknown as { uplot: { data: (number | null)[][] } }).uplot.data;
    return { steps: chart('chart-steps'), episodes: chart('chart-episodes') };
  });
  expect(data.steps[1]).toEqual(p.rewards);
  expect(data.steps[2]).toEqual(splitReturns(p));
  expect(data.episodes[1]).toEqual(p.episodes.map((e) => e.return));
  const rows = await page.locator('#episodes tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  expect(rows.map((r) => [r[1], r[2]])).toEqual(
    p.episodes
      .map((e) => [shown(e.return), String(e.length)])
      .slice(-50)
      .reverse(),
  );
  const action = await page.locator('#action .num').allTextContents();
  expect(action).toEqual(p.actions[p.actions.length - 1]!.map(shown));
  for (const [key, values] of Object.entries(p.lastObs)) {
    const label = page.locator('#observation .vec', { hasText: `${key} [${values.length}]` });
    expect(await label.locator('.num').allTextContents(), key).toEqual(values.map(shown));
  }
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(WIDTH);
  await page.screenshot({ path: join(ARTIFACTS, `viewer-${name}.png`), fullPage: true });
  return page;
}

/** The running return per step, restarting after each finished episode. */
function splitReturns(p: Produced): number[] {
  const out: number[] = [];
  let acc = 0;
  let ends = p.episodes.map((e) => e.length);
  let len = 0;
  for (const r of p.rewards) {
    acc += r;
    len++;
    out.push(acc);
    if (ends.length && len === ends[0]) {
      ends = ends.slice(1);
      acc = 0;
      len = 0;
    }
  }
  return out;
}

const cartpoleVector = (obs: unknown) => ({ obs: (obs as Tensor).toNumbers() });

describe.skipIf(!HAVE_CHROMIUM)('viewer page per env in headless Chromium at 1280 px', () => {
  // A viewer listens while the sessions step (as when a user watches): only then are actions and
  // observations recorded for it.
  const listening = new AbortController();
  beforeAll(async () => {
    const events = await fetch(`${base}/api/events`, { signal: listening.signal });
    await events.body!.getReader().read();
  });
  afterAll(() => listening.abort());

  it('CartPole: reward/return chart, episode table, action and observation; pushed updates; pause and step back', async () => {
    const env = await client.make('gymwire/CartPole-v1', { render_mode: 'rgb_array' });
    await env.reset({ seed: 5 });
    const actions = Array.from({ length: 40 }, (_, i) => (i % 3 === 0 ? 1 : 0));
    const p = await stepSession(env, actions, cartpoleVector, (a) => [a as number]);
    expect(p.episodes.length).toBeGreaterThan(0);
    const page = await checkPage(env.sessionId, p, 'cartpole');
    await page.locator('[id="frame-render"] img[data-loaded]').waitFor({ timeout: 20_000 });

    // Pushed: one more step shows up without reloading.
    const r = await env.step(1);
    await page.waitForFunction((n) => (document.getElementById('chart-steps') as unknown as { uplot: { data: number[][] } }).uplot.data[0]!.length === n, 41);
    expect(await page.locator('#observation .num').allTextContents()).toEqual((r.obs as Tensor).toNumbers().map(shown));

    // Pause, then step back two steps: the panels show that step's action and observation.
    await page.locator('#pause').click();
    await page.locator('#back').click();
    await page.locator('#back').click();
    expect(await page.locator('#step-label').textContent()).toContain('step 39');
    expect(await page.locator('#action .num').allTextContents()).toEqual([String(actions[38])]);
    await env.step(0);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await page.locator('#step-label').textContent()).toContain('step 39');
    await page.locator('#pause').click();
    await page.waitForFunction(() => document.getElementById('step-label')?.textContent?.includes('step 42'));
    await page.close();
  }, 90_000);

  it('CartPole as the README makes it (no render_mode): a state plot instead of a frame, one episode charted', async () => {
    const env = await client.make('gymwire/CartPole-v1');
    await env.reset({ seed: 5 });
    // Pushing one way ends the first episode within a few dozen steps; stop right there.
    const p = await stepSession(
      env,
      Array.from({ length: 60 }, () => 1),
      cartpoleVector,
      (a) => [a as number],
      { untilEpisodes: 1 },
    );
    expect(p.episodes.length).toBe(1);
    const page = await checkPage(env.sessionId, p, 'cartpole-no-render');
    await page.waitForSelector('#state-plot:not([hidden])');
    const state = await page.evaluate(() => (document.getElementById('chart-state') as unknown as { uplot: { data: (number | null)[][] } }).uplot.data);
    expect(state.length).toBe(1 + 4);
    expect(state[0]!.length).toBe(p.rewards.length);
    // The one-episode chart draws its single point (uPlot shows points where the data is sparse).
    const pointsShown = await page.evaluate(() => {
      const u = (document.getElementById('chart-episodes') as unknown as { uplot: { series: { points: { show: unknown } }[] } }).uplot;
      const show = u.series[1]!.points.show;
      return typeof show === 'function' ? (show as (...a: unknown[]) => boolean)(u, 1, 0, 0) : show;
    });
    expect(pointsShown).toBe(true);
    await page.close();
  }, 90_000);

  it('NAVSIM: the episode table shows each scene’s PDMS score; camera and BEV frames', async () => {
    const env = await client.make('gymwire/NavsimEnv-v1', { cameras: true, bev: true, camera_width: 256, camera_height: 144 });
    await env.reset({ seed: 3 });
    const plan = (k: number) => Tensor.from('float32', [8, 3], Array.from({ length: 8 }, (_, i) => [(i + 1) * k, 0, 0]).flat());
    const scores: number[] = [];
    const p: Produced = { rewards: [], actions: [], lastObs: {}, episodes: [] };
    for (const k of [1.5, 0.5, 2.5]) {
      const a = plan(k);
      const r = await env.step(a);
      scores.push(r.info['score'] as number);
      p.rewards.push(r.reward);
      p.actions.push(a.toNumbers());
      p.episodes.push({ return: r.reward, length: 1 });
      await env.reset();
    }
    const page = await checkPage(env.sessionId, p, 'navsim');
    const scoreCells = await page.locator('#episodes tbody tr td:nth-child(5)').allTextContents();
    expect(scoreCells).toEqual(scores.map(shown).reverse());
    await page.locator('[id="frame-cameras.cam_f0"] img[data-loaded]').waitFor({ timeout: 20_000 });
    await page.locator('[id="frame-bev"] img[data-loaded]').waitFor({ timeout: 20_000 });
    await page.close();
  }, 90_000);

  it('Bench2Drive: controls as the action, speed/IMU/GNSS as the observation, the front camera', async () => {
    const env = await client.make('gymwire/Bench2Drive-v0', { cameras: ['CAM_FRONT'], camera_width: 160, camera_height: 90, route: 'HighwayCutIn_0' });
    await env.reset({ seed: 0 });
    const actions = Array.from({ length: 12 }, (_, i) => Tensor.from('float32', [3], [0.6, i % 2 ? 0.05 : -0.05, 0]));
    const vector = (obs: unknown) => {
      const out: Record<string, number[]> = {};
      for (const [k, v] of Object.entries(obs as Record<string, unknown>)) if (v instanceof Tensor && v.dtype !== 'uint8') out[k] = v.toNumbers();
      return out;
    };
    const p = await stepSession(env, actions, vector, (a) => (a as Tensor).toNumbers());
    expect(Object.keys(p.lastObs)).toEqual(expect.arrayContaining(['speed', 'imu', 'gnss']));
    const page = await checkPage(env.sessionId, p, 'bench2drive');
    await page.locator('[id="frame-rgb.CAM_FRONT"] img[data-loaded]').waitFor({ timeout: 30_000 });
    await page.close();
  }, 120_000);

  it('EVAC: action chunks as numbers, the robot state, the 64×64 frame scaled up to be seen', async () => {
    const env = await client.make(EVAC_ENV_ID);
    await env.reset({ seed: 2 });
    const chunk = (v: number) => Tensor.from('float32', [8, 7], Array.from({ length: 8 }, () => [v, v, v, 0, 0, 0, -1]).flat());
    const p = await stepSession(
      env,
      [chunk(0.2), chunk(-0.1), chunk(0.3)],
      (obs) => ({ state: ((obs as Record<string, Tensor>)['state'] as Tensor).toNumbers() }),
      (a) => (a as Tensor).toNumbers(),
    );
    const page = await checkPage(env.sessionId, p, 'evac');
    const img = page.locator('[id="frame-full_image"] img[data-loaded]');
    await img.waitFor({ timeout: 20_000 });
    const box = await img.boundingBox();
    expect(await img.evaluate((i: HTMLImageElement) => i.naturalWidth)).toBe(64);
    expect(box!.width).toBeGreaterThanOrEqual(256);
    const shot = await img.screenshot();
    expect((await sharp(shot).metadata()).width).toBeGreaterThanOrEqual(256);
    await page.close();
  }, 90_000);
});
