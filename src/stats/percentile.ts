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

/**
 * Puts in place, as an ascending sort would, the values at every rank {@link percentile} reads for
 * `ps` (and leaves the others in some order): a quickselect that follows each wanted rank, so about
 * n log(ranks) comparisons instead of a sort's n log n. `values` must hold no NaN.
 *
 * @example
 * const v = Float64Array.of(5, 1, 4, 2, 3);
 * selectPercentileRanks(v, [50]);
 * percentile(v, 50); // 3
 */
export function selectPercentileRanks(values: Float64Array, ps: readonly number[]): void {
  const n = values.length;
  const ranks = new Set<number>();
  for (const p of ps) {
    const rank = ((n - 1) * Math.min(100, Math.max(0, p))) / 100;
    ranks.add(Math.floor(rank));
    ranks.add(Math.min(n - 1, Math.floor(rank) + 1));
  }
  const wanted = Float64Array.from(ranks).sort();
  select(values, 0, n - 1, wanted, 0, wanted.length, 2 * Math.ceil(Math.log2(n + 1)));
}

/** Places the ranks `wanted[from, to)`, all inside `a[lo, hi]`; past `depth` partitions, sorts the range instead. */
function select(a: Float64Array, lo: number, hi: number, wanted: Float64Array, from: number, to: number, depth: number): void {
  while (from < to) {
    if (hi - lo < 16) {
      insertionSort(a, lo, hi);
      return;
    }
    if (depth-- === 0) {
      a.subarray(lo, hi + 1).sort();
      return;
    }
    const pivot = medianOf3(a[lo]!, a[(lo + hi) >>> 1]!, a[hi]!);
    // Three ways: [lo, lt) below the pivot, [lt, gt] equal to it (placed), (gt, hi] above it.
    let lt = lo;
    let gt = hi;
    for (let i = lo; i <= gt; ) {
      const v = a[i]!;
      if (v < pivot) {
        a[i++] = a[lt]!;
        a[lt++] = v;
      } else if (v > pivot) {
        a[i] = a[gt]!;
        a[gt--] = v;
      } else i++;
    }
    let left = from;
    while (left < to && wanted[left]! < lt) left++;
    let right = left;
    while (right < to && wanted[right]! <= gt) right++;
    select(a, lo, lt - 1, wanted, from, left, depth);
    lo = gt + 1;
    from = right;
  }
}

function medianOf3(x: number, y: number, z: number): number {
  if (x < y) return y < z ? y : x < z ? z : x;
  return x < z ? x : y < z ? z : y;
}

function insertionSort(a: Float64Array, lo: number, hi: number): void {
  for (let i = lo + 1; i <= hi; i++) {
    const v = a[i]!;
    let j = i - 1;
    for (; j >= lo && a[j]! > v; j--) a[j + 1] = a[j]!;
    a[j + 1] = v;
  }
}
