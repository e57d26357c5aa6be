import { describe, expect, it } from 'vitest';

import { makeTrack, stateAt } from '../../../envs/driving/agents.ts';
import { PACIFICA, S, initialState, propagate } from '../../../envs/driving/bicycle.ts';
import {
  GridIndex,
  Polyline,
  boxCorners,
  convexIntersectionArea,
  convexIntersects,
  coordsFrom,
  cppSort,
  orientSign,
  pointInPolygon,
  polygonIntersectionArea,
  polygonsIntersect,
  principalValue,
  segmentIntersectsPolygon,
  strTreeOrder,
} from '../../../envs/driving/geometry.ts';
import { IDM_PDM_CLOSED, idmAcceleration } from '../../../envs/driving/idm.ts';
import { DrivingMap } from '../../../envs/driving/map.ts';
import type { MapData } from '../../../envs/driving/map.ts';

describe('geometry', () => {
  it('orders box corners FL, RL, RR, FR', () => {
    const c = boxCorners({ x: 0, y: 0, heading: 0, length: 4, width: 2 });
    expect(Array.from(c)).toEqual([2, 1, -2, 1, -2, -1, 2, -1]);
  });
  it('detects overlap, touching and separation of boxes', () => {
    const a = boxCorners({ x: 0, y: 0, heading: 0, length: 4, width: 2 });
    expect(convexIntersects(a, boxCorners({ x: 3, y: 0.5, heading: 0.4, length: 4, width: 2 }))).toBe(true);
    expect(convexIntersects(a, boxCorners({ x: 4, y: 0, heading: 0, length: 4, width: 2 }))).toBe(true); // touching
    expect(convexIntersects(a, boxCorners({ x: 4.01, y: 0, heading: 0, length: 4, width: 2 }))).toBe(false);
    expect(convexIntersects(a, boxCorners({ x: 3.3, y: 2.3, heading: Math.PI / 4, length: 2, width: 1 }))).toBe(false);
    expect(polygonsIntersect(a, boxCorners({ x: 3, y: 0.5, heading: 0.4, length: 4, width: 2 }))).toBe(true);
  });
  it('decides touching boxes exactly, as shapely does, at any scale', () => {
    // A slanted box 30 m out and one beside it, `gap` beyond its right side (GEOS decides from the
    // doubles exactly: 1e-11 m apart is apart, 1e-11 m into it is touching).
    const h = 0.5;
    const a = boxCorners({ x: 26.0, y: 11.0, heading: h, length: 5.176, width: 2.297 });
    const beside = (gap: number) =>
      boxCorners({ x: 26.0 + Math.sin(h) * (2.297 / 2 + 0.25 + gap), y: 11.0 - Math.cos(h) * (2.297 / 2 + 0.25 + gap), heading: h, length: 4, width: 0.5 });
    for (const gap of [1e-9, 1e-10, 1e-11, 1e-12]) expect(convexIntersects(a, beside(gap)), `${gap}`).toBe(false);
    for (const gap of [-1e-9, -1e-11, -1e-12]) expect(convexIntersects(a, beside(gap)), `${gap}`).toBe(true);
    // A shared corner touches, exactly.
    const shared = Float64Array.of(a[6] as number, a[7] as number, (a[6] as number) + 1, a[7] as number, (a[6] as number) + 1, (a[7] as number) - 1);
    expect(convexIntersects(a, shared)).toBe(true);
    // Near-touching pairs agree with the exact edge test.
    for (let k = 0; k < 200; k++) {
      const gap = (k - 100) * 1e-13;
      const b = beside(gap);
      expect(convexIntersects(a, b)).toBe(polygonsIntersect(a, b));
    }
  });
  it('point in polygon counts the boundary', () => {
    const sq = coordsFrom([
      [0, 0],
      [1, 0],
      [1, 1],
      [0, 1],
      [0, 0],
    ]);
    expect(pointInPolygon(0.5, 0.5, sq)).toBe(true);
    expect(pointInPolygon(1, 0.5, sq)).toBe(true);
    expect(pointInPolygon(1.1, 0.5, sq)).toBe(false);
    expect(segmentIntersectsPolygon(-1, 0.5, 2, 0.5, sq)).toBe(true);
  });
  it('decides the boundary exactly, as GEOS does', () => {
    // A diamond: slanted edges, vertices at the extremes of y (a vertex is on the boundary too).
    const diamond = coordsFrom([
      [0, -1],
      [1, 0],
      [0, 1],
      [-1, 0],
    ]);
    expect(pointInPolygon(0, 1, diamond, 'outside')).toBe(false);
    expect(pointInPolygon(0, 1, diamond, 'inside')).toBe(true);
    expect(pointInPolygon(0.5, 0.5, diamond, 'outside')).toBe(false);
    // 1e-12 m inside and outside the edge from (1, 0) to (0, 1).
    const h = 1e-12 / Math.SQRT2;
    expect(pointInPolygon(0.5 - h, 0.5 - h, diamond, 'outside')).toBe(true);
    expect(pointInPolygon(0.5 + h, 0.5 + h, diamond, 'inside')).toBe(false);
    // The doubles 0.1 and 0.2 lie just right of the line through the doubles (0.3, 0) and (0, 0.3).
    expect(orientSign(0.3, 0, 0, 0.3, 0.1, 0.2)).toBe(-1);
    expect(orientSign(0, 0, 3, 3, 1, 1)).toBe(0);
    expect(orientSign(0, 0, 3, 3, 1, 1 + Number.EPSILON)).toBe(1);
  });
  it("orders query results as shapely's STR tree does", () => {
    // Recorded with shapely 2.1: 12 stacked strips, listed top down, queried on the line between two of them.
    const strips = Array.from({ length: 12 }, (_, k) => [0, 10 - k, 100, 11 - k] as const);
    const hits = strTreeOrder(strips).filter((k) => (strips[k] as readonly number[])[1] === 5 || (strips[k] as readonly number[])[3] === 5);
    expect(hits).toEqual([6, 5]);
    // Two levels: 30 strips, 3 slices of 10; shapely lists the lower strip first.
    const many = Array.from({ length: 30 }, (_, i) => [0, i - 1, 100, i] as const);
    expect(strTreeOrder(many).filter((i) => i === 14 || i === 15)).toEqual([14, 15]);
    // 60 boxes on a 5 x 4 grid of 20 positions, three to a position: GEOS's std::sort leaves equal
    // centres in libstdc++'s introsort order, not the input order (recorded with shapely 2.1.2).
    const stacked = Array.from({ length: 60 }, (_, i) => [((i * 7) % 5) * 2, ((i * 3) % 4) * 2, ((i * 7) % 5) * 2 + 2, ((i * 3) % 4) * 2 + 2] as const);
    expect(strTreeOrder(stacked)).toEqual([
      40, 20, 28, 8, 0, 15, 35, 23, 3, 55, 4, 48, 16, 56, 36, 43, 59, 11, 31, 51, 32, 44, 52, 24, 12, 47, 27, 7, 39, 19, 38, 58, 10, 50, 30, 13, 5, 33, 45, 25,
      46, 6, 26, 18, 54, 1, 41, 21, 53, 29, 42, 34, 22, 14, 2, 17, 9, 37, 57, 49,
    ]);
  });
  it('sorts as libstdc++ std::sort does, equal elements included', () => {
    const byKey = (a: { k: number }, b: { k: number }) => a.k < b.k;
    const items = Array.from({ length: 40 }, (_, i) => ({ k: i % 3, i }));
    const sorted = cppSort([...items], byKey);
    expect(sorted.map((x) => x.k)).toEqual([...items].map((x) => x.k).sort((a, b) => a - b));
    expect(cppSort([...items].slice(0, 16), byKey).map((x) => x.i)).toEqual(
      [...items]
        .slice(0, 16)
        .sort((a, b) => a.k - b.k)
        .map((x) => x.i),
    );
  });
  it('computes convex intersection areas', () => {
    const a = boxCorners({ x: 0, y: 0, heading: 0, length: 2, width: 2 });
    const b = boxCorners({ x: 1, y: 1, heading: 0, length: 2, width: 2 });
    expect(convexIntersectionArea(a, b)).toBeCloseTo(1, 9);
  });
  it('computes intersection areas of non-convex polygons, either winding', () => {
    // An L (a 2 x 2 square less its top-right unit square) against the unit squares it covers or not.
    const l = coordsFrom([
      [0, 0],
      [2, 0],
      [2, 1],
      [1, 1],
      [1, 2],
      [0, 2],
    ]);
    const square = (x: number, y: number): Float64Array => boxCorners({ x: x + 0.5, y: y + 0.5, heading: 0, length: 1, width: 1 });
    expect(polygonIntersectionArea(l, square(1, 1))).toBeCloseTo(0, 12);
    expect(polygonIntersectionArea(l, square(0.5, 0.5))).toBeCloseTo(0.75, 12);
    const clockwise = coordsFrom([
      [0, 2],
      [1, 2],
      [1, 1],
      [2, 1],
      [2, 0],
      [0, 0],
    ]);
    expect(polygonIntersectionArea(clockwise, l)).toBeCloseTo(3, 12);
  });
  it('projects onto polylines with signed offsets', () => {
    const pl = new Polyline(
      coordsFrom([
        [0, 0],
        [10, 0],
        [10, 10],
      ]),
    );
    expect(pl.length).toBe(20);
    const p = pl.project(5, 2);
    expect(p.s).toBeCloseTo(5);
    expect(p.d).toBeCloseTo(2);
    expect(pl.interpolate(15)).toEqual({ x: 10, y: 5, heading: Math.PI / 2 });
  });
  it('grid index returns each candidate once', () => {
    const g = new GridIndex(
      [
        [0, 0, 50, 50],
        [100, 100, 110, 110],
      ],
      10,
    );
    expect(g.query(5, 5, 45, 45)).toEqual([0]);
    expect(g.queryPoint(105, 105)).toEqual([1]);
  });
  it('principal value wraps to [-pi, pi)', () => {
    expect(principalValue(Math.PI)).toBeCloseTo(-Math.PI);
    expect(principalValue((3 * Math.PI) / 2)).toBeCloseTo(-Math.PI / 2);
  });
});

describe('bicycle model', () => {
  it('lags acceleration by dt/(dt+0.2) and integrates with forward Euler', () => {
    const s = propagate(initialState({ vx: 10 }), { accel: 3, steeringRate: 0 }, 0.1);
    expect(s[S.AX]).toBeCloseTo(3 * (0.1 / 0.3), 12);
    expect(s[S.VX]).toBeCloseTo(10 + 0.1, 12);
    expect(s[S.X]).toBeCloseTo(1, 12);
  });
  it('lags steering by dt/(dt+0.05) and yaws with v tan(delta)/L', () => {
    const s1 = propagate(initialState({ vx: 10 }), { accel: 0, steeringRate: 0.3 }, 0.1);
    const steer = 0.1 * 0.3 * (0.1 / 0.15);
    expect(s1[S.STEERING_ANGLE]).toBeCloseTo(steer, 12);
    expect(s1[S.ANGULAR_VELOCITY]).toBeCloseTo((10 * Math.tan(steer)) / PACIFICA.wheelBase, 12);
    const s2 = propagate(s1, { accel: 0, steeringRate: 0 }, 0.1);
    expect(s2[S.HEADING]).toBeCloseTo(((10 * Math.tan(steer)) / PACIFICA.wheelBase) * 0.1, 12);
  });
  it('clips the steering angle to pi/3', () => {
    let s = initialState({ vx: 1 });
    for (let i = 0; i < 50; i++) s = propagate(s, { accel: 0, steeringRate: 100 }, 0.1);
    expect(s[S.STEERING_ANGLE]).toBeCloseTo(Math.PI / 3, 12);
  });
});

describe('IDM', () => {
  it('accelerates freely and brakes behind a close leader, within [-b, a]', () => {
    expect(idmAcceleration(IDM_PDM_CLOSED, { v: 0, v0: 10, gap: Infinity, leadV: 0 })).toBeCloseTo(1.5);
    expect(idmAcceleration(IDM_PDM_CLOSED, { v: 10, v0: 10, gap: Infinity, leadV: 0 })).toBeCloseTo(0);
    expect(idmAcceleration(IDM_PDM_CLOSED, { v: 10, v0: 15, gap: 2, leadV: 0 })).toBe(-3);
  });
});

describe('map and agents', () => {
  const data: MapData = {
    name: 't',
    roadblocks: [
      {
        id: 'rb',
        kind: 'roadblock',
        polygon: [
          [0, -3.5],
          [100, -3.5],
          [100, 3.5],
          [0, 3.5],
        ],
        incoming: [],
        outgoing: [],
      },
    ],
    lanes: [
      {
        id: 'r',
        roadblock_id: 'rb',
        polygon: [
          [0, -3.5],
          [100, -3.5],
          [100, 0],
          [0, 0],
        ],
        centerline: [
          [0, -1.75],
          [100, -1.75],
        ],
        speed_limit_mps: 15,
        incoming: [],
        outgoing: [],
      },
      {
        id: 'l',
        roadblock_id: 'rb',
        polygon: [
          [0, 0],
          [100, 0],
          [100, 3.5],
          [0, 3.5],
        ],
        centerline: [
          [100, 1.75],
          [0, 1.75],
        ],
        speed_limit_mps: 15,
        incoming: [],
        outgoing: [],
      },
    ],
    intersections: [],
    carparks: [],
    drivable_areas: [],
  };
  const map = new DrivingMap(data);
  it('answers lane and drivable-area queries', () => {
    expect(map.lanesAt(10, -1)).toEqual(['r']);
    expect(map.lanesAt(10, 0).sort()).toEqual(['l', 'r']);
    expect(map.onDrivableArea(10, 3)).toBe(true);
    expect(map.onDrivableArea(10, 4)).toBe(false);
    expect(map.nearestLane(10, 1, 0)?.lane.id).toBe('r');
    expect(map.nearestLane(10, 1, Math.PI)?.lane.id).toBe('l');
  });
  it('interpolates agent tracks', () => {
    const tr = makeTrack({
      token: 'a',
      type: 'vehicle',
      length: 4,
      width: 2,
      height: 1.5,
      states: [
        [0, 0, 0, 0, 10, 0],
        [1, 10, 0, 0, 10, 0],
      ],
    });
    expect(stateAt(tr, 0.5)?.x).toBeCloseTo(5);
    expect(stateAt(tr, 2)).toBeNull();
  });
});
