import { describe, expect, it } from 'vitest';

import type { MetricInfo } from '../../../envs/bench2drive/metrics.ts';
import { abilityTable, comfortWindow, drivingScore, efficiency, routeComfort, routeSucceeded, savgol, successRate } from '../../../envs/bench2drive/metrics.ts';
import type { RouteRecord } from '../../../envs/bench2drive/scoring.ts';
import { routeRecord } from '../../../envs/bench2drive/scoring.ts';

describe('savgol (scipy mode=interp)', () => {
  it('uses the textbook smoothing weights in the interior', () => {
    const x = [0, 0, 0, 0, 1, 0, 0, 0, 0];
    expect(savgol(x, 7, 2)[4]).toBeCloseTo(7 / 21, 12);
    expect(savgol(x, 7, 2)[3]).toBeCloseTo(6 / 21, 12);
    expect(savgol(x, 5, 2)[4]).toBeCloseTo(17 / 35, 12);
  });
  it('reproduces quadratics and their derivatives everywhere, edges included', () => {
    const t = Array.from({ length: 20 }, (_, i) => i * 0.1);
    const y = t.map((v) => 3 * v * v - v + 2);
    const s = savgol(y, 7, 2);
    const d = savgol(y, 7, 2, 1, 0.1);
    for (let i = 0; i < t.length; i++) {
      expect(s[i]).toBeCloseTo(y[i]!, 9);
      expect(d[i]).toBeCloseTo(6 * t[i]! - 1, 8);
    }
  });
});

const sample = (over: Partial<{ ax: number; ay: number; wz: number }> = {}): MetricInfo => ({
  acceleration: [over.ax ?? 0, over.ay ?? 0, 0],
  angular_velocity: [0, 0, over.wz ?? 0],
  forward_vector: [1, 0, 0],
  right_vector: [0, -1, 0],
  location: [0, 0, 0],
  rotation: [0, 0, 0],
});

describe('Comfortness', () => {
  it('passes a steady cruise and fails a hard brake', () => {
    expect(comfortWindow(Array.from({ length: 20 }, () => sample()))).toBe(true);
    expect(comfortWindow(Array.from({ length: 20 }, () => sample({ ax: -5 })))).toBe(false);
  });
  it('quirk 1: deg/s yaw rate against the rad/s bound (1 deg/s passes, 1 rad/s in deg/s fails)', () => {
    expect(comfortWindow(Array.from({ length: 20 }, () => sample({ wz: 0.9 })))).toBe(true);
    expect(comfortWindow(Array.from({ length: 20 }, () => sample({ wz: 1.0 })))).toBe(false); // 1 deg/s > 0.95
  });
  it('quirk 2: yaw acceleration is the smoothed yaw rate (a constant rate of 1.5 fails the 0.95 and 1.93 bounds alike)', () => {
    // A constant 0.5 deg/s yaw rate has zero true yaw acceleration and passes; the "yaw accel" equals 0.5 too.
    expect(comfortWindow(Array.from({ length: 20 }, () => sample({ wz: 0.5 })))).toBe(true);
  });
  it('chunks into 20-sample windows, drops a short tail, and treats <= 20 samples as one window', () => {
    const good = Array.from({ length: 20 }, () => sample());
    const bad = Array.from({ length: 20 }, () => sample({ ax: -5 }));
    expect(routeComfort([...good, ...bad, ...good.slice(0, 5)])).toBe(0.5);
    expect(routeComfort(good.slice(0, 12))).toBe(1);
    expect(routeComfort(bad.slice(0, 12))).toBe(0);
  });
});

const rec = (over: Partial<RouteRecord> & { events?: Parameters<typeof routeRecord>[0]['events'] }): RouteRecord => {
  const base = routeRecord({
    routeCompletion: over.scores?.score_route ?? 100,
    targetReached: (over.scores?.score_route ?? 100) >= 100,
    events: over.events ?? [],
    failure: null,
  });
  return { ...base, ...over, scores: over.scores ?? base.scores, infractions: over.infractions ?? base.infractions };
};
const entry = (message: string) => ({ message, time: 0, frame: 0, x: 0, y: 0 });

describe('DS, SR, Efficiency', () => {
  it('DS divides by the route-set size; SR ignores min-speed entries only', () => {
    const a = rec({ scenario_name: 'ParkedObstacle' });
    const b = rec({
      scenario_name: 'ParkedObstacle',
      infractions: { ...a.infractions, min_speed_infractions: [entry("Average speed is 50% of the surrounding traffic's one")] },
      status: 'Completed',
    });
    const c = rec({
      scenario_name: 'ParkedObstacle',
      infractions: { ...a.infractions, red_light: [entry('x')] },
      status: 'Completed',
      scores: { score_route: 100, score_penalty: 0.7, score_composed: 70 },
    });
    expect(routeSucceeded(a) && routeSucceeded(b) && !routeSucceeded(c)).toBe(true);
    expect(drivingScore([a, b, c], 4)).toBeCloseTo(270 / 4, 12);
    expect(successRate([a, b, c], 4)).toBe(0.5);
  });
  it('Efficiency averages per-route means and drops values above 1000', () => {
    const mk = (vals: number[]) => ({
      infractions: { min_speed_infractions: vals.map((v) => entry(`Average speed is ${v}% of the surrounding traffic's one`)) },
    });
    expect(efficiency([mk([50, 150]), mk([80, 2000]), mk([])])).toBeCloseTo((100 + 80) / 2, 12);
  });
});

describe('ability table', () => {
  it('maps scenarios to abilities; a failed Traffic_Signs route past the junction is credited (v0.0.4)', () => {
    const ok = rec({ scenario_name: 'ParkedObstacle' });
    const ev = rec({ scenario_name: 'YieldToEmergencyVehicle', status: 'Failed', scores: { score_route: 50, score_penalty: 1, score_composed: 50 } });
    // A signalised left turn that failed after the junction without a light infraction: a Traffic_Signs success.
    const ts = rec({
      scenario_name: 'SignalizedJunctionLeftTurn',
      status: 'Failed - Agent got blocked',
      scores: { score_route: 60, score_penalty: 1, score_composed: 60 },
      junction_completion: 0.5,
    });
    const ts2 = rec({ scenario_name: 'VanillaSignalizedTurnEncounterRedLight', junction_completion: 0.5 });
    const t = abilityTable([ok, ev, ts, ts2]);
    expect(t.abilities['Overtaking']).toBe(1);
    expect(t.abilities['Give_Way']).toBe(0);
    expect(t.abilities['Merging']).toBe(0); // SignalizedJunctionLeftTurn is also Merging
    expect(t.counts['Traffic_Signs']).toEqual([2, 2]);
    expect(t.abilities['Emergency_Brake']).toBeNull();
    expect(t.mean).toBeCloseTo((1 + 0 + 0 + 0 + 1) / 5, 12);
    // Bench2Drive's spellings put the stop-sign turn in Traffic_Signs.
    const stop = rec({
      scenario_name: 'VanillaNonSignalizedTurnEncounterStopsign',
      status: 'Failed',
      scores: { score_route: 30, score_penalty: 1, score_composed: 30 },
      junction_completion: 0.5,
    });
    expect(abilityTable([stop]).counts['Traffic_Signs']).toEqual([0, 1]);
  });
});
