/**
 * Busy-polling at both ends of a connection: a server's fixed window polls after every answer and
 * stops with the server; by default servers and clients poll adaptively, opening their windows
 * only for requests (answers) that follow soon.
 */
import { describe, expect, it } from 'vitest';

import { connect } from '../../client/ts/client.ts';
import { testRegistry } from '../helpers/envs.ts';
import { startTestServer, TRANSPORTS } from '../helpers/servers.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(TRANSPORTS)('server with busyPollUs (%s)', (transport) => {
  it('answers as usual, polls after each answer, and stops polling when closed', async () => {
    const srv = await startTestServer(transport, { busyPollUs: 2_000_000 });
    const client = await connect(srv.connector);
    try {
      const poller = srv.server.core.poller!;
      const env = await client.make('gymwire/CartPole-v1');
      await env.reset({ seed: 1 });
      expect(poller.active).toBe(true);
      const r = await env.step(0);
      expect(r.terminated).toBe(false);
      expect(poller.active).toBe(true);
    } finally {
      await client.close();
      await srv.close();
    }
    await sleep(5);
    expect(srv.server.core.poller!.active).toBe(false);
  });
});

describe.each(['ws', 'uws'] as const)('default polling (%s)', (transport) => {
  it('server and client poll adaptively: closed at first, opened by requests that follow answers at once, closed by late ones', async () => {
    const srv = await startTestServer(transport);
    const client = await connect(srv.connector);
    try {
      const serverPoller = srv.server.core.poller!;
      const clientPoller = client.poller!;
      expect(serverPoller.window).toBe(0);
      expect(clientPoller.window).toBe(0);
      // Pipelined: eight requests in flight at once, so each answer finds the next request close
      // behind. The widest window seen, as a loaded machine may stretch a gap or two past the limit
      // and halve the window again. (The client's window is not checked here: in one process an
      // answer comes back 100-200 µs after the last request, past the limit; a client and a server
      // in two processes are measured in test/bench/rollout.bench.ts.)
      let widest = 0;
      for (let i = 0; i < 50; i++) {
        await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(() => client.ping()));
        widest = Math.max(widest, serverPoller.window);
      }
      expect(widest).toBeGreaterThan(0);
      if (transport === 'ws') {
        const metrics = await (await fetch(`${srv.server.url.replace('ws://', 'http://')}/metrics`)).text();
        expect(metrics).toMatch(/gymwire_busy_poll_window_microseconds \d+/);
        expect(metrics).toMatch(/gymwire_busy_poll_resting 0/);
        expect(Number(/gymwire_busy_poll_turns_total (\d+)/.exec(metrics)?.[1])).toBeGreaterThan(0);
      }
      // A client that waits a long time between requests turns the server's polling off.
      for (let i = 0; i < 6; i++) {
        await sleep(2);
        await client.ping();
      }
      expect(serverPoller.window).toBe(0);
    } finally {
      await client.close();
      await srv.close();
    }
  });
});

describe('polling and env work in flight', () => {
  it("the server does not poll after an answer while another request's env work still runs (a model worker may need the core)", async () => {
    // Margins for a loaded machine: the ping must be answered within ~1 s of the slow step's start,
    // and the check after the step's answer must come within the 300 ms window it opens.
    const srv = await startTestServer('ws', { registry: testRegistry(), busyPollUs: 300_000 });
    const client = await connect(srv.connector, { busyPoll: 0 });
    try {
      const poller = srv.server.core.poller!;
      const slow = await client.make('test/Counter-v0', { delay_ms: 1000 });
      await slow.reset();
      await sleep(400); // the window the answers so far opened has closed
      expect(poller.active).toBe(false);
      const stepping = slow.step(0);
      await sleep(20);
      await client.ping(); // answered while the slow step runs
      expect(poller.active).toBe(false);
      await stepping; // its answer leaves with nothing else running
      expect(poller.active).toBe(true);
    } finally {
      await client.close();
      await srv.close();
    }
  });
});

describe('polling settings', () => {
  it('a client with a fixed window polls after each request, and stops when closed', async () => {
    const srv = await startTestServer('ws', { busyPollUs: 0 });
    const client = await connect(srv.connector, { busyPoll: 2_000_000 });
    try {
      expect(srv.server.core.poller).toBeNull();
      const poller = client.poller!;
      expect(poller.active).toBe(false);
      await client.ping();
      expect(poller.active).toBe(true);
    } finally {
      await client.close();
      await srv.close();
    }
    await sleep(5);
    expect(client.poller!.active).toBe(false);
  });

  it('the memory transport does not poll by default, at either end; a client can turn polling off', async () => {
    const mem = await startTestServer('memory');
    const ws = await startTestServer('ws');
    try {
      expect(mem.server.core.poller).toBeNull();
      const local = await connect(mem.connector, { busyPoll: 2_000_000 });
      await local.ping();
      expect(local.poller!.active).toBe(false); // frames handed over in-process: nothing to poll
      await local.close();
      const client = await connect(ws.connector, { busyPoll: 0 });
      expect(client.poller).toBeNull();
      const env = await client.make('gymwire/CartPole-v1');
      expect((await env.reset({ seed: 3 })).obs).toBeDefined();
      await client.close();
    } finally {
      await mem.close();
      await ws.close();
    }
  });
});
