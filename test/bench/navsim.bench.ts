/**
 * NAVSIM benchmarks. Prints JSON lines:
 *   - scoring one trajectory against ~50 agents (the PDM scorer's per-proposal work, world cached),
 *     next to a floor: the bare box-overlap tests of the same ego states against the same agents;
 *   - a full reset + step with the eight cameras at the default resolution (256x144, 4 frames each),
 *     and reset + step with default kwargs (no sensors);
 *   - scenes scored per second on one core, PDM-Closed included (what `gymwire eval` pays per scene).
 *   npx tsx test/bench/navsim.bench.ts [--quick]
 */
import { boxCorners, convexIntersects } from '../../envs/driving/geometry.ts';
import { humanAgent } from '../../envs/navsim/agents.ts';
import { NavsimEnv } from '../../envs/navsim/env.ts';
import { SceneScorer } from '../../envs/navsim/evaluate.ts';
import { generateScene } from '../../envs/navsim/generator.ts';
import { aggregate, buildWorld, proposalMetrics } from '../../envs/navsim/pdm.ts';
import type { Scene } from '../../envs/navsim/scene.ts';
import { parseScene } from '../../envs/navsim/scene.ts';
import { Tensor } from '../../protocol/tensor.ts';

const QUICK = process.argv.includes('--quick');

function emit(bench: string, metric: string, value: number, unit: string, extra: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ bench, metric, value: Number(value.toFixed(4)), unit, ...extra })}\n`);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

function time(fn: () => void, reps: number): number {
  const ts: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t = performance.now();
    fn();
    ts.push(performance.now() - t);
  }
  return median(ts);
}

// A scene with 50 agents: a generated one plus traffic spread over both carriageways.
const base = parseScene(generateScene('synthetic-test', 3));
const crowd: Scene = { ...base, agents: [...base.agents] };
for (let i = crowd.agents.length; i < 50; i++) {
  const s0 = -40 + i * 4.5;
  const lane = i % 3;
  const y = base.ego.y + (lane === 0 ? 0 : lane === 1 ? 3.5 : 7);
  const v = lane === 2 ? -8 : 6;
  const states: [number, number, number, number, number, number][] = [];
  for (let k = 0; k <= 50; k++) states.push([k / 10, base.ego.x + s0 + v * k * 0.1, y, lane === 2 ? Math.PI : 0, v, 0]);
  crowd.agents.push({ token: `crowd_${i}`, type: 'vehicle', length: 4.5, width: 1.9, height: 1.6, states });
}
const scorer = new SceneScorer(crowd);
const world = buildWorld(crowd, 1, scorer.map);
const closed = scorer.pdmClosed(1).states;
const { states } = scorer.simulatePoses(humanAgent(crowd));
const reps = QUICK ? 50 : 300;
const scoreMs =
  time(() => {
    aggregate([proposalMetrics(closed, world, { version: 1 }), proposalMetrics(states, world, { version: 1 })], 1);
  }, reps) / 2;
const egoBoxes = Array.from({ length: 41 }, (_, i) =>
  boxCorners({ x: states[i * 11] as number, y: states[i * 11 + 1] as number, heading: states[i * 11 + 2] as number, length: 5.176, width: 2.297 }),
);
const floorMs = time(() => {
  let hits = 0;
  for (let i = 0; i < 41; i++) for (const o of world.frames[i] ?? []) if (convexIntersects(egoBoxes[i] as Float64Array, o.polygon)) hits++;
  if (hits < 0) throw new Error('unreachable');
}, reps);
emit('navsim', 'score_one_trajectory_50_agents', scoreMs, 'ms', {
  agents: crowd.agents.length,
  target_ms: 2,
  floor_box_overlaps_ms: Number(floorMs.toFixed(4)),
});
emit(
  'navsim',
  'lqr_simulate_one_trajectory',
  time(() => scorer.simulatePoses(humanAgent(crowd)), reps),
  'ms',
);

// Full step with eight cameras at the default resolution.
const camEnv = new NavsimEnv(1, { cameras: true });
const camReps = QUICK ? 3 : 10;
const resetMs: number[] = [],
  stepMs: number[] = [];
for (let i = 0; i < camReps; i++) {
  const t0 = performance.now();
  const { info } = camEnv.reset({ options: { scene_index: i } });
  const t1 = performance.now();
  camEnv.step(Tensor.from('float32', [8, 3], humanAgent(generateScene('synthetic-test', info.scene_index as number)).flat()));
  const t2 = performance.now();
  resetMs.push(t1 - t0);
  stepMs.push(t2 - t1);
}
emit('navsim', 'reset_8_cameras_256x144_x4_frames', median(resetMs), 'ms');
emit('navsim', 'step_after_8_camera_reset', median(stepMs), 'ms');
emit('navsim', 'reset_plus_step_8_cameras', median(resetMs) + median(stepMs), 'ms');

const plain = new NavsimEnv(1);
const plainMs: number[] = [];
for (let i = 0; i < (QUICK ? 10 : 40); i++) {
  const t0 = performance.now();
  const { info } = plain.reset({ options: { scene_index: i } });
  plain.step(Tensor.from('float32', [8, 3], humanAgent(generateScene('synthetic-test', info.scene_index as number)).flat()));
  plainMs.push(performance.now() - t0);
}
emit('navsim', 'reset_plus_step_default_kwargs', median(plainMs), 'ms');

// Scenes scored per second on one core (fresh scene each time: map index, PDM-Closed, scoring).
const n = QUICK ? 20 : 100;
const t0 = performance.now();
for (let i = 0; i < n; i++) {
  const sc = parseScene(generateScene('synthetic-test', i));
  new SceneScorer(sc).score(humanAgent(sc), { version: 1 });
}
emit('navsim', 'scenes_scored_per_second_one_core', n / ((performance.now() - t0) / 1000), 'scenes/s', {
  includes: 'scene generation, PDM-Closed (15 proposals), agent scoring',
});
