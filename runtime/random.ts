/**
 * A small seeded random generator (xoshiro128**, seeded through splitmix32).
 *
 * Lives in `protocol/` because both sides sample spaces; envs keep one per session so the same
 * seed gives the same episode on every transport and client.
 *
 * @example
 * const rng = new Random(42);
 * rng.uniform(-0.05, 0.05);
 */
export class Random {
  private s0 = 0;
  private s1 = 0;
  private s2 = 0;
  private s3 = 0;

  constructor(seed?: number | null) {
    this.seed(seed);
  }

  /** Reseeds; `null`/`undefined` draws a fresh seed from the OS. Returns the seed used. */
  seed(seed?: number | null): number {
    const s = seed ?? Math.floor(Math.random() * 2 ** 32) ^ (Date.now() & 0xffffffff);
    // Fold seeds above 2^32 so every integer seed maps somewhere deterministic.
    let x = (s >>> 0) ^ Math.floor(s / 2 ** 32);
    const next = () => {
      x = (x + 0x9e3779b9) | 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
    return s;
  }

  /** Uniform 32-bit unsigned integer. */
  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** Uniform in [0, 1) with 53 random bits. */
  random(): number {
    const hi = this.nextUint32() >>> 5;
    const lo = this.nextUint32() >>> 6;
    return (hi * 67108864 + lo) / 9007199254740992;
  }

  uniform(low = 0, high = 1): number {
    return low + (high - low) * this.random();
  }

  /** Integer in [low, high). */
  integer(low: number, high: number): number {
    return low + Math.floor(this.random() * (high - low));
  }

  /** Standard normal (Box-Muller). */
  normal(mean = 0, std = 1): number {
    let u = 0;
    while (u === 0) u = this.random();
    const v = this.random();
    return mean + std * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  /** Internal state, for get_state/set_state. */
  getState(): [number, number, number, number] {
    return [this.s0, this.s1, this.s2, this.s3];
  }

  setState(state: readonly number[]): void {
    [this.s0, this.s1, this.s2, this.s3] = state.map((v) => v >>> 0) as [number, number, number, number];
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}
