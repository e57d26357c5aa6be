/**
 * reset_batch and step_batch: many sessions of one client in one request, their observations
 * stacked into one tensor when they share dtype and shape, and actions stacked over sessions split
 * into zero-copy views. One session's failure fills its slot with an error, not the whole batch.
 */
import type { ResetResult as ResetOutcome, StepResult as StepOutcome } from '../../envs/core/env.ts';
import { after } from '../../envs/core/wrappers.ts';
import { ProtocolError } from '../../protocol/errors.ts';
import type { ErrorCode } from '../../protocol/errors.ts';
import type { RequestOf, ResultOf } from '../../protocol/messages.ts';
import { contains, stackTensors } from '../../protocol/spaces.ts';
import { Tensor } from '../../protocol/tensor.ts';
import type { ClientState } from '../client-state.ts';
import type { ServerCore } from '../core.ts';
import type { Session } from '../session.ts';
import { toProtocolError } from './error-handler.ts';
import { floatActions } from './parse-request.ts';
import { withSessions } from './session-scope.ts';
import { floatForDiscrete } from './session-ops.ts';

export function resetBatch(core: ServerCore, client: ClientState, req: RequestOf<'reset_batch'>): Promise<ResultOf<'reset_batch'>> {
  if (req.seeds && req.seeds.length !== req.session_ids.length) {
    throw new ProtocolError('ENV_ERR_INVALID_MESSAGE', `seeds has ${req.seeds.length} entries for ${req.session_ids.length} sessions`);
  }
  return withSessions(core, client, req.session_ids, async (sessions) => {
    const results = await Promise.all(
      sessions.map(async (s, i) => {
        const r = await s.env.reset({ seed: req.seeds?.[i] ?? null, options: req.options ?? null });
        s.autoresetPending = false;
        s.recordReset(r.obs, r.info);
        s.metrics.resets.n++;
        return r;
      }),
    );
    return { obs: stackValues(results.map((r) => r.obs)), infos: results.map((r) => r.info) };
  });
}

export function stepBatch(core: ServerCore, client: ClientState, req: RequestOf<'step_batch'>): Promise<ResultOf<'step_batch'>> {
  const n = req.session_ids.length;
  const actions = splitActions(req.actions, n);
  const sentAsFloat = floatActions(req);
  const floats = Array.isArray(sentAsFloat) ? sentAsFloat : null;
  return withSessions(core, client, req.session_ids, async (sessions) => {
    // Validate every action first so a bad one leaves the whole batch unapplied.
    sessions.forEach((s, i) => {
      if (s.autoresetPending && req.autoreset_mode === 'next_step') return; // action ignored on the reset step
      const reason = contains(s.env.actionSpace, actions[i]) ?? floatForDiscrete(s.env.actionSpace, actions[i], floats?.[i] === true);
      if (reason)
        throw new ProtocolError('ENV_ERR_INVALID_ACTION', `action ${i} (session ${s.id}) is not in the action space: ${reason}`, {
          session_id: s.id,
          index: i,
        });
    });
    const start = process.hrtime.bigint();
    const rewards = new Float64Array(n);
    const terminated = new Uint8Array(n);
    const truncated = new Uint8Array(n);
    const obs: unknown[] = new Array(n);
    const infos: Record<string, unknown>[] = new Array(n);
    const errors: ({ code: ErrorCode; message: string } | null)[] = new Array(n).fill(null);
    const fail = (s: Session, i: number, err: unknown): void => {
      const pe = toProtocolError(err, s.log, 'step_batch');
      errors[i] = { code: pe.code, message: pe.message };
      infos[i] = {};
    };
    const afterReset = (s: Session, i: number, r: ResetOutcome): void => {
      s.autoresetPending = false;
      s.recordReset(r.obs, r.info);
      s.metrics.resets.n++;
      obs[i] = r.obs;
      infos[i] = r.info;
    };
    // Steps are counted once per batch when every session runs the same env (label lookups add up at 256 sessions).
    const oneEnv = sessions.every((s) => s.envId === sessions[0]!.envId);
    let stepped = 0;
    const afterStep = (s: Session, i: number, r: StepOutcome): void | Promise<void> => {
      if (oneEnv) stepped++;
      else s.metrics.steps.n++;
      s.recordStep(r.obs, r.reward, r.terminated, r.truncated, r.info, actions[i], core.viewers > 0);
      rewards[i] = r.reward;
      terminated[i] = r.terminated ? 1 : 0;
      truncated[i] = r.truncated ? 1 : 0;
      obs[i] = r.obs;
      infos[i] = r.info;
      if (!(r.terminated || r.truncated)) return;
      if (req.autoreset_mode === 'next_step') s.autoresetPending = true;
      if (req.autoreset_mode !== 'same_step') return;
      return after(s.env.reset({ seed: null, options: null }), (rr) => {
        afterReset(s, i, rr);
        infos[i] = { ...rr.info, final_obs: r.obs, final_info: r.info };
      });
    };
    /** One session's part of the batch; synchronous for sync envs, so a batch of CartPoles costs no promise per session. */
    const stepOne = (s: Session, i: number): void | Promise<void> => {
      if (req.autoreset_mode === 'next_step' && s.autoresetPending) return after(s.env.reset({ seed: null, options: null }), (r) => afterReset(s, i, r));
      // A promise that resolves to a promise flattens: the cast only tells TypeScript so.
      return after(s.env.step(actions[i]), (r) => afterStep(s, i, r)) as void | Promise<void>;
    };
    const pending: Promise<void>[] = [];
    sessions.forEach((s, i) => {
      try {
        const p = stepOne(s, i);
        if (p) pending.push(p.catch((err: unknown) => fail(s, i, err)));
      } catch (err) {
        fail(s, i, err);
      }
    });
    if (pending.length) await Promise.all(pending);
    sessions[0]!.metrics.steps.n += stepped;
    sessions[0]!.metrics.latency.observe(Number(process.hrtime.bigint() - start) / 1e9);
    if (errors.some((e) => e)) fillFailedSlots(obs, errors);
    return {
      obs: stackValues(obs),
      rewards: new Tensor('float64', [n], rewards),
      terminated: new Tensor('bool', [n], terminated),
      truncated: new Tensor('bool', [n], truncated),
      infos,
      errors,
    };
  });
}

/** Splits a batch's actions: a tensor stacked over sessions becomes zero-copy per-session views. */
function splitActions(actions: unknown, n: number): unknown[] {
  if (Array.isArray(actions)) {
    if (actions.length !== n) throw new ProtocolError('ENV_ERR_INVALID_MESSAGE', `actions has ${actions.length} entries for ${n} sessions`);
    return actions;
  }
  if (actions instanceof Tensor) {
    if (actions.shape[0] !== n)
      throw new ProtocolError('ENV_ERR_INVALID_MESSAGE', `actions tensor has leading dimension ${actions.shape[0]} for ${n} sessions`);
    const inner = actions.shape.slice(1);
    if (inner.length === 0) {
      // Scalars (Discrete actions) come back as plain numbers.
      const scalars = new Array<number>(n);
      for (let i = 0; i < n; i++) scalars[i] = actions.at(i);
      return scalars;
    }
    const per = actions.size / n;
    const rows = new Array<Tensor>(n);
    for (let i = 0; i < n; i++) rows[i] = new Tensor(actions.dtype, inner, actions.data.subarray(i * per, (i + 1) * per) as never);
    return rows;
  }
  throw new ProtocolError('ENV_ERR_INVALID_MESSAGE', 'actions must be an array of per-session actions or a tensor stacked over sessions');
}

/** Stacks per-session observations into one tensor when they share dtype and shape; else returns the array. */
export function stackValues(values: unknown[]): unknown {
  const first = values[0];
  if (first instanceof Tensor) {
    const shape = first.shape;
    for (const v of values) {
      if (!(v instanceof Tensor) || v.dtype !== first.dtype || v.shape.length !== shape.length) return values;
      for (let k = 0; k < shape.length; k++) if (v.shape[k] !== shape[k]) return values;
    }
    return stackTensors(values as Tensor[], first.dtype, first.shape);
  }
  if (typeof first === 'number' && values.every((v) => typeof v === 'number' && Number.isInteger(v))) {
    return Tensor.from('int64', [values.length], values as number[]);
  }
  return values;
}

function fillFailedSlots(obs: unknown[], errors: readonly unknown[]): void {
  const template = obs.find((_, i) => !errors[i]);
  for (let i = 0; i < obs.length; i++) {
    if (!errors[i]) continue;
    obs[i] = template instanceof Tensor ? Tensor.zeros(template.dtype, template.shape) : typeof template === 'number' ? 0 : null;
  }
}
