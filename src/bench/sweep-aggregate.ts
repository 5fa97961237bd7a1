import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { METRIC_CATALOG, isMetricBlock, type Summary } from '../stats/index.js';
import { RECORD_STATS, aggregateRuns } from './multi-run.js';

/** AIPerf's sweep-aggregate files (`sweep_aggregate/`), written after a comma-list sweep. */
export const SWEEP_AGGREGATE_LAYOUT = {
  dir: 'sweep_aggregate',
  json: 'profile_export_aiperf_sweep.json',
  csv: 'profile_export_aiperf_sweep.csv',
} as const;

/**
 * AIPerf's folder for one sweep value, `{parameter}_{value}` (`concurrency_8`); a request rate is
 * a float in AIPerf, so a whole one prints as Python prints it (`request_rate_5.0`).
 */
export function sweepDirName(param: string, value: number): string {
  return `${param}_${param === 'request_rate' && Number.isInteger(value) ? value.toFixed(1) : String(value)}`;
}

/** One metric statistic of one sweep value: `{mean, unit}` for one trial, the confidence block with min and max for several. */
type SweepStat = Record<string, number | string>;

/** Each metric statistic (`request_throughput_avg`, `time_to_first_token_p99`, ...) of one value's trials. */
export function sweepValueStats(trials: readonly Summary[], level: number): Record<string, SweepStat> {
  const out: Record<string, SweepStat> = {};
  if (trials.length === 0) return out;
  const values = new Map<string, { unit: string; v: number[] }>();
  const tags = [...METRIC_CATALOG.map((m) => m.tag), ...Object.keys(trials[0]!.metrics).filter((t) => !METRIC_CATALOG.some((m) => m.tag === t))];
  for (const tag of tags) {
    const blocks = trials.map((s) => s.metrics[tag]);
    if (blocks.some((b) => b === undefined)) continue;
    for (const stat of blocks.every((b) => isMetricBlock(b)) ? RECORD_STATS : (['avg'] as const)) {
      values.set(`${tag}_${stat}`, { unit: blocks[0]!.unit, v: blocks.map((b) => (b as unknown as Record<string, number>)[stat]!) });
    }
  }
  if (trials.length === 1) {
    for (const [k, { unit, v }] of values) out[k] = { mean: v[0]!, unit };
    return out;
  }
  const ci = aggregateRuns(trials, level);
  for (const [k, { unit, v }] of values) {
    const b = ci[k];
    if (!b) continue;
    out[k] = { mean: b.mean, std: b.std, min: Math.min(...v), max: Math.max(...v), cv: b.cv, se: b.se, ci_low: b.ci_low, ci_high: b.ci_high, t_critical: b.t_critical, unit };
  }
  return out;
}

/** What {@link writeSweepAggregate} needs: the swept parameter, its values, and each value's trial summaries. */
export interface SweepAggregateInput {
  /** AIPerf's leaf name of the swept parameter: `concurrency` or `request_rate`. */
  parameter: string;
  values: readonly number[];
  /** `trials[k]`: the summaries of value k's trials (fewer than asked when stopped early). */
  trials: readonly (readonly Summary[])[];
  /** Trials asked per value (`--num-profile-runs`). */
  requestedRuns: number;
  confidenceLevel: number;
}

/**
 * AIPerf's sweep aggregate document: the values swept, each value's metric statistics, the best
 * configurations (highest `request_throughput_avg`; lowest `time_to_first_token_p99`, else
 * `request_latency_p99`) and the Pareto-optimal values on throughput against that latency.
 */
export function sweepAggregate(input: SweepAggregateInput): Record<string, unknown> {
  const combos = input.values.map((v, k) => ({ parameters: { [input.parameter]: v }, metrics: sweepValueStats(input.trials[k] ?? [], input.confidenceLevel) }));
  const done = combos.filter((c) => Object.keys(c.metrics).length > 0);
  const mean = (c: (typeof combos)[number], key: string): number => c.metrics[key]!['mean'] as number;
  const has = (key: string): boolean => done.length > 0 && done.every((c) => c.metrics[key] !== undefined);
  const best: Record<string, unknown> = {};
  const throughput = 'request_throughput_avg';
  const latency = ['time_to_first_token_p99', 'request_latency_p99'].find(has);
  if (has(throughput)) {
    const c = done.reduce((a, b) => (mean(b, throughput) > mean(a, throughput) ? b : a));
    best['best_throughput'] = { parameters: c.parameters, metric: mean(c, throughput), unit: c.metrics[throughput]!['unit'] };
  }
  if (latency !== undefined) {
    const c = done.reduce((a, b) => (mean(b, latency) < mean(a, latency) ? b : a));
    best['best_latency_p99'] = { parameters: c.parameters, metric: mean(c, latency), unit: c.metrics[latency]!['unit'] };
  }
  // Pareto: no other value has throughput at least as high and latency at least as low, one strictly.
  const pareto = has(throughput) && latency !== undefined
    ? done.filter((a) => !done.some((b) => b !== a && mean(b, throughput) >= mean(a, throughput) && mean(b, latency) <= mean(a, latency)
      && (mean(b, throughput) > mean(a, throughput) || mean(b, latency) < mean(a, latency)))).map((c) => c.parameters)
    : [];
  pareto.sort((a, b) => (a[input.parameter] as number) - (b[input.parameter] as number));
  const ran = input.trials.reduce((n, t) => n + t.length, 0);
  return {
    aggregation_type: 'sweep',
    num_profile_runs: input.values.length * input.requestedRuns,
    num_successful_runs: ran,
    failed_runs: [],
    metadata: { sweep_parameters: [{ name: input.parameter, values: input.values }], num_combinations: input.values.length },
    per_combination_metrics: combos,
    best_configurations: best,
    pareto_optimal: pareto,
  };
}

/**
 * AIPerf's sweep CSV: one row per value with `{metric}_mean,_std,_min,_max,_cv` (a single trial:
 * `_mean` only), then the best configurations, the Pareto-optimal points and the metadata, each
 * section after a blank line.
 */
function sweepAggregateCsv(doc: Record<string, unknown>, parameter: string): string {
  const combos = doc['per_combination_metrics'] as Array<{ parameters: Record<string, number>; metrics: Record<string, SweepStat> }>;
  const keys = [...new Set(combos.flatMap((c) => Object.keys(c.metrics)))];
  const cols = ['mean', 'std', 'min', 'max', 'cv'] as const;
  const present = cols.filter((s) => combos.some((c) => Object.values(c.metrics).some((m) => m[s] !== undefined)));
  const num = (v: number | string | undefined, s: string): string => (typeof v === 'number' ? v.toFixed(s === 'cv' ? 4 : 2) : '');
  const rows = [[parameter, ...keys.flatMap((k) => present.map((s) => `${k}_${s}`))].join(',')];
  for (const c of combos) rows.push([String(c.parameters[parameter]), ...keys.flatMap((k) => present.map((s) => num(c.metrics[k]?.[s], s)))].join(','));
  const best = doc['best_configurations'] as Record<string, { parameters: Record<string, number>; metric: number; unit: string }>;
  rows.push('', 'Best Configurations', `Configuration,${parameter},Metric,Unit`);
  for (const [name, label] of [['best_throughput', 'Best Throughput'], ['best_latency_p99', 'Best Latency P99']] as const) {
    const b = best[name];
    if (b) rows.push(`${label},${b.parameters[parameter]},${b.metric.toFixed(2)},${b.unit}`);
  }
  rows.push('', 'Pareto Optimal Points', parameter, ...(doc['pareto_optimal'] as Array<Record<string, number>>).map((p) => String(p[parameter])));
  rows.push('', 'Metadata', 'Field,Value', 'Aggregation Type,sweep', `Sweep Parameters,${parameter}`,
    `Number of Combinations,${combos.length}`, `Number of Profile Runs,${doc['num_profile_runs'] as number}`, `Number of Successful Runs,${doc['num_successful_runs'] as number}`);
  return `${rows.join('\n')}\n`;
}

/** Writes `profile_export_aiperf_sweep.json` and `.csv` into `out` (AIPerf's `sweep_aggregate/`). */
export async function writeSweepAggregate(out: string, input: SweepAggregateInput): Promise<void> {
  await mkdir(out, { recursive: true });
  const doc = sweepAggregate(input);
  await writeFile(join(out, SWEEP_AGGREGATE_LAYOUT.json), `${JSON.stringify(doc, null, 2)}\n`);
  await writeFile(join(out, SWEEP_AGGREGATE_LAYOUT.csv), sweepAggregateCsv(doc, input.parameter));
}
