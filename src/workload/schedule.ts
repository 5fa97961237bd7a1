import { TailgateError, createRng } from '../core/index.js';

/** How an open loop spaces its arrivals. */
export type ArrivalMode = 'constant' | 'poisson' | 'gamma';

/**
 * The load a run applies: a closed loop that keeps `concurrency` requests in flight, or an open loop
 * that starts requests at `ratePerS` (optionally never more than `maxConcurrency` at once).
 * Shared by `bench/` (live) and the simulator (virtual time).
 */
export type LoadSchedule =
  | { kind: 'closed'; concurrency: number }
  | { kind: 'rate'; ratePerS: number; mode: ArrivalMode; seed: number; maxConcurrency?: number };

/** An open loop's arrival process: rate, shape, seed, and where it starts and stops. */
export interface ArrivalOptions {
  ratePerS: number;
  mode: ArrivalMode;
  /** Seeds the Poisson and gamma gaps; ignored for `constant`. */
  seed: number;
  /**
   * Gamma arrivals' shape (AIPerf `--arrival-smoothness`, vLLM's burstiness): 1 is Poisson, below 1
   * burstier, above 1 more regular; the mean gap stays 1000 / ratePerS. @default 1
   */
  smoothness?: number;
  /** Time of the first arrival. @default 0 */
  startMs?: number;
  /** Stop after this many arrivals. */
  count?: number;
  /** Stop before this time (exclusive, from `startMs`). */
  durationMs?: number;
}

/**
 * Arrival times in milliseconds, lazily: the first at `startMs`, then gaps of `1000 / ratePerS`
 * (constant) or exponential gaps with that mean (Poisson, from the seed). Unbounded unless `count`
 * or `durationMs` is given.
 *
 * @example
 * [...arrivals({ ratePerS: 4, mode: 'constant', seed: 1, count: 3 })]; // [0, 250, 500]
 */
export function* arrivals(opts: ArrivalOptions): Generator<number, void, undefined> {
  if (!Number.isFinite(opts.ratePerS) || opts.ratePerS <= 0) {
    throw new TailgateError('CONFIG_INVALID', `request rate must be a number > 0 (got ${opts.ratePerS})`);
  }
  const start = opts.startMs ?? 0;
  const meanGapMs = 1000 / opts.ratePerS;
  const rng = createRng(opts.seed);
  const end = opts.durationMs === undefined ? Number.POSITIVE_INFINITY : start + opts.durationMs;
  const count = opts.count ?? Number.POSITIVE_INFINITY;
  const k = opts.smoothness ?? 1;
  if (!(k > 0)) throw new TailgateError('CONFIG_INVALID', `arrival smoothness must be a number > 0 (got ${k})`);
  let t = start;
  for (let i = 0; i < count; i++) {
    if (i > 0) {
      if (opts.mode === 'constant') t = start + i * meanGapMs;
      else if (opts.mode === 'gamma') t += gammaSample(rng, k) * (meanGapMs / k);
      else t += rng.exponential(meanGapMs);
    }
    if (t >= end) return;
    yield t;
  }
}

/** A Gamma(shape, 1) draw (Marsaglia and Tsang; shape below 1 boosted by U^(1/shape)). */
function gammaSample(rng: ReturnType<typeof createRng>, shape: number): number {
  if (shape < 1) return gammaSample(rng, shape + 1) * Math.pow(1 - rng.next(), 1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    const x = rng.normal(0, 1);
    const v = (1 + c * x) ** 3;
    if (v <= 0) continue;
    const u = 1 - rng.next();
    if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v;
  }
}

/**
 * All arrival times as an array; needs `count` or `durationMs`.
 *
 * @example
 * arrivalTimesMs({ ratePerS: 10, mode: 'poisson', seed: 100, count: 1000 }).length; // 1000
 */
export function arrivalTimesMs(opts: ArrivalOptions): number[] {
  if (opts.count === undefined && opts.durationMs === undefined) {
    throw new TailgateError('CONFIG_INVALID', 'arrivalTimesMs needs a count or a duration');
  }
  return [...arrivals(opts)];
}
