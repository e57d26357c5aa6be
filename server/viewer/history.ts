/**
 * A session's recent history for the viewer: bounded rings of steps (reward, return, and while a
 * viewer listens the action and vector observation as numbers) and of finished episodes (return,
 * length, end reason, the env's own score). Recorded on every step, so a step costs a few stores
 * into preallocated columns; walking the action and observation into numbers (never images) is
 * left to steps taken while someone watches. Episode returns and lengths are the session's own
 * counters (Session.stats), passed in.
 *
 * @example
 * const h = new SessionHistory();
 * h.recordStep(1, 1, 1, null, info, { action, obs }); // reward, episode return, episode length
 * h.stepsSince(0); // the steps still in the ring, oldest first
 */
import { Tensor } from '../../protocol/tensor.ts';

/** How many steps and episodes a session keeps; older ones fall off. */
export const STEP_HISTORY = 512;
export const EPISODE_HISTORY = 200;
/** Numeric leaves larger than this (per leaf, and in all) are summarised, not copied. */
const MAX_NUMBERS = 64;

export interface StepRecord {
  /** The session's step counter after this step (1-based, never reused). */
  seq: number;
  t_ms: number;
  episode: number;
  reward: number;
  return: number;
  /** The action as flat numbers, or null when it has none (e.g. text) or no viewer listened at this step. */
  action: number[] | null;
  /** Vector observation leaves by dotted path, as flat numbers (empty when no viewer listened); images are left to the frame endpoint. */
  obs: Record<string, number[]>;
}

export type EpisodeEndReason = 'terminated' | 'truncated';

export interface EpisodeRecord {
  /** 1-based count of the session's finished episodes. */
  episode: number;
  ended_ms: number;
  return: number;
  length: number;
  reason: EpisodeEndReason;
  /** The env's own score from its final info (NAVSIM `score`/`epdms`/`pdms`, Bench2Drive driving score), else null. */
  score: number | null;
  score_name: string | null;
}

/** A fixed-capacity ring: pushes overwrite the oldest entry. */
class Ring<T> {
  private readonly items: T[] = [];
  private next = 0;
  constructor(private readonly capacity: number) {}

  push(item: T): void {
    if (this.items.length < this.capacity) this.items.push(item);
    else this.items[this.next] = item;
    this.next = (this.next + 1) % this.capacity;
  }

  /** Oldest first. */
  toArray(): T[] {
    return this.items.length < this.capacity ? [...this.items] : [...this.items.slice(this.next), ...this.items.slice(0, this.next)];
  }
}

/** Flat numbers of a small numeric value (number, boolean, bigint, numeric Tensor, short nested array), else null. */
export function numbersOf(value: unknown): number[] | null {
  if (typeof value === 'number') return [value];
  if (typeof value === 'boolean') return [value ? 1 : 0];
  if (typeof value === 'bigint') return [Number(value)];
  // uint8 leaves past a handful of values are images: the frame endpoint serves those.
  if (value instanceof Tensor) return value.size <= (value.dtype === 'uint8' ? 16 : MAX_NUMBERS) ? value.toNumbers() : null;
  if (Array.isArray(value)) {
    if (value.length > MAX_NUMBERS) return null; // e.g. a LiDAR point sequence: not flattened on the step path
    const flat = (value as unknown[]).flat(3);
    if (flat.length > MAX_NUMBERS || !flat.every((x) => typeof x === 'number')) return null;
    return flat as number[];
  }
  return null;
}

/** The small numeric leaves of an observation by dotted path (`obs` for a bare vector), at most MAX_NUMBERS in all. */
export function vectorLeaves(obs: unknown): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  let budget = MAX_NUMBERS;
  const walk = (v: unknown, path: string, depth: number): void => {
    if (budget <= 0) return;
    const nums = numbersOf(v);
    if (nums) {
      if (nums.length <= budget) {
        out[path || 'obs'] = nums;
        budget -= nums.length;
      }
      return;
    }
    if (v && typeof v === 'object' && !(v instanceof Tensor) && !(v instanceof Uint8Array) && !Array.isArray(v) && depth < 4) {
      for (const [k, inner] of Object.entries(v)) walk(inner, path ? `${path}.${k}` : k, depth + 1);
    }
  };
  walk(obs, '', 0);
  return out;
}

/** The env's own score in a final info: NAVSIM's `score` (else `epdms`, `pdms`), Bench2Drive's record or `driving_score`. */
export function episodeScore(info: Record<string, unknown>): { name: string; value: number } | null {
  const record = info['record'] as { scores?: { score_composed?: unknown } } | undefined;
  const composed = record?.scores?.score_composed;
  if (typeof composed === 'number') return { name: 'driving score', value: composed };
  for (const name of ['score', 'epdms', 'pdms', 'driving_score']) {
    const v = info[name];
    if (typeof v === 'number' && Number.isFinite(v)) return { name: name === 'driving_score' ? 'driving score' : name, value: v };
  }
  return null;
}

/** What a step's action and observation were, recorded only while a viewer listens. */
export interface StepDetail {
  action: unknown;
  obs: unknown;
}

const NO_LEAVES: Record<string, number[]> = Object.freeze({}) as Record<string, number[]>;

/** Fixed-capacity step columns: a step is a few stores, no allocation; records are built when read. */
class StepColumns {
  readonly tMs = new Float64Array(STEP_HISTORY);
  readonly episode = new Float64Array(STEP_HISTORY);
  readonly reward = new Float64Array(STEP_HISTORY);
  readonly ret = new Float64Array(STEP_HISTORY);
  readonly action: (number[] | null)[] = new Array<number[] | null>(STEP_HISTORY).fill(null);
  readonly obs: Record<string, number[]>[] = new Array<Record<string, number[]>>(STEP_HISTORY).fill(NO_LEAVES);
}

export class SessionHistory {
  private readonly steps = new StepColumns();
  private readonly episodes = new Ring<EpisodeRecord>(EPISODE_HISTORY);
  private seq = 0;
  private finished = 0;

  /**
   * Records a step: its reward, the episode's return and length so far (the session's counters),
   * how the episode ended if it did, the final info (for the env's score), and with `detail` (a
   * viewer listens) the action and observation as numbers.
   */
  recordStep(
    reward: number,
    episodeReturn: number,
    episodeLength: number,
    ended: EpisodeEndReason | null,
    info: Record<string, unknown>,
    detail: StepDetail | null,
  ): void {
    const now = Date.now();
    const slot = this.seq++ % STEP_HISTORY;
    const c = this.steps;
    c.tMs[slot] = now;
    c.episode[slot] = this.finished + 1;
    c.reward[slot] = reward;
    c.ret[slot] = episodeReturn;
    c.action[slot] = detail ? numbersOf(detail.action) : null;
    c.obs[slot] = detail ? vectorLeaves(detail.obs) : NO_LEAVES;
    if (ended) {
      const score = episodeScore(info);
      this.episodes.push({
        episode: ++this.finished,
        ended_ms: now,
        return: episodeReturn,
        length: episodeLength,
        reason: ended,
        score: score?.value ?? null,
        score_name: score?.name ?? null,
      });
    }
  }

  /** The newest step's sequence number (0 before the first step). */
  get lastSeq(): number {
    return this.seq;
  }

  get episodesFinished(): number {
    return this.finished;
  }

  /** Steps with `seq` above `after` still in the ring, oldest first. */
  stepsSince(after: number): StepRecord[] {
    const first = Math.max(after + 1, this.seq - STEP_HISTORY + 1, 1);
    const out: StepRecord[] = [];
    const c = this.steps;
    for (let seq = first; seq <= this.seq; seq++) {
      const i = (seq - 1) % STEP_HISTORY;
      out.push({ seq, t_ms: c.tMs[i]!, episode: c.episode[i]!, reward: c.reward[i]!, return: c.ret[i]!, action: c.action[i]!, obs: c.obs[i]! });
    }
    return out;
  }

  /** Episodes numbered above `after` still in the ring, oldest first. */
  episodesSince(after: number): EpisodeRecord[] {
    return after >= this.finished ? [] : this.episodes.toArray().filter((e) => e.episode > after);
  }

  /** Steps per second over the last `windowMs` (0 when idle). */
  stepRate(now = Date.now(), windowMs = 5000): number {
    const c = this.steps;
    const newest = this.seq;
    if (newest === 0 || now - c.tMs[(newest - 1) % STEP_HISTORY]! > windowMs) return 0;
    let oldest = newest;
    const floor = Math.max(1, newest - STEP_HISTORY + 1);
    while (oldest > floor && now - c.tMs[(oldest - 2) % STEP_HISTORY]! <= windowMs) oldest--;
    if (newest - oldest < 1) return 0;
    const span = (c.tMs[(newest - 1) % STEP_HISTORY]! - c.tMs[(oldest - 1) % STEP_HISTORY]!) / 1000;
    return span > 0 ? (newest - oldest) / span : 0;
  }
}
