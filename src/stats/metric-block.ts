import { PERCENTILES, percentile, selectPercentileRanks } from './percentile.js';

/** A run-level value with no distribution (AIPerf's derived/aggregate metrics: `{unit, avg}`). */
export interface ScalarMetric {
  unit: string;
  avg: number;
}

/** A distribution over records, exactly the fields AIPerf writes for a record metric. */
export interface MetricBlock extends ScalarMetric {
  min: number;
  max: number;
  p1: number;
  p5: number;
  p10: number;
  p25: number;
  p50: number;
  p75: number;
  p90: number;
  p95: number;
  p99: number;
  /** Population standard deviation (numpy's `np.std`, as AIPerf). */
  std: number;
  count: number;
  sum: number;
}

/** True when the metric carries a distribution over records (every percentile), not just `avg` (a time-weighted metric has no p1). */
export function isMetricBlock(m: ScalarMetric | MetricBlock | undefined): m is MetricBlock {
  return m !== undefined && 'p1' in m;
}

/**
 * Summarises values into a block; reorders `values` in place (pass a copy if you need the order).
 * Returns null for no values: AIPerf omits a metric it has no observations for.
 *
 * @example
 * describe(Float64Array.from([3, 1, 2]), 'ms')?.p50; // 2
 */
export function describe(values: Float64Array, unit: string): MetricBlock | null {
  const n = values.length;
  if (n === 0) return null;
  // Sum, extremes and spread in the order the values came; then only the percentiles' ranks are put
  // in place (a million inter-chunk gaps: about half a full sort's time).
  let sum = 0;
  let min = values[0]!;
  let max = min;
  for (let i = 0; i < n; i++) {
    const v = values[i]!;
    sum += v;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  const avg = sum / n;
  let m2 = 0;
  for (let i = 0; i < n; i++) {
    const d = values[i]! - avg;
    m2 += d * d;
  }
  if (Number.isNaN(sum)) {
    values.sort();
    min = values[0]!;
    max = values[n - 1]!;
  } else selectPercentileRanks(values, PERCENTILES);
  // A typed array: a plain one holds small integers for some columns and doubles for others, and
  // that change of kind de-optimized this function on every summary.
  const p = new Float64Array(PERCENTILES.length);
  for (let i = 0; i < p.length; i++) p[i] = percentile(values, PERCENTILES[i]!);
  return {
    unit,
    avg,
    min,
    max,
    p1: p[0]!,
    p5: p[1]!,
    p10: p[2]!,
    p25: p[3]!,
    p50: p[4]!,
    p75: p[5]!,
    p90: p[6]!,
    p95: p[7]!,
    p99: p[8]!,
    std: Math.sqrt(m2 / n),
    count: n,
    sum,
  };
}
