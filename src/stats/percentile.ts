/** AIPerf's percentile set, in the order its exports list them. */
export const PERCENTILES = [1, 5, 10, 25, 50, 75, 90, 95, 99] as const;

/** One of AIPerf's percentiles. */
export type Percentile = (typeof PERCENTILES)[number];

/**
 * The p-th percentile of ascending `sorted` values by linear interpolation between closest
 * ranks (numpy's default, which AIPerf uses). NaN for an empty array.
 *
 * @example
 * percentile([1, 2, 3, 4], 50); // 2.5
 */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  const n = sorted.length;
  if (n === 0) return Number.NaN;
  const rank = ((n - 1) * Math.min(100, Math.max(0, p))) / 100;
  const lo = Math.floor(rank);
  const hi = Math.min(n - 1, lo + 1);
  const a = sorted[lo]!;
  const b = sorted[hi]!;
  return a + (b - a) * (rank - lo);
}
