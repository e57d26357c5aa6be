/**
 * The server's front door under hostile input (issue 23): nothing is decoded before hello beyond a
 * small size, decoding is bounded, refusals carry the request id, foreign Origins and Hosts get
 * 403, upgrades are served on the protocol's path only, and unauthenticated peers cannot hold
 * connections in bulk or forever. Real servers on port 0, real sockets, loopback only.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

import { registerServe, resolveToken } from '../../bin/commands/serve.ts';
import { connect } from '../../client/ts/client.ts';
import { wsConnector } from '../../client/ts/transport.ts';
import { decode, encode } from '../../protocol/codec.ts';
import { PROTOCOL_VERSION } from '../../protocol/messages.ts';
import { PRE_HELLO_MAX_FRAME_BYTES } from '../../server/admission.ts';
import { startServer } from '../../server/index.ts';
import type { RunningServer, ServerOptions } from '../../server/index.ts';
import { mountMcp } from '../../server/mcp/index.ts';
import { mountViewer } from '../../server/viewer/index.ts';
import { servedUrl } from '../helpers/serve-url.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const NET_TRANSPORTS = ['ws', 'uws'] as const;
const HELLO = { type: 'hello', protocol_version: PROTOCOL_VERSION, client_name: 'hardening' };

/** A raw WebSocket that records answers, its close code and any refused-upgrade status. */
class Probe {
  readonly ws: WebSocket;
  readonly answers: Record<string, unknown>[] = [];
  readonly opened: Promise<boolean>;
  readonly closed: Promise<{ code: number; status?: number }>;
  private waiters: (() => void)[] = [];

  constructor(url: string, opts: WebSocket.ClientOptions = {}) {
    this.ws = new WebSocket(url, { perMessageDeflate: false, ...opts });
    this.ws.on('message', (data: Buffer) => {
      this.answers.push(decode(data) as Record<string, unknown>);
      for (const w of this.waiters.splice(0)) w();
    });
    let status: number | undefined;
    this.opened = new Promise((resolve) => {
      this.ws.once('open', () => resolve(true));
      this.ws.once('unexpected-response', (_req, res) => {
        status = res.statusCode;
        res.resume();
        resolve(false);
        this.ws.terminate();
      });
      this.ws.once('close', () => resolve(false));
    });
    this.ws.on('error', () => {});
    this.closed = new Promise((resolve) => this.ws.once('close', (code) => resolve({ code, status })));
    this.closed.then(() => this.waiters.splice(0).forEach((w) => w()));
  }

  send(message: unknown): void {
    this.sendBytes(encode(message));
  }

  /** Sends once the socket is open (at once when it is); errors show as a close. */
  sendBytes(bytes: Uint8Array): void {
    if (this.ws.readyState === WebSocket.CONNECTING) this.ws.once('open', () => this.ws.send(bytes, () => {}));
    else this.ws.send(bytes, () => {});
  }

  async next(timeoutMs = 10_000): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    while (this.answers.length === 0) {
      if (this.ws.readyState === WebSocket.CLOSED) throw new Error('closed without an answer');
      if (Date.now() > deadline) throw new Error('no answer in time');
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 200);
        this.waiters.push(() => (clearTimeout(t), resolve()));
      });
    }
    return this.answers.shift()!;
  }
}

/** One HTTP GET; the status and body. */
function get(port: number, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function withServer(opts: ServerOptions, body: (srv: RunningServer) => Promise<void>): Promise<void> {
  const srv = await startServer({ port: 0, ...opts });
  try {
    await body(srv);
  } finally {
    await srv.close(2000);
  }
}

/** `{id, type: 'step', session_id: 's', action: <raw msgpack bytes>}`, for values encode cannot write. */
function stepWithRawAction(id: number, action: number[]): Buffer {
  const head = Buffer.from(encode({ id, type: 'step', session_id: 's' }));
  head[0]! += 1;
  return Buffer.concat([head, Buffer.from(encode('action')), Buffer.from(action)]);
}

/** A msgpack array32 of `count` empty maps: 1 byte each on the wire, a heap object each decoded. */
function emptyMaps(count: number): Buffer {
  const frame = Buffer.alloc(5 + count, 0x80);
  frame[0] = 0xdd;
  frame.writeUInt32BE(count, 1);
  return frame;
}

describe.each(NET_TRANSPORTS)('frames before and after hello (%s)', (transport) => {
  it('a frame over the pre-hello size is refused with its id and the connection closed (1008), undecoded', () =>
    withServer({ transport }, async (srv) => {
      const probe = new Probe(srv.url);
      expect(await probe.opened).toBe(true);
      const big = Buffer.from(encode({ id: 41, type: 'hello', protocol_version: PROTOCOL_VERSION, client_name: 'x'.repeat(PRE_HELLO_MAX_FRAME_BYTES) }));
      probe.sendBytes(big);
      expect(await probe.next()).toMatchObject({
        id: 41,
        type: 'error',
        error: { code: 'ENV_ERR_FRAME_TOO_LARGE', details: { max_frame_bytes: PRE_HELLO_MAX_FRAME_BYTES } },
      });
      expect((await probe.closed).code).toBe(1008);
    }));

  it('a frame past max_frame_bytes is refused with its id without decoding; one past twice that closes the socket (1009)', () =>
    withServer({ transport, limits: { max_frame_bytes: 4096 } }, async (srv) => {
      const probe = new Probe(srv.url);
      probe.send({ id: 0, ...HELLO });
      expect(await probe.next()).toMatchObject({ id: 0, type: 'result' });
      // Its id sits after a long string: the bounded scan skips values, it does not decode them.
      probe.send({ note: 'y'.repeat(5000), type: 'ping', id: 42 });
      expect(await probe.next()).toMatchObject({
        id: 42,
        type: 'error',
        error: { code: 'ENV_ERR_FRAME_TOO_LARGE', details: { size: expect.any(Number), max_frame_bytes: 4096 } },
      });
      probe.send({ id: 43, type: 'ping', payload: 'still open' });
      expect(await probe.next()).toMatchObject({ id: 43, type: 'result' });
      probe.sendBytes(Buffer.alloc(2 * 4096 + 1, 0xc0));
      // uWS drops such a socket without a close frame (1006).
      expect(transport === 'ws' ? [1009] : [1009, 1006]).toContain((await probe.closed).code);
    }));

  it('a frame of small maps that would decode far past its size is refused with its id; the connection goes on', () =>
    withServer({ transport }, async (srv) => {
      const probe = new Probe(srv.url);
      probe.send({ id: 0, ...HELLO });
      await probe.next();
      const maps = emptyMaps(4 * 1024 * 1024);
      const head = Buffer.from(encode({ id: 7, type: 'ping' }));
      head[0]! += 1;
      probe.sendBytes(Buffer.concat([head, Buffer.from(encode('payload')), maps]));
      expect(await probe.next()).toMatchObject({
        id: 7,
        type: 'error',
        error: { code: 'ENV_ERR_FRAME_TOO_LARGE', message: expect.stringContaining('decode to more than') },
      });
      probe.send({ id: 8, type: 'ping', payload: [{}, {}, [{}]] });
      expect(await probe.next()).toMatchObject({ id: 8, type: 'result', result: { payload: [{}, {}, [{}]] } });
    }));

  it('a request with an id but a bad tensor or an unknown ext type is answered under that id', () =>
    withServer({ transport }, async (srv) => {
      const probe = new Probe(srv.url);
      probe.send({ id: 0, ...HELLO });
      await probe.next();
      // Tensor ext (type 1): unknown dtype code 99, no dims.
      probe.sendBytes(stepWithRawAction(11, [0xd5, 0x01, 99, 0]));
      expect(await probe.next()).toMatchObject({ id: 11, type: 'error', error: { code: 'ENV_ERR_BAD_TENSOR' } });
      // float32 of shape [2] with 4 data bytes instead of 8.
      probe.sendBytes(stepWithRawAction(12, [0xc7, 10, 0x01, 10, 1, 2, 0, 0, 0, 0, 0, 0, 0]));
      expect(await probe.next()).toMatchObject({ id: 12, type: 'error', error: { code: 'ENV_ERR_BAD_TENSOR' } });
      // An ext type the protocol does not define.
      probe.sendBytes(stepWithRawAction(13, [0xd4, 0x05, 0x00]));
      expect(await probe.next()).toMatchObject({ id: 13, type: 'error', error: { code: 'ENV_ERR_BAD_FRAME' } });
    }));
});

describe.each(NET_TRANSPORTS)('origins, hosts and paths (%s)', (transport) => {
  it('a foreign Origin is refused with 403 on the upgrade and on HTTP; loopback, listed and absent Origins are served', () =>
    withServer({ transport, origins: { allowedOrigins: ['https://app.example'] } }, async (srv) => {
      const evil = new Probe(srv.url, { origin: 'https://evil.example' });
      expect(await evil.opened).toBe(false);
      expect((await evil.closed).status).toBe(403);
      for (const origin of ['http://localhost:3000', 'https://app.example', undefined]) {
        const ok = new Probe(srv.url, origin ? { origin } : {});
        expect(await ok.opened, String(origin)).toBe(true);
        ok.ws.close();
      }
      const http = await get(srv.port, '/healthz', { origin: 'https://evil.example' });
      expect(http.status).toBe(403);
      expect(http.body).toContain('--allow-origin https://evil.example');
      expect((await get(srv.port, '/healthz', { origin: 'http://127.0.0.1:9999' })).status).toBe(200);
    }));

  it('Host: evil.example gets 403 on a server without a token (DNS rebinding); a token server serves any Host', async () => {
    await withServer({ transport }, async (srv) => {
      expect((await get(srv.port, '/healthz', { host: 'evil.example' })).status).toBe(403);
      expect((await get(srv.port, '/healthz', { host: `localhost:${srv.port}` })).status).toBe(200);
      const rebound = new Probe(srv.url, { headers: { host: `evil.example:${srv.port}` } });
      expect(await rebound.opened).toBe(false);
      expect((await rebound.closed).status).toBe(403);
    });
    await withServer({ transport, token: 'sekrit' }, async (srv) => {
      expect((await get(srv.port, '/healthz', { host: 'gym.example.org' })).status).toBe(200);
      // A page on a rebound name still cannot use the WebSocket: its Origin is foreign.
      const page = new Probe(srv.url, { headers: { host: 'evil.example' }, origin: 'http://evil.example' });
      expect((await page.closed).status).toBe(403);
    });
  });

  it('WebSocket upgrades are refused on the HTTP routes and served on /', () =>
    withServer({ transport }, async (srv) => {
      for (const path of ['/healthz', '/metrics', '/mcp', '/api/sessions']) {
        const probe = new Probe(`${srv.url}${path}`);
        expect(await probe.opened, path).toBe(false);
        expect((await probe.closed).status, path).toBe(404);
      }
      const ok = new Probe(`${srv.url}/`);
      expect(await ok.opened).toBe(true);
      ok.ws.close();
    }));

  it('the 404 body does not echo the URL (it may carry ?token=)', () =>
    withServer({ transport }, async (srv) => {
      const res = await get(srv.port, '/nowhere?token=sekrit');
      expect(res.status).toBe(404);
      expect(res.body).not.toContain('sekrit');
    }));
});

describe('mounted routes (viewer, MCP)', () => {
  it("Host: evil.example cannot read the viewer's session list or reach /mcp", () =>
    withServer({ transport: 'ws', mountRoutes: (routes, core) => (mountViewer(routes, core), void mountMcp(routes, core)) }, async (srv) => {
      expect((await get(srv.port, '/api/sessions', { host: 'evil.example' })).status).toBe(403);
      expect((await get(srv.port, '/api/sessions', { host: `127.0.0.1:${srv.port}` })).status).toBe(200);
      expect((await get(srv.port, '/api/sessions', { host: `127.0.0.1:${srv.port}`, origin: 'https://evil.example' })).status).toBe(403);
      expect((await get(srv.port, '/mcp', { host: 'evil.example' })).status).toBe(403);
    }));
});

describe.each(NET_TRANSPORTS)('unauthenticated exhaustion (%s)', (transport) => {
  it('300 sockets that never say hello are all closed by the hello deadline', () =>
    withServer({ transport, admission: { helloTimeoutMs: 300, maxPreAuthPerIp: 0 } }, async (srv) => {
      const probes = Array.from({ length: 300 }, () => new Probe(srv.url));
      expect((await Promise.all(probes.map((p) => p.opened))).every(Boolean)).toBe(true);
      const closes = await Promise.all(probes.map((p) => p.closed));
      expect(closes.every((c) => c.code === 1008)).toBe(true);
      // The server counts a close a moment after the client sees it.
      for (let i = 0; i < 100 && srv.core.connectionCount > 0; i++) await new Promise((r) => setTimeout(r, 100));
      expect(srv.core.connectionCount).toBe(0);
      expect(srv.core.admission.connectionCount).toBe(0);
    }));

  it('one address holds at most max-preauth-per-ip connections before hello (429); a hello frees a place', () =>
    withServer({ transport, admission: { maxPreAuthPerIp: 3 } }, async (srv) => {
      const first = [new Probe(srv.url), new Probe(srv.url), new Probe(srv.url)];
      expect((await Promise.all(first.map((p) => p.opened))).every(Boolean)).toBe(true);
      const fourth = new Probe(srv.url);
      expect(await fourth.opened).toBe(false);
      expect((await fourth.closed).status).toBe(429);
      first[0]!.send({ id: 0, ...HELLO });
      expect(await first[0]!.next()).toMatchObject({ type: 'result' });
      const fifth = new Probe(srv.url);
      expect(await fifth.opened).toBe(true);
      for (const p of [...first, fifth]) p.ws.close();
    }));

  it('the server holds at most max-connections connections (503 beyond)', () =>
    withServer({ transport, admission: { maxConnections: 2 } }, async (srv) => {
      const held = [new Probe(srv.url), new Probe(srv.url)];
      expect((await Promise.all(held.map((p) => p.opened))).every(Boolean)).toBe(true);
      const third = new Probe(srv.url);
      expect(await third.opened).toBe(false);
      expect((await third.closed).status).toBe(503);
      held[0]!.ws.close();
      await held[0]!.closed;
      // The server sees the close a moment after the client does.
      for (let i = 0; i < 50 && srv.core.admission.connectionCount > 1; i++) await new Promise((r) => setTimeout(r, 100));
      const again = new Probe(srv.url);
      expect(await again.opened).toBe(true);
      for (const p of [held[1]!, again]) p.ws.close();
    }));
});

describe('tokens and flags', () => {
  it('the token comes from --token, --token-file (one line) or GYMWIRE_TOKEN; never two flags at once', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gymwire-token-'));
    try {
      const file = join(dir, 'token');
      writeFileSync(file, 'from-file\n');
      expect(resolveToken({ tokenFile: file }, { GYMWIRE_TOKEN: 'from-env' })).toBe('from-file');
      expect(resolveToken({}, { GYMWIRE_TOKEN: 'from-env' })).toBe('from-env');
      expect(resolveToken({ token: 'flag' }, {})).toBe('flag');
      expect(resolveToken({}, {})).toBeNull();
      expect(() => resolveToken({ token: 'a', tokenFile: file }, {})).toThrow(/either/);
      writeFileSync(file, '');
      expect(() => resolveToken({ tokenFile: file }, {})).toThrow(/empty/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('gymwire serve --help shows the limits and the safe ways to give a token', () => {
    const program = new Command();
    registerServe(program);
    const help = program.commands.find((c) => c.name() === 'serve')!.helpInformation();
    for (const flag of [
      '--token-file',
      '--allow-origin',
      '--allow-host',
      '--max-connections',
      '--max-preauth-per-ip',
      '--hello-timeout',
      'GYMWIRE_TOKEN',
      'process list',
    ])
      expect(help).toContain(flag);
  });
});

/** RSS figures of a process from /proc (Linux): now and its peak. */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kib('VmRSS'), peak: kib('VmHWM') };
}

describe.each(NET_TRANSPORTS)('a 64 MiB frame of empty maps before hello, to `gymwire serve --token-file` (%s)', (transport) => {
  const FRAME_BYTES = 64 * 1024 * 1024;
  let child: ChildProcess;
  let url = '';
  let dir = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gymwire-hardening-'));
    writeFileSync(join(dir, 'token'), 'sekrit\n');
    // GYMWIRE_NO_REEXEC: the spawned process is the server itself, whose /proc figures we read.
    child = spawn(
      process.execPath,
      ['bin/gymwire.js', 'serve', '--port', '0', '--transport', transport, '--token-file', join(dir, 'token'), '--log-level', 'warn'],
      {
        cwd: ROOT,
        env: { ...process.env, GYMWIRE_NO_REEXEC: '1', GYMWIRE_TOKEN: '' },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    url = await servedUrl(child);
  }, 120_000);

  afterAll(() => {
    child?.kill('SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('costs bounded memory, the server lives on, and the token still opens it', async () => {
    const before = memoryOf(child.pid!);
    const probe = new Probe(url, { maxPayload: 0 });
    expect(await probe.opened).toBe(true);
    probe.sendBytes(emptyMaps(FRAME_BYTES - 5));
    const { code } = await probe.closed;
    // ws stops reading at the frame's header (1009); uws reads it and the core refuses it undecoded (1008).
    expect([1008, 1009]).toContain(code);
    const after = memoryOf(child.pid!);
    // Decoded, the frame would cost ~49x its size (gigabytes). Buffered and refused, at most a few copies.
    expect(after.peak - before.rss).toBeLessThan(4 * FRAME_BYTES);
    expect(child.exitCode).toBeNull();
    const client = await connect(wsConnector(url), { token: 'sekrit' });
    try {
      expect(await client.ping('alive')).toBeGreaterThanOrEqual(0);
    } finally {
      await client.close();
    }
  }, 120_000);
});
