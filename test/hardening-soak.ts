/**
 * A soak of the hardening promises (docs/security.md), run by CI for a few minutes: against a real
 * `gymwire serve --token-file` process, seeded actors run side by side until the time is up:
 *   - unauthenticated peers send random bytes and fuzzed requests before hello, then vanish;
 *   - authenticated peers make sessions, mix fuzzed frames with valid steps, and cut the
 *     connection without closing anything; every frame must get exactly one answer;
 *   - resuming clients step twin sessions while their connection is cut mid-request; the cut
 *     session must match its twin (each step applied exactly once);
 *   - batch clients make many sessions and step them together.
 * Asserts the server process stays up and answers /healthz, its memory stays bounded, and every
 * session is reaped once its clients are gone. Deterministic for a seed; prints what it did.
 *
 *   npx tsx test/hardening-soak.ts [--seconds 150] [--seed 1]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { connect } from '../client/ts/client.ts';
import { wsConnector } from '../client/ts/transport.ts';
import { fuzzFrame } from '../conformance/fuzz.ts';
import { RawConnection, valuesEqual } from '../conformance/suite.ts';
import { PROTOCOL_VERSION } from '../protocol/messages.ts';
import { Random } from '../runtime/random.ts';
import { servedUrl } from './helpers/serve-url.ts';

const arg = (name: string, fallback: number) => (process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : fallback);
const SECONDS = arg('--seconds', 150);
const SEED = arg('--seed', 1);
const TOKEN = 'soak-token';
const ENV = 'gymwire/CartPole-v1';
/** The server's resident memory may grow by this much over the soak (answers, caches, pools are all bounded well below it). */
const MAX_RSS_GROWTH_BYTES = 768 * 1024 * 1024;
const ROOT = fileURLToPath(new URL('..', import.meta.url));

const counts = { unauthenticated: 0, preHelloFrames: 0, authenticated: 0, fuzzedFrames: 0, steps: 0, cuts: 0, resumedSteps: 0, batches: 0, sessions: 0 };

function fail(message: string): never {
  throw new Error(`soak failed: ${message}`);
}

const dir = mkdtempSync(join(tmpdir(), 'gymwire-soak-'));
writeFileSync(join(dir, 'token'), `${TOKEN}\n`);
const server = spawn(
  process.execPath,
  ['bin/gymwire.js', 'serve', '--port', '0', '--token-file', join(dir, 'token'), '--log-level', 'error', '--resume-grace', '2s', '--hello-timeout', '2s'],
  { cwd: ROOT, env: { ...process.env, GYMWIRE_NO_REEXEC: '1', GYMWIRE_TOKEN: '' }, stdio: ['ignore', 'pipe', 'inherit'] },
);
let serverExit: number | null | undefined;
server.on('exit', (code) => (serverExit = code));
const url = await servedUrl(server);
const httpUrl = url.replace(/^ws/, 'http');
const connector = wsConnector(url);

function rssBytes(): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

async function health(): Promise<{ status: string; sessions: number; connections: number }> {
  const res = await fetch(`${httpUrl}/healthz`);
  if (!res.ok) fail(`/healthz answered ${res.status}`);
  return (await res.json()) as { status: string; sessions: number; connections: number };
}

async function unauthenticated(rng: Random): Promise<void> {
  counts.unauthenticated++;
  const raw = new RawConnection(await connector());
  const n = rng.integer(1, 6);
  for (let i = 0; i < n && !raw.closed; i++) {
    raw.sendBytes(rng.integer(0, 3) === 0 ? Uint8Array.from({ length: rng.integer(1, 2048) }, () => rng.integer(0, 256)) : fuzzFrame(rng, ['s_x'], i));
    counts.preHelloFrames++;
  }
  // Half leave at once, the rest wait for an answer (or the hello deadline) first.
  if (rng.integer(0, 2) === 0) await raw.next(3000).catch(() => null);
  raw.close();
}

async function authenticated(rng: Random): Promise<void> {
  counts.authenticated++;
  const raw = new RawConnection(await connector());
  raw.send({ id: 0, type: 'hello', protocol_version: PROTOCOL_VERSION, client_name: 'soak', token: TOKEN });
  if ((await raw.next()).type !== 'result') fail('hello with the token refused');
  let id = 1;
  const own: string[] = [];
  for (let i = rng.integer(1, 5); i > 0; i--) {
    raw.send({ id: id++, type: 'make', env_id: ENV, kwargs: {} });
    const made = await raw.next();
    if (made.type !== 'result') fail(`make failed: ${JSON.stringify(made.error)}`);
    own.push((made.result as { session_id: string }).session_id);
    raw.send({ id: id++, type: 'reset', session_id: own.at(-1), seed: rng.integer(0, 1000) });
    await raw.next();
    counts.sessions++;
  }
  const frames = rng.integer(20, 80);
  for (let i = 0; i < frames; i++) {
    if (rng.integer(0, 3) === 0) {
      raw.send({ id: id++, type: 'step', session_id: own[rng.integer(0, own.length)], action: rng.integer(0, 2) });
      counts.steps++;
    } else {
      raw.sendBytes(fuzzFrame(rng, own, id++));
      counts.fuzzedFrames++;
    }
  }
  // Exactly one answer per frame: as many as were sent, then the marker ping's and nothing between.
  for (let i = 0; i < frames; i++) {
    const answer = await raw.next(20_000).catch(() => null);
    if (!answer) fail(`frame answer ${i + 1} of ${frames} never came (closed: ${raw.closed})`);
  }
  raw.send({ id: 1e9 + rng.integer(0, 1e6), type: 'ping', payload: 'marker' });
  const marker = await raw.next(20_000);
  if ((marker.result as { payload?: unknown } | undefined)?.payload !== 'marker')
    fail(`an extra answer came after ${frames} frames: ${JSON.stringify(marker).slice(0, 200)}`);
  // Cut without closing anything: the server reaps the sessions after the resume grace.
  raw.close();
}

async function resumer(rng: Random): Promise<void> {
  const c = await connect(connector, { token: TOKEN, requestTimeoutMs: 30_000 });
  try {
    const [a, b] = await Promise.all([c.make(ENV), c.make(ENV)]);
    const seed = rng.integer(0, 1000);
    await a.reset({ seed });
    await b.reset({ seed });
    for (let i = 0; i < 30; i++) {
      const action = rng.integer(0, 2);
      const pending = a.step(action);
      if (rng.integer(0, 4) === 0) {
        c.simulateConnectionLoss();
        counts.cuts++;
      }
      const [ra, rb] = await Promise.all([pending, b.step(action)]);
      counts.resumedSteps++;
      if (!valuesEqual(ra.obs, rb.obs) || ra.reward !== rb.reward) fail(`step ${i} after a cut diverged from its twin (lost or applied twice)`);
      if (ra.terminated || ra.truncated) break;
    }
  } finally {
    await c.close();
  }
}

async function batcher(rng: Random): Promise<void> {
  const c = await connect(connector, { token: TOKEN, requestTimeoutMs: 30_000 });
  try {
    const vec = await c.makeVec(ENV, rng.integer(16, 64));
    counts.sessions += vec.numEnvs;
    await vec.reset({ seed: rng.integer(0, 1000) });
    for (let i = 0; i < 20; i++) {
      await vec.step(Array.from({ length: vec.numEnvs }, () => rng.integer(0, 2)));
      counts.batches++;
    }
    await vec.close();
  } finally {
    await c.close();
  }
}

const rng = new Random(SEED);
const baseline = rssBytes();
let peak = baseline;
const deadline = Date.now() + SECONDS * 1000;
let rounds = 0;
try {
  while (Date.now() < deadline) {
    rounds++;
    const actors: Promise<void>[] = [];
    for (let i = 0; i < 4; i++) actors.push(unauthenticated(new Random(rng.integer(0, 2 ** 31))));
    for (let i = 0; i < 2; i++) actors.push(authenticated(new Random(rng.integer(0, 2 ** 31))));
    actors.push(resumer(new Random(rng.integer(0, 2 ** 31))));
    if (rounds % 3 === 0) actors.push(batcher(new Random(rng.integer(0, 2 ** 31))));
    await Promise.all(actors);
    if (serverExit !== undefined) fail(`the server exited with ${serverExit}`);
    peak = Math.max(peak, rssBytes());
    if ((await health()).status !== 'ok') fail('the server is not ok');
  }
  // Every client is gone: after the resume grace the reaper closes what they left open.
  let h = await health();
  for (let i = 0; i < 100 && h.sessions > 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
    h = await health();
  }
  if (h.sessions !== 0) fail(`${h.sessions} sessions still open after every client left and the resume grace passed`);
  const end = rssBytes();
  const report = { seed: SEED, seconds: SECONDS, rounds, ...counts, rss_baseline_mib: baseline >> 20, rss_peak_mib: peak >> 20, rss_end_mib: end >> 20 };
  process.stdout.write(`${JSON.stringify(report)}\n`);
  if (peak - baseline > MAX_RSS_GROWTH_BYTES) fail(`server memory grew by ${(peak - baseline) >> 20} MiB (bound ${MAX_RSS_GROWTH_BYTES >> 20} MiB)`);
} finally {
  server.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
