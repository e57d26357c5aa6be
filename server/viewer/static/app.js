// The gymwire viewer: listens to /api/events (Server-Sent Events, server/viewer/events.ts) and draws
// with uPlot (served from its npm package at /viewer/uplot.js). No framework, no build.
/* global document, location, history, fetch, URLSearchParams, EventSource, window */
const params = new URLSearchParams(location.search);
let selected = params.get('session');
const FRAME_MS = Number(params.get('frame_ms') ?? 500);
const INTERVAL_MS = Number(params.get('interval_ms') ?? 250);
/** Recent frames kept in the page for stepping back (object URLs of fetched PNGs). */
const FRAME_HISTORY = 60;
/** Steps kept in the page for charts and stepping back. */
const STEP_HISTORY = 1000;

const $ = (id) => document.getElementById(id);
const el = (tag, props = {}, ...children) => {
  const e = Object.assign(document.createElement(tag), props);
  for (const c of children) e.append(c);
  return e;
};
const num = (x, d = 3) => (typeof x === 'number' ? (Number.isInteger(x) ? String(x) : x.toFixed(d)) : x === null || x === undefined ? '–' : String(x));

// A server started with --token shows its data to holders of the token: open the page as /?token=T.
const TOKEN = params.get('token');
const withToken = (path) => (TOKEN ? `${path}${path.includes('?') ? '&' : '?'}token=${encodeURIComponent(TOKEN)}` : path);
const AUTH_MESSAGE = 'this server needs its auth token: open the viewer as /?token=TOKEN';

async function getJson(path) {
  const res = await fetch(path, { cache: 'no-store', headers: TOKEN ? { authorization: `Bearer ${TOKEN}` } : {} });
  if (res.status === 401) throw Object.assign(new Error(AUTH_MESSAGE), { unauthorized: true });
  if (!res.ok) throw new Error(`${path}: ${res.status}`);
  return res.json();
}

// ---------------------------------------------------------------------------------------------
// State of the selected session, kept in the page so that it can pause and step back.

const view = {
  steps: [], // StepRecord, oldest first
  episodes: [], // EpisodeRecord, oldest first
  frames: [], // { seq, images: Map<key, objectURL> }, oldest first
  frameRefs: [], // FrameRef of the latest observation
  canRender: false,
  actionShape: null,
  paused: false,
  /** The step shown while paused (a seq), or null for the newest. */
  cursor: null,
  lastFrameFetch: 0,
  fetching: false,
};
window.gymwireViewer = view;

function resetView() {
  for (const f of view.frames) for (const url of f.images.values()) URL.revokeObjectURL(url);
  Object.assign(view, { steps: [], episodes: [], frames: [], frameRefs: [], canRender: false, cursor: null, lastFrameFetch: 0 });
  $('frames').replaceChildren();
}

// ---------------------------------------------------------------------------------------------
// Charts (uPlot)

const charts = {};
const COLOURS = { reward: '#4ea1ff', return: '#f5b041', score: '#58d68d' };
const STATE_COLOURS = ['#4ea1ff', '#f5b041', '#58d68d', '#ec7063', '#af7ac5', '#48c9b0', '#f4d03f', '#aab7b8'];
/** At most this many observation values are plotted when a session has no frame. */
const STATE_SERIES = 8;

function chart(id, series) {
  if (!window.uPlot) return null;
  if (charts[id]) return charts[id];
  const host = $(id);
  const width = Math.max(200, host.clientWidth - 4);
  const u = new window.uPlot(
    {
      width,
      height: 170,
      legend: { live: true },
      scales: { x: { time: false } },
      // Steps and episodes are counted: whole-number ticks on x.
      axes: [
        { stroke: '#8a94a3', grid: { stroke: '#2a313b' }, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 1e5, 1e6] },
        { stroke: '#8a94a3', grid: { stroke: '#2a313b' } },
      ],
      series: [
        { label: series[0] },
        // No `points` override: uPlot draws them where the data is sparse, so one episode is one dot.
        ...series.slice(1).map((label, i) => ({ label, stroke: COLOURS[label.split(' ')[0]] ?? STATE_COLOURS[i % STATE_COLOURS.length], width: 1.5 })),
      ],
    },
    [[], ...series.slice(1).map(() => [])],
    host,
  );
  host.uplot = u; // read by the browser test
  charts[id] = u;
  return u;
}

function drawCharts() {
  if (!window.uPlot) {
    $('charts-missing').hidden = false;
    return;
  }
  const s = chart('chart-steps', ['step', 'reward', 'return']);
  s.setData([view.steps.map((x) => x.seq), view.steps.map((x) => x.reward), view.steps.map((x) => x.return)]);
  drawStatePlot();
  const hasScore = view.episodes.some((e) => e.score !== null);
  const e = chart('chart-episodes', ['episode', 'return', 'score']);
  e.setData([view.episodes.map((x) => x.episode), view.episodes.map((x) => x.return), view.episodes.map((x) => (hasScore ? x.score : null))]);
}

/**
 * Without frames (an env made without render_mode, or one with no camera) the observation is drawn
 * over the steps instead: the first vector observation's values, one line each.
 */
function drawStatePlot() {
  const noFrames = !view.canRender && view.frameRefs.length === 0;
  const first = view.steps.find((s) => Object.keys(s.obs).length > 0);
  const [label, values] = first ? Object.entries(first.obs)[0] : [null, []];
  $('state-plot').hidden = !noFrames || !label;
  if ($('state-plot').hidden) return;
  const dims = Math.min(STATE_SERIES, values.length);
  const id = 'chart-state';
  const names = Array.from({ length: dims }, (_, i) => `${label}[${i}]`);
  if (charts[id] && charts[id].series.length !== dims + 1) {
    charts[id].destroy();
    delete charts[id];
  }
  const u = chart(id, ['step', ...names]);
  const rows = view.steps.filter((s) => Array.isArray(s.obs[label]));
  u.setData([rows.map((s) => s.seq), ...names.map((_, i) => rows.map((s) => s.obs[label][i]))]);
}

window.addEventListener('resize', () => {
  for (const [id, u] of Object.entries(charts)) u.setSize({ width: Math.max(200, $(id).clientWidth - 4), height: 170 });
});

// ---------------------------------------------------------------------------------------------
// Panels

function renderSessions(sessions) {
  $('no-sessions').hidden = sessions.length > 0;
  $('sessions').tBodies[0].replaceChildren(
    ...sessions.map((s) => {
      const tr = el(
        'tr',
        { className: `session${s.session_id === selected ? ' selected' : ''}`, title: `${s.session_id} · ${s.client}` },
        el('td', { textContent: s.session_id.slice(0, 8) }),
        el('td', { textContent: s.env_id.replace(/^gymwire\//, '') }),
        el('td', { textContent: String(s.steps) }),
        el('td', { textContent: String(s.episodes) }),
        el('td', { textContent: num(s.episode_return, 2) }),
        el('td', { textContent: num(s.steps_per_s, 1) }),
      );
      tr.dataset.session = s.session_id;
      tr.onclick = () => select(s.session_id);
      return tr;
    }),
  );
}

function renderOverview(o) {
  $('overview-summary').textContent = `${o.sessions} session(s) · ${num(o.steps_per_s, 1)} steps/s · ${o.episodes_per_min} episodes/min`;
  $('overview').tBodies[0].replaceChildren(
    ...o.envs.map((e) =>
      el(
        'tr',
        {},
        el('td', { textContent: e.env_id.replace(/^gymwire\//, '') }),
        el('td', { textContent: String(e.sessions) }),
        el('td', { textContent: String(e.episodes_per_min) }),
        el('td', { textContent: e.mean_return === null ? '–' : `${num(e.mean_return, 2)} ± ${num(e.std_return, 2)}` }),
        el('td', { textContent: num(e.mean_score, 3) }),
      ),
    ),
  );
  // One line per error code, the most frequent first; the conformance suite's probes apart.
  const byCount = (counts) =>
    Object.entries(counts ?? {})
      .filter(([, n]) => n > 0)
      .sort((a, b) => b[1] - a[1]);
  const codeItems = (rows) => rows.map(([code, n]) => el('li', {}, el('code', { textContent: code }), ` ${n}`));
  const errors = byCount(o.errors);
  $('errors').textContent = errors.length ? '' : 'no errors';
  $('error-codes').replaceChildren(...codeItems(errors));
  const probes = byCount(o.conformance_errors);
  $('conformance-errors').hidden = !probes.length;
  $('conformance-error-codes').replaceChildren(...codeItems(probes));
}

/** Labelled number lists; a list whose shape has rows (an action chunk, poses) is laid out one row per line. */
function numbersPanel(host, entries, shapes = {}) {
  host.replaceChildren(
    ...entries.map(([label, values]) => {
      const shape = shapes[label];
      const perRow = shape && shape.length >= 2 && shape.reduce((a, b) => a * b, 1) === values.length ? shape[shape.length - 1] : values.length;
      const rows = [];
      for (let r = 0; r < values.length; r += perRow) {
        rows.push(
          el(
            'div',
            { className: 'vec-values' },
            ...values.slice(r, r + perRow).map((v, i) => el('span', { className: 'num', title: `${label}[${r + i}]`, textContent: num(v) })),
          ),
        );
      }
      return el(
        'div',
        { className: 'vec' },
        el('div', { className: 'vec-label', textContent: `${label} [${shape && perRow !== values.length ? shape.join('×') : values.length}]` }),
        ...rows,
      );
    }),
  );
}

function shownStep() {
  if (view.steps.length === 0) return null;
  if (view.cursor === null) return view.steps[view.steps.length - 1];
  return view.steps.find((s) => s.seq === view.cursor) ?? view.steps[view.steps.length - 1];
}

/** The newest captured frame at or before `seq`. */
function frameAt(seq) {
  for (let i = view.frames.length - 1; i >= 0; i--) if (view.frames[i].seq <= seq) return view.frames[i];
  return view.frames[0] ?? null;
}

function renderStep() {
  const step = shownStep();
  $('step-label').textContent = step ? `step ${step.seq} · episode ${step.episode}${view.paused ? ' · paused' : ''}` : 'no steps yet';
  $('step-reward').textContent = step ? `reward ${num(step.reward)} · return ${num(step.return)}` : '';
  numbersPanel($('action'), step && step.action ? [['action', step.action]] : [], { action: view.actionShape });
  $('no-action').hidden = Boolean(step && step.action);
  numbersPanel($('observation'), step ? Object.entries(step.obs) : []);
  $('no-observation').hidden = Boolean(step && Object.keys(step.obs).length);
  const frame = step ? frameAt(step.seq) : view.frames[view.frames.length - 1];
  if (frame) {
    for (const [key, url] of frame.images) {
      const fig = frameFigure(key);
      const img = fig.querySelector('img');
      if (img.src !== url) img.src = url;
      fig.querySelector('figcaption').textContent = `${fig.dataset.caption} · step ${frame.seq}`;
    }
  }
  $('episodes').tBodies[0].replaceChildren(
    ...view.episodes
      .slice(-50)
      .reverse()
      .map((e) =>
        el(
          'tr',
          {},
          el('td', { textContent: String(e.episode) }),
          el('td', { textContent: num(e.return) }),
          el('td', { textContent: String(e.length) }),
          el('td', { textContent: e.reason }),
          el('td', { textContent: e.score === null ? '–' : `${num(e.score)}`, title: e.score_name ?? '' }),
        ),
      ),
  );
  $('no-episodes').hidden = view.episodes.length > 0;
}

/** One <figure> per frame key; images are scaled up (nearest neighbour) to at least 256 px wide. */
function frameFigure(key) {
  const id = `frame-${key}`;
  let fig = document.getElementById(id);
  if (!fig) {
    const ref = view.frameRefs.find((f) => f.key === key);
    const caption = ref ? `${ref.kind}: ${key} (${ref.width}×${ref.height})` : 'render()';
    const img = el('img', { alt: caption });
    img.onload = () => {
      img.dataset.loaded = String(Number(img.dataset.loaded ?? 0) + 1);
      img.dataset.width = String(img.naturalWidth);
      const scale = img.naturalWidth < 256 ? Math.min(8, Math.ceil(256 / img.naturalWidth)) : 1;
      img.style.width = `${img.naturalWidth * scale}px`;
    };
    fig = el('figure', { id }, img, el('figcaption', { textContent: caption }));
    fig.dataset.key = key;
    fig.dataset.caption = caption;
    $('frames').append(fig);
  }
  return fig;
}

/** Fetches the current frames of the selected session into the page's frame ring. */
async function captureFrames(seq) {
  const keys = view.frameRefs.map((f) => f.key);
  if (view.canRender) keys.push('render');
  if (keys.length === 0 || view.fetching) return;
  view.fetching = true;
  view.lastFrameFetch = Date.now();
  const id = selected;
  try {
    const images = new Map();
    for (const key of keys) {
      const res = await fetch(withToken(`/api/sessions/${encodeURIComponent(id)}/frame.png?key=${encodeURIComponent(key)}&t=${Date.now()}`), {
        cache: 'no-store',
      });
      if (res.ok) images.set(key, URL.createObjectURL(await res.blob()));
    }
    if (id !== selected) return;
    view.frames.push({ seq, images });
    while (view.frames.length > FRAME_HISTORY) for (const url of view.frames.shift().images.values()) URL.revokeObjectURL(url);
    if (!view.paused) renderStep();
  } finally {
    view.fetching = false;
  }
}

// ---------------------------------------------------------------------------------------------
// Pause and step back

function setPaused(paused) {
  view.paused = paused;
  view.cursor = paused ? (shownStep()?.seq ?? null) : null;
  $('pause').textContent = paused ? 'Resume' : 'Pause';
  renderStep();
}

function move(delta) {
  if (!view.paused) setPaused(true);
  const i = view.steps.findIndex((s) => s.seq === view.cursor);
  const next = view.steps[Math.max(0, Math.min(view.steps.length - 1, (i < 0 ? view.steps.length - 1 : i) + delta))];
  if (next) view.cursor = next.seq;
  renderStep();
}

$('pause').onclick = () => setPaused(!view.paused);
$('back').onclick = () => move(-1);
$('forward').onclick = () => move(1);
document.addEventListener('keydown', (e) => {
  if (!selected) return;
  if (e.key === 'ArrowLeft') move(-1);
  else if (e.key === 'ArrowRight') move(1);
  else if (e.key === ' ' && e.target === document.body) {
    e.preventDefault();
    setPaused(!view.paused);
  }
});

// ---------------------------------------------------------------------------------------------
// The event stream

let source = null;

function onUpdate(u) {
  renderSessions(u.sessions);
  renderOverview(u.overview);
  $('status').textContent = `${u.sessions.length} live session(s) · ${new Date(u.t_ms).toLocaleTimeString()}`;
  if (!selected) return;
  if (u.session_closed) {
    $('session-title').textContent = `${selected}: closed`;
    return;
  }
  const d = u.session;
  if (!d) return;
  $('pick').hidden = true;
  $('session-view').hidden = false;
  $('session-title').replaceChildren(el('strong', { textContent: d.env_id }), ` · ${d.session_id}`);
  if (d.full) resetView();
  view.steps.push(...d.steps);
  if (view.steps.length > STEP_HISTORY) view.steps.splice(0, view.steps.length - STEP_HISTORY);
  view.episodes.push(...d.episodes);
  view.frameRefs = d.frames;
  view.canRender = d.can_render;
  view.actionShape = d.action_shape;
  $('info').textContent = JSON.stringify(d.info, null, 1);
  $('bev-channels').textContent = d.bev_channels ? `BEV channels: ${d.bev_channels.join(', ')}` : '';
  if (view.paused) return;
  drawCharts();
  renderStep();
  const newest = view.steps[view.steps.length - 1]?.seq ?? 0;
  const captured = view.frames[view.frames.length - 1]?.seq ?? -1;
  if (newest !== captured && Date.now() - view.lastFrameFetch >= FRAME_MS) void captureFrames(newest);
  else if (view.frames.length === 0) void captureFrames(newest);
}

function listen() {
  source?.close();
  const query = new URLSearchParams({ interval_ms: String(INTERVAL_MS) });
  if (selected) query.set('session', selected);
  source = new EventSource(withToken(`/api/events?${query}`));
  source.addEventListener('update', (e) => onUpdate(JSON.parse(e.data)));
  source.onerror = () => {
    if (source.readyState !== EventSource.CLOSED) {
      $('status').textContent = 'reconnecting…';
      return;
    }
    // A refused stream (401) closes for good: say why.
    getJson('/api/envs').then(
      () => setTimeout(listen, 1000),
      (err) => ($('status').textContent = err.unauthorized ? err.message : `server unreachable (${err.message})`),
    );
  };
}

function select(id) {
  selected = id;
  const url = new URL(location.href);
  url.searchParams.set('session', id);
  history.replaceState(null, '', url);
  resetView();
  if (view.paused) setPaused(false);
  listen();
}

async function loadEnvs() {
  const { envs } = await getJson('/api/envs');
  $('envs').replaceChildren(...envs.map((e) => el('li', {}, el('code', { textContent: e.id }), ` — ${e.description}`)));
}

loadEnvs().catch(() => {});
listen();
