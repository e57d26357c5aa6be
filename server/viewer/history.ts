/**
 * A session's recent history for the viewer: bounded rings of steps (reward, return, action and
 * vector observation as numbers) and of finished episodes (return, length, end reason, the env's
 * own score). Recorded on the step path, so it copies only small numeric leaves and never images.
 *
 * @example
 * const h = new SessionHistory();
 * h.recordStep(obs, 1, false, false, info, action);
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
  /** The action as flat numbers, or null when it has none (e.g. text). */
  action: number[] | null;
  /** Vector observation leaves by dotted path, as flat numbers; images are left to the frame endpoint. */
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

  get last(): T | undefined {
    return this.items.length === 0 ? undefined : this.items[(this.next - 1 + this.capacity) % this.capacity];
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

export class SessionHistory {
  private readonly steps = new Ring<StepRecord>(STEP_HISTORY);
  private readonly episodes = new Ring<EpisodeRecord>(EPISODE_HISTORY);
  private seq = 0;
  private finished = 0;
  private episodeReturn = 0;
  private episodeLength = 0;

  recordStep(obs: unknown, reward: number, terminated: boolean, truncated: boolean, info: Record<string, unknown>, action: unknown): void {
    const now = Date.now();
    this.episodeReturn += reward;
    this.episodeLength++;
    this.steps.push({
      seq: ++this.seq,
      t_ms: now,
      episode: this.finished + 1,
      reward,
      return: this.episodeReturn,
      action: numbersOf(action),
      obs: vectorLeaves(obs),
    });
    if (terminated || truncated) {
      const score = episodeScore(info);
      this.episodes.push({
        episode: ++this.finished,
        ended_ms: now,
        return: this.episodeReturn,
        length: this.episodeLength,
        reason: terminated ? 'terminated' : 'truncated',
        score: score?.value ?? null,
        score_name: score?.name ?? null,
      });
      this.episodeReturn = 0;
      this.episodeLength = 0;
    }
  }

  recordReset(): void {
    this.episodeReturn = 0;
    this.episodeLength = 0;
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
    return after >= this.seq ? [] : this.steps.toArray().filter((s) => s.seq > after);
  }

  /** Episodes numbered above `after` still in the ring, oldest first. */
  episodesSince(after: number): EpisodeRecord[] {
    return after >= this.finished ? [] : this.episodes.toArray().filter((e) => e.episode > after);
  }

  /** Steps per second over the last `windowMs` (0 when idle). */
  stepRate(now = Date.now(), windowMs = 5000): number {
    const last = this.steps.last;
    if (!last || now - last.t_ms > windowMs) return 0;
    const recent = this.steps.toArray().filter((s) => now - s.t_ms <= windowMs);
    if (recent.length < 2) return 0;
    const span = (recent[recent.length - 1]!.t_ms - recent[0]!.t_ms) / 1000;
    return span > 0 ? (recent.length - 1) / span : 0;
  }
}
