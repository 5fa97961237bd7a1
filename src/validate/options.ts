import { TailgateError } from '../core/index.js';
import { parseBaseUrl, parseExtraInputs, parseHeaders } from '../bench/index.js';
import { defaultTolerance, parseGate, type Gate, type GateStat, type PassRule } from '../gate/index.js';
import { parseGpuMap, type GpuMapEntry } from '../scrape/index.js';
import { kebab, type ValidateInput } from './input.js';

/** One line of progress for people (readiness, trials); the CLI prints these to stderr. */
export type ValidateEvent = (line: string) => void;

/** {@link ValidateInput} with every default applied and the gates built. */
export interface ResolvedValidateOptions {
  url: string;
  model: string;
  gpus: number;
  concurrencyPerGpu: number;
  /** gpus x concurrencyPerGpu. */
  concurrency: number;
  gates: Gate[];
  /** Trials to run; with `trialsAuto`, the most to run. */
  trials: number;
  /** `--trials auto`: stop once every gated figure's interval is narrower than `targetCiWidth` x its limit. */
  trialsAuto: boolean;
  /** Share of a gate's limit the full width of its figure's interval must fall under (`--trials auto`). */
  targetCiWidth: number;
  /** Level of every confidence interval. */
  confidenceLevel: number;
  /** `--search max-concurrency`: bisection over concurrency per GPU in [lo, hi] to `step`; null without it. */
  search: { lo: number; hi: number; step: number } | null;
  passRule: PassRule;
  outDir: string;
  expectedWorkers: number;
  workerUrls: string[];
  readyTimeoutMs: number;
  readyPollMs: number;
  probeTimeoutMs: number;
  /** A trial still running after this is stopped, judged on what it measured, and reported. */
  trialTimeoutMs: number;
  scrapeIntervalMs: number;
  /** Concurrency levels per GPU; empty without `--sweep`. */
  sweep: number[];
  endpointType: 'chat' | 'completions';
  streaming: boolean;
  inputTokensMean: number;
  inputTokensStddev: number;
  outputTokensMean: number;
  outputTokensStddev: number;
  /** Null: the rule `max(1000, 8 x C)` at each trial's concurrency. */
  requestCount: number | null;
  /** Null: the rule `C`. */
  warmupRequestCount: number | null;
  randomSeed: number;
  numDatasetEntries: number;
  requestTimeoutMs: number;
  extraInputs: Record<string, unknown>;
  headers: Record<string, string>;
  apiKey: string | null;
  /** dcgm-exporter `/metrics` URLs (GPU telemetry); empty when none. */
  gpuMetricsUrls: string[];
  /** Explicit GPU -> worker mapping (`--gpu-map`). */
  gpuMap: GpuMapEntry[];
  /** Worker warnings fail the verdict. */
  failOnWarning: boolean;
  /** Levels per GPU past the sweep to predict (`--predict-beyond`); empty when not asked. */
  predictBeyond: number[];
  /** The profile the prediction runs (`--predict-profile`); null: calibrated from the sweep's levels. */
  predictProfile: string | null;
}

/** Defaults; token lengths, seed and dataset size follow the reference recipe (docs/reference.md#the-seed). */
export const VALIDATE_DEFAULTS = {
  gpus: 1,
  concurrencyPerGpu: 256,
  trials: 3,
  /** `--trials auto`: at least this many trials before an interval can stop it. */
  minAutoTrials: 3,
  maxTrials: 10,
  targetCiWidth: 0.1,
  confidenceLevel: 0.95,
  passRule: 'all',
  outDir: 'tailgate-validate',
  readyTimeoutMs: 600_000,
  readyPollMs: 1000,
  probeTimeoutMs: 120_000,
  trialTimeoutMs: 1_800_000,
  scrapeIntervalMs: 250,
  endpointType: 'chat',
  inputTokensMean: 128,
  inputTokensStddev: 0,
  outputTokensMean: 128,
  outputTokensStddev: 0,
  /** The request-count rule: `max(minRequestCount, requestsPerStream x C)`. */
  minRequestCount: 1000,
  requestsPerStream: 8,
  randomSeed: 100,
  numDatasetEntries: 100,
  requestTimeoutMs: 600_000,
  floorTolerance: 0.9,
  ceilingTolerance: 1.1,
  searchStep: 1,
} as const;

function bad(message: string): TailgateError {
  return new TailgateError('CONFIG_INVALID', message);
}

const STATS: readonly GateStat[] = ['avg', 'p50', 'p90', 'p95', 'p99', 'min', 'max'];
const OPS: Record<string, Gate['op']> = { '>=': '>=', '<=': '<=', ge: '>=', le: '<=', min: '>=', max: '<=' };

/**
 * A gate from `metric:stat:op:threshold[:tolerance]` (op `>=`/`<=`, or `ge`/`le`), or the gate
 * module's own `metric.stat<=threshold@tolerance`. Without a tolerance, floors get `floorTolerance`
 * and ceilings `ceilingTolerance`.
 *
 * @example
 * parseGateSpec('time_to_first_token:p99:<=:2000'); // { metric: 'time_to_first_token', stat: 'p99', op: '<=', threshold: 2000, tolerance: 1.1 }
 */
export function parseGateSpec(spec: string, floorTolerance: number = VALIDATE_DEFAULTS.floorTolerance, ceilingTolerance: number = VALIDATE_DEFAULTS.ceilingTolerance): Gate {
  const withTol = (g: Omit<Gate, 'tolerance'>, tol: number | undefined): Gate => ({
    ...g,
    tolerance: tol ?? (g.op === '>=' ? floorTolerance : ceilingTolerance),
  });
  if (!spec.includes(':')) {
    const g = parseGate(spec);
    return /@/.test(spec) ? g : withTol(g, g.tolerance === defaultTolerance(g.op) ? undefined : g.tolerance);
  }
  const parts = spec.split(':').map((s) => s.trim());
  const example = '(expected metric:stat:op:threshold[:tolerance], e.g. time_to_first_token:p99:<=:2000)';
  if (parts.length < 4 || parts.length > 5) throw bad(`invalid gate "${spec}" ${example}`);
  const [metric, stat, opText, thresholdText, tolText] = parts as [string, string, string, string, string | undefined];
  if (!/^[a-z_][a-z0-9_]*$/i.test(metric)) throw bad(`invalid gate "${spec}": "${metric}" is not an AIPerf metric tag ${example}`);
  if (!(STATS as readonly string[]).includes(stat)) throw bad(`invalid gate "${spec}": stat must be one of ${STATS.join(', ')}`);
  const op = OPS[opText];
  if (op === undefined) throw bad(`invalid gate "${spec}": op must be >= or <=`);
  const threshold = Number(thresholdText);
  if (thresholdText === '' || !Number.isFinite(threshold)) throw bad(`invalid gate "${spec}": threshold "${thresholdText}" is not a number`);
  let tol: number | undefined;
  if (tolText !== undefined) {
    tol = Number(tolText);
    if (tolText === '' || !(tol > 0)) throw bad(`invalid gate "${spec}": tolerance "${tolText}" is not a number > 0`);
  }
  return withTol({ metric, stat: stat as GateStat, op, threshold }, tol);
}

function positiveInt(name: string, v: number | undefined, min = 1): void {
  if (v !== undefined && (!Number.isInteger(v) || v < min)) throw bad(`--${kebab(name)} must be an integer >= ${min} (got ${v})`);
}

/**
 * Applies defaults, checks combinations and builds the gates: `--min-throughput` (absolute) or
 * `--min-throughput-per-gpu` (times `--gpus`) as an `output_token_throughput.avg` floor,
 * `--max-ttft-p99` as a `time_to_first_token.p99` ceiling, then every `--gate`.
 *
 * @throws TailgateError CONFIG_INVALID naming the flag
 */
export function resolveValidateOptions(input: ValidateInput): ResolvedValidateOptions {
  if (input.url === undefined || input.url === '') throw bad('--url is required (or url: in the recipe)');
  if (input.model === undefined || input.model === '') throw bad('--model is required (or model: in the recipe)');
  const url = parseBaseUrl(input.url).url;
  if (input.trials !== 'auto') positiveInt('trials', input.trials);
  positiveInt('maxTrials', input.maxTrials, 2);
  positiveInt('searchStep', input.searchStep);
  if (input.confidenceLevel !== undefined && !(input.confidenceLevel > 0 && input.confidenceLevel < 1)) throw bad(`--confidence-level must be between 0 and 1, e.g. 0.95 (got ${input.confidenceLevel})`);
  if (input.targetCiWidth !== undefined && !(input.targetCiWidth > 0)) throw bad(`--target-ci-width must be a share of the limit > 0, e.g. 0.1 (got ${input.targetCiWidth})`);
  for (const k of ['gpus', 'concurrencyPerGpu', 'expectedWorkers', 'syntheticInputTokensMean', 'outputTokensMean', 'requestCount', 'numDatasetEntries'] as const) {
    positiveInt(k, input[k]);
  }
  positiveInt('warmupRequestCount', input.warmupRequestCount, 0);
  positiveInt('randomSeed', input.randomSeed, 0);
  if (input.minThroughput !== undefined && input.minThroughputPerGpu !== undefined) {
    throw bad('give --min-throughput (whole target) or --min-throughput-per-gpu, not both');
  }
  const gpus = input.gpus ?? VALIDATE_DEFAULTS.gpus;
  const floorTol = input.floorTolerance ?? VALIDATE_DEFAULTS.floorTolerance;
  const ceilTol = input.ceilingTolerance ?? VALIDATE_DEFAULTS.ceilingTolerance;
  if (!(floorTol > 0) || !(ceilTol > 0)) throw bad('--floor-tolerance and --ceiling-tolerance must be numbers > 0');
  const gates: Gate[] = [];
  const floor = input.minThroughput ?? (input.minThroughputPerGpu === undefined ? undefined : input.minThroughputPerGpu * gpus);
  if (floor !== undefined) {
    if (!(floor >= 0)) throw bad('--min-throughput must be a number >= 0');
    gates.push({ metric: 'output_token_throughput', stat: 'avg', op: '>=', threshold: floor, tolerance: floorTol });
  }
  if (input.maxTtftP99 !== undefined) {
    if (!(input.maxTtftP99 > 0)) throw bad('--max-ttft-p99 must be a number of ms > 0');
    gates.push({ metric: 'time_to_first_token', stat: 'p99', op: '<=', threshold: input.maxTtftP99, tolerance: ceilTol });
  }
  for (const g of input.gate ?? []) gates.push(parseGateSpec(g, floorTol, ceilTol));

  const workerUrls = (input.workerUrl ?? []).map((u) => parseBaseUrl(u).url);
  const scrapeIntervalMs = input.scrapeInterval ?? VALIDATE_DEFAULTS.scrapeIntervalMs;
  if (!(scrapeIntervalMs >= 50)) throw bad('--scrape-interval must be at least 50ms');
  const durations = { readyTimeout: input.readyTimeout, probeTimeout: input.probeTimeout, trialTimeout: input.trialTimeout };
  for (const [k, v] of Object.entries(durations)) if (v !== undefined && !(v > 0)) throw bad(`--${kebab(k)} must be a duration > 0`);
  if (input.requestTimeoutSeconds !== undefined && !(input.requestTimeoutSeconds > 0)) throw bad('--request-timeout-seconds must be > 0');
  for (const k of ['syntheticInputTokensStddev', 'outputTokensStddev'] as const) {
    const v = input[k];
    if (v !== undefined && !(v >= 0)) throw bad(`--${kebab(k)} must be a number >= 0`);
  }
  const sweep = input.sweep ?? [];
  if (sweep.some((c) => !Number.isInteger(c) || c < 1)) throw bad('--sweep levels must be integers >= 1');
  const concurrencyPerGpu = input.concurrencyPerGpu ?? VALIDATE_DEFAULTS.concurrencyPerGpu;
  const predictBeyond = [...new Set(input.predictBeyond ?? [])].sort((a, b) => a - b);
  if (predictBeyond.some((c) => !Number.isInteger(c) || c < 1)) throw bad('--predict-beyond levels must be integers >= 1');
  if ((predictBeyond.length > 0 || input.predictProfile !== undefined) && sweep.length < 2) throw bad('--predict-beyond and --predict-profile extend a --sweep of two levels or more');
  if (input.predictProfile !== undefined && predictBeyond.length === 0) throw bad('--predict-profile needs --predict-beyond (the levels to predict)');
  if (predictBeyond.some((c) => sweep.includes(c))) throw bad(`--predict-beyond ${predictBeyond.filter((c) => sweep.includes(c)).join(',')}: measured by the sweep already; predict levels it does not run`);

  return {
    url,
    model: input.model,
    gpus,
    concurrencyPerGpu,
    concurrency: gpus * concurrencyPerGpu,
    gates,
    trials: input.trials === 'auto' ? (input.maxTrials ?? VALIDATE_DEFAULTS.maxTrials) : (input.trials ?? VALIDATE_DEFAULTS.trials),
    trialsAuto: input.trials === 'auto',
    targetCiWidth: input.targetCiWidth ?? VALIDATE_DEFAULTS.targetCiWidth,
    confidenceLevel: input.confidenceLevel ?? VALIDATE_DEFAULTS.confidenceLevel,
    search: searchOf(input, sweep),
    passRule: input.passRule ?? VALIDATE_DEFAULTS.passRule,
    outDir: input.out ?? VALIDATE_DEFAULTS.outDir,
    expectedWorkers: input.expectedWorkers ?? gpus,
    workerUrls,
    readyTimeoutMs: input.readyTimeout ?? VALIDATE_DEFAULTS.readyTimeoutMs,
    readyPollMs: Math.min(VALIDATE_DEFAULTS.readyPollMs, Math.max(100, (input.readyTimeout ?? VALIDATE_DEFAULTS.readyTimeoutMs) / 10)),
    probeTimeoutMs: input.probeTimeout ?? VALIDATE_DEFAULTS.probeTimeoutMs,
    trialTimeoutMs: input.trialTimeout ?? VALIDATE_DEFAULTS.trialTimeoutMs,
    scrapeIntervalMs,
    sweep: [...new Set(sweep)].sort((a, b) => a - b),
    endpointType: input.endpointType ?? VALIDATE_DEFAULTS.endpointType,
    streaming: input.streaming ?? true,
    inputTokensMean: input.syntheticInputTokensMean ?? VALIDATE_DEFAULTS.inputTokensMean,
    inputTokensStddev: input.syntheticInputTokensStddev ?? VALIDATE_DEFAULTS.inputTokensStddev,
    outputTokensMean: input.outputTokensMean ?? VALIDATE_DEFAULTS.outputTokensMean,
    outputTokensStddev: input.outputTokensStddev ?? VALIDATE_DEFAULTS.outputTokensStddev,
    requestCount: input.requestCount ?? null,
    warmupRequestCount: input.warmupRequestCount ?? null,
    randomSeed: input.randomSeed ?? VALIDATE_DEFAULTS.randomSeed,
    numDatasetEntries: input.numDatasetEntries ?? VALIDATE_DEFAULTS.numDatasetEntries,
    requestTimeoutMs: (input.requestTimeoutSeconds ?? VALIDATE_DEFAULTS.requestTimeoutMs / 1000) * 1000,
    extraInputs: parseExtraInputs(input.extraInputs ?? []),
    headers: parseHeaders(input.header ?? []),
    apiKey: input.apiKey ?? null,
    gpuMetricsUrls: (input.gpuMetrics ?? []).map(gpuMetricsUrl),
    gpuMap: parseGpuMap(input.gpuMap ?? []),
    failOnWarning: input.failOnWarning ?? false,
    predictBeyond,
    predictProfile: input.predictProfile ?? null,
  };
}

/** `--search max-concurrency --search-range lo:hi --search-step n`, checked. */
function searchOf(input: ValidateInput, sweep: readonly number[]): ResolvedValidateOptions['search'] {
  if (input.search === undefined) {
    if (input.searchRange !== undefined || input.searchStep !== undefined) throw bad('--search-range and --search-step need --search max-concurrency');
    return null;
  }
  if (input.search !== 'max-concurrency') throw bad(`--search must be max-concurrency (got ${String(input.search)})`);
  if (sweep.length > 0) throw bad('give --sweep or --search, not both');
  if (input.searchRange === undefined) throw bad('--search max-concurrency needs --search-range lo:hi (concurrency per GPU, e.g. 16:512)');
  const m = /^\s*(\d+)\s*:\s*(\d+)\s*$/.exec(input.searchRange);
  const lo = Number(m?.[1]);
  const hi = Number(m?.[2]);
  if (!m || !(lo >= 1) || !(hi > lo)) throw bad(`--search-range "${input.searchRange}" must be lo:hi with 1 <= lo < hi (concurrency per GPU, e.g. 16:512)`);
  return { lo, hi, step: input.searchStep ?? VALIDATE_DEFAULTS.searchStep };
}

/** A `--gpu-metrics` URL as given (a bare `host:port` gets `http://` and `/metrics`). */
function gpuMetricsUrl(text: string): string {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`;
  let u: URL;
  try {
    u = new URL(withScheme);
  } catch {
    throw bad(`--gpu-metrics "${text}" is not a URL (expected e.g. http://node-03:9400/metrics)`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw bad(`--gpu-metrics "${text}" must be http or https`);
  if (u.pathname === '/' || u.pathname === '') u.pathname = '/metrics';
  return u.toString();
}

/** The request-count rule: `max(1000, 8 x C)` unless a count was given. */
export function requestCountFor(o: ResolvedValidateOptions, concurrency: number): number {
  return o.requestCount ?? Math.max(VALIDATE_DEFAULTS.minRequestCount, VALIDATE_DEFAULTS.requestsPerStream * concurrency);
}

/** The warm-up rule: `C` unless a count was given. */
export function warmupCountFor(o: ResolvedValidateOptions, concurrency: number): number {
  return o.warmupRequestCount ?? concurrency;
}
