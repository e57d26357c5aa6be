/**
 * `gymwire eval bench2drive --out DIR` as a process: one route driven by the naive agent against a
 * local server, and the folder Bench2Drive's tools read written (leaderboard.test.ts checks each
 * field those tools read; this checks the command writes them where they look).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const out = mkdtempSync(join(tmpdir(), 'gymwire-b2d-out-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('gymwire eval bench2drive --out', () => {
  it('writes the results JSON, routes.xml and each route metric_info.json', () => {
    const r = spawnSync(
      process.execPath,
      ['bin/gymwire.js', 'eval', 'bench2drive', '--agent', 'naive', '--routes', 'VanillaSignalizedTurnEncounterRedLight_3', '--json', '--out', out],
      { cwd: ROOT, encoding: 'utf8', env: { ...process.env, GYMWIRE_NO_REEXEC: '1' }, timeout: 120_000 },
    );
    expect(r.status, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as { routes: number; routes_detail?: unknown };
    expect(report.routes).toBe(1);
    expect(report.routes_detail).toBeUndefined();
    const top = readdirSync(out).sort();
    expect(top.filter((f) => f.endsWith('.json'))).toEqual(['gymwire_naive.json']);
    expect(top).toContain('routes.xml');
    const doc = JSON.parse(readFileSync(join(out, 'gymwire_naive.json'), 'utf8')) as { _checkpoint: { records: { save_name: string; route_id: string }[] } };
    const [rec] = doc._checkpoint.records;
    expect(rec!.route_id).toBe('RouteScenario_63_rep0');
    expect(existsSync(join(out, rec!.save_name, 'metric_info.json'))).toBe(true);
    expect(readFileSync(join(out, 'routes.xml'), 'utf8')).toContain('<route id="63" town="GymwireTown63">');
  }, 150_000);

  it('refuses an unknown route id, naming the valid ones', () => {
    const r = spawnSync(process.execPath, ['bin/gymwire.js', 'eval', 'bench2drive', '--agent', 'naive', '--routes', 'Nope_0'], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, GYMWIRE_NO_REEXEC: '1' },
      timeout: 60_000,
    });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/unknown route "Nope_0"; valid routes are/);
  });
});
