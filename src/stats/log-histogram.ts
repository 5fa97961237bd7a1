import { PERCENTILES } from './percentile.js';
import type { MetricBlock } from './metric-block.js';

/**
 * A mergeable histogram of non-negative values with bounded relative error (default 0.1%):
 * bucket i holds values in [(1+e)^i, (1+e)^(i+1)). count, sum, min, max and std are exact;
 * percentiles are within the relative error. Used where exact storage would not fit
 * (inter-chunk gaps of 260k streams) and for merging results from several machines.
 */
export class LogHistogram {
  readonly relativeError: number;
  private readonly logBase: number;
  /** Dense counts for bucket indices [offset, offset + counts.length); grown on demand. */
  private counts = new Float64Array(0);
  private offset = 0;
  private zeros = 0;
  count = 0;
  sum = 0;
  min = Number.POSITIVE_INFINITY;
  max = Number.NEGATIVE_INFINITY;
  private mean = 0;
  private m2 = 0;
  /** The last value's bucket: token counts repeat, and a logarithm per value showed in fleet runs. */
  private lastValue = Number.NaN;
  private lastIndex = 0;

  constructor(relativeError = 0.001) {
    this.relativeError = relativeError;
    this.logBase = Math.log1p(relativeError);
  }

  /** Records one value; negatives count as 0, non-finite values are ignored. */
  add(value: number): void {
    if (!Number.isFinite(value)) return;
    const v = value < 0 ? 0 : value;
    this.count++;
    this.sum += v;
    if (v < this.min) this.min = v;
    if (v > this.max) this.max = v;
    const d = v - this.mean;
    this.mean += d / this.count;
    this.m2 += d * (v - this.mean);
    if (v === 0) {
      this.zeros++;
      return;
    }
    if (v !== this.lastValue) {
      this.lastValue = v;
      this.lastIndex = Math.floor(Math.log(v) / this.logBase);
    }
    this.bump(this.lastIndex, 1);
  }

  private bump(i: number, c: number): void {
    let k = i - this.offset;
    if (k < 0 || k >= this.counts.length) {
      const lo = this.counts.length === 0 ? i - 256 : Math.min(this.offset, i - 256);
      const hi = this.counts.length === 0 ? i + 256 : Math.max(this.offset + this.counts.length, i + 256);
      const next = new Float64Array(hi - lo);
      if (this.counts.length > 0) next.set(this.counts, this.offset - lo);
      this.counts = next;
      this.offset = lo;
      k = i - lo;
    }
    this.counts[k]! += c;
  }

  /** Non-empty buckets in ascending order: [index, count]. */
  private *entries(): Generator<[number, number]> {
    for (let k = 0; k < this.counts.length; k++) if (this.counts[k]! > 0) yield [k + this.offset, this.counts[k]!];
  }

  /** Adds another histogram's counts (same relative error) into this one. */
  merge(other: LogHistogram): void {
    if (other.relativeError !== this.relativeError) throw new RangeError('cannot merge histograms of different precision');
    if (other.count === 0) return;
    const n = this.count + other.count;
    const d = other.mean - this.mean;
    this.m2 += other.m2 + (d * d * this.count * other.count) / n;
    this.mean += (d * other.count) / n;
    this.count = n;
    this.sum += other.sum;
    this.min = Math.min(this.min, other.min);
    this.max = Math.max(this.max, other.max);
    this.zeros += other.zeros;
    for (const [i, c] of other.entries()) this.bump(i, c);
  }

  /** The p-th percentile, interpolated like numpy over bucket mid-points, clamped to [min, max]. */
  percentile(p: number): number {
    if (this.count === 0) return Number.NaN;
    const rank = ((this.count - 1) * Math.min(100, Math.max(0, p))) / 100;
    const at = (k: number): number => this.valueAtRank(k);
    const lo = Math.floor(rank);
    const a = at(lo);
    const b = at(Math.min(this.count - 1, lo + 1));
    return Math.min(this.max, Math.max(this.min, a + (b - a) * (rank - lo)));
  }

  private valueAtRank(k: number): number {
    if (k < this.zeros) return 0;
    let seen = this.zeros;
    for (const [i, c] of this.entries()) {
      seen += c;
      if (k < seen) return Math.exp((i + 0.5) * this.logBase);
    }
    return this.max;
  }

  /** The AIPerf-shaped block, or null when empty. */
  toBlock(unit: string): MetricBlock | null {
    if (this.count === 0) return null;
    // Walk the sorted buckets once for all percentiles.
    const ranks = PERCENTILES.map((q) => ((this.count - 1) * q) / 100);
    const needed = new Set<number>();
    for (const r of ranks) {
      needed.add(Math.floor(r));
      needed.add(Math.min(this.count - 1, Math.floor(r) + 1));
    }
    const valueAt = new Map<number, number>();
    const wanted = [...needed].sort((x, y) => x - y);
    let w = 0;
    while (w < wanted.length && wanted[w]! < this.zeros) valueAt.set(wanted[w++]!, 0);
    let seen = this.zeros;
    for (const [i, c] of this.entries()) {
      seen += c;
      const v = Math.exp((i + 0.5) * this.logBase);
      while (w < wanted.length && wanted[w]! < seen) valueAt.set(wanted[w++]!, v);
    }
    const pv = ranks.map((r) => {
      const lo = Math.floor(r);
      const a = valueAt.get(lo) ?? this.max;
      const b = valueAt.get(Math.min(this.count - 1, lo + 1)) ?? this.max;
      return Math.min(this.max, Math.max(this.min, a + (b - a) * (r - lo)));
    });
    return {
      unit,
      avg: this.sum / this.count,
      min: this.min,
      max: this.max,
      p1: pv[0]!,
      p5: pv[1]!,
      p10: pv[2]!,
      p25: pv[3]!,
      p50: pv[4]!,
      p75: pv[5]!,
      p90: pv[6]!,
      p95: pv[7]!,
      p99: pv[8]!,
      std: Math.sqrt(this.m2 / this.count),
      count: this.count,
      sum: this.sum,
    };
  }
}
