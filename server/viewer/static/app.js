// The gymwire viewer: polls the JSON endpoints of server/viewer/index.ts. No framework, no build.
/* global document, location, history, fetch, Image, URLSearchParams, setInterval */
const params = new URLSearchParams(location.search);
let selected = params.get('session');
const FRAME_MS = Number(params.get('frame_ms') ?? 500);

const $ = (id) => document.getElementById(id);
const el = (tag, props = {}, ...children) => {
  const e = Object.assign(document.createElement(tag), props);
  for (const c of children) e.append(c);
  return e;
};
const num = (x, d = 2) => (typeof x === 'number' ? (Number.isInteger(x) ? String(x) : x.toFixed(d)) : String(x));

// A server started with --token shows its data to holders of the token: open the page as /?token=T.
const TOKEN = params.get('token');
const withToken = (path) => (TOKEN ? `${path}${path.includes('?') ? '&' : '?'}token=${encodeURIComponent(TOKEN)}` : path);

async function getJson(path) {
  const res = await fetch(path, { cache: 'no-store', headers: TOKEN ? { authorization: `Bearer ${TOKEN}` } : {} });
  if (res.status === 401) throw Object.assign(new Error('this server needs its auth token: open the viewer as /?token=TOKEN'), { unauthorized: true });
  if (!res.ok) throw new Error(`${path}: ${res.status}`);
  return res.json();
}

async function loadEnvs() {
  const { envs } = await getJson('/api/envs');
  $('envs').replaceChildren(...envs.map((e) => el('li', {}, el('code', { textContent: e.id }), ` — ${e.description}`)));
}

function renderSessions(sessions) {
  $('no-sessions').hidden = sessions.length > 0;
  $('sessions').tBodies[0].replaceChildren(
    ...sessions.map((s) => {
      const tr = el(
        'tr',
        { className: `session${s.session_id === selected ? ' selected' : ''}` },
        el('td', { textContent: s.session_id.slice(0, 12) }),
        el('td', { textContent: s.env_id }),
        el('td', { textContent: s.client }),
        el('td', { textContent: String(s.steps) }),
        el('td', { textContent: String(s.episodes) }),
        el('td', { textContent: num(s.episode_return) }),
      );
      tr.dataset.session = s.session_id;
      tr.onclick = () => select(s.session_id);
      return tr;
    }),
  );
}

function select(id) {
  selected = id;
  const url = new URL(location.href);
  url.searchParams.set('session', id);
  history.replaceState(null, '', url);
  $('frames').replaceChildren();
  refreshSession();
}

/** One <figure> per frame; the <img> is reloaded in place, swapping only once the new frame decoded. */
function frameFigure(key, caption) {
  const id = `frame-${key}`;
  let fig = document.getElementById(id);
  if (!fig) {
    fig = el('figure', { id }, el('img', { alt: caption }), el('figcaption', { textContent: caption }));
    fig.dataset.key = key;
    $('frames').append(fig);
  }
  const img = fig.querySelector('img');
  const next = new Image();
  next.onload = () => {
    img.src = next.src;
    img.dataset.loaded = String(Number(img.dataset.loaded ?? 0) + 1);
    img.dataset.width = String(next.naturalWidth);
  };
  next.src = withToken(`/api/sessions/${encodeURIComponent(selected)}/frame.png?key=${encodeURIComponent(key)}&t=${Date.now()}`);
  return fig;
}

async function refreshSession() {
  if (!selected) return;
  let view;
  try {
    view = await getJson(`/api/sessions/${encodeURIComponent(selected)}`);
  } catch {
    $('session-title').textContent = `${selected}: closed`;
    return;
  }
  $('pick').hidden = true;
  $('session-view').hidden = false;
  const s = view.session;
  $('session-title').replaceChildren(el('strong', { textContent: s.env_id }), ` · ${s.session_id}`);
  const keys = new Set();
  for (const f of view.frames) {
    keys.add(f.key);
    frameFigure(f.key, `${f.kind}: ${f.key} (${f.width}×${f.height})`);
  }
  if (view.can_render) {
    keys.add('render');
    frameFigure('render', 'render()');
  }
  for (const fig of [...$('frames').children]) if (!keys.has(fig.dataset.key)) fig.remove();
  const rows = [
    ['steps', s.steps],
    ['episodes', s.episodes],
    ['episode return', s.episode_return],
    ['last reward', s.last_reward],
    ['client', s.client],
    ['idle (s)', (Date.now() - s.last_active_ms) / 1000],
  ];
  if (view.metadata.bev_channels) rows.push(['bev channels', view.metadata.bev_channels.join(', ')]);
  $('metrics').tBodies[0].replaceChildren(...rows.map(([k, v]) => el('tr', {}, el('th', { textContent: k }), el('td', { textContent: num(v) }))));
  $('info').textContent = JSON.stringify(view.info, null, 1);
}

async function tick() {
  try {
    const { sessions } = await getJson('/api/sessions');
    renderSessions(sessions);
    $('status').textContent = `${sessions.length} live session(s) · ${new Date().toLocaleTimeString()}`;
  } catch (err) {
    $('status').textContent = err.unauthorized ? err.message : `server unreachable (${err.message})`;
  }
}

loadEnvs().catch(() => {});
tick();
setInterval(tick, 1000);
if (selected) refreshSession();
setInterval(refreshSession, FRAME_MS);
