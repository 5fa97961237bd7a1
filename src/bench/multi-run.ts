import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { METRIC_CATALOG, isMetricBlock, studentTQuantile, tInterval, type Summary } from '../stats/index.js';

/** Schema version of AIPerf's `profile_export_aiperf_aggregate.json` (its own, independent of the run export's). */
export const AGGREGATE_SCHEMA_VERSION = '1.0';

/** Where AIPerf puts repeated runs and their aggregate (`--num-profile-runs`). */
export const MULTI_RUN_LAYOUT = {
  /** `profile_runs/run_0001` for the first run. */
  runDir: (index: number): string => join('profile_runs', `run_${String(index + 1).padStart(4, '0')}`),
  /** A sweep's trials: `profile_runs/trial_0001` for the first. */
  trialDir: (index: number): string => join('profile_runs', `trial_${String(index + 1).padStart(4, '0')}`),
  aggregateDir: 'aggregate',
  json: 'profile_export_aiperf_aggregate.json',
  csv: 'profile_export_aiperf_aggregate.csv',
} as const;

/** One metric statistic across runs: AIPerf's confidence block. */
export interface ConfidenceBlock {
  unit: string;
  mean: number;
  /** Sample standard deviation across runs (n - 1). */
  std: number;
  /** Coefficient of variation, std / mean (0 when the mean is 0). */
  cv: number;
  /** Standard error of the mean, std / √n. */
  se: number;
  ci_low: number;
  ci_high: number;
  /** Two-sided Student t critical value at the confidence level, n - 1 degrees of freedom. */
  t_critical: number;
  n: number;
}

/** The statistics of a distribution metric that are aggregated across runs (run-level metrics: `avg`). */
export const RECORD_STATS = ['avg', 'p50', 'p90', 'p95', 'p99', 'min', 'max', 'std'] as const;

/**
 * Mean, std, CV, standard error and the t-based interval of every metric statistic across runs,
 * keyed `<tag>_<stat>` (`time_to_first_token_p99`, `request_throughput_avg`). A statistic missing
 * from any run is left out; with one run there is no interval, so nothing is written.
 *
 * @example
 * aggregateRuns([s1, s2, s3], 0.95).request_throughput_avg; // { mean, std, cv, se, ci_low, ci_high, t_critical, unit, n }
 */
export function aggregateRuns(summaries: readonly Summary[], level = 0.95): Record<string, ConfidenceBlock> {
  const out: Record<string, ConfidenceBlock> = {};
  const n = summaries.length;
  if (n < 2) return out;
  const tCrit = studentTQuantile(1 - (1 - level) / 2, n - 1);
  const tags = [...METRIC_CATALOG.map((m) => m.tag), ...Object.keys(summaries[0]!.metrics).filter((t) => !METRIC_CATALOG.some((m) => m.tag === t))];
  for (const tag of tags) {
    const blocks = summaries.map((s) => s.metrics[tag]);
    if (blocks.some((b) => b === undefined)) continue;
    const stats = blocks.every((b) => isMetricBlock(b)) ? RECORD_STATS : (['avg'] as const);
    for (const stat of stats) {
      const values = blocks.map((b) => (b as unknown as Record<string, number>)[stat]!);
      const ci = tInterval(values, level);
      const se = ci.std / Math.sqrt(n);
      out[`${tag}_${stat}`] = {
        unit: blocks[0]!.unit, mean: ci.mean, std: ci.std, cv: ci.mean !== 0 ? ci.std / Math.abs(ci.mean) : 0, se,
        ci_low: ci.low!, ci_high: ci.high!, t_critical: tCrit, n,
      };
    }
  }
  return out;
}

/** AIPerf's convergence criteria (`--convergence-mode`): ci_width and cv. */
export interface Convergence {
  metric: string;
  stat: string;
  mode: 'ci_width' | 'cv';
  threshold: number;
}

/** Runs before convergence is judged at all (two runs say little about spread). */
export const MIN_RUNS_FOR_CONVERGENCE = 3;

/**
 * Whether the runs so far are stable enough to stop: the t interval's width relative to the
 * mean (`ci_width`) or the coefficient of variation (`cv`) of one metric statistic is below the
 * threshold. Never before {@link MIN_RUNS_FOR_CONVERGENCE} runs.
 */
export function converged(summaries: readonly Summary[], c: Convergence, level: number): { converged: boolean; value: number | null } {
  if (summaries.length < MIN_RUNS_FOR_CONVERGENCE) return { converged: false, value: null };
  const block = aggregateRuns(summaries, level)[`${c.metric}_${c.stat}`];
  if (!block) return { converged: false, value: null };
  const value = c.mode === 'cv' ? block.cv : block.mean !== 0 ? (block.ci_high - block.ci_low) / Math.abs(block.mean) : 0;
  return { converged: value < c.threshold, value };
}

/** What the aggregate file says about the runs besides the metrics. */
export interface AggregateInfo {
  confidenceLevel: number;
  runLabels: string[];
  requestedRuns: number;
  cooldownSeconds: number;
  convergence: (Convergence & { converged: boolean; value: number | null }) | null;
  cancelled: boolean;
  /** tailgate's version, written with its name as `generator` (no AIPerf release wrote the file). */
  version?: string;
}

/**
 * Writes `aggregate/profile_export_aiperf_aggregate.json` and `.csv` under `dir` (or into `out`).
 *
 * @example
 * await writeAggregate('artifacts', summaries, { confidenceLevel: 0.95, runLabels: ['run_0001', 'run_0002'], ... });
 */
export async function writeAggregate(dir: string, summaries: readonly Summary[], info: AggregateInfo, out = join(dir, MULTI_RUN_LAYOUT.aggregateDir)): Promise<string> {
  const metrics = aggregateRuns(summaries, info.confidenceLevel);
  await mkdir(out, { recursive: true });
  const doc = {
    schema_version: AGGREGATE_SCHEMA_VERSION,
    generator: { name: 'tailgate', version: info.version ?? null },
    aggregation_type: 'confidence',
    num_profile_runs: info.requestedRuns,
    num_successful_runs: summaries.length,
    run_labels: info.runLabels,
    confidence_level: info.confidenceLevel,
    cooldown_seconds: info.cooldownSeconds,
    was_cancelled: info.cancelled,
    convergence: info.convergence,
    metrics,
  };
  await writeFile(join(out, MULTI_RUN_LAYOUT.json), `${JSON.stringify(doc, null, 2)}\n`);
  const cols = ['mean', 'std', 'cv', 'se', 'ci_low', 'ci_high', 't_critical'] as const;
  const rows = [`Metric,${cols.join(',')},unit`];
  for (const [k, b] of Object.entries(metrics)) rows.push(`${k},${cols.map((c) => b[c].toFixed(4)).join(',')},${b.unit}`);
  await writeFile(join(out, MULTI_RUN_LAYOUT.csv), `${rows.join('\n')}\n`);
  return out;
}
