// What a bench run does when an option is not given: resolveBenchOptions (and the adaptive scale) read
// these, and `tailgate bench --help` shows them from here (src/cli/bench-flags.ts).
import { defaultSampling } from '../workload/index.js';
import { ENDPOINT_PATHS } from './payload.js';

/** AIPerf's `--request-timeout-seconds` default, 21600 s (its command-line reference; docs/reference.md#aiperf-defaults). */
export const AIPERF_REQUEST_TIMEOUT_MS = 21_600_000;

/** How the adaptive scale sizes its steps (AIPerf's YAML `strategy.step_policy`). */
export type StepPolicy = 'sla_margin' | 'fixed_percent_step';

/** AIPerf's defaults of its adaptive-scale phase fields (the assessment period when none is given). */
export const ADAPTIVE_DEFAULTS = Object.freeze({
  controlMin: 1,
  assessmentPeriodMs: 30_000,
  minCompletedRequests: 1,
  stepPolicy: 'sla_margin' as StepPolicy,
  baseStep: 10,
  maxStepMultiplier: 4,
  stepPercent: 25,
});

/** The defaults of a bench run's options (BenchOptions), each defined once; most are AIPerf's. */
export const BENCH_DEFAULTS = Object.freeze({
  endpointType: 'chat' as const,
  /** The endpoint path of each endpoint type. */
  endpointPaths: ENDPOINT_PATHS,
  concurrency: 1,
  /** Without a duration or a trace: max(min, perConcurrency x concurrency) profiling requests. */
  requestCount: Object.freeze({ min: 10, perConcurrency: 2 }),
  requestRateMode: 'poisson' as const,
  arrivalSmoothness: 1,
  cacheBust: 'none' as const,
  warmupRequestCount: 0,
  benchmarkGracePeriodMs: 30_000,
  inputTokensMean: 550,
  numDatasetEntries: 100,
  /** How requests draw dataset entries: synthetic prompts and traces (a public dataset is read as a trace). */
  datasetSampling: Object.freeze({ synthetic: defaultSampling('synthetic'), trace: defaultSampling('trace') }),
  randomSeed: 0,
  conversationTurnMean: 1,
  conversationTurnDelayRatio: 1,
  blockTokens: 512,
  requestCancellationDelayMs: 0,
  modelSelectionStrategy: 'round_robin' as const,
  sessionHeader: 'X-Correlation-ID',
  requestTimeoutMs: AIPERF_REQUEST_TIMEOUT_MS,
  workerHeader: 'x-tailgate-worker',
  threads: 1,
  /** A hub tokenizer's revision (workload's chooseTokenizer applies the same). */
  tokenizerRevision: 'main',
  /** Synthetic images and audio, as AIPerf: one of each per turn, png, 16-bit mono at 16 kHz. */
  media: Object.freeze({ batchSize: 1, imageFormat: 'png' as const, audioDepth: 16, audioSampleRateKhz: 16, audioChannels: 1 }),
  adaptive: ADAPTIVE_DEFAULTS,
});

/** The type of {@link BENCH_DEFAULTS}, for code that takes the defaults as a parameter (the CLI's flag table). */
export type BenchDefaults = typeof BENCH_DEFAULTS;
