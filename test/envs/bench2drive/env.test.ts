import { describe, expect, it } from 'vitest';

import { contains } from '../../../protocol/spaces.ts';
import { Tensor } from '../../../protocol/tensor.ts';
import { InvalidActionError, InvalidOptionsError } from '../../../envs/core/env.ts';
import { Registry } from '../../../envs/core/registry.ts';
import { registerBench2Drive } from '../../../envs/bench2drive/index.ts';
import { Bench2DriveEnv } from '../../../envs/bench2drive/env.ts';
import { ROUTE_IDS, SCENARIO_TYPES, abilitiesOf, buildScenario } from '../../../envs/bench2drive/scenarios.ts';
import { buildRoute } from '../../../envs/bench2drive/sim.ts';
import { RoadOption } from '../../../envs/bench2drive/commands.ts';
import { ABILITY_NAMES } from '../../../envs/bench2drive/metrics.ts';

const act = (t: number, s: number, b: number) => Tensor.from('float32', [3], [t, s, b]);
const obsKey = (obs: unknown) => {
  const o = obs as Record<string, Tensor | number>;
  return JSON.stringify(Object.fromEntries(Object.entries(o).map(([k, v]) => [k, v instanceof Tensor ? Array.from(v.toNumbers() as number[]) : v])));
};

describe('route set', () => {
  it('has >= 12 Bench2Drive scenario types x 5 routes covering all five abilities', () => {
    expect(SCENARIO_TYPES.length).toBeGreaterThanOrEqual(12);
    expect(ROUTE_IDS.length).toBe(SCENARIO_TYPES.length * 5);
    for (const a of ABILITY_NAMES) expect(SCENARIO_TYPES.some((t) => abilitiesOf(t).includes(a))).toBe(true);
  });
  it('routes are about 150 m with ~1 m criteria points and commands from the geometry', () => {
    const codes = new Set<number>();
    for (const t of SCENARIO_TYPES) {
      const sc = buildScenario(t, 0);
      const r = buildRoute(sc.town, sc.routeLanes, sc.startS, sc.endS);
      expect(r.length).toBeGreaterThan(140);
      expect(r.length).toBeLessThan(160);
      for (const p of r.plan) codes.add(p.option);
    }
    expect(codes.has(RoadOption.LEFT) && codes.has(RoadOption.RIGHT) && codes.has(RoadOption.STRAIGHT) && codes.has(RoadOption.LANEFOLLOW)).toBe(true);
  });
});

describe('Bench2Drive-v0', () => {
  it('registers and rejects an unknown route at make with the valid list', async () => {
    const reg = new Registry();
    registerBench2Drive(reg);
    await expect(reg.make('gymwire/Bench2Drive-v0', { route: 'Nope_9' })).rejects.toThrow(/ParkedObstacle_0/);
    const env = await reg.make('gymwire/Bench2Drive-v0', { route: 'Accident_2' }, { check: true });
    const { info } = await env.reset({ seed: 3 });
    expect(info['route_id']).toBe('Accident_2');
  });

  it('observes within its space and reports R, P, DS, status and infractions', () => {
    const env = new Bench2DriveEnv({ route: 'ParkedObstacle_0' });
    const { obs, info } = env.reset({ seed: 1 });
    expect(contains(env.observationSpace, obs)).toBeNull();
    expect(info['route_completion']).toBe(0);
    expect(info['infraction_penalty']).toBe(1);
    expect(info['status']).toBe('Running');
    expect(Object.keys(info['infractions'] as object).sort()).toEqual(
      [
        'collisions_layout',
        'collisions_pedestrian',
        'collisions_vehicle',
        'min_speed_infractions',
        'outside_route_lanes',
        'red_light',
        'route_dev',
        'route_timeout',
        'scenario_timeouts',
        'stop_infraction',
        'vehicle_blocked',
        'yield_emergency_vehicle_infractions',
      ].sort(),
    );
    const o = obs as Record<string, unknown>;
    expect([-1, 1, 2, 3, 4, 5, 6]).toContain(o['command']);
    const r = env.step(act(0.6, 0, 0));
    expect(contains(env.observationSpace, r.obs)).toBeNull();
    expect(r.info['tick']).toBe(1);
  });

  it('rejects NaN and out-of-range controls without advancing the tick', () => {
    const env = new Bench2DriveEnv({ route: 'ParkedObstacle_0' });
    env.reset({ seed: 1 });
    expect(() => env.step(act(Number.NaN, 0, 0))).toThrow(InvalidActionError);
    expect(() => env.step(act(1.5, 0, 0))).toThrow(/throttle/);
    expect(() => env.step(act(0, -2, 0))).toThrow(/steer/);
    expect(() => env.step(Tensor.from('float32', [2], [0, 0]))).toThrow(InvalidActionError);
    expect(env.step(act(0.5, 0, 0)).info['tick']).toBe(1);
    expect(() => env.reset({ options: { route_id: 'Bogus_1' } })).toThrow(InvalidOptionsError);
  });

  it('same seed gives the same route, traffic and score; getState/setState replays exactly', () => {
    const run = (env: Bench2DriveEnv, n: number) => {
      let last = '';
      for (let i = 0; i < n; i++) last = obsKey(env.step(act(0.5, i % 7 === 0 ? 0.05 : 0, 0)).obs);
      return last;
    };
    const a = new Bench2DriveEnv({ privileged: true });
    const b = new Bench2DriveEnv({ privileged: true });
    const ra = a.reset({ seed: 42 });
    const rb = b.reset({ seed: 42 });
    expect(ra.info['route_id']).toBe(rb.info['route_id']);
    expect(run(a, 60)).toBe(run(b, 60));
    const state = a.getState();
    const future = run(a, 80);
    const infoA = JSON.stringify((a.step(act(0.3, 0, 0)).info['privileged'] as { actors: unknown }).actors);
    a.setState(state);
    expect(run(a, 80)).toBe(future);
    expect(JSON.stringify((a.step(act(0.3, 0, 0)).info['privileged'] as { actors: unknown }).actors)).toBe(infoA);
  });

  it('tools: get_command, get_route_info, drive', async () => {
    const env = new Bench2DriveEnv({ route: 'SignalizedJunctionLeftTurn_0' });
    env.reset({ seed: 0 });
    const tool = (name: string) => env.tools.find((t) => t.name === name)!;
    const cmd = (await tool('get_command').handler({} as never, { env, wrapped: env })) as { command: number; command_name: string; target_point: number[] };
    expect(cmd.command_name).toBe('LANEFOLLOW');
    const info = (await tool('get_route_info').handler({} as never, { env, wrapped: env })) as {
      waypoints: number[][];
      global_plan: number[][];
      length_m: number;
    };
    expect(info.length_m).toBeGreaterThan(140);
    const w = info.waypoints;
    expect(Math.hypot(w[1]![0]! - w[0]![0]!, w[1]![1]! - w[0]![1]!)).toBeCloseTo(2, 1);
    expect(info.global_plan.some((p) => p[2] === RoadOption.LEFT)).toBe(true);
    const r = (await tool('drive').handler({ throttle: 0.5, steer: 0, brake: 0 } as never, { env, wrapped: env })) as { terminated: boolean; speed: number };
    expect(r.terminated).toBe(false);
    expect(r.speed).toBeGreaterThan(0);
  });

  it('waypoint actions go through the PID controller', () => {
    const env = new Bench2DriveEnv({ route: 'HighwayCutIn_0', action_type: 'waypoints' });
    env.reset({ seed: 0 });
    const wps = Tensor.from('float32', [6, 2], [3, 0, 6, 0, 9, 0, 12, 0, 15, 0, 18, 0]);
    let last = env.step(wps);
    for (let i = 0; i < 60; i++) last = env.step(wps);
    expect(Number((last.obs as Record<string, Tensor>)['speed']!.toNumbers()[0])).toBeGreaterThan(4);
    expect(() => env.step(act(0.5, 0, 0))).toThrow(/waypoints/);
  });

  it('renders the Bench2Drive cameras and LiDAR when asked', () => {
    const env = new Bench2DriveEnv({ route: 'PedestrianCrossing_1', cameras: ['CAM_FRONT', 'CAM_BACK'], camera_width: 64, camera_height: 36, lidar: true });
    const { obs } = env.reset({ seed: 0 });
    const o = obs as Record<string, unknown>;
    const rgb = o['rgb'] as Record<string, Tensor>;
    expect(rgb['CAM_FRONT']!.shape).toEqual([36, 64, 3]);
    expect(rgb['CAM_BACK']!.shape).toEqual([36, 64, 3]);
    const lidar = o['lidar'] as Tensor;
    expect(lidar.shape[1]).toBe(4);
    expect(lidar.shape[0]).toBeGreaterThan(100);
    expect(contains(env.observationSpace, obs)).toBeNull();
  });
});
