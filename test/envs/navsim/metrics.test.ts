import { describe, expect, it } from 'vitest';

import { STATE_SIZE } from '../../../envs/driving/bicycle.ts';
import { COMFORT_BOUNDS, comfortChecks, extendedComfort, savgol } from '../../../envs/driving/comfort.ts';
import type { ProposalMetrics } from '../../../envs/navsim/pdm.ts';
import { aggregate, buildWorld, epdms, humanFilter, proposalMetrics, twoStageScore, twoStageWeights } from '../../../envs/navsim/pdm.ts';
import type { Scene } from '../../../envs/navsim/scene.ts';
import { parseScene } from '../../../envs/navsim/scene.ts';

/** Straight road along x: two same-direction lanes (y in [-3.5, 3.5]) and an oncoming lane (y in [3.5, 7]). */
function scene(agents: Scene['agents'], extra: Partial<Scene> = {}): Scene {
  const rect = (x0: number, x1: number, y0: number, y1: number) => [
    [x0, y0],
    [x1, y0],
    [x1, y1],
    [x0, y1],
    [x0, y0],
  ];
  return parseScene({
    name: 't',
    timestamp_us: 0,
    scene_type: 'synthetic',
    map: {
      name: 'straight',
      roadblocks: [
        { id: 'rb', kind: 'roadblock', polygon: rect(-100, 300, -3.5, 3.5), incoming: [], outgoing: [] },
        { id: 'opp', kind: 'roadblock', polygon: rect(-100, 300, 3.5, 7), incoming: [], outgoing: [] },
      ],
      lanes: [
        {
          id: 'r',
          roadblock_id: 'rb',
          polygon: rect(-100, 300, -3.5, 0),
          centerline: [
            [-100, -1.75],
            [300, -1.75],
          ],
          speed_limit_mps: 15,
          incoming: [],
          outgoing: [],
        },
        {
          id: 'l',
          roadblock_id: 'rb',
          polygon: rect(-100, 300, 0, 3.5),
          centerline: [
            [-100, 1.75],
            [300, 1.75],
          ],
          speed_limit_mps: 15,
          incoming: [],
          outgoing: [],
        },
        {
          id: 'o',
          roadblock_id: 'opp',
          polygon: rect(-100, 300, 3.5, 7),
          centerline: [
            [300, 5.25],
            [-100, 5.25],
          ],
          speed_limit_mps: 15,
          incoming: [],
          outgoing: [],
        },
      ],
      intersections: extra.map?.intersections ?? [],
      carparks: [],
      drivable_areas: [],
    },
    route_roadblock_ids: ['rb'],
    ego: { x: 0, y: -1.75, heading: 0, vx: 10, vy: 0, ax: 0, ay: 0 },
    agents,
    ...extra,
  });
}

/** 41 ego states: rear axle moving from (x0, y(t)) at speed v along heading 0. */
function states(v: number, y: (i: number) => number = () => -1.75, x0 = 0, heading = 0): Float64Array {
  const s = new Float64Array(41 * STATE_SIZE);
  for (let i = 0; i < 41; i++) {
    s[i * STATE_SIZE] = x0 + v * 0.1 * i * Math.cos(heading);
    s[i * STATE_SIZE + 1] = y(i) + v * 0.1 * i * Math.sin(heading);
    s[i * STATE_SIZE + 2] = heading;
    s[i * STATE_SIZE + 3] = v;
  }
  return s;
}

function agent(token: string, type: Scene['agents'][number]['type'], x: number, y: number, vx: number, heading = 0): Scene['agents'][number] {
  const st: [number, number, number, number, number, number][] = [];
  for (let i = 0; i <= 50; i++) st.push([i / 10, x + vx * i * 0.1, y, heading, vx, 0]);
  return {
    token,
    type,
    length: 4.6,
    width: 1.9,
    height: 1.6,
    states: type === 'vehicle' || type === 'pedestrian' || type === 'bicycle' ? st : [st[0] as [number, number, number, number, number, number]],
  };
}

const m1 = (sc: Scene, st: Float64Array): ProposalMetrics => proposalMetrics(st, buildWorld(sc, 1), { version: 1 });
const m2 = (sc: Scene, st: Float64Array): ProposalMetrics => proposalMetrics(st, buildWorld(sc, 2), { version: 2 });

describe('no at-fault collision classes', () => {
  it('stopped ego is never at fault', () => {
    expect(m1(scene([agent('a', 'vehicle', 3, -1.75, 2)]), states(0)).nc).toBe(1);
  });
  it('hitting a stopped vehicle is at fault (0) and a static object scores 0.5', () => {
    const a = m1(scene([agent('a', 'vehicle', 20, -1.75, 0)]), states(10));
    expect(a.nc).toBe(0);
    expect(a.collisionStep).not.toBeNull();
    expect(m1(scene([agent('c', 'traffic_cone', 20, -1.75, 0)]), states(10)).nc).toBe(0.5);
  });
  it('a moving vehicle hitting the ego from behind is not at fault', () => {
    expect(m1(scene([agent('a', 'vehicle', -8, -1.75, 14)]), states(5)).nc).toBe(1);
  });
  it('front-bumper collision with a slower moving vehicle is at fault', () => {
    expect(m1(scene([agent('a', 'vehicle', 15, -1.75, 2)]), states(10)).nc).toBe(0);
  });
  it('lateral collision is at fault only when the ego straddles lanes', () => {
    // A vehicle alongside (behind the front bumper, bearing ~116 deg) overlapping the ego's left side.
    expect(m1(scene([agent('a', 'vehicle', -1.0, 0.3, 10)]), states(10)).nc).toBe(1);
    // The same with the ego straddling the lane line (multiple lanes): at fault.
    expect(
      m1(
        scene([agent('a', 'vehicle', -1.0, 1.8, 10)]),
        states(10, () => -0.1),
      ).nc,
    ).toBe(0);
  });
});

describe('drivable area, direction, lane keeping', () => {
  it('DAC counts corners: one corner off the road fails', () => {
    expect(
      m1(
        scene([]),
        states(10, () => -1.75),
      ).dac,
    ).toBe(1);
    expect(
      m1(
        scene([]),
        states(10, () => -2.5),
      ).dac,
    ).toBe(0); // right corners at -3.65
  });
  it('DDC windows: < 2 m oncoming in any 1 s -> 1, < 6 m -> 0.5, else 0', () => {
    expect(m1(scene([]), states(10)).ddc).toBe(1);
    expect(
      m1(
        scene([]),
        states(1.5, () => 5.25),
      ).ddc,
    ).toBe(1); // 11 x 0.15 m = 1.65 m
    expect(
      m1(
        scene([]),
        states(3, () => 5.25),
      ).ddc,
    ).toBe(0.5); // 3.3 m
    expect(
      m1(
        scene([]),
        states(10, () => 5.25),
      ).ddc,
    ).toBe(0); // 11 m
  });
  it('LK fails after 20 consecutive steps beyond 0.5 m, not 19', () => {
    expect(
      m2(
        scene([]),
        states(10, (i) => (i < 19 ? -1.1 : -1.75)),
      ).lk,
    ).toBe(1);
    expect(
      m2(
        scene([]),
        states(10, (i) => (i < 20 ? -1.1 : -1.75)),
      ).lk,
    ).toBe(0);
  });
});

describe('time to collision', () => {
  // The ego holds x = 0 with a 10 m/s velocity state, so only the projections v * delta reach the
  // stopped lead: free gap g is caught by the first delta in {0, 0.3, 0.6, 0.9} with 10 * delta >= g.
  const FRONT = 4.049 + 2.3;
  const at = (free: number) =>
    m1(
      scene([agent('a', 'vehicle', FRONT + free, -1.75, 0)]),
      states(0).map((v, i) => (i % STATE_SIZE === 3 ? 10 : v)),
    );
  it.each([
    [0, -0.05],
    [0.3, 2.9],
    [0.6, 5.9],
    [0.9, 8.9],
  ])('the %s s projection catches a free gap of %s m', (_delta, free) => {
    const r = at(free);
    expect(r.ttc).toBe(0);
    expect(r.ttcStep).toBe(0);
  });
  it('no infraction when even the 0.9 s projection falls short', () => {
    expect(at(9.1).ttc).toBe(1);
  });
  it('an agent catching up from behind sets TTC = 0 with NC = 1 (NAVSIM compares future boxes with the current pose)', () => {
    const r = m1(scene([agent('a', 'vehicle', -12, -1.75, 14)]), states(10));
    expect(r.ttc).toBe(0);
    expect(r.nc).toBe(1);
    expect(m1(scene([agent('a', 'vehicle', -30, -1.75, 11)]), states(10)).ttc).toBe(1);
  });
});

describe('comfort', () => {
  const withAccel = (ax: number, yawRate = 0) => {
    const s = states(10);
    for (let i = 0; i < 41; i++) {
      s[i * STATE_SIZE + 5] = ax;
      s[i * STATE_SIZE + 2] = yawRate * 0.1 * i;
    }
    return s;
  };
  it('savgol reproduces polynomials exactly', () => {
    const x = Array.from({ length: 41 }, (_, i) => 2 + 0.5 * i - 0.01 * i * i);
    const d = savgol(x, 15, 2, 1, 0.1);
    expect(d[20]).toBeCloseTo((0.5 - 0.02 * 20) / 0.1, 9);
    const e = savgol(x, 8, 2);
    expect(e[3]).toBeCloseTo(x[3] as number, 9);
    expect(e[10]).toBeCloseTo(2 + 0.5 * 10.5 - 0.01 * 10.5 * 10.5, 9); // even windows centre half a sample late
  });
  it('each bound is strict', () => {
    expect(comfortChecks(withAccel(2.3), 41).lonAccel).toBe(true);
    expect(comfortChecks(withAccel(COMFORT_BOUNDS.maxLonAccel), 41).lonAccel).toBe(false);
    expect(comfortChecks(withAccel(-4.0), 41).lonAccel).toBe(true);
    expect(comfortChecks(withAccel(-4.1), 41).lonAccel).toBe(false);
    expect(comfortChecks(withAccel(0, 0.9), 41).yawRate).toBe(true);
    expect(comfortChecks(withAccel(0, 1.0), 41).yawRate).toBe(false);
    const jerky = states(10);
    for (let i = 0; i < 41; i++) jerky[i * STATE_SIZE + 5] = 0.5 * i; // 5 m/s^3
    const c = comfortChecks(jerky, 41);
    expect(c.lonJerk).toBe(false);
    expect(c.jerk).toBe(true);
  });
  it('extended comfort compares overlapping frames', () => {
    const a = withAccel(1),
      b = withAccel(1);
    expect(extendedComfort(a, b, 41).ec).toBe(1);
    expect(extendedComfort(a, withAccel(2), 41).ec).toBe(0);
  });
});

describe('aggregation', () => {
  const base: ProposalMetrics = {
    nc: 1,
    dac: 1,
    ddc: 1,
    tlc: 1,
    ttc: 1,
    comfort: 1,
    lk: 1,
    hc: 1,
    progressRaw: 0,
    collisionStep: null,
    ttcStep: null,
    multipleLanesSteps: [],
    nonDrivableSteps: [],
    oncomingSteps: [],
  };
  it('the 5 m progress threshold: below it EP is 1, or 0 with an infraction (v1)', () => {
    const [, a] = aggregate(
      [
        { ...base, progressRaw: 4 },
        { ...base, progressRaw: 2 },
      ],
      1,
    );
    expect(a?.ep).toBe(1);
    const [, b] = aggregate(
      [
        { ...base, progressRaw: 4 },
        { ...base, progressRaw: 2, nc: 0 },
      ],
      1,
    );
    expect(b?.ep).toBe(0);
    const [, c] = aggregate(
      [
        { ...base, progressRaw: 40 },
        { ...base, progressRaw: 20 },
      ],
      1,
    );
    expect(c?.ep).toBe(0.5);
    expect(c?.pdms).toBeCloseTo((5 * 0.5 + 5 + 2) / 12, 12);
  });
  it('v2 clips EP and weights 5/5/2/2(/2)', () => {
    const [, a] = aggregate(
      [
        { ...base, progressRaw: 20 },
        { ...base, progressRaw: 30, lk: 0 },
      ],
      2,
    );
    expect(a?.ep).toBe(1);
    expect(a?.pdms).toBeCloseTo((5 + 5 + 0 + 2) / 14, 12);
    expect(epdms({ nc: 1, dac: 1, ddc: 1, tlc: 1, ep: 1, ttc: 1, lk: 0, hc: 1 }, 1)).toBeCloseTo(14 / 16, 12);
  });
  it('human filter sets metrics the human fails to 1', () => {
    const f = humanFilter({ nc: 0, dac: 1, ddc: 1, tlc: 0, ep: 0.5, ttc: 0, lk: 1, hc: 1 }, { nc: 1, dac: 1, ddc: 1, tlc: 0, ep: 1, ttc: 0, lk: 1, hc: 1 });
    expect(f).toEqual({ nc: 0, dac: 1, ddc: 1, tlc: 1, ep: 0.5, ttc: 1, lk: 1, hc: 1 });
  });
  it('two-stage weights are Gaussian in the endpoint distance (sigma^2 = 0.1), uniform when all vanish', () => {
    const w = twoStageWeights({ x: 0, y: 0 }, [
      { x: 0, y: 0 },
      { x: 0.5, y: 0 },
    ]);
    expect((w[1] as number) / (w[0] as number)).toBeCloseTo(Math.exp(-0.25 / 0.2), 12);
    expect(
      twoStageWeights({ x: 0, y: 0 }, [
        { x: 50, y: 0 },
        { x: 60, y: 0 },
      ]),
    ).toEqual([0.5, 0.5]);
    expect(twoStageScore(0.8, [0.25, 0.75], [1, 0.5])).toBeCloseTo(0.8 * 0.625, 12);
  });
});

describe('traffic lights (v2)', () => {
  it('TLC is 0 when the ego enters a red on-route lane connector', () => {
    const rect = (x0: number, x1: number, y0: number, y1: number) => [
      [x0, y0],
      [x1, y0],
      [x1, y1],
      [x0, y1],
    ];
    const sc = parseScene({
      name: 'tl',
      timestamp_us: 0,
      map: {
        name: 'j',
        roadblocks: [
          { id: 'a', kind: 'roadblock', polygon: rect(-50, 20, -3.5, 3.5), incoming: [], outgoing: ['c'] },
          { id: 'c', kind: 'roadblock_connector', polygon: rect(20, 40, -3.5, 3.5), incoming: ['a'], outgoing: [] },
        ],
        lanes: [
          {
            id: 'a_r',
            roadblock_id: 'a',
            polygon: rect(-50, 20, -3.5, 0),
            centerline: [
              [-50, -1.75],
              [20, -1.75],
            ],
            speed_limit_mps: 15,
            incoming: [],
            outgoing: ['c_r'],
          },
          {
            id: 'c_r',
            roadblock_id: 'c',
            polygon: rect(20, 40, -3.5, 0),
            centerline: [
              [20, -1.75],
              [40, -1.75],
            ],
            speed_limit_mps: 15,
            incoming: ['a_r'],
            outgoing: [],
          },
        ],
        intersections: [{ id: 'i', polygon: rect(20, 40, -5, 5) }],
        carparks: [],
        drivable_areas: [],
      },
      route_roadblock_ids: ['a', 'c'],
      traffic_lights: [{ t: 0, red: ['c_r'], green: [] }],
      ego: { x: 0, y: -1.75, heading: 0, vx: 10, vy: 0, ax: 0, ay: 0 },
      agents: [],
    });
    expect(m2(sc, states(2)).tlc).toBe(1);
    expect(m2(sc, states(10)).tlc).toBe(0);
  });
});
