import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';

/** A seeded source of randomness; every random choice in the project goes through one. */
export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [min, max] inclusive. */
  int(min: number, max: number): number;
  /** Exponential with the given mean. */
  exponential(mean: number): number;
  /** Normal (Box-Muller) with the given mean and standard deviation. */
  normal(mean: number, std: number): number;
  /** An independent generator derived from this one (for per-trial or per-worker streams). */
  fork(): Rng;
}

type PureRng = ReturnType<typeof xoroshiro128plus>;

class Xoroshiro implements Rng {
  readonly #g: PureRng;

  constructor(g: PureRng) {
    this.#g = g;
  }

  next(): number {
    return uniformFloat64(this.#g);
  }

  int(min: number, max: number): number {
    return uniformInt(this.#g, min, max);
  }

  exponential(mean: number): number {
    return -mean * Math.log(1 - this.next());
  }

  normal(mean: number, std: number): number {
    if (std === 0) return mean;
    const u = 1 - this.next();
    const v = this.next();
    return mean + std * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  fork(): Rng {
    return createRng(uniformInt(this.#g, 0, 0x7fffffff));
  }
}

/**
 * A seeded generator (xoroshiro128+ from pure-rand). The same seed always yields the same sequence.
 *
 * @example
 * const rng = createRng(100);
 * rng.int(1, 6); // the same value on every run
 */
export function createRng(seed: number): Rng {
  const g = xoroshiro128plus(mix32(seed));
  // xoroshiro128+ seeded from 32 bits starts from a sparse state: discard its first outputs.
  for (let i = 0; i < 16; i++) g.next();
  return new Xoroshiro(g);
}

/** MurmurHash3's finaliser: spreads nearby seeds (0, 1, 2, ...) over the whole 32-bit space. */
function mix32(seed: number): number {
  let h = (seed | 0) ^ 0x9e3779b9;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) | 0;
}
