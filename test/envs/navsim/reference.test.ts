import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { scoreScene } from '../../../envs/navsim/evaluate.ts';
import { parseScene } from '../../../envs/navsim/scene.ts';

// A copy of shared/reference/navsim (scenes scored by NAVSIM's own code), kept in the repo so the test is self-contained.
const DIR = join(import.meta.dirname, '..', '..', 'fixtures', 'navsim-reference');
const load = (f: string): unknown => JSON.parse(readFileSync(`${DIR}/${f}`, 'utf8'));

interface Expected {
  metrics: Record<string, number | null>;
  raw: { progress_m: { pdm_closed: number; agent: number }; time_to_at_fault_collision_s: number | null; time_to_ttc_infraction_s: number | null };
  simulated_states: { values: number[][] };
  agent_reference_states: { values: number[][] };
  pdm_closed: Record<string, unknown> & { simulated_states: { values: number[][] } };
}

function maxDiff(a: Float64Array, rows: number[][]): number {
  let m = 0;
  rows.forEach((r, i) =>
    r.forEach((v, k) => {
      m = Math.max(m, Math.abs(v - (a[i * 11 + k] as number)));
    }),
  );
  return m;
}

describe.each([
  'follow_safe',
  'rear_end',
  'cut_in',
  'off_road_human',
  'red_light_turn',
  'carpark_exit',
  'kerb_edge',
  'kerb_hair',
  'barrier_hair',
  'barrier_pico',
  'overlap_at_start',
  'fork',
  'route_loop',
  'lane_tie',
  'route_gap',
  'route_ahead',
  'route_in_junction',
  'westbound_weave',
  'pop_in',
  'standstill',
  'empty_road',
  'dead_end',
  'last_touch',
  'ttc_horizon',
  'westbound_minus_pi',
  'lead_tie',
  'crowd_tie',
  'fork_tie',
  'off_map_start',
  'turn_across_pi',
  'red_at_last_frame',
  'lead_tie_stacked',
])('NAVSIM reference vector %s', (name) => {
  const scene = parseScene(load(`${name}.json`), `${name}.json`);
  const poses = scene.agent_trajectory?.poses ?? [];
  for (const version of [1, 2] as const) {
    it(`matches v${version} sub-metrics, states and PDM-Closed progress`, () => {
      const exp = load(`${name}.expected-v${version}.json`) as Expected;
      const r = scoreScene(scene, poses, { version });
      expect(maxDiff(r.referenceStates, exp.agent_reference_states.values)).toBeLessThan(1e-9);
      expect(maxDiff(r.simulatedStates, exp.simulated_states.values)).toBeLessThan(1e-6);
      expect(maxDiff(r.pdmClosed.states, exp.pdm_closed.simulated_states.values)).toBeLessThan(1e-6);
      expect(r.pdmClosedProgressM).toBeCloseTo(exp.raw.progress_m.pdm_closed, 6);
      expect(r.progressRawM).toBeCloseTo(exp.raw.progress_m.agent, 6);
      const m = r.metrics as unknown as Record<string, number | null>;
      for (const k of version === 1 ? ['nc', 'dac', 'ddc', 'ttc', 'ep', 'comfort', 'pdms'] : ['nc', 'dac', 'ddc', 'tlc', 'ep', 'ttc', 'lk', 'hc', 'pdms']) {
        expect(m[k], k).toBeCloseTo(exp.metrics[k] as number, 6);
      }
      if (version === 2) expect(r.metrics.epdms).toBeCloseTo(exp.metrics.epdms_with_ec_1 as number, 6);
      expect(r.collisionTimeS === null ? null : Number(r.collisionTimeS.toFixed(6))).toBe(exp.raw.time_to_at_fault_collision_s);
      expect(r.ttcTimeS === null ? null : Number(r.ttcTimeS.toFixed(6))).toBe(exp.raw.time_to_ttc_infraction_s);
    });
  }
});
