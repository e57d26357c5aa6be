/**
 * The conformance suite over every registered env and every transport.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { defaultRegistry } from '../../envs/index.ts';
import { startTestServer, TRANSPORTS } from '../helpers/servers.ts';
import type { TestServer } from '../helpers/servers.ts';
import { CASES, runConformance } from '../../conformance/suite.ts';

const ENV_IDS = defaultRegistry().ids();

describe.each(TRANSPORTS)('conformance over %s', (transport) => {
  let srv: TestServer;
  beforeAll(async () => {
    // Small limits so the limit cases run cheaply.
    srv = await startTestServer(transport, { limits: { max_frame_bytes: 1024 * 1024, max_sessions_per_client: 16 } });
  });
  afterAll(async () => srv.close());

  for (const kase of CASES.filter((c) => c.perServer)) {
    it(`(server) ${kase.name}`, async () => {
      const [report] = await runConformance({ connector: srv.connector, name: transport }, { envIds: [ENV_IDS[0]!], filter: kase.name });
      expect(report?.status, report?.message).not.toBe('fail');
    });
  }

  describe.each(ENV_IDS)('%s', (envId) => {
    for (const kase of CASES.filter((c) => !c.perServer)) {
      it(kase.name, { timeout: 120_000 }, async () => {
        const reports = await runConformance({ connector: srv.connector, name: transport }, { envIds: [envId], filter: kase.name, maxSteps: 600 });
        const mine = reports.filter((r) => r.env === envId);
        expect(mine.length).toBe(1);
        expect(mine[0]!.status, mine[0]!.message).not.toBe('fail');
      });
    }
  });
});

describe('the suite’s own probes are counted apart', () => {
  it('leaves gymwire_errors_total to real clients and counts its bad requests in gymwire_conformance_errors_total', async () => {
    const srv = await startTestServer('ws');
    try {
      const reports = await runConformance({ connector: srv.connector, name: 'ws' }, { envIds: ['gymwire/CartPole-v1'], filter: 'bad frames' });
      expect(reports.map((r) => r.status)).toEqual(['pass']);
      const metrics = await (await fetch(`${srv.server.url.replace(/^ws/, 'http')}/metrics`)).text();
      const count = (name: string) =>
        metrics
          .split('\n')
          .filter((line) => line.startsWith(`${name}{`))
          .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
      expect(count('gymwire_conformance_errors_total')).toBeGreaterThan(5);
      expect(count('gymwire_errors_total')).toBe(0);
    } finally {
      await srv.close();
    }
  });
});
