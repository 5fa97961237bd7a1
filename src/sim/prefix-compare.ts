import { isMetricBlock } from '../stats/index.js';
import { runScenario } from './run-scenario.js';
import type { Scenario } from './scenario.js';
import { SIMULATE_DEFAULTS } from './defaults.js';
import { PREFIX_SOURCES, type PrefixSource } from './kv-report.js';

/** Presets whose `simulate` run compares prefix sources (not policies). */
export const PREFIX_COMPARE_PRESETS: readonly string[] = ['prefix-pressure'];

/** One source at one replica count. */
export interface PrefixCompareRow {
  source: PrefixSource;
  replicas: number;
  /** Prompt tokens the engines' prefix caches served / were asked for (measured window and warm-up). */
  prefixHitRate: number;
  ttftP50Ms: number;
  outputTokensPerS: number;
}

/** One preset's prefix-source comparison: a row per source and replica count, at one seed and KV event delay. */
export interface PrefixCompareResult {
  scenario: string;
  seed: number;
  kvEventDelayMs: number;
  rows: PrefixCompareRow[];
}

/** Options of {@link comparePrefixSources}. */
export interface PrefixCompareOptions {
  seed?: number;
  /** Router replica counts to run each source at. @default [1, 3] */
  replicas?: readonly number[];
  /** KV events' delay after a step ends (ms). @default 0 */
  kvEventDelayMs?: number;
  sources?: readonly PrefixSource[];
}

/**
 * Runs `scenario` under `prefix` once per prefix source and replica count (the same seed):
 * the router's estimate, the engines' KV events, and the engines' true caches (oracle).
 *
 * @example
 * formatPrefixCompare(comparePrefixSources(PRESETS['prefix-pressure']!, { seed: 1 }));
 */
export function comparePrefixSources(scenario: Scenario, opts: PrefixCompareOptions = {}): PrefixCompareResult {
  const seed = opts.seed ?? 1;
  const delay = opts.kvEventDelayMs ?? SIMULATE_DEFAULTS.kvEventDelayMs;
  const rows: PrefixCompareRow[] = [];
  for (const replicas of opts.replicas ?? [1, 3]) {
    const s: Scenario = { ...scenario, router: { ...scenario.router, replicas } };
    for (const source of opts.sources ?? PREFIX_SOURCES) {
      const r = runScenario(s, 'prefix', seed, { prefixSource: source, kvEventDelayMs: delay, recordMode: 'summary' });
      const ttft = r.summary.metrics['time_to_first_token'];
      const tput = r.summary.metrics['output_token_throughput'];
      rows.push({
        source,
        replicas,
        prefixHitRate: r.prefixCacheQueries > 0 ? r.prefixCacheHits / r.prefixCacheQueries : 0,
        ttftP50Ms: isMetricBlock(ttft) ? ttft.p50 : Number.NaN,
        outputTokensPerS: tput !== undefined && 'avg' in tput ? tput.avg : Number.NaN,
      });
    }
  }
  return { scenario: scenario.name, seed, kvEventDelayMs: delay, rows };
}

/** The comparison as a console table. */
export function formatPrefixCompare(r: PrefixCompareResult): string {
  const lines = [`${r.scenario} (policy prefix, seed ${r.seed}, KV-event delay ${r.kvEventDelayMs} ms)`, 'source    replicas  prefix hit rate  TTFT p50 ms  output tok/s'];
  for (const row of r.rows) {
    lines.push(`${row.source.padEnd(9)} ${String(row.replicas).padStart(8)}  ${(100 * row.prefixHitRate).toFixed(2).padStart(14)}%  ${row.ttftP50Ms.toFixed(1).padStart(11)}  ${row.outputTokensPerS.toFixed(0).padStart(12)}`);
  }
  return `${lines.join('\n')}\n`;
}
