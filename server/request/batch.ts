/**
 * reset_batch and step_batch: many sessions of one client in one request, their observations
 * stacked over sessions (one tensor, or one per key of a Dict observation; see protocol/batch.ts),
 * and actions stacked over sessions split into zero-copy views. One session's failure fills its slot with an error, not the whole batch.
 */
import type { ResetResult as ResetOutcome, StepResult as StepOutcome } from '../../envs/core/env.ts';
import { ProtocolError } from '../../protocol/errors.ts';
import type { ErrorCode } from '../../protocol/errors.ts';
import type { RequestOf, ResultOf } from '../../protocol/messages.ts';
import { stackBatch, zerosLike } from '../../protocol/batch.ts';
import { contains } from '../../protocol/spaces.ts';
import { Tensor } from '../../protocol/tensor.ts';
import type { ClientState } from '../client-state.ts';
import type { ServerCore } from '../core.ts';
import type { Session } from '../session.ts';
import { toProtocolError } from './error-handler.ts';
import { floatActions } from './parse-request.ts';
import { withSessions } from './session-scope.ts';
import { discreteScalar, floatForDiscrete } from './session-ops.ts';

export function resetBatch(core: ServerCore, client: ClientState, req: RequestOf<'reset_batch'>): ResultOf<'reset_batch'> | Promise<ResultOf<'reset_batch'>> {
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
    return {
      obs: stackBatch(
        results.map((r) => r.obs),
        sessions[0]!.env.observationSpace,
        client.protocolVersion,
      ),
      infos: results.map((r) => r.info),
    };
  });
}

export function stepBatch(core: ServerCore, client: ClientState, req: RequestOf<'step_batch'>): ResultOf<'step_batch'> | Promise<ResultOf<'step_batch'>> {
  const n = req.session_ids.length;
  const actions = splitActions(req.actions, n);
  const sentAsFloat = floatActions(req);
  const floats = Array.isArray(sentAsFloat) ? sentAsFloat : null;
  return withSessions(core, client, req.session_ids, (sessions) => {
    // Validate every action first so a bad one leaves the whole batch unapplied.
    for (let i = 0; i < n; i++) {
      const s = sessions[i]!;
      if (s.autoresetPending && req.autoreset_mode === 'next_step') continue; // action ignored on the reset step
      actions[i] = discreteScalar(s.env.actionSpace, actions[i]);
      const reason = contains(s.env.actionSpace, actions[i]) ?? floatForDiscrete(s.env.actionSpace, actions[i], floats?.[i] === true);
      if (reason)
        throw new ProtocolError('ENV_ERR_INVALID_ACTION', `action ${i} (session ${s.id}) is not in the action space: ${reason}`, {
          session_id: s.id,
          index: i,
        });
    }
    const batch = new BatchStep(req.autoreset_mode, sessions, actions, core.viewers > 0, client.protocolVersion);
    let pending: Promise<void>[] | null = null;
    for (let i = 0; i < n; i++) {
      try {
        const p = batch.stepOne(i);
        if (p) (pending ??= []).push(p.catch((err: unknown) => batch.fail(i, err)));
      } catch (err) {
        batch.fail(i, err);
      }
    }
    // A batch of sync envs answers synchronously: no promise, no microtask.
    return pending ? Promise.all(pending).then(() => batch.finish()) : batch.finish();
  });
}

const NO_SEED = { seed: null, options: null };

function isPromise<T>(v: T | Promise<T>): v is Promise<T> {
  return typeof (v as Promise<T>)?.then === 'function';
}

/**
 * One step_batch in progress: the answer's arrays, filled session by session. Methods, not
 * closures made per request, so a batch of sync envs allocates nothing per session beyond what the
 * envs return.
 */
class BatchStep {
  readonly n: number;
  readonly rewards: Float64Array;
  readonly terminated: Uint8Array;
  readonly truncated: Uint8Array;
  readonly obs: unknown[];
  readonly infos: Record<string, unknown>[];
  readonly errors: ({ code: ErrorCode; message: string } | null)[];
  private failed = false;
  private readonly start = process.hrtime.bigint();
  /** Steps are counted once per batch when every session runs the same env (label lookups add up at 256 sessions). */
  private readonly oneEnv: boolean;
  private stepped = 0;

  constructor(
    private readonly mode: RequestOf<'step_batch'>['autoreset_mode'],
    private readonly sessions: Session[],
    private readonly actions: unknown[],
    /** A viewer listens: record actions and observations into the sessions' history too. */
    private readonly watched: boolean,
    /** The client's protocol version: the batched observation's form depends on it. */
    private readonly protocolVersion: number,
  ) {
    const n = (this.n = sessions.length);
    this.rewards = new Float64Array(n);
    this.terminated = new Uint8Array(n);
    this.truncated = new Uint8Array(n);
    this.obs = new Array<unknown>(n);
    this.infos = new Array<Record<string, unknown>>(n);
    this.errors = new Array<{ code: ErrorCode; message: string } | null>(n).fill(null);
    const envId = sessions[0]!.envId;
    this.oneEnv = sessions.every((s) => s.envId === envId);
  }

  /** One session's part of the batch; synchronous for sync envs. */
  stepOne(i: number): void | Promise<void> {
    const s = this.sessions[i]!;
    if (this.mode === 'next_step' && s.autoresetPending) {
      const r = s.env.reset(NO_SEED);
      return isPromise(r) ? r.then((rr) => this.afterReset(i, rr)) : this.afterReset(i, r);
    }
    const r = s.env.step(this.actions[i]);
    return isPromise(r) ? r.then((rr) => this.afterStep(i, rr)) : this.afterStep(i, r);
  }

  private afterStep(i: number, r: StepOutcome): void | Promise<void> {
    const s = this.sessions[i]!;
    if (this.oneEnv) this.stepped++;
    else s.metrics.steps.n++;
    s.recordStep(r.obs, r.reward, r.terminated, r.truncated, r.info, this.actions[i], this.watched);
    this.rewards[i] = r.reward;
    this.terminated[i] = r.terminated ? 1 : 0;
    this.truncated[i] = r.truncated ? 1 : 0;
    this.obs[i] = r.obs;
    this.infos[i] = r.info;
    if (!(r.terminated || r.truncated)) return;
    if (this.mode === 'next_step') s.autoresetPending = true;
    if (this.mode !== 'same_step') return;
    const reset = s.env.reset(NO_SEED);
    const final = (rr: ResetOutcome): void => {
      this.afterReset(i, rr);
      this.infos[i] = { ...rr.info, final_obs: r.obs, final_info: r.info };
    };
    return isPromise(reset) ? reset.then(final) : final(reset);
  }

  private afterReset(i: number, r: ResetOutcome): void {
    const s = this.sessions[i]!;
    s.autoresetPending = false;
    s.recordReset(r.obs, r.info);
    s.metrics.resets.n++;
    this.obs[i] = r.obs;
    this.infos[i] = r.info;
  }

  fail(i: number, err: unknown): void {
    const s = this.sessions[i]!;
    const pe = toProtocolError(err, s.log, 'step_batch');
    this.errors[i] = { code: pe.code, message: pe.message };
    this.infos[i] = {};
    this.failed = true;
  }

  finish(): ResultOf<'step_batch'> {
    const first = this.sessions[0]!;
    first.metrics.steps.n += this.stepped;
    first.metrics.latency.observe(Number(process.hrtime.bigint() - this.start) / 1e9);
    if (this.failed) fillFailedSlots(this.obs, this.errors);
    const n = this.n;
    return {
      obs: stackBatch(this.obs, first.env.observationSpace, this.protocolVersion),
      rewards: new Tensor('float64', [n], this.rewards),
      terminated: new Tensor('bool', [n], this.terminated),
      truncated: new Tensor('bool', [n], this.truncated),
      infos: this.infos,
      errors: this.errors,
    };
  }
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
    if (inner.length === 0 && !actions.dtype.startsWith('float')) {
      // Integer scalars (Discrete actions) come back as plain numbers; float ones stay tensors, which a Discrete space refuses.
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

function fillFailedSlots(obs: unknown[], errors: readonly unknown[]): void {
  const template = obs.find((_, i) => !errors[i]);
  for (let i = 0; i < obs.length; i++) if (errors[i]) obs[i] = zerosLike(template);
}
