/**
 * Memory budgets and the resume grace's bounds, against a real server on port 0: a make past a
 * budget is refused with ENV_ERR_MEMORY_BUDGET before the env is built; closing a session returns
 * its share; departed clients' reply caches are capped together, oldest departed first, and a
 * retried request whose answer was evicted is refused, never run twice.
 */
import { afterEach, describe, expect, it } from 'vitest';

import { connect } from '../../client/ts/client.ts';
import { ProtocolError } from '../../protocol/errors.ts';
import { PROTOCOL_VERSION } from '../../protocol/messages.ts';
import type { Registry } from '../../envs/core/registry.ts';
import { Bench2DriveEnv, Bench2DriveKwargsSchema, estimateBench2DriveBytes } from '../../envs/bench2drive/env.ts';
import type { Bench2DriveKwargs } from '../../envs/bench2drive/env.ts';
import { estimateNavsimBytes } from '../../envs/navsim/env.ts';
import { estimateEvacBytes } from '../../envs/evac/index.ts';
import { parseBytes } from '../../bin/commands/units.ts';
import { boundDepartedReplies, MemoryBudget } from '../../server/budgets.ts';
import { startServer } from '../../server/index.ts';
import type { RunningServer } from '../../server/index.ts';
import { RawConnection } from '../../conformance/suite.ts';
import { wsConnector } from '../../client/ts/transport.ts';
import { testRegistry } from '../helpers/envs.ts';

const MIB = 1024 * 1024;
const B2D = 'gymwire/Bench2Drive-v0';

/** The real Bench2Drive env, its constructions counted (a refused make must build nothing). */
function countingRegistry(): { registry: Registry; built: () => number } {
  const registry = testRegistry();
  let built = 0;
  registry.register<Bench2DriveKwargs>({
    id: B2D,
    kwargsSchema: Bench2DriveKwargsSchema,
    estimateBytes: estimateBench2DriveBytes,
    entryPoint: (kwargs) => {
      built++;
      return new Bench2DriveEnv(kwargs);
    },
  });
  return { registry, built: () => built };
}

const servers: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close(2000)));
});

async function serve(opts: Parameters<typeof startServer>[0]): Promise<RunningServer> {
  const server = await startServer({ port: 0, transport: 'ws', ...opts });
  servers.push(server);
  return server;
}

async function makeError(p: Promise<unknown>): Promise<ProtocolError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProtocolError);
  return err as ProtocolError;
}

describe('memory budgets', () => {
  it('estimates camera sessions from their kwargs', () => {
    const small = estimateBench2DriveBytes({ route: 'ParkingExit_1' });
    const cameras = estimateBench2DriveBytes({ cameras: true });
    const largest = estimateBench2DriveBytes({ cameras: true, camera_width: 3200, camera_height: 1800 });
    expect(small).toBeLessThan(8 * MIB);
    expect(cameras).toBeGreaterThan(200 * MIB);
    // Four times the pixels, four times the camera memory.
    expect(largest - cameras).toBe(3 * (cameras - estimateBench2DriveBytes({})));
    expect(estimateNavsimBytes({ cameras: true, camera_width: 1920, camera_height: 1080 })).toBeGreaterThan(estimateNavsimBytes({ cameras: true }) * 15);
    expect(estimateEvacBytes({ resolution: 256 })).toBeGreaterThan(estimateEvacBytes({ resolution: 64 }));
  });

  it('refuses a make past the per-client budget with ENV_ERR_MEMORY_BUDGET before building the env, and frees the share on close', async () => {
    const { registry, built } = countingRegistry();
    const perClient = estimateBench2DriveBytes({ cameras: ['CAM_FRONT'], camera_width: 320, camera_height: 180 }) * 2 + MIB;
    const server = await serve({ registry, limits: { max_memory_bytes_per_client: perClient, max_memory_bytes: 0 } });
    const c = await connect(server.url);
    try {
      expect(c.limits.max_memory_bytes_per_client).toBe(perClient);
      const kwargs = { cameras: ['CAM_FRONT'], camera_width: 320, camera_height: 180 };
      const a = await c.make(B2D, kwargs);
      await c.make(B2D, kwargs);
      expect(built()).toBe(2);
      const err = await makeError(c.make(B2D, { cameras: true, camera_width: 3200, camera_height: 1800 }));
      expect(err.code).toBe('ENV_ERR_MEMORY_BUDGET');
      expect(err.details).toMatchObject({ limit: 'max_memory_bytes_per_client', max: perClient, env_id: B2D });
      expect(err.details.session_bytes).toBe(estimateBench2DriveBytes({ cameras: true, camera_width: 3200, camera_height: 1800 }));
      expect(err.message).toMatch(/max_memory_bytes_per_client/);
      expect(built()).toBe(2);
      expect(server.core.memory.used()).toBe(2 * estimateBench2DriveBytes(kwargs as Bench2DriveKwargs));
      // A small session still fits; closing a camera one makes room for another.
      await c.make('gymwire/CartPole-v1');
      expect((await makeError(c.make(B2D, kwargs))).code).toBe('ENV_ERR_MEMORY_BUDGET');
      await a.close();
      await c.make(B2D, kwargs);
      expect(built()).toBe(3);
    } finally {
      await c.close();
    }
  });

  it('holds every client to the server-wide budget and returns a departed client’s share when its sessions are reaped', async () => {
    const { registry, built } = countingRegistry();
    const kwargs = { cameras: ['CAM_FRONT'], camera_width: 320, camera_height: 180 };
    const one = estimateBench2DriveBytes(kwargs as Bench2DriveKwargs);
    const server = await serve({ registry, limits: { max_memory_bytes: one + MIB, resume_grace_ms: 0 } });
    const a = await connect(server.url);
    const b = await connect(server.url);
    try {
      await a.make(B2D, kwargs);
      const err = await makeError(b.make(B2D, kwargs));
      expect(err.code).toBe('ENV_ERR_MEMORY_BUDGET');
      expect(err.details).toMatchObject({ limit: 'max_memory_bytes', used: one });
      expect(built()).toBe(1);
      await a.close();
      for (let i = 0; i < 100 && server.core.memory.used() > 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(server.core.memory.used()).toBe(0);
      await b.make(B2D, kwargs);
    } finally {
      await b.close();
    }
  });

  it('answers invalid kwargs with ENV_ERR_INVALID_KWARGS, not a budget error', async () => {
    const server = await serve({ registry: countingRegistry().registry, limits: { max_memory_bytes: MIB } });
    const c = await connect(server.url);
    try {
      expect((await makeError(c.make(B2D, { camera_width: 99_999 }))).code).toBe('ENV_ERR_INVALID_KWARGS');
    } finally {
      await c.close();
    }
  });

  it('MemoryBudget treats 0 as no budget and parses sizes for the flags', () => {
    const budget = new MemoryBudget({ perClient: 0, total: 0 });
    budget.reserve('k', 's', 2 ** 50, 'x');
    expect(budget.used('k')).toBe(2 ** 50);
    budget.release('s');
    budget.release('s');
    expect(budget.used()).toBe(0);
    expect([parseBytes('f', '16g'), parseBytes('f', '512MiB'), parseBytes('f', '1024')]).toEqual([16 * 1024 * MIB, 512 * MIB, 1024]);
    expect(() => parseBytes('--max-memory', 'lots')).toThrow(/--max-memory/);
  });
});

describe('resume grace bounds', () => {
  it('empties the reply caches of the clients that left first once departed clients hold too much', () => {
    const clients = [3, 1, 2].map((left) => ({
      detachedAt: left,
      replyBytes: 10,
      emptied: false,
      forgetAll() {
        this.emptied = true;
        this.replyBytes = 0;
      },
    }));
    const connected = {
      detachedAt: null,
      replyBytes: 1000,
      emptied: false,
      forgetAll() {
        this.emptied = true;
      },
    };
    expect(boundDepartedReplies([...clients, connected], 15)).toBe(2);
    expect(clients.map((c) => c.emptied)).toEqual([false, true, true]);
    expect(connected.emptied).toBe(false);
  });

  it('caps departed clients’ cached answers server-wide; an evicted retry is refused, a kept one answered from memory', async () => {
    // Each client leaves ~77 KB (two 160x160x3 frames) behind; the cap holds about three clients' worth.
    const server = await serve({ registry: testRegistry(), limits: { resume_grace_ms: 60_000 }, maxDepartedReplyBytes: 500_000 });
    const connector = wsConnector(server.url);
    const departed: { token: string; sid: string; answer: Record<string, unknown> }[] = [];
    for (let k = 0; k < 8; k++) {
      const raw = new RawConnection(await connector());
      const welcome = (await raw.hello()).result as { resume_token: string };
      raw.send({ id: 1, type: 'make', env_id: 'test/Frames-v0' });
      const sid = ((await raw.next()).result as { session_id: string }).session_id;
      raw.send({ id: 2, type: 'reset', session_id: sid });
      await raw.next();
      raw.send({ id: 3, type: 'step', session_id: sid, action: 0 });
      const answer = await raw.next();
      departed.push({ token: welcome.resume_token, sid, answer });
      raw.close();
      for (let i = 0; i < 100 && server.core.connectionCount > 0; i++) await new Promise((r) => setTimeout(r, 10));
    }
    const resume = async (token: string) => {
      const raw = new RawConnection(await connector());
      raw.send({ id: 100, type: 'hello', protocol_version: PROTOCOL_VERSION, resume_token: token });
      expect(((await raw.next()).result as { resumed: boolean }).resumed).toBe(true);
      return raw;
    };
    const first = await resume(departed[0]!.token);
    first.send({ id: 3, type: 'step', session_id: departed[0]!.sid, action: 0 });
    expect(((await first.next()).error as { code: string }).code).toBe('ENV_ERR_REPLY_EXPIRED');
    // Not applied twice: the next step is the session's second.
    first.send({ id: 4, type: 'step', session_id: departed[0]!.sid, action: 0 });
    expect(((await first.next()).result as { info: { count: number } }).info.count).toBe(2);
    first.close();
    const last = await resume(departed[7]!.token);
    last.send({ id: 3, type: 'step', session_id: departed[7]!.sid, action: 0 });
    expect(await last.next()).toEqual(departed[7]!.answer);
    last.close();
  });
});
