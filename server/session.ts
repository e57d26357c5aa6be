/**
 * A session: one env instance owned by one client, with its own request queue so that requests
 * for it run in order while other sessions run independently.
 */
import type { Logger } from 'pino';

import type { Env } from '../envs/core/env.ts';
import type { SessionCells } from './metrics.ts';
import { SessionHistory } from './viewer/history.ts';

/**
 * A FIFO lock. `tryAcquire` takes it synchronously when free (the fast path for sync envs);
 * `acquire` queues. Batch requests enqueue on all their sessions in one tick, so two batches
 * over the same sessions always meet in the same order and cannot deadlock.
 */
export class SessionLock {
  private locked = false;
  private readonly waiters: (() => void)[] = [];

  get pending(): number {
    return this.waiters.length + (this.locked ? 1 : 0);
  }

  get isLocked(): boolean {
    return this.locked;
  }

  tryAcquire(): boolean {
    if (this.locked) return false;
    this.locked = true;
    return true;
  }

  acquire(): Promise<void> {
    if (this.tryAcquire()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.locked = false;
  }
}

export class Session {
  readonly lock = new SessionLock();
  lastActive = Date.now();
  closed = false;
  /** Set when a batched step ended this session's episode; the next batched step resets it (next_step mode). */
  autoresetPending = false;
  /** The size of this session's last step or reset answer: large ones are encoded into pooled memory. */
  replyBytes = 0;
  readonly createdAt = Date.now();
  /** Live statistics for the viewer and /metrics; cheap to keep (references, counters). */
  readonly stats = {
    steps: 0,
    episodes: 0,
    /** The current episode's return and length; after an episode's end they hold its totals until the next step or reset. */
    episodeReturn: 0,
    episodeSteps: 0,
    episodeOver: false,
    lastReward: 0,
    lastObs: null as unknown,
    lastInfo: null as Record<string, unknown> | null,
  };
  /** Recent steps and episodes as numbers, for the viewer's charts and tables (bounded rings). */
  readonly history = new SessionHistory();

  /**
   * Records a step's outcome; an episode's end goes into the env's /metrics histograms. `detailed`
   * (a viewer listens): the history also keeps the action and observation as numbers.
   */
  recordStep(obs: unknown, reward: number, terminated: boolean, truncated: boolean, info: Record<string, unknown>, action: unknown, detailed: boolean): void {
    const st = this.stats;
    // A step past an episode's end without a reset starts the next episode.
    if (st.episodeOver) {
      st.episodeOver = false;
      st.episodeReturn = 0;
      st.episodeSteps = 0;
    }
    st.steps++;
    st.episodeSteps++;
    st.lastReward = reward;
    st.episodeReturn += reward;
    st.lastObs = obs;
    st.lastInfo = info;
    // Gymnasium: terminated wins when both are set (the MDP ended; the time limit is moot).
    const ended = terminated ? 'terminated' : truncated ? 'truncated' : null;
    if (ended) {
      st.episodes++;
      st.episodeOver = true;
      const cells = this.metrics.episodes;
      cells.returns.observe(st.episodeReturn);
      cells.lengths.observe(st.episodeSteps);
      cells.ended[ended].n++;
    }
    this.history.recordStep(reward, st.episodeReturn, st.episodeSteps, ended, info, detailed ? { action, obs } : null);
  }

  /** Records a reset's outcome. */
  recordReset(obs: unknown, info: Record<string, unknown>): void {
    this.stats.episodeOver = false;
    this.stats.episodeReturn = 0;
    this.stats.episodeSteps = 0;
    this.stats.lastObs = obs;
    this.stats.lastInfo = info;
  }

  constructor(
    readonly id: string,
    readonly envId: string,
    readonly env: Env,
    readonly ownerId: string,
    readonly log: Logger,
    readonly maxEpisodeSteps: number | null,
    readonly metrics: SessionCells,
  ) {}

  touch(): void {
    this.lastActive = Date.now();
  }
}
