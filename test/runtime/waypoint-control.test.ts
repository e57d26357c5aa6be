import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { WAYPOINT_CONTROLLER_NAMES, WaypointController } from '../../runtime/waypoint-control.ts';
import type { WaypointControllerName } from '../../runtime/waypoint-control.ts';

interface Tick {
  waypoints: [number, number][];
  speed: number;
  target: [number, number];
}
interface Reference {
  sequences: { name: string; ticks: Tick[] }[];
  expected: Record<string, Record<string, [number, number, number][]>>;
}

// Written by scripts/waypoint-control/reference_vectors.py from the reference agents' formulas.
const reference = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'fixtures', 'waypoint-control', 'reference.json'), 'utf8')) as Reference;

describe('WaypointController', () => {
  it('covers exactly the controllers the reference vectors cover', () => {
    expect(new Set(WAYPOINT_CONTROLLER_NAMES)).toEqual(new Set(Object.keys(reference.expected)));
  });

  for (const name of WAYPOINT_CONTROLLER_NAMES) {
    it(`${name}: matches the reference formulas tick by tick on every recorded sequence`, () => {
      for (const seq of reference.sequences) {
        const controller = new WaypointController(name as WaypointControllerName);
        const expected = reference.expected[name]![seq.name]!;
        seq.ticks.forEach((tick, i) => {
          const c = controller.control(tick.waypoints, tick.speed, tick.target);
          const [throttle, steer, brake] = expected[i]!;
          const where = `${seq.name} tick ${i}`;
          expect(c.throttle, where).toBeCloseTo(throttle, 9);
          expect(c.steer, where).toBeCloseTo(steer, 9);
          expect(c.brake, where).toBe(brake);
        });
      }
    });
  }

  it('the reference sequences exercise braking, the target-point fallback and the UniAD throttle cut', () => {
    const e = reference.expected;
    const differs = (a: string, b: string) =>
      reference.sequences.some((s) => e[a]![s.name]!.some((row, i) => row.some((v, k) => Math.abs(v - e[b]![s.name]![i]![k]!) > 1e-6)));
    expect(differs('bench2drive', 'bench2drive-uniad')).toBe(true);
    expect(differs('bench2drive', 'transfuser')).toBe(true);
    expect(Object.values(e['bench2drive']!).some((rows) => rows.some((r) => r[2] === 1))).toBe(true);
  });

  it('#state round-trips the PID windows, so a restored controller continues identically', () => {
    const seq = reference.sequences[0]!;
    const a = new WaypointController('bench2drive');
    for (const t of seq.ticks.slice(0, 10)) a.control(t.waypoints, t.speed, t.target);
    const b = new WaypointController('bench2drive');
    b.turn.state = a.turn.state;
    b.speed.state = a.speed.state;
    for (const t of seq.ticks.slice(10)) expect(b.control(t.waypoints, t.speed, t.target)).toEqual(a.control(t.waypoints, t.speed, t.target));
  });

  it('refuses an unknown name, fewer than two waypoints, and a missing target point for bench2drive', () => {
    expect(() => new WaypointController('tcp' as WaypointControllerName)).toThrow(/unknown waypoint controller "tcp"; known: bench2drive/);
    expect(() => new WaypointController().control([[1, 0]], 0, [5, 0])).toThrow(/at least 2 waypoints/);
    expect(() =>
      new WaypointController().control(
        [
          [1, 0],
          [2, 0],
        ],
        0,
      ),
    ).toThrow(/target point/);
    expect(() =>
      new WaypointController('transfuser').control(
        [
          [1, 0],
          [2, 0],
        ],
        0,
      ),
    ).not.toThrow();
  });
});
