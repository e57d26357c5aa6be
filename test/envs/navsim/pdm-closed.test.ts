import { describe, expect, it } from 'vitest';

import { STATE_SIZE } from '../../../envs/driving/bicycle.ts';
import { comfortChecks, extendedComfort } from '../../../envs/driving/comfort.ts';
import { boxCorners } from '../../../envs/driving/geometry.ts';
import { DrivingMap } from '../../../envs/driving/map.ts';
import { SceneScorer } from '../../../envs/navsim/evaluate.ts';
import { pdmClosed } from '../../../envs/navsim/pdm-closed.ts';
import { forecastWorld } from '../../../envs/navsim/pdm-observation.ts';
import { Corridor, SE2Path, discreteCenterline, parallelPath, unwrapAngles } from '../../../envs/navsim/pdm-path.ts';
import { buildWorld, proposalMetrics } from '../../../envs/navsim/pdm.ts';
import type { Scene } from '../../../envs/navsim/scene.ts';
import { parseScene } from '../../../envs/navsim/scene.ts';

const rect = (x0: number, x1: number, y0: number, y1: number) => [
  [x0, y0],
  [x1, y0],
  [x1, y1],
  [x0, y1],
  [x0, y0],
];

/** One lane along x to 0, then one turning 45 degrees left: a lane join with a heading change. */
function bentScene(extra: Partial<Scene> = {}): Scene {
  const d = Math.SQRT1_2;
  return parseScene({
    name: 'bent',
    timestamp_us: 0,
    scene_type: 'original',
    map: {
      name: 'bent',
      roadblocks: [
        { id: 'ra', kind: 'roadblock', polygon: rect(-100, 0, -3.5, 3.5), incoming: [], outgoing: ['rb'] },
        {
          id: 'rb',
          kind: 'roadblock',
          polygon: [
            [0, -3.5],
            [100 * d + 3.5 * d, 100 * d - 3.5 * d],
            [100 * d - 3.5 * d, 100 * d + 3.5 * d],
            [0, 3.5],
            [0, -3.5],
          ],
          incoming: ['ra'],
          outgoing: [],
        },
      ],
      lanes: [
        {
          id: 'a',
          roadblock_id: 'ra',
          polygon: rect(-100, 0, -3.5, 3.5),
          centerline: [
            [-100, 0],
            [-50, 0],
            [0, 0],
          ],
          speed_limit_mps: 10,
          incoming: [],
          outgoing: ['b'],
        },
        {
          id: 'b',
          roadblock_id: 'rb',
          polygon: [
            [0, -3.5],
            [100 * d + 3.5 * d, 100 * d - 3.5 * d],
            [100 * d - 3.5 * d, 100 * d + 3.5 * d],
            [0, 3.5],
            [0, -3.5],
          ],
          centerline: [
            [0, 0],
            [50 * d, 50 * d],
            [100 * d, 100 * d],
          ],
          speed_limit_mps: 10,
          incoming: ['a'],
          outgoing: [],
        },
      ],
      intersections: [],
      carparks: [],
      drivable_areas: [{ id: 'shoulder', polygon: rect(-100, 0, -8, -3.5) }],
    },
    route_roadblock_ids: ['ra', 'rb'],
    ego: { x: -20, y: 0, heading: 0, vx: 8, vy: 0, ax: 0, ay: 0 },
    agents: [],
    ...extra,
  });
}

describe('PDM-Closed paths as NAVSIM builds them', () => {
  it('keeps both copies of a lane-join point, each with its own lane heading, and offsets each along it', () => {
    const map = new DrivingMap(bentScene().map);
    const path = discreteCenterline([map.lane('a'), map.lane('b')].filter((l) => l !== undefined));
    expect(path.length / 3).toBe(6);
    expect([path[6], path[7], path[8]]).toEqual([0, 0, 0]); // lane a's last point: heading of its last segment
    expect([path[9], path[10]]).toEqual([0, 0]);
    expect(path[11]).toBeCloseTo(Math.PI / 4, 12); // lane b's first point: heading of its first segment
    const left = parallelPath(path, 1);
    expect(left[6]).toBeCloseTo(0, 12);
    expect(left[7]).toBeCloseTo(1, 12);
    expect(left[9]).toBeCloseTo(-Math.SQRT1_2, 12);
    expect(left[10]).toBeCloseTo(Math.SQRT1_2, 12);
    // interp1d never interpolates across the zero-length join: just past it the heading is lane b's.
    const se2 = new SE2Path(path);
    expect(se2.interpolate(100)[2]).toBeCloseTo(0, 12);
    expect(se2.interpolate(100 + 1e-6)[2]).toBeCloseTo(Math.PI / 4, 6);
  });

  it('unwraps headings as numpy does', () => {
    expect(Array.from(unwrapAngles([3, -3, 3]))).toEqual([3, 2 * Math.PI - 3, 3]);
  });

  it('the corridor has square caps: a box beside the end, outside a round cap, still touches it', () => {
    const corridor = new Corridor(Float64Array.of(0, 0, 10, 0), 1);
    const corner = boxCorners({ x: 10.9, y: 0.95, heading: 0, length: 0.1, width: 0.05 });
    expect(Math.hypot(0.85, 0.925)).toBeGreaterThan(1); // its nearest point is more than 1 m from the line end
    expect(corridor.intersects(corner, [10.85, 0.925, 10.95, 0.975])).toBe(true);
    const beyond = boxCorners({ x: 11.2, y: 0, heading: 0, length: 0.2, width: 0.2 });
    expect(corridor.intersects(beyond, [11.1, -0.1, 11.3, 0.1])).toBe(false);
  });
});

describe("PDM-Closed's own observation", () => {
  it('forecasts the objects of t = 0 at constant velocity along their heading, ignoring the logged future', () => {
    const states: [number, number, number, number, number, number][] = [];
    // Logged: the car swerves to y = -3 by 2 s; its t = 0 velocity points backwards along its heading.
    for (let i = 0; i <= 40; i++) states.push([i / 10, 10 - 0.5 * i * 0.1, -Math.min(i / 20, 1) * 3, 0, -5, 0]);
    const scene = bentScene({ agents: [{ token: 'car', type: 'vehicle', length: 4, width: 2, height: 1.5, states }] });
    const world = buildWorld(scene, 1);
    const forecast = forecastWorld(scene, world);
    const at = (frames: typeof world.frames, i: number) => frames[i]?.find((o) => o.token === 'car');
    expect(at(world.frames, 20)?.cy).toBeCloseTo(-3, 9);
    expect(at(forecast.frames, 20)?.cy).toBeCloseTo(0, 9);
    expect(at(forecast.frames, 20)?.cx).toBeCloseTo(10 - 5 * 2, 9); // reversing: heading flipped
    expect(at(forecast.frames, 21)?.cx).toBe(at(forecast.frames, 20)?.cx); // sampled every second step
  });

  it('ignores objects the ego overlaps at t = 0 in its planner and its scorer', () => {
    const scene = bentScene({ agents: [{ token: 'touching', type: 'vehicle', length: 4, width: 2, height: 1.5, states: [[0, -18, 0.5, 0, 0, 0]] }] });
    const forecast = forecastWorld(scene, buildWorld(scene, 1));
    expect([...forecast.ignoredTokens]).toEqual(['touching']);
    const r = pdmClosed(scene, buildWorld(scene, 1), 1);
    expect(r.states[40 * STATE_SIZE] as number).toBeGreaterThan(-20 + 10);
  });
});

describe('drivable area, history and comfort as NAVSIM runs them', () => {
  it('leaves the drivable-area layer out of DAC', () => {
    const scene = bentScene();
    const world = buildWorld(scene, 1);
    const st = new Float64Array(41 * STATE_SIZE);
    for (let i = 0; i < 41; i++) {
      st[i * STATE_SIZE] = -60 + i * 0.5;
      st[i * STATE_SIZE + 1] = -5;
      st[i * STATE_SIZE + 3] = 5;
    }
    expect(new DrivingMap(scene.map).onDrivableArea(-50, -5)).toBe(true);
    expect(proposalMetrics(st, world, { version: 1 }).dac).toBe(0);
  });

  it('v2 history comfort uses 14 past states (-1.5 s to -0.2 s)', () => {
    const hist = [-1.5, -1, -0.5].map((t) => ({ t, x: -20 + 8 * t, y: 0, heading: 0, vx: 8, vy: 0, ax: 0, ay: 0 }));
    const scorer = new SceneScorer(bentScene({ ego_history: hist }));
    expect((scorer.historyStates() as Float64Array).length / STATE_SIZE).toBe(14);
  });

  it('v2 smooths acceleration with window 8 where v1 fits the whole horizon', () => {
    const st = new Float64Array(41 * STATE_SIZE);
    for (let i = 18; i < 23; i++) st[i * STATE_SIZE + 5] = -4.6;
    expect(comfortChecks(st, 41, 0.1, 1).lonAccel).toBe(true);
    expect(comfortChecks(st, 41, 0.1, 2).lonAccel).toBe(false);
  });

  it('v2 moves longitudinal acceleration to the box centre (yaw rate and yaw acceleration add to it)', () => {
    const st = new Float64Array(41 * STATE_SIZE);
    for (let i = 0; i < 41; i++) {
      st[i * STATE_SIZE + 5] = 2.0;
      st[i * STATE_SIZE + 9] = 0.6;
    }
    expect(comfortChecks(st, 41, 0.1, 1).lonAccel).toBe(true);
    expect(comfortChecks(st, 41, 0.1, 2).lonAccel).toBe(false); // 2.0 + 1.461 * 0.36 > 2.4
  });

  it('EC filters each overlap slice on its own', () => {
    const a = new Float64Array(41 * STATE_SIZE);
    const b = new Float64Array(41 * STATE_SIZE);
    for (let i = 0; i < 41; i++) {
      a[i * STATE_SIZE + 5] = i < 5 ? 3 : 1;
      b[i * STATE_SIZE + 5] = 1;
    }
    // The differing part of `a` lies before the overlap (a[5:] vs b[:-5]), so EC holds.
    expect(extendedComfort(a, b, 41).ec).toBe(1);
  });
});
