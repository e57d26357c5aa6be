/**
 * Mutation testing of the conformance suite: each mutant server (test/conformance/mutants.ts: the
 * real server behind a proxy with one protocol bug) must fail at least one case, and the faithful
 * proxy must pass every case. Mutants no black-box check can tell from a correct server are listed
 * with the reason, and the test checks they do survive, so docs/conformance.md stays true.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { runConformance, TargetUnusableError } from '../../conformance/suite.ts';
import { wsConnector } from '../../client/ts/transport.ts';
import { startServer } from '../../server/index.ts';
import type { RunningServer } from '../../server/index.ts';
import { LIFECYCLE_MUTANTS, MUTANTS, mutantConnector } from './mutants.ts';
import type { MutantName } from './mutants.ts';

/** Mutants the suite cannot kill, and why (none: the reference-env case knows rewards and bounds). */
const SURVIVORS: Partial<Record<MutantName, string>> = {};
// CartPole for stacking and the time limit of a long episode; the conformance env for every space type and tools.
const ENV_IDS = ['gymwire/Conformance-v0', 'gymwire/CartPole-v1'];

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({
    port: 0,
    transport: 'ws',
    limits: { max_frame_bytes: 1024 * 1024, max_sessions_per_client: 16, resume_grace_ms: 1000 },
    // A short hello deadline, so the case that waits for it (and its mutant) takes a second.
    admission: { helloTimeoutMs: 1000 },
  });
});
afterAll(async () => server.close(2000));

async function failures(mutant: MutantName, failFast: boolean): Promise<string[]> {
  const target = { connector: mutantConnector(wsConnector(server.url), mutant), name: mutant };
  try {
    const reports = await runConformance(target, { envIds: ENV_IDS, maxSteps: 300, failFast, helloWaitMs: 3000 });
    return reports.filter((r) => r.status === 'fail').map((r) => `${r.env}: ${r.name}: ${r.message}`);
  } catch (err) {
    // The run refused the server before any case (a welcome that fails its schema): caught.
    if (err instanceof TargetUnusableError) return [err.message];
    throw err;
  }
}

describe('the conformance suite against mutant servers', () => {
  it('passes every case through the faithful proxy', { timeout: 300_000 }, async () => {
    expect(await failures('none', false)).toEqual([]);
  });

  for (const mutant of Object.keys(MUTANTS).filter((m) => m !== 'none' && !(LIFECYCLE_MUTANTS as readonly string[]).includes(m)) as MutantName[]) {
    const survives = SURVIVORS[mutant];
    // Concurrently: each mutant has a proxy of its own in front of the one server, and most of a run is waiting.
    it.concurrent(`${survives ? 'cannot kill' : 'kills'} ${mutant}: ${MUTANTS[mutant]}`, { timeout: 600_000 }, async () => {
      const failed = await failures(mutant, true);
      if (survives)
        expect(failed, `${mutant} is listed as a survivor (${survives}) but the suite killed it: update SURVIVORS and docs/conformance.md`).toEqual([]);
      else expect(failed.length, `the suite did not catch ${mutant}`).toBeGreaterThan(0);
    });
  }
});

/**
 * The lifecycle mutants, each against a server of its own that the suite may stop (the lifecycle
 * cases' `stop` is the server's graceful close, what SIGTERM runs in `gymwire serve`), with limits
 * small enough to reach: 3 sessions, a 1 s idle timeout.
 */
describe('the lifecycle cases against mutant servers the suite controls', () => {
  async function lifecycleFailures(mutant: MutantName): Promise<string[]> {
    const own = await startServer({
      port: 0,
      transport: 'ws',
      limits: { max_sessions: 3, idle_timeout_ms: 1000 },
    });
    try {
      const target = {
        connector: mutantConnector(wsConnector(own.url), mutant),
        name: mutant,
        lifecycle: { httpBase: own.url.replace(/^ws/, 'http'), stop: () => void own.close(3000) },
      };
      const reports = await runConformance(target, { envIds: ['gymwire/CartPole-v1'], filter: 'lifecycle' });
      expect(reports.map((r) => r.status).filter((s) => s === 'skip')).toEqual([]);
      return reports.filter((r) => r.status === 'fail').map((r) => `${r.name}: ${r.message}`);
    } finally {
      await own.close(1000);
    }
  }

  it('passes every lifecycle case through the faithful proxy', { timeout: 60_000 }, async () => {
    expect(await lifecycleFailures('none')).toEqual([]);
  });

  for (const mutant of LIFECYCLE_MUTANTS)
    it.concurrent(`kills ${mutant}: ${MUTANTS[mutant]}`, { timeout: 60_000 }, async () => {
      expect((await lifecycleFailures(mutant)).length, `the suite did not catch ${mutant}`).toBeGreaterThan(0);
    });
});
