import { describe, expect, it } from 'vitest';

import { Bench2DriveEnv } from '../../../envs/bench2drive/env.ts';
import { WAYPOINT_CONTROLLER_NAMES, WaypointController } from '../../../runtime/waypoint-control.ts';
import { Tensor } from '../../../protocol/tensor.ts';

/** Six waypoints along a gentle left curve at 6 m/s, 0.5 s apart. */
const curve = Tensor.from('float32', [6, 2], Array.from({ length: 6 }, (_, k) => [3 * (k + 1), 0.04 * (3 * (k + 1)) ** 2]).flat());

describe('Bench2Drive waypoint actions', () => {
  for (const name of WAYPOINT_CONTROLLER_NAMES) {
    it(`waypoint_controller '${name}' drives exactly as the standalone controller fed the observed speed and target point`, () => {
      const env = new Bench2DriveEnv({ route: 'HighwayCutIn_0', action_type: 'waypoints', waypoint_controller: name, background_vehicles: 0 });
      const twin = new Bench2DriveEnv({ route: 'HighwayCutIn_0', background_vehicles: 0 });
      let obs = env.reset({ seed: 0 }).obs as Record<string, Tensor>;
      twin.reset({ seed: 0 });
      const controller = new WaypointController(name);
      const wps = Array.from({ length: 6 }, (_, k) => [Number(curve.toNumbers()[2 * k]), Number(curve.toNumbers()[2 * k + 1])] as const);
      for (let t = 0; t < 40; t++) {
        const c = controller.control(wps, Number(obs['speed']!.toNumbers()[0]), obs['target_point']!.toNumbers() as number[]);
        const viaEnv = env.step(curve);
        const viaControls = twin.step(Tensor.from('float32', [3], [c.throttle, c.steer, c.brake]));
        obs = viaEnv.obs as Record<string, Tensor>;
        // float32 controls on the twin: equal to float32 precision.
        const a = obs['position']!.toNumbers() as number[];
        const b = (viaControls.obs as Record<string, Tensor>)['position']!.toNumbers() as number[];
        expect(Math.hypot(a[0]! - b[0]!, a[1]! - b[1]!), `tick ${t}`).toBeLessThan(1e-3);
      }
      expect(env.metadata['action']).toContain(name === 'transfuser' ? 'transfuser' : 'Bench2DriveZoo');
    });
  }

  it('refuses an unknown controller name at make, naming the known ones', () => {
    expect(() => new Bench2DriveEnv({ action_type: 'waypoints', waypoint_controller: 'tcp' as never })).toThrow(/bench2drive.*bench2drive-uniad.*transfuser/s);
  });
});
