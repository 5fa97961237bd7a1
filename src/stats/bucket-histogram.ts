/**
 * A Prometheus-style histogram's data: counts per fixed upper bound (not cumulative; values above
 * the last bound count only in `count` and `sum`, the +Inf bucket). Cheap enough for a per-token path.
 *
 * @example
 * const h = new BucketHistogram([0.1, 1]);
 * h.observe(0.5); h.observe(5);
 * [...h.counts]; // [0, 1]; h.count === 2
 */
export class BucketHistogram {
  readonly bounds: readonly number[];
  readonly counts: Float64Array;
  count = 0;
  sum = 0;

  constructor(bounds: readonly number[]) {
    this.bounds = bounds;
    this.counts = new Float64Array(bounds.length);
  }

  observe(v: number): void {
    this.count++;
    this.sum += v;
    const b = this.bounds;
    let i = 0;
    while (i < b.length && v > b[i]!) i++;
    if (i < b.length) this.counts[i]!++;
  }
}
