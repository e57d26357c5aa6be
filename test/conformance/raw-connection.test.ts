/**
 * The conformance suite's RawConnection: closedWith and next wake on the connection's own events
 * (a message or the close), on every transport.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { RawConnection } from '../../conformance/suite.ts';
import { startTestServer, TRANSPORTS } from '../helpers/servers.ts';
import type { TestServer } from '../helpers/servers.ts';

describe.each(TRANSPORTS)('RawConnection over %s', (transport) => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startTestServer(transport);
  });
  afterAll(async () => srv.close());

  it("closedWith gives the server's close code (a refused hello closes with 1002)", async () => {
    const raw = new RawConnection(await srv.connector());
    raw.send({ id: 1, type: 'hello', protocol_version: 999 });
    expect((await raw.next()).type).toBe('error');
    expect(await raw.closedWith(30_000)).toBe(1002);
    // Already closed: the code at once, again.
    expect(await raw.closedWith(0)).toBe(1002);
  });

  it('closedWith gives null when the connection stays open past the timeout, and next still answers after it', async () => {
    const raw = new RawConnection(await srv.connector());
    try {
      expect(await raw.closedWith(20)).toBeNull();
      await raw.hello();
    } finally {
      raw.close();
    }
  });
});

describe('RawConnection waiting', () => {
  it('closedWith is woken by the close itself, not by a timer', { timeout: 20_000 }, async () => {
    const srv = await startTestServer('memory');
    const raw = new RawConnection(await srv.connector());
    try {
      await raw.hello();
      // With setTimeout frozen a polling wait could never see the close; a waiter on the connection does.
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const closed = raw.closedWith(60_000);
      raw.close();
      expect(await closed).toBe(1000);
    } finally {
      vi.useRealTimers();
      await srv.close();
    }
  });
});
