import { isMetricBlock, type Summary } from '../stats/index.js';
import type { Gate, GateStat } from './gate.js';

/** How trials combine into one verdict. */
export type PassRule = 'all' | 'majority' | 'median';

/** Spread of one figure across trials. */
export interface TrialStat {
  median: number;
  min: number;
  max: number;
  /** Coefficient of variation: population std / mean (0 when the mean is 0). */
  cv: number;
}

/** The verdict across trials and the spread of each figure (`tag.stat` keys). */
export interface TrialsAggregate {
  verdict: 'pass' | 'fail' | 'flaky';
  passed: number;
  trials: number;
  stats: Record<string, TrialStat>;
}

const BLOCK_STATS: readonly GateStat[] = ['avg', 'min', 'max', 'p50', 'p90', 'p95', 'p99'];

function spread(values: number[]): TrialStat {
  const s = [...values].sort((a, b) => a - b);
  const n = s.length;
  const mid = n >> 1;
  const median = n % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
  const mean = s.reduce((a, b) => a + b, 0) / n;
  const sd = Math.sqrt(s.reduce((a, b) => a + (b - mean) ** 2, 0) / n);
  return { median, min: s[0]!, max: s[n - 1]!, cv: mean !== 0 ? sd / Math.abs(mean) : 0 };
}

/**
 * Combines trials under a pass rule. `all`: every trial passes. `majority`: more than half
 * pass. `median`: the median of each gated figure passes its gate (pass `gates`; without them
 * it falls back to `majority`). A rule not met with some trials passing is `flaky`; with none, `fail`.
 *
 * @example
 * aggregateTrials(trials, 'all').verdict; // 'flaky' when 2 of 3 passed
 */
export function aggregateTrials(trials: readonly { pass: boolean; summary: Summary }[], rule: PassRule, gates?: readonly Gate[]): TrialsAggregate {
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
  for (const [k, v] of collected) stats[k] = spread(v);

  const passed = trials.filter((t) => t.pass).length;
  const n = trials.length;
  let met: boolean;
  if (n === 0) met = false;
  else if (rule === 'all') met = passed === n;
  else if (rule === 'majority' || !gates || gates.length === 0) met = passed * 2 > n;
  else {
    met = gates.every((g) => {
      const s = stats[`${g.metric}.${g.stat}`];
      if (!s) return false;
      const limit = g.threshold * g.tolerance;
      return g.op === '>=' ? s.median >= limit : s.median <= limit;
    });
  }
  const verdict = met ? 'pass' : passed > 0 ? 'flaky' : 'fail';
  return { verdict, passed, trials: n, stats };
}

