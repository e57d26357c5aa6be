/**
 * Cases that know an env: its dynamics, predicted step by step from the observation the server
 * sent (so an observation one step stale, or from another session, is caught against physics
 * rather than against the same server), and a policy that provably survives, which drives the
 * episode to its exact time limit. CartPole is Gymnasium's (any namespace); the everything-env is
 * gymwire's own. Other envs reach the time limit by random play when they can.
 */
import { Tensor } from '../../protocol/tensor.ts';
import { Random } from '../../runtime/random.ts';
import { sample } from '../../runtime/space-sample.ts';
import type { RemoteEnv } from '../../client/ts/remote-env.ts';
import { batchRow, check, expectCode } from '../harness.ts';
import type { CaseContext, CaseResult, ConformanceCase } from '../harness.ts';

interface Reference {
  /** An action that keeps the episode alive, from the last observation and the reset info. */
  survive(obs: unknown, resetInfo: Record<string, unknown>): unknown;
  /** Why `next` cannot follow `obs` under `action`, or null when it can. */
  transition(obs: unknown, action: unknown, next: unknown): string | null;
}

// Gymnasium's CartPole-v1 constants.
const GRAVITY = 9.8;
const MASS_CART = 1.0;
const MASS_POLE = 0.1;
const TOTAL_MASS = MASS_CART + MASS_POLE;
const LENGTH = 0.5;
const POLE_MASS_LENGTH = MASS_POLE * LENGTH;
const FORCE_MAG = 10.0;
const TAU = 0.02;

/** One Euler step of Gymnasium's CartPole. */
export function cartPoleStep([x, xDot, theta, thetaDot]: number[], action: number): number[] {
  const force = action === 1 ? FORCE_MAG : -FORCE_MAG;
  const cos = Math.cos(theta!);
  const sin = Math.sin(theta!);
  const temp = (force + POLE_MASS_LENGTH * thetaDot! ** 2 * sin) / TOTAL_MASS;
  const thetaAcc = (GRAVITY * sin - cos * temp) / (LENGTH * (4.0 / 3.0 - (MASS_POLE * cos ** 2) / TOTAL_MASS));
  const xAcc = temp - (POLE_MASS_LENGTH * thetaAcc * cos) / TOTAL_MASS;
  return [x! + TAU * xDot!, xDot! + TAU * xAcc, theta! + TAU * thetaDot!, thetaDot! + TAU * thetaAcc];
}

/** A linear controller on cart and pole: it balances every CartPole start for the full 500 steps. */
export function cartPoleBalance([x, xDot, theta, thetaDot]: number[]): number {
  return 0.05 * x! + 0.2 * xDot! + 5 * theta! + thetaDot! > 0 ? 1 : 0;
}

const numbers = (t: unknown): number[] => (t instanceof Tensor ? t.toNumbers() : []);

function closeTo(predicted: number[], got: number[], tolerance: number, names: string[]): string | null {
  if (got.length !== predicted.length) return `expected ${predicted.length} values, got ${got.length}`;
  const i = predicted.findIndex((p, k) => !(Math.abs(p - got[k]!) <= tolerance));
  return i < 0 ? null : `${names[i]} is ${got[i]}, the dynamics give ${predicted[i]!.toFixed(6)} (±${tolerance})`;
}

const CARTPOLE: Reference = {
  survive: (obs) => cartPoleBalance(numbers(obs)),
  // float32 observations of a float64 state: one step amplifies the rounding far less than 1e-4.
  transition: (obs, action, next) => closeTo(cartPoleStep(numbers(obs), action as number), numbers(next), 1e-4, ['x', 'x_dot', 'theta', 'theta_dot']),
};

const position = (obs: unknown): number[] => numbers((obs as { position?: unknown }).position);

/** The everything-env moves by a quarter of the action plus 0.01-sigma noise, clamped to [-1, 1]. */
const EVERYTHING: Reference = {
  survive: (obs, info) => {
    const goal = info.goal as number[];
    const p = position(obs);
    return Tensor.from(
      'float32',
      [2],
      p.map((v, i) => (v >= goal[i]! ? 1 : -1)),
    );
  },
  transition: (obs, action, next) => {
    const a = numbers(action);
    const predicted = position(obs).map((v, i) => Math.max(-1, Math.min(1, v + 0.25 * a[i]!)));
    return closeTo(predicted, position(next), 0.06, ['position[0]', 'position[1]']);
  },
};

function referenceFor(envId: string): Reference | null {
  if (envId === 'gymwire/Conformance-v0') return EVERYTHING;
  if (/(^|\/)CartPole-v1$/.test(envId)) return CARTPOLE;
  return null;
}

/** Steps `env` from `obs` with the reference's surviving policy until the episode ends or `limit + 1` steps; the step it ended at. */
async function survive(env: RemoteEnv, ref: Reference, reset: { obs: unknown; info: Record<string, unknown> }, limit: number) {
  let obs = reset.obs;
  for (let i = 1; i <= limit + 1; i++) {
    const action = ref.survive(obs, reset.info);
    const r = await env.step(action);
    const wrong = ref.transition(obs, action, r.obs);
    check(wrong === null, `step ${i}: the observation does not follow from the previous one: ${wrong}`);
    obs = r.obs;
    if (r.terminated || r.truncated) return { steps: i, terminated: r.terminated, truncated: r.truncated };
  }
  return null;
}

async function randomSurvivor(ctx: CaseContext, env: RemoteEnv, limit: number) {
  const rng = new Random(17);
  for (let episode = 0; episode < 3; episode++) {
    await env.reset({ seed: 17 + episode });
    for (let i = 1; i <= limit + 1; i++) {
      const r = await env.step(sample(env.actionSpace, rng));
      if (r.truncated || r.terminated) {
        if (r.truncated || i >= limit) return { steps: i, terminated: r.terminated, truncated: r.truncated };
        break;
      }
    }
  }
  return null;
}

export const REFERENCE_CASES: ConformanceCase[] = [
  {
    name: 'reference dynamics: each observation follows from the one before (no stale or foreign observations)',
    covers: ['P-STEP-1'],
    async run(ctx): Promise<CaseResult> {
      const ref = referenceFor(ctx.envId);
      if (!ref)
        return {
          status: 'skip',
          reason: `no reference dynamics for ${ctx.envId} (known: CartPole-v1, gymwire/Conformance-v0); seeded twins and state checks cover it`,
        };
      const c = await ctx.client();
      const env = await c.make(ctx.envId);
      const reset = await env.reset({ seed: 8 });
      const rng = new Random(8);
      let obs = reset.obs;
      for (let i = 1; i <= 30; i++) {
        const action = sample(env.actionSpace, rng);
        const r = await env.step(action);
        const wrong = ref.transition(obs, action, r.obs);
        check(wrong === null, `step ${i}: the observation does not follow from the previous one: ${wrong}`);
        if (r.terminated || r.truncated) break;
        obs = r.obs;
      }
      // Batched steps too: each row follows from the same row before it.
      const vec = await c.makeVec(ctx.envId, 2, { autoresetMode: 'disabled' });
      const start = await vec.reset({ seed: 9 });
      let rows = [0, 1].map((k) => batchRow(start.obs, k, vec.singleObservationSpace));
      for (let i = 1; i <= 10; i++) {
        const actions = vec.envs.map((e) => sample(e.actionSpace, rng));
        const out = await vec.step(actions);
        const next = [0, 1].map((k) => batchRow(out.obs, k, vec.singleObservationSpace));
        [0, 1].forEach((k) => {
          const wrong = ref.transition(rows[k], actions[k], next[k]);
          check(wrong === null, `batched step ${i}, session ${k}: the observation does not follow from the previous one: ${wrong}`);
        });
        if (out.terminations.some(Boolean) || out.truncations.some(Boolean)) break;
        rows = next;
      }
      return { status: 'pass' };
    },
  },
  {
    name: 'time limit: an episode that survives is truncated exactly at max_episode_steps, and not before',
    covers: ['P-MAKE-4', 'P-STEP-3'],
    async run(ctx): Promise<CaseResult> {
      const c = await ctx.client();
      const env = await c.make(ctx.envId);
      const limit = env.maxEpisodeSteps;
      if (limit === null) return { status: 'skip', reason: 'make reports no max_episode_steps' };
      const ref = referenceFor(ctx.envId);
      let end;
      if (ref) end = await survive(env, ref, await env.reset({ seed: 4 }), limit);
      else {
        if (limit > ctx.maxSteps)
          return { status: 'skip', reason: `max_episode_steps ${limit} is above --max-steps ${ctx.maxSteps}, and no policy known to survive ${ctx.envId}` };
        end = await randomSurvivor(ctx, env, limit);
        if (!end) return { status: 'skip', reason: `no random episode survived to step ${limit} (3 tried); no policy known to survive ${ctx.envId}` };
      }
      check(end !== null, `the episode ran past max_episode_steps ${limit} without truncated`);
      check(!(end.terminated && !end.truncated), `the surviving policy's episode terminated at step ${end.steps} (max_episode_steps ${limit})`);
      check(end.steps === limit, `truncated at step ${end.steps}; make says max_episode_steps ${limit}`);
      await expectCode(env.step(sample(env.actionSpace, new Random(0))), 'ENV_ERR_RESET_NEEDED', 'a step after the time limit');
      return { status: 'pass' };
    },
  },
];
