import { createRng } from '../core/index.js';
import type { WorkloadKind } from './session.js';

/**
 * How requests draw dataset entries (AIPerf's `--dataset-sampling-strategy`): `sequential` in
 * order, wrapping around; `shuffle` a seeded permutation, reshuffled after each pass (every entry
 * once before any repeats); `random` a seeded draw with replacement.
 */
export type SamplingStrategy = 'sequential' | 'shuffle' | 'random';

/** AIPerf's `--dataset-sampling-strategy` choices. */
export const SAMPLING_STRATEGIES: readonly SamplingStrategy[] = ['sequential', 'shuffle', 'random'];

/** AIPerf's default when none is given: synthetic data is shuffled, a file dataset (a trace) read in order. */
export function defaultSampling(kind: WorkloadKind): SamplingStrategy {
  return kind === 'trace' ? 'sequential' : 'shuffle';
}

// Keeps the sampler's draws apart from every other stream seeded with the same number.
const SAMPLER_SALT = 0x5a3c_11d7;

/**
 * The index of each next entry among `count`, by `strategy`, from `seed` (the same seed, the same
 * order: bench and simulate draw alike).
 *
 * @example
 * const next = sessionSampler('shuffle', 100, 1);
 * new Set(Array.from({ length: 100 }, next)).size; // 100: each entry once per pass
 */
export function sessionSampler(strategy: SamplingStrategy, count: number, seed: number): () => number {
  let i = 0;
  if (strategy === 'sequential') return () => i++ % count;
  const rng = createRng(seed ^ SAMPLER_SALT);
  if (strategy === 'random') return () => rng.int(0, count - 1);
  const order = Array.from({ length: count }, (_, k) => k);
  return () => {
    if (i % count === 0) {
      for (let k = count - 1; k > 0; k--) {
        const j = rng.int(0, k);
        const t = order[k]!;
        order[k] = order[j]!;
        order[j] = t;
      }
    }
    return order[i++ % count]!;
  };
}
