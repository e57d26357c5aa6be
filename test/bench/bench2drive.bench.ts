/**
 * Bench2Drive benchmarks. Prints JSON lines:
 *   - closed-loop world ticks per second on one core with 30 background vehicles and no sensors
 *     (target >= 5,000), next to a floor measured in the same run: 31 IDM accelerations + 31
 *     oriented-box overlap tests per tick, the least a tick with that many agents can cost;
 *   - env.step ticks per second (obs + info built) with the same traffic and no cameras;
 *   - env.step with the six Bench2Drive cameras at the default 1600x900 (synthetic renders).
 *   npx tsx test/bench/bench2drive.bench.ts [--quick]
 */
import { Bench2DriveEnv } from '../../envs/bench2drive/env.ts';
import { buildScenario } from '../../envs/bench2drive/scenarios.ts';
import { World } from '../../envs/bench2drive/sim.ts';
import { boxCorners, convexIntersects } from '../../envs/driving/geometry.ts';
import { IDM_NAVSIM_TRAFFIC, idmAcceleration } from '../../envs/driving/idm.ts';
import { Tensor } from '../../protocol/tensor.ts';

const QUICK = process.argv.includes('--quick');
const BACKGROUND = 30;

function emit(bench: string, metric: string, value: number, unit: string, extra: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ bench, metric, value: Number(value.toFixed(2)), unit, ...extra })}\n`);
}

const control = { throttle: 0.3, steer: 0, brake: 0 };
const scenario = buildScenario('HighwayCutIn', 0);

// World ticks: time only `step`, rebuilding the world (untimed) whenever a route ends.
{
  const ticks = QUICK ? 4000 : 20000;
  let world = new World(scenario, { backgroundVehicles: BACKGROUND });
  const agents = world.actors.length;
  let elapsed = 0;
  for (let done = 0; done < ticks;) {
    const t = performance.now();
    let k = 0;
    for (; k < 500 && world.status === 'running'; k++) world.step(control);
    elapsed += performance.now() - t;
    done += k;
    if (world.status !== 'running') world = new World(scenario, { backgroundVehicles: BACKGROUND });
  }
  const perSec = ticks / (elapsed / 1000);
  // Floor: the same number of IDM calls and box overlap tests per tick, nothing else.
  const boxes = Array.from({ length: agents }, (_, i) => boxCorners({ x: i * 6, y: (i % 3) * 3.5, heading: 0, length: 4.6, width: 2 }));
  let sink = 0;
  const tf = performance.now();
  for (let tick = 0; tick < ticks; tick++) {
    const ego = boxCorners({ x: tick % 100, y: 0, heading: 0.01 * (tick % 7), length: 4.89, width: 2.12 });
    for (let i = 0; i < agents; i++) {
      sink += idmAcceleration(IDM_NAVSIM_TRAFFIC, { v: 8 + (i % 3), v0: 10, gap: 20 + i, leadV: 8 });
      if (convexIntersects(ego, boxes[i]!)) sink += 1;
    }
  }
  const floor = ticks / ((performance.now() - tf) / 1000);
  emit('bench2drive', 'world_ticks_per_s', perSec, 'ticks/s', {
    agents,
    background: BACKGROUND,
    cameras: 0,
    target: 5000,
    floor_ticks_per_s: Number(floor.toFixed(0)),
    sink: sink > 0,
  });
}

// env.step without sensors: obs + info every tick.
{
  const env = new Bench2DriveEnv({ route: 'HighwayCutIn_0', background_vehicles: BACKGROUND });
  env.reset({ seed: 0 });
  const action = Tensor.from('float32', [3], [0.3, 0, 0]);
  const steps = QUICK ? 2000 : 8000;
  let elapsed = 0;
  for (let done = 0; done < steps; done++) {
    const t = performance.now();
    const r = env.step(action);
    elapsed += performance.now() - t;
    if (r.terminated || r.truncated) env.reset({ seed: done });
  }
  emit('bench2drive', 'env_steps_per_s_no_cameras', steps / (elapsed / 1000), 'steps/s', { background: BACKGROUND });
}

// env.step with the six cameras at 1600x900.
{
  const env = new Bench2DriveEnv({ route: 'HighwayCutIn_0', background_vehicles: BACKGROUND, cameras: true });
  env.reset({ seed: 0 });
  const action = Tensor.from('float32', [3], [0.3, 0, 0]);
  const steps = QUICK ? 3 : 10;
  const t = performance.now();
  for (let i = 0; i < steps; i++) env.step(action);
  const ms = (performance.now() - t) / steps;
  emit('bench2drive', 'env_step_ms_six_cameras_1600x900', ms, 'ms', { steps_per_s: Number((1000 / ms).toFixed(3)), background: BACKGROUND });
}
