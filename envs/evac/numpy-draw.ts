/**
 * NumPy's legacy global RNG as RLinf's EvacEnv uses it to draw reset episodes:
 * `np.random.seed(seed)` then `np.random.choice(n, size=k, replace=False)`
 * (world_model_evac_env.py @bf41fc33c, lines 252-261). MT19937 seeded with `init_genrand`, and
 * `choice` without replacement as `permutation(n)[:k]`, a Fisher-Yates shuffle from the end whose
 * bounded draws mask 32-bit outputs and reject values above the bound (numpy's `random_interval`).
 * The same seed gives the same episodes as RLinf (checked against numpy 2.4 in the tests).
 *
 * @example
 * const rng = new NumpyLegacyRandom(0);
 * rng.choiceWithoutReplacement(10, 4); // np.random.seed(0); np.random.choice(10, 4, replace=False)
 */
export class NumpyLegacyRandom {
  private readonly mt = new Uint32Array(624);
  private index = 624;

  constructor(seed = 0) {
    this.seed(seed);
  }

  /** `np.random.seed(seed)` for an integer seed in [0, 2^32). */
  seed(seed: number): void {
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new RangeError(`seed must be an integer in [0, 2^32 - 1], got ${seed}`);
    const mt = this.mt;
    mt[0] = seed >>> 0;
    for (let i = 1; i < 624; i++) {
      const prev = mt[i - 1]! ^ (mt[i - 1]! >>> 30);
      // 1812433253 * prev + i, modulo 2^32, without losing bits to float rounding.
      mt[i] = (Math.imul(1812433253, prev) + i) >>> 0;
    }
    this.index = 624;
  }

  nextUint32(): number {
    const mt = this.mt;
    if (this.index >= 624) {
      for (let i = 0; i < 624; i++) {
        const y = (mt[i]! & 0x80000000) | (mt[(i + 1) % 624]! & 0x7fffffff);
        mt[i] = mt[(i + 397) % 624]! ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
      }
      this.index = 0;
    }
    let y = mt[this.index++]!;
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }

  /** numpy's `random_interval(max)`: uniform in [0, max] by masking and rejection (max < 2^32). */
  interval(max: number): number {
    if (max === 0) return 0;
    let mask = max;
    mask |= mask >>> 1;
    mask |= mask >>> 2;
    mask |= mask >>> 4;
    mask |= mask >>> 8;
    mask |= mask >>> 16;
    let value: number;
    do value = (this.nextUint32() & mask) >>> 0;
    while (value > max);
    return value;
  }

  /** `np.random.choice(n, size=k, replace=False)`. */
  choiceWithoutReplacement(n: number, k: number): number[] {
    if (k > n) throw new RangeError(`cannot draw ${k} distinct episodes from ${n}`);
    const perm = Array.from({ length: n }, (_, i) => i);
    for (let i = n - 1; i >= 1; i--) {
      const j = this.interval(i);
      const t = perm[i]!;
      perm[i] = perm[j]!;
      perm[j] = t;
    }
    return perm.slice(0, k);
  }
}

/**
 * RLinf's reset draw shared by the envs of one RLinf env worker (its `num_envs`): each round draws
 * `size` distinct episodes at once and env `rank` takes the rank-th. A round starts when an env resets
 * whose episode of the current round it has already taken (RLinf resets all its envs together); a
 * seed on the reset that starts a round reseeds the draw, as `np.random.seed(seed)` does in RLinf.
 */
export class EpisodeDrawGroup {
  private readonly rng = new NumpyLegacyRandom(0);
  private round: number[] | null = null;
  private readonly taken = new Set<number>();

  constructor(
    readonly episodes: number,
    readonly size: number,
  ) {
    if (size > episodes) throw new RangeError(`the reset dataset has ${episodes} episodes; a draw of ${size} distinct ones needs at least that many`);
  }

  next(rank: number, seed: number | undefined): number {
    if (!this.round || this.taken.has(rank)) {
      if (seed !== undefined) this.rng.seed(seed >>> 0);
      this.round = this.rng.choiceWithoutReplacement(this.episodes, this.size);
      this.taken.clear();
    }
    this.taken.add(rank);
    return this.round[rank]!;
  }
}
