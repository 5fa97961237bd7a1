import { isMetricBlock, tInterval, type Summary } from '../stats/index.js';
import { judgeGates, type Gate, type GateStat } from './gate.js';

/** How trials combine into one verdict. */
export type PassRule = 'all' | 'majority' | 'median';

/** A two-sided confidence interval of a mean. */
export interface ConfidenceInterval {
  /** e.g. 0.95 */
  level: number;
  low: number;
  high: number;
  halfWidth: number;
}

/** Spread of one figure across trials. */
export interface TrialStat {
  n: number;
  mean: number;
  median: number;
  min: number;
  max: number;
  /** Sample standard deviation (n - 1). */
  std: number;
  /** Coefficient of variation: sample std / |mean| (0 when the mean is 0). */
  cv: number;
  /** t-based interval of the mean (Student t, n - 1 degrees of freedom); null under two trials. */
  ci: ConfidenceInterval | null;
}

/** Options of {@link aggregateTrials}. */
export interface AggregateOptions {
  /** Level of every interval. @default 0.95 */
  confidenceLevel?: number;
}

/** One gate judged across trials under the pass rule (what JUnit, summary.md and the console report). */
export interface GateAcrossTrials {
  gate: Gate;
  /** threshold x tolerance. */
  limit: number;
  /** The gate holds under the rule: `all` every trial, `majority` more than half, `median` the median figure. */
  pass: boolean;
  /** The figure in each trial, in trial order (null when a trial did not produce it). */
  values: (number | null)[];
  /** Whether each trial passed this gate, in trial order. */
  trialPasses: boolean[];
  passedTrials: number;
  /** Median of the figures present; null when no trial produced it. */
  median: number | null;
  /** The figure's spread and interval across trials (null when no trial produced it). */
  stat: TrialStat | null;
  /** The interval holds the limit strictly inside: the figure sits at the limit, and more trials would not settle it. */
  straddles: boolean;
}

/** The verdict across trials, each gate under the rule, and the spread of each figure (`tag.stat` keys). */
export interface TrialsAggregate {
  verdict: 'pass' | 'fail' | 'flaky';
  passed: number;
  trials: number;
  /** One entry per gate given, in order. */
  gates: GateAcrossTrials[];
  stats: Record<string, TrialStat>;
}

const BLOCK_STATS: readonly GateStat[] = ['avg', 'min', 'max', 'p50', 'p90', 'p95', 'p99'];

function medianOf(sorted: readonly number[]): number {
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const holds = (g: Gate, v: number): boolean => (g.op === '>=' ? v >= g.threshold * g.tolerance : v <= g.threshold * g.tolerance);

/** A gate's pass under a rule, given whether each trial passed it and the median of its figure. */
function ruleHolds(rule: PassRule, g: Gate, passes: readonly boolean[], median: number | null): boolean {
  const n = passes.length;
  const passed = passes.filter(Boolean).length;
  if (n === 0) return false;
  if (rule === 'all') return passed === n;
  if (rule === 'majority') return passed * 2 > n;
  return median !== null && holds(g, median);
}

/**
 * Judges each gate across trials under the rule: `all` every trial passed it, `majority` more
 * than half did, `median` the median of its figure passes.
 *
 * @example
 * judgeGatesAcrossTrials(trials.map((t) => t.summary), gates, 'majority').filter((g) => !g.pass);
 */
export function judgeGatesAcrossTrials(summaries: readonly Summary[], gates: readonly Gate[], rule: PassRule, opts: AggregateOptions = {}): GateAcrossTrials[] {
  const perTrial = summaries.map((s) => judgeGates(s, gates));
  return gates.map((gate, i) => {
    const results = perTrial.map((r) => r[i]!);
    const values = results.map((r) => r.value);
    const present = values.filter((v): v is number => v !== null);
    const stat = present.length > 0 ? spread(present, opts.confidenceLevel) : null;
    const median = stat?.median ?? null;
    const limit = gate.threshold * gate.tolerance;
    const trialPasses = results.map((r) => r.pass);
    const straddles = stat?.ci != null && stat.ci.low < limit && limit < stat.ci.high;
    return { gate, limit, pass: ruleHolds(rule, gate, trialPasses, median), values, trialPasses, passedTrials: trialPasses.filter(Boolean).length, median, stat, straddles };
  });
}

/**
 * Mean, median, min, max, sample std, CV and the t-based interval of the mean of one figure.
 *
 * @example
 * spread([700, 720, 710]).ci; // { level: 0.95, low: 685.2, high: 734.8, halfWidth: 24.8 }
 */
export function spread(values: readonly number[], confidenceLevel = 0.95): TrialStat {
  const s = [...values].sort((a, b) => a - b);
  const t = tInterval(s, confidenceLevel);
  const ci = t.halfWidth === null ? null : { level: confidenceLevel, low: t.low!, high: t.high!, halfWidth: t.halfWidth };
  return { n: s.length, mean: t.mean, median: medianOf(s), min: s[0]!, max: s[s.length - 1]!, std: t.std, cv: t.mean !== 0 ? t.std / Math.abs(t.mean) : 0, ci };
}

/**
 * Combines trials under a pass rule. `all`: every trial passes. `majority`: more than half
 * pass. `median`: the median of each gated figure passes its gate (pass `gates`; without them
 * it falls back to `majority`). A rule not met with some trials passing is `flaky`; with none, `fail`.
 *
 * @example
 * aggregateTrials(trials, 'all').verdict; // 'flaky' when 2 of 3 passed
 */
export function aggregateTrials(trials: readonly { pass: boolean; summary: Summary }[], rule: PassRule, gates?: readonly Gate[], opts: AggregateOptions = {}): TrialsAggregate {
  const collected = new Map<string, number[]>();
  for (const t of trials) {
    for (const [tag, m] of Object.entries(t.summary.metrics)) {
      const stats = isMetricBlock(m) ? BLOCK_STATS : (['avg'] as const);
      for (const st of stats) {
        const v = (m as unknown as Record<string, number>)[st];
        if (typeof v !== 'number' || !Number.isFinite(v)) continue;
        const key = `${tag}.${st}`;
        (collected.get(key) ?? collected.set(key, []).get(key)!).push(v);
      }
    }
  }
  const stats: Record<string, TrialStat> = {};
  for (const [k, v] of collected) stats[k] = spread(v, opts.confidenceLevel);

  const passed = trials.filter((t) => t.pass).length;
  const n = trials.length;
  const judged = judgeGatesAcrossTrials(trials.map((t) => t.summary), gates ?? [], rule, opts);
  let met: boolean;
  if (n === 0) met = false;
  else if (rule === 'all') met = passed === n;
  else if (rule === 'majority' || judged.length === 0) met = passed * 2 > n;
  else met = judged.every((g) => g.pass);
  const verdict = met ? 'pass' : passed > 0 ? 'flaky' : 'fail';
  return { verdict, passed, trials: n, gates: judged, stats };
}

