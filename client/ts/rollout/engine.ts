/**
 * The rollout engine: M sessions on one or more servers, a batched policy, episodes assembled per
 * session and handed to a {@link TrajectoryWriter}.
 *
 * Sessions are split into `groups` (default 2) that take turns: while one group's actions are
 * being computed (in the ONNX worker, or any async policy) the other group's step_batch is on the
 * wire and its envs are stepping, so neither the envs nor the policy wait on each other.
 * `groups: 1` is plain lock-step collection.
 *
 * Episodes: sessions autoreset in the same step (`same_step`: the final observation and the
 * episode's own terminal info arrive in the info), so no round trip is spent on resets. Exactly
 * `episodes` episodes are started and each runs to its end; a session whose episode ends after that
 * goes idle (so which episodes are kept never depends on their length). The policy gets an
 * ActContext (session ids, latest infos, episode starts) and its episodeStart hook; its extras are
 * stored with each step. Backpressure: each loop awaits `writer.ready()` before
 * its next step. Stop: `stop('finish')` lets running episodes end, `'keep'` writes them as
 * incomplete, `'discard'` drops them (counted in the manifest). A dropped connection is
 * resumed by the client (steps in flight are answered once, never applied twice); when the server no
 * longer has the sessions, their running episodes are written as incomplete and fresh sessions are
 * made on the reconnected server. A server gone for good (the client gave up reconnecting: the
 * server did not come back within the client's reconnect timeout) ends the rollout with a
 * {@link ServerLostError}, running episodes kept as incomplete.
 *
 * @example
 * const rollout = new Rollout({ envId: 'gymwire/CartPole-v1', targets: [{ client, url, sessions: 64 }], policy, episodes: 1000, writer });
 * const summary = await rollout.run();
 */
import type { GymwireClient } from '../client.ts';
import type { RemoteEnv } from '../remote-env.ts';
import type { ExtraRow, Policy, PolicyOutput } from '../policy.ts';
import type { Space } from '../../../protocol/spaces.ts';
import type { EpisodeRecord, EpisodeStatus, StepRecord, TrajectoryWriter } from '../dataset/writer.ts';
import { unstack } from './batch.ts';

export type PartialMode = 'finish' | 'keep' | 'discard';

/** Row `j` of each of the policy's extra outputs. */
function extrasRow(extras: Record<string, readonly ExtraRow[]>, j: number): Record<string, ExtraRow> {
  const row: Record<string, ExtraRow> = {};
  for (const name in extras) row[name] = extras[name]![j]!;
  return row;
}

/**
 * Errors meaning "the server no longer has this session": fresh sessions replace it once the client
 * has reconnected (a restarted server).
 */
const SESSION_LOSS = new Set(['SESSION_LOST', 'SERVER_SHUTDOWN', 'ENV_ERR_UNKNOWN_SESSION', 'ENV_ERR_SHUTTING_DOWN']);
/** Errors meaning "the server is gone for good" (reconnecting gave up, or the client was closed): the rollout fails. */
const SERVER_GONE = new Set(['CONNECTION_LOST', 'CLOSED']);

function codeOf(err: unknown): string | null {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : null;
}

const isSessionLoss = (err: unknown) => SESSION_LOSS.has(codeOf(err) ?? '');
const isServerGone = (err: unknown) => SERVER_GONE.has(codeOf(err) ?? '');

/** A rollout ended because one of its servers went away for good (the episodes it ran are kept as incomplete). */
export class ServerLostError extends Error {
  override readonly name = 'ServerLostError';
  constructor(
    readonly url: string,
    cause: unknown,
  ) {
    super(`lost the server at ${url}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

export interface RolloutTarget {
  client: GymwireClient;
  /** Recorded in the dataset's `server` column. */
  url: string;
  sessions: number;
}

export interface RolloutOptions {
  envId: string;
  kwargs?: Record<string, unknown>;
  targets: RolloutTarget[];
  policy: Policy;
  /** Episodes to collect; at most this many are started. */
  episodes: number;
  /** Stop (as `onLimit`) after this many env steps in total. */
  maxSteps?: number;
  /** What happens to running episodes when maxSteps is reached (default 'keep'). */
  onLimit?: PartialMode;
  /** Session groups stepping concurrently (default 2; 1 = lock-step). */
  groups?: number;
  /** Session i's first episode is reset with seed + i (null: unseeded). */
  seed?: number | null;
  writer?: TrajectoryWriter | null;
  /** Make fresh sessions when a server no longer has ours after a reconnect (default true). */
  recover?: boolean;
  /** Close the sessions when done (default true; false leaves them for inspection). */
  closeSessions?: boolean;
  onProgress?: (p: RolloutProgress) => void;
  /** Sees every recorded transition (e.g. to keep preview frames); requests sent on `client` for `session` run before its next step. */
  onStep?: (episodeId: number, session: string, step: StepRecord, client: GymwireClient) => void;
  onEpisode?: (ep: EpisodeSummary) => void;
}

export interface RolloutProgress {
  episodes: number;
  incomplete: number;
  steps: number;
  elapsedMs: number;
  stepsPerSec: number;
  meanReturn: number | null;
}

export interface EpisodeSummary {
  id: number;
  session: string;
  server: string;
  status: EpisodeStatus;
  reason: string | null;
  steps: number;
  return: number;
}

export interface RolloutSummary extends RolloutProgress {
  discarded: number;
  lostSessions: number;
  recoveredSessions: number;
  meanLength: number | null;
  returns: number[];
  policy: string;
  groups: number;
  sessions: number;
}

interface Slot {
  index: number;
  target: RolloutTarget;
  env: RemoteEnv;
  obs: unknown;
  info: Record<string, unknown>;
  sessionStep: number;
  episode: { id: number; seed: number | null; steps: StepRecord[]; length: number; return: number } | null;
  /** The observation is the first of its episode (ActContext.episodeStarts). */
  startsEpisode: boolean;
  lost: boolean;
}

export class Rollout {
  private slots: Slot[] = [];
  private started = 0;
  private stopMode: PartialMode | null = null;
  private readonly returns: number[] = [];
  private returnSum = 0;
  private readonly lengths: number[] = [];
  private steps = 0;
  private incomplete = 0;
  private discarded = 0;
  private lost = 0;
  private recovered = 0;
  private t0 = 0;
  private obsSpace: Space | null = null;
  /** Transitions are only kept for someone who reads them: without a writer or onStep, an episode is its length and return. */
  private readonly recordSteps: boolean;

  constructor(private readonly opts: RolloutOptions) {
    if (opts.targets.length === 0) throw new Error('a rollout needs at least one target server');
    if (!(opts.episodes > 0)) throw new Error('episodes must be positive');
    this.recordSteps = Boolean(opts.writer) || Boolean(opts.onStep);
  }

  /** Asks the rollout to stop: 'finish' running episodes, 'keep' them as incomplete, or 'discard' them. */
  stop(mode: PartialMode = 'finish'): void {
    if (this.stopMode === null || mode !== 'finish') this.stopMode = mode;
  }

  /**
   * Makes the sessions, checks the policy against the env's spaces, collects, closes the sessions.
   * Rejects when the policy fails or the env refuses an action; the episodes running then are
   * handed to the writer as incomplete first, so closing the writer keeps them.
   */
  async run(): Promise<RolloutSummary> {
    const { opts } = this;
    const first = await opts.targets[0]!.client.make(opts.envId, opts.kwargs ?? {});
    try {
      await opts.policy.check({ observationSpace: first.observationSpace, actionSpace: first.actionSpace });
    } catch (err) {
      await first.close().catch(() => {});
      throw err;
    }
    this.obsSpace = first.observationSpace;
    let index = 0;
    const made: Promise<Slot>[] = [];
    for (const target of opts.targets) {
      for (let k = 0; k < target.sessions; k++) {
        const i = index++;
        const env = i === 0 ? Promise.resolve(first) : target.client.make(opts.envId, opts.kwargs ?? {});
        made.push(env.then((e) => ({ index: i, target, env: e, obs: null, info: {}, sessionStep: 0, episode: null, startsEpisode: false, lost: false })));
      }
    }
    const settled = await Promise.allSettled(made);
    this.slots = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const refused = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (refused) {
      await Promise.allSettled(this.slots.map((s) => s.env.close()));
      throw refused.reason;
    }
    this.t0 = performance.now();
    try {
      await this.resetAll();
      const groups = Math.max(1, Math.min(opts.groups ?? 2, this.slots.length));
      const members = Array.from({ length: groups }, (_, g) => this.slots.filter((s) => s.index % groups === g));
      // A policy error or an action the env refuses ends the rollout; running episodes are kept.
      let failure: Error | null = null;
      await this.drive(members).catch((err: unknown) => {
        failure = err instanceof Error ? err : new Error(String(err));
      });
      // Stopped with 'keep' or 'discard', or failed: whatever still runs is written (or dropped) now.
      const reason = failure ? `rollout failed: ${(failure as Error).message}` : 'stopped';
      for (const s of this.slots) if (s.episode) this.endEpisode(s, 'incomplete', reason);
      if (failure) throw failure;
    } finally {
      if (opts.closeSessions !== false) await Promise.allSettled(this.slots.filter((s) => !s.lost).map((s) => s.env.close()));
    }
    return this.summary();
  }

  progress(): RolloutProgress {
    const elapsedMs = performance.now() - this.t0;
    const n = this.returns.length;
    return {
      episodes: n,
      incomplete: this.incomplete,
      steps: this.steps,
      elapsedMs,
      stepsPerSec: elapsedMs > 0 ? (this.steps * 1000) / elapsedMs : 0,
      meanReturn: n > 0 ? this.returnSum / n : null,
    };
  }

  // -------------------------------------------------------------------------------------------

  private summary(): RolloutSummary {
    const p = this.progress();
    return {
      ...p,
      discarded: this.discarded,
      lostSessions: this.lost,
      recoveredSessions: this.recovered,
      meanLength: this.lengths.length > 0 ? this.lengths.reduce((a, b) => a + b, 0) / this.lengths.length : null,
      returns: [...this.returns],
      policy: this.opts.policy.name,
      groups: Math.max(1, Math.min(this.opts.groups ?? 2, this.slots.length)),
      sessions: this.slots.length,
    };
  }

  private byTarget(slots: Slot[]): [RolloutTarget, Slot[]][] {
    if (this.opts.targets.length === 1) return slots.length > 0 ? [[this.opts.targets[0]!, slots]] : [];
    const map = new Map<RolloutTarget, Slot[]>();
    for (const s of slots) {
      const list = map.get(s.target);
      if (list) list.push(s);
      else map.set(s.target, [s]);
    }
    return [...map];
  }

  private async resetAll(): Promise<void> {
    const seed = this.opts.seed ?? null;
    const wanted = this.slots.slice(0, Math.min(this.slots.length, this.opts.episodes));
    await Promise.all(
      this.byTarget(wanted).map(async ([target, slots]) => {
        const seeds = slots.map((s) => (seed === null ? null : seed + s.index));
        const r = await target.client.request('reset_batch', { session_ids: slots.map((s) => s.env.sessionId), seeds, options: null });
        const obs = unstack(r.obs, slots.length, this.obsSpace!);
        slots.forEach((s, i) => this.beginEpisode(s, obs[i], r.infos[i] ?? {}, seeds[i] ?? null));
      }),
    );
  }

  private beginEpisode(s: Slot, obs: unknown, info: Record<string, unknown>, seed: number | null): void {
    s.obs = obs;
    s.info = info;
    s.episode = { id: this.started++, seed, steps: [], length: 0, return: 0 };
    s.startsEpisode = true;
    this.opts.policy.episodeStart?.(s.env.sessionId, info);
  }

  /**
   * The schedule: each group loops act -> step_batch -> record on its own, so the main thread
   * decodes one group's step while the policy worker computes another group's actions and the
   * server steps a third's envs: nothing waits on a fixed order of awaits. Only the order in which
   * groups hand their batches to the policy is fixed (round robin, a baton passed at each act), so
   * a seeded sampling policy draws its random numbers in the same order on every run. With one
   * group this is plain lock-step.
   */
  private async drive(groups: Slot[][]): Promise<void> {
    const { opts } = this;
    const n = groups.length;
    const done = groups.map(() => false);
    const waiting: ((() => void) | null)[] = groups.map(() => null);
    let turn = 0;
    let halted = false;
    const wake = (g: number) => {
      const w = waiting[g];
      waiting[g] = null;
      w?.();
    };
    const pass = () => {
      for (let k = 1; k <= n; k++) {
        const next = (turn + k) % n;
        if (!done[next]) {
          turn = next;
          wake(next);
          return;
        }
      }
    };
    const myTurn = (g: number) => (turn === g || halted ? Promise.resolve() : new Promise<void>((r) => (waiting[g] = r)));
    const loop = async (g: number): Promise<void> => {
      try {
        for (;;) {
          await myTurn(g);
          if (opts.maxSteps !== undefined && this.steps >= opts.maxSteps && this.stopMode === null) this.stop(opts.onLimit ?? 'keep');
          const live = halted || this.stopMode === 'keep' || this.stopMode === 'discard' ? [] : groups[g]!.filter((s) => s.episode && !s.lost);
          // A group whose sessions all went idle stays idle: episodes only start from its own steps.
          if (live.length === 0) return;
          let acting: Promise<PolicyOutput>;
          try {
            acting = Promise.resolve(
              opts.policy.act(
                live.map((s) => s.obs),
                { sessions: live.map((s) => s.env.sessionId), infos: live.map((s) => s.info), episodeStarts: live.map((s) => s.startsEpisode) },
              ),
            );
          } catch (err) {
            acting = Promise.reject(err);
          }
          pass();
          const out = await acting;
          const perTarget = this.byTarget(live);
          if (perTarget.length === 1) await this.stepTarget(perTarget[0]![0], perTarget[0]![1], live, out);
          else await Promise.all(perTarget.map(([target, slots]) => this.stepTarget(target, slots, live, out)));
          opts.onProgress?.(this.progress());
          if (opts.writer) await opts.writer.ready();
        }
      } catch (err) {
        // A policy error or an action the env refuses ends the rollout: the other groups stop at their next turn.
        halted = true;
        groups.forEach((_, k) => wake(k));
        throw err;
      } finally {
        done[g] = true;
        if (turn === g) pass();
      }
    };
    const results = await Promise.allSettled(groups.map((_, g) => loop(g)));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  private async stepTarget(target: RolloutTarget, slots: Slot[], live: Slot[], out: PolicyOutput): Promise<void> {
    // One target: its slots are the live ones, in order, and the policy's outputs line up with them.
    const at = slots === live ? null : slots.map((s) => live.indexOf(s));
    const actions = at ? at.map((j) => out.actions[j]) : out.actions;
    let r;
    try {
      r = await target.client.request('step_batch', { session_ids: slots.map((s) => s.env.sessionId), actions, autoreset_mode: 'same_step' });
    } catch (err) {
      if (isServerGone(err)) throw new ServerLostError(target.url, err);
      if (!isSessionLoss(err)) throw err;
      await this.onLostSessions(target, slots, err as Error);
      return;
    }
    const obs = unstack(r.obs, slots.length, this.obsSpace!);
    const failed: Slot[] = [];
    const rewards = r.rewards.data as Float64Array;
    const terminatedAt = r.terminated.data as Uint8Array;
    const truncatedAt = r.truncated.data as Uint8Array;
    for (let i = 0; i < slots.length; i++) {
      const s = slots[i]!;
      const ep = s.episode!;
      const err = r.errors[i];
      if (err) {
        this.endEpisode(s, 'incomplete', `env error: ${err.code}: ${err.message}`);
        failed.push(s);
        continue;
      }
      const info = r.infos[i] ?? {};
      const terminated = terminatedAt[i] === 1;
      const truncated = truncatedAt[i] === 1;
      const reward = rewards[i]!;
      ep.length++;
      ep.return += reward;
      const sessionStep = s.sessionStep++;
      s.startsEpisode = false;
      this.steps++;
      if (this.recordSteps) {
        const j = at ? at[i]! : i;
        const step: StepRecord = {
          obs: s.obs,
          action: actions[i],
          reward,
          terminated,
          truncated,
          logProb: out.logProbs ? out.logProbs[j]! : null,
          value: out.values ? out.values[j]! : null,
          info: terminated || truncated ? ((info['final_info'] as Record<string, unknown> | undefined) ?? {}) : info,
          sessionStep,
        };
        if (terminated || truncated) step.finalObs = info['final_obs'];
        if (out.extras) step.extras = extrasRow(out.extras, j);
        ep.steps.push(step);
        this.opts.onStep?.(ep.id, s.env.sessionId, step, target.client);
      }
      if (terminated || truncated) {
        this.endEpisode(s, terminated ? 'terminated' : 'truncated', null);
        if (this.stopMode === null && this.started < this.opts.episodes) {
          const { final_obs: _o, final_info: _i, ...resetInfo } = info;
          this.beginEpisode(s, obs[i], resetInfo, null);
        }
      } else {
        s.obs = obs[i];
        s.info = info;
      }
    }
    // A session whose env failed is closed for stepping until reset.
    for (const s of failed) {
      if (this.stopMode !== null || this.started >= this.opts.episodes) continue;
      try {
        const rr = await s.env.reset();
        this.beginEpisode(s, rr.obs, rr.info, null);
      } catch (err) {
        if (isServerGone(err)) throw new ServerLostError(target.url, err);
        s.lost = true;
        this.lost++;
      }
    }
  }

  /** The server no longer has these sessions (or cannot be reached): keep what they did, replace them. */
  private async onLostSessions(target: RolloutTarget, slots: Slot[], err: Error): Promise<void> {
    for (const s of slots) {
      if (s.episode) this.endEpisode(s, 'incomplete', `session lost: ${err.message}`, true);
      s.lost = true;
    }
    if (this.opts.recover === false) {
      this.lost += slots.length;
      return;
    }
    for (const s of slots) {
      try {
        const env = await target.client.make(this.opts.envId, this.opts.kwargs ?? {});
        s.env = env;
        s.sessionStep = 0;
        s.lost = false;
        this.recovered++;
        if (this.stopMode === null && this.started < this.opts.episodes) {
          const r = await env.reset();
          this.beginEpisode(s, r.obs, r.info, null);
        }
      } catch (err) {
        if (isServerGone(err)) throw new ServerLostError(target.url, err);
        this.lost++;
      }
    }
  }

  private endEpisode(s: Slot, status: EpisodeStatus, reason: string | null, keepEvenIfDiscarding = false): void {
    const ep = s.episode;
    if (!ep) return;
    s.episode = null;
    if (status === 'incomplete' && this.stopMode === 'discard' && !keepEvenIfDiscarding) {
      this.discarded++;
      this.opts.writer?.discarded();
      return;
    }
    const ret = ep.return;
    if (status === 'incomplete') this.incomplete++;
    else {
      this.returns.push(ret);
      this.returnSum += ret;
      this.lengths.push(ep.length);
    }
    const record: EpisodeRecord = { id: ep.id, session: s.env.sessionId, server: s.target.url, seed: ep.seed, status, reason, steps: ep.steps };
    if (ep.length > 0) this.opts.writer?.add(record);
    else if (status === 'incomplete') this.incomplete--;
    this.opts.onEpisode?.({ id: ep.id, session: record.session, server: record.server, status, reason, steps: ep.length, return: ret });
  }
}
