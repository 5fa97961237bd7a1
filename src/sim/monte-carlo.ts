import type { Shape } from '../gate/index.js';
import type { PolicyName } from '../routing/index.js';
import { isMetricBlock, percentile } from '../stats/index.js';
import { runScenario, type SimOptions, type SimResult } from './run-scenario.js';
import type { Scenario } from './scenario.js';
import { wilsonInterval } from './wilson.js';

/** Options of {@link runMonteCarlo}. */
export interface MonteCarloOptions {
  scenario: Scenario;
  policies: readonly PolicyName[];
  trials: number;
  /** Trial t of every policy uses seed `seed + t` (common random numbers across policies). */
  seed: number;
  /**
   * Applied to every trial. By default the first trial of each policy keeps every record and chunk
   * (the report's charts) and later ones only an exact summary; above {@link KEEP_RECORDS_LIMIT}
   * requests a trial, every trial folds its records into histograms as they end.
   */
  sim?: SimOptions;
  /** The first trial of each policy works out where its lost tokens went (`SimResult.explanation`). @default false */
  explain?: boolean;
  /** Called after each trial (progress). */
  onTrial?: ((policy: PolicyName, trial: number, result: SimResult) => void) | undefined;
}

/** p10 / p50 / p90 of a per-trial figure. */
export interface Spread {
  p10: number;
  p50: number;
  p90: number;
}

/** What the trials of one policy say. */
export interface PolicyOutcome {
  trials: number;
  failures: number;
  /** failures / trials: the probability that the gate fails on one run. */
  failProbability: number;
  /** Wilson 95% interval of that probability. */
  failInterval95: { low: number; high: number };
  ttftP99Ms: Spread;
  ttftP50Ms: Spread;
  requestLatencyP99Ms: Spread;
  outputTokensPerS: Spread;
  /** How many trials got each shape name. */
  shapes: Partial<Record<Shape, number>>;
  redispatchedPerTrial: number;
  migratedPerTrial: number;
  /** Prompt tokens served from the engines' prefix caches over those asked for, all trials. */
  prefixCacheHitRate: number;
  simulatedMs: number;
}

/** Every policy's outcome over the same seeds, plus one representative trial per policy. */
export interface MonteCarloResult {
  scenario: string;
  seed: number;
  trials: number;
  /** Virtual time summed over every trial of every policy. */
  simulatedMs: number;
  wallMs: number;
  policies: Partial<Record<PolicyName, PolicyOutcome>>;
  /** The first trial of each policy, with every record (for charts). */
  representative: Partial<Record<PolicyName, SimResult>>;
}

function spread(values: number[]): Spread {
  const s = Float64Array.from(values.filter((v) => Number.isFinite(v))).sort();
  if (s.length === 0) return { p10: Number.NaN, p50: Number.NaN, p90: Number.NaN };
  return { p10: percentile(s, 10), p50: percentile(s, 50), p90: percentile(s, 90) };
}

function stat(r: SimResult, tag: string, key: 'p50' | 'p99' | 'avg'): number {
  const m = r.summary.metrics[tag];
  if (!m) return Number.NaN;
  if (key === 'avg') return m.avg;
  return isMetricBlock(m) ? m[key] : Number.NaN;
}

/**
 * Above this many requests a trial (warm-up and profiling), no trial keeps records, nor a column
 * per metric: at fleet scale (~100k requests a simulated second) every record and chunk time of
 * one trial took gigabytes, and the garbage collector most of the time.
 */
export const KEEP_RECORDS_LIMIT = 100_000;

/**
 * Runs `trials` seeds of a scenario under each policy and reports, per policy, the gate's fail
 * probability (Wilson 95% interval) and the spread of TTFT p99 and throughput.
 *
 * @example
 * const mc = runMonteCarlo({ scenario: PRESETS['aicr-h100-bursty']!, policies: ['round-robin', 'adaptive'], trials: 50, seed: 1 });
 * mc.policies['adaptive']?.failProbability;
 */
export function runMonteCarlo(opts: MonteCarloOptions): MonteCarloResult {
  const t0 = performance.now();
  const fleetScale = opts.scenario.requestCount + opts.scenario.warmupRequestCount > KEEP_RECORDS_LIMIT;
  const first: SimOptions = fleetScale ? { keepChunks: false, recordMode: 'histogram', ...opts.sim } : { ...opts.sim, keepChunks: true };
  const later: SimOptions = { keepChunks: false, recordMode: fleetScale ? 'histogram' : 'summary', ...opts.sim };
  const policies: Partial<Record<PolicyName, PolicyOutcome>> = {};
  const representative: Partial<Record<PolicyName, SimResult>> = {};
  let simulatedMs = 0;
  for (const policy of opts.policies) {
    const ttft: number[] = [];
    const ttftP50: number[] = [];
    const lat: number[] = [];
    const tput: number[] = [];
    const shapes: Partial<Record<Shape, number>> = {};
    let failures = 0;
    let redispatched = 0;
    let migrated = 0;
    let policyMs = 0;
    let cacheHits = 0;
    let cacheQueries = 0;
    for (let t = 0; t < opts.trials; t++) {
      // Later trials need only the summary: no records kept (the same figures, to the last bit; at
      // fleet scale every trial, the first too, keeps histograms only).
      const r = runScenario(opts.scenario, policy, opts.seed + t, t === 0 ? (opts.explain ? { ...first, explain: true } : first) : later);
      if (t === 0) representative[policy] = r;
      if (!r.pass) failures++;
      ttft.push(stat(r, 'time_to_first_token', 'p99'));
      ttftP50.push(stat(r, 'time_to_first_token', 'p50'));
      cacheHits += r.prefixCacheHits;
      cacheQueries += r.prefixCacheQueries;
      lat.push(stat(r, 'request_latency', 'p99'));
      tput.push(stat(r, 'output_token_throughput', 'avg'));
      shapes[r.shape.shape] = (shapes[r.shape.shape] ?? 0) + 1;
      redispatched += r.redispatched;
      migrated += r.migrated;
      policyMs += r.simulatedMs;
      opts.onTrial?.(policy, t, r);
    }
    simulatedMs += policyMs;
    const n = opts.trials;
    policies[policy] = {
      trials: n,
      failures,
      failProbability: n > 0 ? failures / n : Number.NaN,
      failInterval95: wilsonInterval(failures, n),
      ttftP99Ms: spread(ttft),
      ttftP50Ms: spread(ttftP50),
      requestLatencyP99Ms: spread(lat),
      outputTokensPerS: spread(tput),
      shapes,
      redispatchedPerTrial: n > 0 ? redispatched / n : 0,
      migratedPerTrial: n > 0 ? migrated / n : 0,
      prefixCacheHitRate: cacheQueries > 0 ? cacheHits / cacheQueries : 0,
      simulatedMs: policyMs,
    };
  }
  return { scenario: opts.scenario.name, seed: opts.seed, trials: opts.trials, simulatedMs, wallMs: performance.now() - t0, policies, representative };
}
