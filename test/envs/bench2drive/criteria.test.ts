import { describe, expect, it } from 'vitest';

import {
  BlockedCriterion,
  CollisionCriterion,
  InRouteCriterion,
  MinSpeedCriterion,
  OutsideRouteLanesCriterion,
  RedLightCriterion,
  RouteCompletionCriterion,
  RouteTrack,
  ScenarioTimeoutCriterion,
  StopSignCriterion,
  YieldToEmergencyVehicleCriterion,
  routeTimeout,
} from '../../../envs/bench2drive/criteria.ts';

const ego = (time: number, x: number, y = 0, speed = 5, yaw = 0) => ({ time, frame: Math.round(time / 0.05), x, y, speed, yaw });
const straight = (len = 100, step = 2) => RouteTrack.fromPoints(Array.from({ length: len / step + 1 }, (_, i) => ({ x: i * step, y: 0 })));

describe('CollisionCriterion', () => {
  it('counts a collision once per actor within 5 s and once within 5 m', () => {
    const c = new CollisionCriterion();
    c.update(ego(1, 0), [{ id: 7, kind: 'vehicle' }]);
    c.update(ego(1.05, 0.2), [{ id: 7, kind: 'vehicle' }]); // same actor, same place
    c.update(ego(1.1, 0.4), [{ id: 8, kind: 'vehicle' }]); // other actor but within 5 m
    expect(c.events).toHaveLength(1);
    c.update(ego(2, 6), [{ id: 8, kind: 'pedestrian' }]); // > 5 m away, new actor
    expect(c.events).toHaveLength(2);
    expect(c.events[1]!.type).toBe('COLLISION_PEDESTRIAN');
    c.update(ego(3, 12), [{ id: 8, kind: 'pedestrian' }]); // same actor within 5 s: ignored although far
    expect(c.events).toHaveLength(2);
    c.update(ego(8.05, 24), []); // its update expires the same-actor filter after 5 s
    c.update(ego(8.1, 24), [{ id: 8, kind: 'pedestrian' }]); // same actor after 5 s and > 5 m
    expect(c.events).toHaveLength(3);
  });
  it('ignores contacts while the ego is below 0.1 m/s and classifies statics', () => {
    const c = new CollisionCriterion();
    c.update(ego(1, 0, 0, 0.05), [{ id: 3, kind: 'vehicle' }]);
    expect(c.events).toHaveLength(0);
    c.update(ego(1.05, 0, 0, 0.2), [{ id: 0, kind: 'static' }]);
    expect(c.events[0]!.type).toBe('COLLISION_STATIC');
    expect(c.events[0]!.time).toBe(1.05);
  });
});

describe('RedLightCriterion', () => {
  const light = (red: boolean) => ({ id: 1, x: 10, y: 3, red, stopLines: [{ x: 10, y: 0, yaw: 0, laneWidth: 3.5, laneKey: 'L1' }] });
  const lane = () => 'L1';
  it('fires when the tail crosses the stop line of a red light within 15 m, once per light', () => {
    const c = new RedLightCriterion();
    for (let x = 0; x < 20; x += 0.5) c.update({ ...ego(x, x), halfLength: 2.4 }, [light(true)], lane);
    expect(c.events).toHaveLength(1);
    expect(c.events[0]!.x).toBe(10);
  });
  it('does not fire on green or for another lane', () => {
    const c = new RedLightCriterion();
    for (let x = 0; x < 20; x += 0.5) c.update({ ...ego(x, x), halfLength: 2.4 }, [light(false)], lane);
    for (let x = 0; x < 20; x += 0.5) c.update({ ...ego(x, x), halfLength: 2.4 }, [{ ...light(true), id: 2 }], () => 'L2');
    expect(c.events).toHaveLength(0);
  });
});

describe('StopSignCriterion', () => {
  const zone = { id: 4, x: 8, y: 0, yaw: 0, halfLength: 2, halfWidth: 1.75 };
  it('fires when the ego leaves the zone without dropping below 0.1 m/s', () => {
    const c = new StopSignCriterion();
    for (let x = 0; x < 20; x += 0.25) c.update(ego(x, x, 0, 3), [zone]);
    expect(c.events).toHaveLength(1);
    expect(c.events[0]!.type).toBe('STOP_INFRACTION');
  });
  it('accepts a full stop near the sign', () => {
    const c = new StopSignCriterion();
    let t = 0;
    for (let x = 0; x < 5; x += 0.25) c.update(ego((t += 0.05), x, 0, 3), [zone]);
    c.update(ego((t += 0.05), 5, 0, 0.05), [zone]);
    for (let x = 5; x < 20; x += 0.25) c.update(ego((t += 0.05), x, 0, 3), [zone]);
    expect(c.events).toHaveLength(0);
  });
});

describe('OutsideRouteLanesCriterion', () => {
  it('reports the percentage of the completed route driven outside lanes', () => {
    const r = straight(100);
    const c = new OutsideRouteLanesCriterion(r);
    for (let x = 0; x <= 50; x += 0.5) c.update(ego(x, x + 0.01), { onDrivingLane: x < 40 || x >= 50, inJunction: false, laneAngleDeg: 0 });
    c.terminate(ego(60, 50));
    expect(c.events).toHaveLength(1);
    expect(c.events[0]!.percentage).toBeCloseTo(20, 5); // 10 m of 50 m
    expect(c.events[0]!.message).toContain('20% of the completed route');
  });
  it('counts wrong-way lanes outside junctions only', () => {
    const c = new OutsideRouteLanesCriterion(straight(100));
    for (let x = 0; x <= 20; x += 0.5) c.update(ego(x, x + 0.01), { onDrivingLane: true, inJunction: true, laneAngleDeg: 180 });
    c.terminate(ego(30, 20));
    expect(c.events).toHaveLength(0);
    const d = new OutsideRouteLanesCriterion(straight(100));
    for (let x = 0; x <= 20; x += 0.5) d.update(ego(x, x + 0.01), { onDrivingLane: true, inJunction: false, laneAngleDeg: 170 });
    d.terminate(ego(30, 20));
    expect(d.events[0]!.percentage).toBeCloseTo(100, 5);
  });
});

describe('InRouteCriterion', () => {
  it('deviates at 30 m from the route', () => {
    const c = new InRouteCriterion(straight(100));
    expect(c.update(ego(0, 0, 29))).toBe(false);
    expect(c.update(ego(0.05, 0, 30))).toBe(true);
    expect(c.events[0]!.type).toBe('ROUTE_DEVIATION');
  });
  it('deviates when more than 30 % of the route is driven 15 m off it', () => {
    const c = new InRouteCriterion(straight(100));
    let out = false;
    let x = 0;
    for (; x <= 100 && !out; x += 1) out = c.update(ego(x, x, 16));
    expect(out).toBe(true);
    expect(x).toBeGreaterThan(30);
    expect(x).toBeLessThan(36);
  });
});

describe('RouteCompletionCriterion', () => {
  it('tracks passed waypoints and snaps to 100 above 99 % within 10 m of the end', () => {
    const c = new RouteCompletionCriterion(straight(200, 1));
    for (let x = 0; x <= 100.5; x += 0.5) c.update(ego(x, x));
    expect(c.percentage).toBeCloseTo(50, 5);
    for (let x = 100; x <= 198.5; x += 0.5) c.update(ego(x, x));
    expect(c.completed).toBe(false); // 99 % is not above 99 %
    c.update(ego(200, 199.5));
    expect(c.completed).toBe(true);
    expect(c.percentage).toBe(100);
  });
  it('does not jump more than 2 points per tick', () => {
    const c = new RouteCompletionCriterion(straight(100));
    c.update(ego(0, 60));
    expect(c.percentage).toBeCloseTo(4, 5);
  });
});

describe('BlockedCriterion', () => {
  it('fires after 60 s below 0.1 m/s', () => {
    const c = new BlockedCriterion();
    let fired = false;
    let t: number;
    c.update(ego(0, 0, 0, 1));
    for (t = 0.05; t < 61 && !fired; t += 0.05) fired = c.update(ego(t, 0, 0, 0));
    expect(fired).toBe(true);
    expect(t).toBeGreaterThan(60);
  });
});

describe('MinSpeedCriterion', () => {
  it('records checkpoints by distance since the last one, before adding the tick, rounded to 2 decimals', () => {
    const c = new MinSpeedCriterion(straight(100));
    for (let x = 0; x <= 100; x += 0.25) c.update(ego(x, x + 0.01, 0, 5), [15, 15]);
    c.terminate(ego(101, 100));
    // Route points every 2 m: a checkpoint needs more than 5 m since the last, i.e. every 6 m (16),
    // plus the partial one at the end (past 95 %).
    expect(c.events.length).toBe(17);
    expect(c.events[0]!.percentage).toBe(33.33);
    expect(c.events[0]!.message).toMatch(/Average speed is 33.33% of/);
  });
  it('records 100 when no background vehicle was measured, and no partial checkpoint before 95 %', () => {
    const c = new MinSpeedCriterion(straight(100));
    for (let x = 0; x <= 90; x += 0.25) c.update(ego(x, x + 0.01, 0, 5), []);
    c.terminate(ego(91, 90));
    expect(c.events.map((e) => e.percentage)).toEqual(Array(15).fill(100));
  });
});

describe('ScenarioTimeoutCriterion and YieldToEmergencyVehicleCriterion', () => {
  it('times out when the scenario is not passed in time', () => {
    const c = new ScenarioTimeoutCriterion(10);
    for (let t = 0; t < 12; t += 0.05) c.update(ego(t, 0), t > 1, false);
    expect(c.events).toHaveLength(1);
    const d = new ScenarioTimeoutCriterion(10);
    for (let t = 0; t < 12; t += 0.05) d.update(ego(t, 0), t > 1, t > 5);
    expect(d.events).toHaveLength(0);
  });
  it('fails to yield when the EV is not ahead at the end', () => {
    const c = new YieldToEmergencyVehicleCriterion();
    c.finish(ego(20, 50), false);
    c.finish(ego(21, 50), false);
    expect(c.events).toHaveLength(1);
    const d = new YieldToEmergencyVehicleCriterion();
    d.finish(ego(20, 50), true);
    expect(d.events).toHaveLength(0);
  });
  it('route timeout is 300 s + length / (0.1 x speed limit)', () => {
    expect(
      routeTimeout([
        { length: 100, speedLimit: 10 },
        { length: 50, speedLimit: 5 },
      ]),
    ).toBeCloseTo(300 + 100 + 100, 9);
  });
});
