import { describe, expect, it } from 'vitest';

import type { TrafficEvent, TrafficEventTypeName } from '../../../envs/bench2drive/criteria.ts';
import { infractionPenalty, penaltyFactor, routeRecord } from '../../../envs/bench2drive/scoring.ts';

const ev = (type: TrafficEventTypeName, percentage?: number): TrafficEvent => ({
  type,
  time: 1,
  frame: 20,
  x: 1,
  y: 2,
  message: `${type} 12.5%`,
  ...(percentage !== undefined ? { percentage } : {}),
});

describe('penalty coefficients', () => {
  it.each([
    ['COLLISION_PEDESTRIAN', 0.5],
    ['COLLISION_VEHICLE', 0.6],
    ['COLLISION_STATIC', 0.65],
    ['TRAFFIC_LIGHT_INFRACTION', 0.7],
    ['STOP_INFRACTION', 0.8],
    ['SCENARIO_TIMEOUT', 0.7],
    ['YIELD_TO_EMERGENCY_VEHICLE', 0.7],
    ['ROUTE_DEVIATION', 1],
    ['VEHICLE_BLOCKED', 1],
  ] as const)('%s -> %f', (type, coef) => {
    expect(penaltyFactor(ev(type))).toBe(coef);
  });
  it('outside route lanes multiplies by 1 - pct/100; min speed is unused', () => {
    expect(penaltyFactor(ev('OUTSIDE_ROUTE_LANES_INFRACTION', 20))).toBeCloseTo(0.8, 12);
    expect(penaltyFactor(ev('MIN_SPEED_INFRACTION', 20))).toBe(1);
  });
  it('multiplies', () => {
    expect(infractionPenalty([ev('COLLISION_VEHICLE'), ev('TRAFFIC_LIGHT_INFRACTION'), ev('OUTSIDE_ROUTE_LANES_INFRACTION', 50)])).toBeCloseTo(
      0.6 * 0.7 * 0.5,
      12,
    );
  });
});

describe('routeRecord', () => {
  it('Perfect with no infractions, Completed with min-speed entries only', () => {
    expect(routeRecord({ routeCompletion: 100, targetReached: true, events: [], failure: null }).status).toBe('Perfect');
    const r = routeRecord({ routeCompletion: 100, targetReached: true, events: [ev('MIN_SPEED_INFRACTION', 80)], failure: null });
    expect(r.status).toBe('Completed');
    expect(r.scores.score_composed).toBe(100);
  });
  it('score = R x P and failure statuses', () => {
    const r = routeRecord({ routeCompletion: 40, targetReached: false, events: [ev('COLLISION_VEHICLE'), ev('VEHICLE_BLOCKED')], failure: null });
    expect(r.status).toBe('Failed - Agent got blocked');
    expect(r.scores.score_penalty).toBe(0.6);
    expect(r.scores.score_composed).toBe(24);
    expect(r.infractions['collisions_vehicle']).toHaveLength(1);
    expect(r.infractions['collisions_vehicle']![0]).toMatchObject({ time: 1, x: 1, y: 2 });
    expect(routeRecord({ routeCompletion: 10, targetReached: false, events: [ev('ROUTE_DEVIATION')], failure: null }).status).toBe(
      'Failed - Agent deviated from the route',
    );
    expect(routeRecord({ routeCompletion: 10, targetReached: false, events: [], failure: 'tickRuntime' }).status).toBe('Failed - TickRuntime');
    const t = routeRecord({ routeCompletion: 10, targetReached: false, events: [], failure: 'timeout', duration: 480 });
    expect(t.status).toBe('Failed - Agent timed out');
    expect(t.infractions['route_timeout']).toHaveLength(1);
  });
});
