/**
 * What a person gives `tailgate validate`, as flags or as a recipe: every field is named after its
 * flag (`--concurrency-per-gpu` is `concurrencyPerGpu`, recipe key `concurrency-per-gpu`).
 * Durations are milliseconds; everything is optional here and defaulted by `resolveValidateOptions`.
 */
export interface ValidateInput {
  url?: string;
  model?: string;
  gpus?: number;
  concurrencyPerGpu?: number;
  /** Output-throughput floor for the whole target, tokens/sec. */
  minThroughput?: number;
  /** Output-throughput floor per GPU, tokens/sec (times `gpus`). */
  minThroughputPerGpu?: number;
  /** TTFT p99 ceiling, ms. */
  maxTtftP99?: number;
  /** More gates, `metric:stat:op:threshold[:tolerance]`. */
  gate?: string[];
  floorTolerance?: number;
  ceilingTolerance?: number;
  /** A count, or `auto`: run until every gated figure's interval is narrow enough (or `maxTrials`). */
  trials?: number | 'auto';
  /** Bound of `trials: auto`. */
  maxTrials?: number;
  /** `trials: auto` stops when each gated figure's interval is narrower than this share of its limit. */
  targetCiWidth?: number;
  /** Level of every confidence interval, e.g. 0.95. */
  confidenceLevel?: number;
  passRule?: 'all' | 'majority' | 'median';
  out?: string;
  expectedWorkers?: number;
  workerUrl?: string[];
  readyTimeout?: number;
  probeTimeout?: number;
  trialTimeout?: number;
  scrapeInterval?: number;
  /** Concurrency levels per GPU. */
  sweep?: number[];
  endpointType?: 'chat' | 'completions';
  streaming?: boolean;
  syntheticInputTokensMean?: number;
  syntheticInputTokensStddev?: number;
  outputTokensMean?: number;
  outputTokensStddev?: number;
  requestCount?: number;
  warmupRequestCount?: number;
  randomSeed?: number;
  numDatasetEntries?: number;
  requestTimeoutSeconds?: number;
  extraInputs?: string[];
  header?: string[];
  apiKey?: string;
  /** dcgm-exporter `/metrics` URLs scraped for GPU telemetry during trials. */
  gpuMetrics?: string[];
  /** `WORKER=GPU` entries mapping GPUs to workers when the `pod` label does not. */
  gpuMap?: string[];
  /** A worker warning fails the verdict (exit 1). */
  failOnWarning?: boolean;
  /** `max-concurrency`: find the largest concurrency per GPU that passes the gates. */
  search?: 'max-concurrency';
  /** `lo:hi`, concurrency per GPU. */
  searchRange?: string;
  /** Resolution of the search, concurrency per GPU. */
  searchStep?: number;
  /** Concurrency levels per GPU past the sweep to predict with an engine model (labelled predicted, never gated). */
  predictBeyond?: number[];
  /** The engine profile (a built-in name or a `tailgate calibrate` file) the prediction runs; default: calibrated from the sweep's levels. */
  predictProfile?: string;
}

/** Every field of {@link ValidateInput}, in help order (the recipe accepts exactly these, kebab-case). */
export const INPUT_FIELDS = [
  'url', 'model', 'gpus', 'concurrencyPerGpu', 'minThroughput', 'minThroughputPerGpu', 'maxTtftP99', 'gate',
  'floorTolerance', 'ceilingTolerance', 'trials', 'passRule', 'out', 'expectedWorkers', 'workerUrl', 'readyTimeout',
  'probeTimeout', 'trialTimeout', 'scrapeInterval', 'sweep', 'endpointType', 'streaming', 'syntheticInputTokensMean',
  'syntheticInputTokensStddev', 'outputTokensMean', 'outputTokensStddev', 'requestCount', 'warmupRequestCount',
  'randomSeed', 'numDatasetEntries', 'requestTimeoutSeconds', 'extraInputs', 'header', 'apiKey', 'gpuMetrics', 'gpuMap',
  'failOnWarning', 'maxTrials', 'targetCiWidth', 'confidenceLevel', 'search', 'searchRange', 'searchStep',
  'predictBeyond', 'predictProfile',
] as const satisfies readonly (keyof ValidateInput)[];

/** `concurrencyPerGpu` -> `concurrency-per-gpu` (the recipe key and the flag name). */
export function kebab(field: string): string {
  return field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}
