import { describe, expect, it } from 'vitest';

import { RoadOption, RoutePlanner, downsampleRoute, junctionOption } from '../../../envs/bench2drive/commands.ts';
import type { RoutePoint } from '../../../envs/bench2drive/commands.ts';

const line = (n: number, option: RoutePoint['option'], x0 = 0, step = 2): RoutePoint[] =>
  Array.from({ length: n }, (_, i) => ({ x: x0 + i * step, y: 0, option }));

describe('RoadOption codes', () => {
  it('match Bench2Drive/CARLA integers', () => {
    expect(RoadOption).toEqual({ VOID: -1, LEFT: 1, RIGHT: 2, STRAIGHT: 3, LANEFOLLOW: 4, CHANGELANELEFT: 5, CHANGELANERIGHT: 6 });
  });
  it('classifies junction connectors with the 35 degree threshold', () => {
    expect(junctionOption(Math.PI / 2)).toBe(RoadOption.LEFT);
    expect(junctionOption(-Math.PI / 2)).toBe(RoadOption.RIGHT);
    expect(junctionOption(0.3)).toBe(RoadOption.STRAIGHT);
    expect(junctionOption((36 * Math.PI) / 180)).toBe(RoadOption.LEFT);
  });
});

describe('downsampleRoute', () => {
  it('keeps the first point, option changes, points past 50 m and the last point', () => {
    // 60 points 2 m apart of LANEFOLLOW, 5 LEFT, 20 LANEFOLLOW.
    const route = [...line(60, RoadOption.LANEFOLLOW), ...line(5, RoadOption.LEFT, 120), ...line(20, RoadOption.LANEFOLLOW, 130)];
    const ids = downsampleRoute(route, 50);
    // i=0 option change from null; dist exceeds 50 after 26 accumulated steps (52 m) -> i=27 kept.
    expect(ids[0]).toBe(0);
    expect(ids[1]).toBe(27);
    expect(ids[2]).toBe(54);
    expect(ids).toContain(60); // LEFT starts
    expect(ids).toContain(65); // back to LANEFOLLOW
    expect(ids.at(-1)).toBe(84);
  });
  it('keeps every lane-change point and does not double-count the option change after one', () => {
    const route = [...line(3, RoadOption.LANEFOLLOW), ...line(3, RoadOption.CHANGELANELEFT, 6), ...line(3, RoadOption.LANEFOLLOW, 12)];
    expect(downsampleRoute(route, 50)).toEqual([0, 3, 4, 5, 8]);
  });
});

describe('RoutePlanner', () => {
  it('pops points within 4 m and keeps two', () => {
    const p = new RoutePlanner(4, 50);
    p.setRoute([
      { x: 0, y: 0, option: 4 },
      { x: 3, y: 0, option: 4 },
      { x: 20, y: 0, option: 1 },
      { x: 40, y: 0, option: 4 },
    ]);
    p.runStep(0, 0);
    expect(p.current().target.x).toBe(20);
    expect(p.current().near).toBe(RoadOption.LEFT);
    expect(p.current().far).toBe(RoadOption.LANEFOLLOW);
    p.runStep(39, 0);
    expect(p.points.length).toBe(2);
  });
});
