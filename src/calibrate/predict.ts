import type { EngineProfile } from '../engine/index.js';
import { runScenario, scenarioFromObject, type Scenario } from '../sim/index.js';
import type { Level, LevelFigures } from './level.js';

/**
 * A long level is simulated for this many waves of its concurrency (after one wave of warm-up):
 * the steady state is reached by then, and a sim's cost grows with requests x output / concurrency.
 */
const SIM_WAVES = 4;
/**
 * A level of up to this many waves is simulated whole, as the benchmark ran it: every request
 * measured from the first burst (all of a closed loop's slots send at once) to the drain. Beyond
 * it the first wave is under 5% of the requests, and the steady state stands for the run.
 */
const WHOLE_RUN_WAVES = 20;

/** The workload of a level as the simulator runs it: prefill counts only the tokens the prefix cache did not hold. */
export interface SimLevel {
  load: Level['load'];
  workers: number;
  /** Prompt tokens of each request: its length when `datasetEntries` replays the prompts, else less its prefix-cache hits. */
  prefillTokens: number;
  /** Spreads (standard deviations) of the prompt tokens prefilled and of the output tokens. */
  prefillTokensStd: number;
  outputTokensStd: number;
  /** Distinct prompts to replay (the engine's prefix cache then hits as it did), null: every prompt new. */
  datasetEntries: number | null;
  /** Requests in flight at once: the concurrency, or for a rate rate x request latency (Little's law). */
  inFlight: number;
  outputTokens: number;
  requestCount: number;
  warmupRequestCount: number;
}

/** The simulator's view of a measured level. */
export function simLevelOf(level: Level): SimLevel {
  const hit = level.serverMetrics?.prefixHitRatio ?? 0;
  // A run that says how many prompts it drew from is replayed with them (its hits come back by themselves).
  const replay = hit > 0 && level.datasetEntries !== null;
  return {
    load: level.load,
    workers: level.workers,
    prefillTokens: Math.max(1, Math.round(level.inputTokens * (replay ? 1 : 1 - hit))),
    prefillTokensStd: level.inputTokensStd * (replay ? 1 : 1 - hit),
    outputTokensStd: level.outputTokensStd,
    datasetEntries: replay ? level.datasetEntries : null,
    inFlight: level.load.kind === 'closed' ? level.load.concurrency : Math.max(1, Math.ceil((level.load.ratePerS * level.measured.latencyP50Ms) / 1000)),
    outputTokens: Math.max(2, Math.round(level.outputTokens)),
    requestCount: level.requestCount,
    warmupRequestCount: level.warmupRequestCount,
  };
}

/** The scenario that replays a level on `profile` (prompts never repeat: the prefix cache's share is taken out of the prompt). */
export function levelScenario(level: SimLevel, profile: EngineProfile): Scenario {
  const perWave = level.load.kind === 'closed' ? level.load.concurrency : level.inFlight;
  // Measured runs are replayed as they were, up to WHOLE_RUN_WAVES waves; longer ones keep their steady state.
  const long = level.requestCount > WHOLE_RUN_WAVES * perWave;
  const requests = long ? SIM_WAVES * perWave : level.requestCount;
  const warmup = long ? Math.max(level.warmupRequestCount, perWave) : level.warmupRequestCount;
  const s = scenarioFromObject({
    name: 'calibrate',
    workers: level.workers,
    ...(level.load.kind === 'closed' ? { concurrency: level.load.concurrency } : { rate: level.load.ratePerS, rateMode: 'poisson' }),
    requestCount: requests,
    warmupRequestCount: Math.min(warmup, 10 * perWave),
    inputTokens: { mean: level.prefillTokens, stddev: level.prefillTokensStd },
    outputTokens: { mean: level.outputTokens, stddev: level.outputTokensStd },
    datasetEntries: level.datasetEntries ?? requests + warmup,
  }, 'calibrate');
  return { ...s, profile: profile.name, engineProfile: profile };
}

/**
 * A level's figures as the simulator predicts them on `profile` (one seeded run, virtual time).
 *
 * @example
 * predictLevel(simLevelOf(level), profile).itlP50Ms;
 */
export function predictLevel(level: SimLevel, profile: EngineProfile, seed = 1): LevelFigures {
  const r = runScenario(levelScenario(level, profile), level.workers > 1 ? 'least-loaded' : 'round-robin', seed, { keepChunks: false, sampleMs: 1000, recordMode: 'summary' });
  const m = r.summary.metrics;
  const block = (tag: string, stat: 'p50' | 'p99' | 'avg'): number => {
    const b = m[tag] as Record<string, number> | undefined;
    return b?.[stat] ?? Number.NaN;
  };
  return {
    outputTokPerS: block('output_token_throughput', 'avg'),
    requestsPerS: block('request_throughput', 'avg'),
    ttftP50Ms: block('time_to_first_token', 'p50'),
    ttftMeanMs: block('time_to_first_token', 'avg'),
    ttftP99Ms: block('time_to_first_token', 'p99'),
    itlP50Ms: block('inter_token_latency', 'p50'),
    itlMeanMs: block('inter_token_latency', 'avg'),
    latencyP50Ms: block('request_latency', 'p50'),
    itlMeanSeMs: null,
    ttftMeanSeMs: null,
  };
}
