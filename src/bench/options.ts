import { TailgateError, createRng } from '../core/index.js';
import { GOODPUT_TAGS, type SummarizeOptions } from '../stats/index.js';
import { checkHeader } from './flag-values.js';
import { NO_SYNTHESIS, SAMPLING_STRATEGIES, checkRateSeries, defaultTokenizer, traceHasTimestamps, type ArrivalMode, type MediaOptions, type SynthesisOptions, type RatePoint, type SamplingStrategy, type SequencePair, type Tokenizer } from '../workload/index.js';
import { ENDPOINT_PATHS, type EndpointType, type PayloadOptions } from './payload.js';
import { mediaInputConfig, resolveMedia } from './media-options.js';
import type { CallResult } from './request-call.js';
import { BENCH_DEFAULTS as D } from './defaults.js';
import { CACHE_BUST_TARGETS, type CacheBustTarget } from './cache-bust.js';
import { resolveAdaptiveScale, type AdaptiveScaleOptions, type ResolvedAdaptiveScale } from './adaptive-scale.js';

/** Progress of a run, reported about four times a second through `onProgress`. */
export interface BenchProgress {
  phase: 'warmup' | 'profiling';
  completed: number;
  /** Requests planned for the phase; null when the phase is bounded by a duration. */
  total: number | null;
  inflight: number;
  errors: number;
  elapsedMs: number;
  /** Phase time budget (`--benchmark-duration`), when set. */
  durationMs: number | null;
}

/** Options of {@link runBench}; names follow AIPerf's flags. */
export interface BenchOptions {
  /**
   * Base URL (AIPerf `--url`); `http://` is assumed when no scheme is given. Several URLs are used
   * round-robin per request, as AIPerf does.
   */
  url: string | readonly string[];
  model: string;
  /** @default BENCH_DEFAULTS.endpointType */
  endpointType?: EndpointType;
  /** Overrides the endpoint path (AIPerf `--endpoint`). */
  endpointPath?: string;
  /** @default false (as in AIPerf) */
  streaming?: boolean;
  /** Closed loop at this many requests in flight; with `requestRate`, the concurrency ceiling. @default BENCH_DEFAULTS.concurrency */
  concurrency?: number;
  /** Open loop at this many requests per second. */
  requestRate?: number;
  /**
   * AIPerf `--request-rate-series`: the open loop's rate follows these points (linear between them,
   * the last held), starting at the first; excludes `requestRate` and `userCentricRate`, as in AIPerf.
   */
  requestRateSeries?: readonly RatePoint[];
  /** AIPerf `--cache-bust`: a marker per conversation run, where AIPerf puts it, to defeat prefix caches. @default BENCH_DEFAULTS.cacheBust */
  cacheBust?: CacheBustTarget;
  /** @default BENCH_DEFAULTS.requestRateMode (AIPerf's) */
  requestRateMode?: ArrivalMode;
  /** Gamma arrivals' shape (`--arrival-smoothness`): 1 Poisson-like, below 1 bursty, above 1 regular. @default BENCH_DEFAULTS.arrivalSmoothness */
  arrivalSmoothness?: number;
  /** Profiling requests. @default BENCH_DEFAULTS.requestCount (max(10, 2 x concurrency)) unless `benchmarkDurationMs` is set */
  requestCount?: number;
  /** @default 0 */
  warmupRequestCount?: number;
  /** Warm up for this long, ms (`--warmup-duration`); with a warm-up count, whichever ends first. */
  warmupDurationMs?: number;
  benchmarkDurationMs?: number;
  /** Time to wait for in-flight responses after the duration ends. @default BENCH_DEFAULTS.benchmarkGracePeriodMs */
  benchmarkGracePeriodMs?: number;
  /** @default BENCH_DEFAULTS.inputTokensMean (AIPerf's) */
  inputTokensMean?: number;
  /** @default 0 */
  inputTokensStddev?: number;
  /** Requested output length (`max_completion_tokens`); when unset, none is sent (a trace sends its `output_length`). */
  outputTokensMean?: number;
  /** @default 0 */
  outputTokensStddev?: number;
  /** AIPerf `--sequence-distribution`: each prompt's (ISL, OSL) drawn from these pairs instead of the means. */
  sequenceDistribution?: readonly SequencePair[];
  /** AIPerf `--synthesis-*`: the trace reshaped before the replay (with `inputFile` only). */
  synthesis?: Partial<SynthesisOptions>;
  /** AIPerf `--image-*`/`--audio-*`: synthetic images and audio sent with each turn (chat only). */
  media?: MediaOptions;
  /** AIPerf `--public-dataset` (sharegpt): its conversations instead of synthetic prompts. */
  publicDataset?: 'sharegpt';
  /** @default BENCH_DEFAULTS.numDatasetEntries */
  numDatasetEntries?: number;
  /** @default BENCH_DEFAULTS.randomSeed */
  randomSeed?: number;
  /** Prefix groups: entry i starts its prompt with prefix i mod N (AIPerf `--num-prefix-prompts`). */
  numPrefixPrompts?: number;
  /** Tokens of each prefix (`--prefix-prompt-length`). */
  prefixPromptLength?: number;
  /** One system message shared by every entry (`--shared-system-prompt-length`). */
  sharedSystemPromptLength?: number;
  /** A context unique to each entry, before its prompt (`--user-context-prompt-length`). */
  userContextPromptLength?: number;
  /** Conversations (`--conversation-num`). @default numDatasetEntries */
  conversationNum?: number;
  /** Turns per conversation (`--conversation-turn-mean`/`-stddev`): each turn re-sends the history. @default BENCH_DEFAULTS.conversationTurnMean, 0 */
  conversationTurnMean?: number;
  conversationTurnStddev?: number;
  /** Think time before each later turn, ms (`--conversation-turn-delay-mean`/`-stddev`/`-ratio`). @default 0, 0, BENCH_DEFAULTS.conversationTurnDelayRatio */
  conversationTurnDelayMeanMs?: number;
  conversationTurnDelayStddevMs?: number;
  conversationTurnDelayRatio?: number;
  /** A Mooncake-style JSONL trace to send instead of synthetic prompts (`--input-file`). */
  inputFile?: string;
  /** How requests draw dataset entries (`--dataset-sampling-strategy`). @default shuffle for synthetic prompts, sequential for a trace (AIPerf's) */
  datasetSamplingStrategy?: SamplingStrategy;
  /** Send each trace line at its timestamp (`--fixed-schedule`). @default true for a trace without --concurrency or --request-rate */
  fixedSchedule?: boolean;
  /** Shift the trace's timestamps so the first is 0 (`--fixed-schedule-auto-offset`). @default false */
  fixedScheduleAutoOffset?: boolean;
  /** AIPerf `--fixed-schedule-start-offset`: replay the trace from this timestamp (ms; earlier lines skipped, this one is time 0). */
  fixedScheduleStartOffsetMs?: number;
  /** AIPerf `--fixed-schedule-end-offset`: lines after this timestamp (ms) are not sent. */
  fixedScheduleEndOffsetMs?: number;
  /** Tokens per trace hash id (`--prompt-input-tokens-block-size`). @default BENCH_DEFAULTS.blockTokens */
  blockTokens?: number;
  extraInputs?: Record<string, unknown>;
  /** Percent of requests to cut short (`--request-cancellation-rate`), drawn from the seed. @default 0 */
  requestCancellationRate?: number;
  /** How long after sending a cancelled request is cut, ms (`--request-cancellation-delay`). @default BENCH_DEFAULTS.requestCancellationDelayMs */
  requestCancellationDelayMs?: number;
  /** Send `max_tokens` instead of `max_completion_tokens` in chat bodies (`--use-legacy-max-tokens`). @default false */
  useLegacyMaxTokens?: boolean;
  /** ISL/OSL from the server's `usage`, not the tokenizer (`--use-server-token-count`). @default false */
  useServerTokenCount?: boolean;
  /** Count a chat prompt as the tokenizer's chat template renders it and shorten synthetic prompts by the template's cost, as AIPerf's `--apply-chat-template`. @default false */
  applyChatTemplate?: boolean;
  headers?: Record<string, string>;
  /** Header carrying a session's correlation id (AIPerf `--session-header`). @default BENCH_DEFAULTS.sessionHeader */
  sessionHeader?: string;
  apiKey?: string;
  /** Whole-request bound. @default BENCH_DEFAULTS.requestTimeoutMs (AIPerf's 21600 s) */
  requestTimeoutMs?: number;
  goodput?: Record<string, number>;
  /** Response header naming the worker. @default BENCH_DEFAULTS.workerHeader */
  workerHeader?: string;
  /** @default defaultTokenizer */
  tokenizer?: Tokenizer;
  /** `performance.now()` at run start; record times are milliseconds from it. @default performance.now() at call */
  originMs?: number;
  onProgress?: (p: BenchProgress) => void;
  /** Called as each phase (warm-up, profiling) starts sending; with `threads` > 1, only profiling's start. */
  onPhaseStart?: (phase: 'warmup' | 'profiling') => void;
  /** Probe the URL (TCP connect) before sending anything. @default true */
  probe?: boolean;
  /**
   * HTTP client: tailgate's raw-socket HTTP/1.1 client (less CPU per SSE message, tighter stamps;
   * see perf/bench.ts) or undici's dispatch API. @default 'socket' for http:// URLs, 'undici' when any is https://
   */
  transport?: 'undici' | 'socket';
  /** Worker threads sharing the load (concurrency, requests and warm-up split evenly). @default BENCH_DEFAULTS.threads */
  threads?: number;
  /** Prefix of record ids (threads use `t<k>-`). */
  idPrefix?: string;
  /** Salts the open-loop arrival seed so threads do not arrive in lockstep (the dataset keeps the seed). @default 0 */
  arrivalSalt?: number;
  /** Awaited between warm-up and profiling (threads use it as a barrier). */
  beforeProfiling?: () => Promise<void>;
  /** Called with every finished request (diagnostics, perf scripts). */
  onCall?: (result: CallResult) => void;
  /** Keep the raw `data` of each request's first content message in `onCall` results. @default false */
  keepFirstData?: boolean;
  /** Keep each request's body and answer for `--export-level raw` (not with `threads` > 1). @default false */
  keepRaw?: boolean;
  /**
   * AIPerf `--failed-request-threshold`: stop the run once failed / finished profiling requests
   * exceeds this ratio (0..1), checked from max(concurrency, 10) finished requests on. @default none
   */
  failedRequestThreshold?: number;
  /** AIPerf `--concurrency-ramp-duration`: the profiling phase's slots open one by one over this long, from 1 to `concurrency`. @default 0 */
  concurrencyRampMs?: number;
  /** AIPerf `--warmup-concurrency-ramp-duration`: the same for the warm-up phase. @default 0 */
  warmupConcurrencyRampMs?: number;
  /**
   * At most this many requests between being sent and their first token (AIPerf
   * `--prefill-concurrency`; needs streaming, at most `concurrency`); the warm-up's falls back to it.
   */
  prefillConcurrency?: number;
  /**
   * AIPerf `--user-centric-rate`: requests per second over all users, each user sending its next
   * turn `numUsers / rate` seconds after its previous one (needs `numUsers` and multi-turn conversations).
   */
  userCentricRate?: number;
  /** AIPerf `--num-users`: the simulated users of `userCentricRate`. */
  numUsers?: number;
  /** Ramp the prefill limit from 1 to its target over this many ms (`--prefill-concurrency-ramp-duration`). */
  prefillConcurrencyRampMs?: number;
  warmupPrefillConcurrency?: number;
  warmupPrefillConcurrencyRampMs?: number;
  /**
   * AIPerf `--request-rate-ramp-duration`: the profiling phase's arrival rate climbs linearly over
   * this long, from `requestRate` x 100 ms / the ramp (AIPerf's start, its 0.1 s update interval) to `requestRate`. @default 0
   */
  requestRateRampMs?: number;
  /**
   * AIPerf's several `--model-names`: each dataset entry (conversation) asks for one of them, by
   * `modelSelectionStrategy`; `model` is the first. @default [model]
   */
  models?: readonly string[];
  /** AIPerf `--model-selection-strategy`: round_robin (entry i gets model i mod n) or random (seeded). @default BENCH_DEFAULTS.modelSelectionStrategy */
  modelSelectionStrategy?: 'round_robin' | 'random';
  /** AIPerf `--warmup-concurrency`: the warm-up's closed-loop concurrency. @default `concurrency` */
  warmupConcurrency?: number;
  /** AIPerf `--warmup-request-rate`: the warm-up's arrival rate (rate mode). @default `requestRate` */
  warmupRequestRate?: number;
  /** AIPerf `--warmup-arrival-pattern`. @default `requestRateMode` */
  warmupRequestRateMode?: ArrivalMode;
  /** AIPerf `--warmup-request-rate-ramp-duration`. @default 0 */
  warmupRequestRateRampMs?: number;
  /** AIPerf `--warmup-grace-period`: after a timed warm-up, how long its responses may finish. @default no limit (AIPerf's) */
  warmupGracePeriodMs?: number;
  /** AIPerf `--adaptive-scale*`: the profiling phase finds the SLA boundary of its concurrency and holds it (needs `benchmarkDurationMs`). */
  adaptiveScale?: AdaptiveScaleOptions;
}

/** The resolved workload flags: synthetic sessions (with prefixes and turns), or a trace file. */
export type BenchWorkloadSpec =
  | {
      kind: 'synthetic';
      sessions: number;
      prefixGroups: number;
      prefixTokens: number;
      prefixRole: 'system' | 'user';
      userContextTokens: number;
      turnsMean: number;
      turnsStddev: number;
      turnDelayMeanMs: number;
      turnDelayStddevMs: number;
      turnDelayRatio: number;
    }
  | { kind: 'trace'; file: string; blockTokens: number; autoOffset: boolean; startOffsetMs: number | null; endOffsetMs: number | null; synthesis: SynthesisOptions }
  /** AIPerf `--public-dataset`: its conversations, found and filtered as AIPerf does. */
  | { kind: 'public'; name: 'sharegpt' };

/** One endpoint to send to: `origin` for the connection pool, `path` for the request line. */
export interface BenchTarget {
  url: string;
  origin: string;
  path: string;
}

/** {@link BenchOptions} with every default applied and the URL split into origin and path. */
export interface ResolvedBenchOptions {
  /** Every target, in `--url` order (requests go round-robin). */
  targets: BenchTarget[];
  model: string;
  endpointType: EndpointType;
  streaming: boolean;
  concurrency: number;
  /** Open loop only: the concurrency ceiling (`--concurrency` given with `--request-rate`). */
  maxConcurrency: number | null;
  requestRate: number | null;
  /** The profiling phase's rate series (`requestRate` is then its first rate); null for a steady rate. */
  requestRateSeries: readonly RatePoint[] | null;
  cacheBust: CacheBustTarget;
  requestRateMode: ArrivalMode;
  arrivalSmoothness: number;
  requestCount: number | null;
  /**
   * Profiling conversations (`--conversation-num` with multi-turn conversations, AIPerf's stop
   * condition): each runs all its turns, so 10 of 3 turns send 30 requests. Null: the request
   * count or the duration bounds the run.
   */
  sessionCount: number | null;
  warmupRequestCount: number;
  /** Null: no time bound on the warm-up. */
  warmupDurationMs: number | null;
  benchmarkDurationMs: number | null;
  benchmarkGracePeriodMs: number;
  inputTokensMean: number;
  inputTokensStddev: number;
  outputTokensMean: number | null;
  /** `--sequence-distribution` pairs; null: the means and spreads above. */
  sequenceDistribution: readonly SequencePair[] | null;
  /** Images and audio per turn (none: both null). */
  media: MediaOptions;
  outputTokensStddev: number;
  numDatasetEntries: number;
  randomSeed: number;
  /** What is sent: synthetic prompts (with prefixes and turns) or a trace file. */
  workload: BenchWorkloadSpec;
  datasetSampling: SamplingStrategy;
  /** Trace replay: requests go out at the trace's timestamps (an open loop; `--concurrency`, if given, is the ceiling). */
  fixedSchedule: boolean;
  extraInputs: Record<string, unknown>;
  useLegacyMaxTokens: boolean;
  useServerTokenCount: boolean;
  applyChatTemplate: boolean;
  requestCancellationRate: number;
  requestCancellationDelayMs: number;
  failedRequestThreshold: number | null;
  concurrencyRampMs: number;
  requestRateRampMs: number;
  /** Every model asked for (`model` first) and how entries pick one. */
  models: string[];
  modelSelectionStrategy: 'round_robin' | 'random';
  /** The model each dataset entry asks for, by entry index (one model: always it). */
  modelOf: (sessionIndex: number) => string;
  /** The warm-up's own load; each falls back to the profiling phase's. */
  warmup: {
    concurrency: number; concurrencyRampMs: number; requestRate: number | null; requestRateMode: ArrivalMode; requestRateRampMs: number; gracePeriodMs: number;
    prefillConcurrency: number | null; prefillConcurrencyRampMs: number;
  };
  /** `--user-centric-rate`/`--num-users` (with the dataset's turns per conversation); null: another load mode. */
  userCentric: { ratePerS: number; numUsers: number; sessionTurns: number } | null;
  /** `--prefill-concurrency`: requests allowed between send and first token; null: no limit. */
  prefillConcurrency: number | null;
  prefillConcurrencyRampMs: number;
  /** `--adaptive-scale`: the controller's checked settings; null: a fixed load. */
  adaptiveScale: ResolvedAdaptiveScale | null;
  headers: Record<string, string>;
  /** Lowercased. */
  sessionHeader: string;
  apiKey: string | null;
  requestTimeoutMs: number;
  goodput: Record<string, number>;
  workerHeader: string;
  tokenizer: Tokenizer;
  transport: 'undici' | 'socket';
  threads: number;
}

function bad(message: string): TailgateError {
  return new TailgateError('CONFIG_INVALID', message);
}

function intAtLeast(name: string, v: number | undefined, min: number): void {
  if (v !== undefined && (!Number.isInteger(v) || v < min)) throw bad(`${name} must be an integer >= ${min} (got ${v})`);
}

function numAtLeast(name: string, v: number | undefined, min: number, strict = false): void {
  if (v !== undefined && (!Number.isFinite(v) || (strict ? v <= min : v < min))) {
    throw bad(`${name} must be a number ${strict ? '>' : '>='} ${min} (got ${v})`);
  }
}

/** Splits a base URL into origin and path prefix; `host:port` alone means `http://host:port`. */
export function parseBaseUrl(raw: string): { url: string; origin: string; basePath: string } {
  const text = raw.includes('://') ? raw : `http://${raw}`;
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw bad(`invalid --url "${raw}" (expected e.g. http://127.0.0.1:8000)`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw bad(`invalid --url "${raw}": only http and https are supported`);
  return { url: u.href.replace(/\/$/, ''), origin: u.origin, basePath: u.pathname.replace(/\/+$/, '') };
}

/** Every numeric option is in its range (AIPerf's bounds); a bad one is a CONFIG_INVALID error naming the flag. */
function checkNumbers(o: BenchOptions): void {
  intAtLeast('--concurrency', o.concurrency, 1);
  intAtLeast('--request-count', o.requestCount, 1);
  intAtLeast('--warmup-request-count', o.warmupRequestCount, 0);
  intAtLeast('--num-dataset-entries', o.numDatasetEntries, 1);
  intAtLeast('--threads', o.threads, 1);
  intAtLeast('--random-seed', o.randomSeed, 0);
  numAtLeast('--request-rate', o.requestRate, 0, true);
  numAtLeast('--arrival-smoothness', o.arrivalSmoothness, 0, true);
  numAtLeast('--benchmark-duration', o.benchmarkDurationMs, 0, true);
  numAtLeast('--benchmark-grace-period', o.benchmarkGracePeriodMs, 0);
  numAtLeast('--request-cancellation-rate', o.requestCancellationRate, 0);
  if ((o.requestCancellationRate ?? 0) > 100) throw bad(`--request-cancellation-rate is a percentage, 0-100 (got ${o.requestCancellationRate})`);
  numAtLeast('--request-cancellation-delay', o.requestCancellationDelayMs, 0);
  numAtLeast('--concurrency-ramp-duration', o.concurrencyRampMs, 0, true);
  numAtLeast('--warmup-concurrency-ramp-duration', o.warmupConcurrencyRampMs, 0, true);
  numAtLeast('--request-rate-ramp-duration', o.requestRateRampMs, 0, true);
  intAtLeast('--warmup-concurrency', o.warmupConcurrency, 1);
  numAtLeast('--warmup-request-rate', o.warmupRequestRate, 0, true);
  numAtLeast('--warmup-request-rate-ramp-duration', o.warmupRequestRateRampMs, 0, true);
  numAtLeast('--warmup-grace-period', o.warmupGracePeriodMs, 0);
  if (o.failedRequestThreshold !== undefined && !(o.failedRequestThreshold >= 0 && o.failedRequestThreshold <= 1)) {
    throw bad(`--failed-request-threshold is a ratio, 0-1 (got ${o.failedRequestThreshold})`);
  }
  numAtLeast('--request-timeout-seconds', o.requestTimeoutMs, 0, true);
  numAtLeast('--synthetic-input-tokens-mean', o.inputTokensMean, 1);
  numAtLeast('--synthetic-input-tokens-stddev', o.inputTokensStddev, 0);
  numAtLeast('--output-tokens-mean', o.outputTokensMean, 1);
  numAtLeast('--output-tokens-stddev', o.outputTokensStddev, 0);
}

/** The pairs of options a schedule cannot take together: a timestamped replay, embeddings and multi-turn conversations. */
function checkSchedule(o: BenchOptions, workload: BenchWorkloadSpec, endpointType: string, fixedSchedule: boolean): void {
  if (o.fixedSchedule && workload.kind !== 'trace') throw bad('--fixed-schedule replays a trace: give it with --input-file');
  if (fixedSchedule) {
    if (o.requestRate !== undefined) throw bad('--request-rate: a trace with timestamps is sent at them, as AIPerf sends it (the rate is not used): drop --request-rate, or give --no-fixed-schedule to send its lines at the rate');
    if ((o.warmupRequestCount ?? 0) > 0 || (o.warmupDurationMs ?? 0) > 0) throw bad('--fixed-schedule has no warm-up: drop --warmup-request-count and --warmup-duration');
    oneThread(o, '--fixed-schedule');
    if (o.benchmarkDurationMs !== undefined) throw bad('--fixed-schedule runs the trace to its end: drop --benchmark-duration');
  }
  if (endpointType === 'embeddings' && workload.kind === 'synthetic' && (workload.turnsMean > 1 || workload.turnsStddev > 0)) {
    throw bad('--endpoint-type embeddings takes one turn per request: drop --conversation-turn-mean/-stddev');
  }
  if (workload.kind === 'synthetic' && (workload.turnsMean > 1 || workload.turnsStddev > 0) && o.requestRate !== undefined) {
    throw bad('multi-turn conversations run in a closed loop: use --concurrency, not --request-rate');
  }
}

/** Applies defaults and checks every option; bad values are CONFIG_INVALID errors (exit 2). */
export function resolveBenchOptions(given: BenchOptions): ResolvedBenchOptions {
  const series = given.requestRateSeries ?? null;
  // A series runs as an open loop starting at its first rate; every rule of --request-rate applies to it.
  const o: BenchOptions = series === null ? given : { ...given, requestRate: rateSeriesStart(given, series) };
  if (!o.model) throw bad('--model is required');
  const urls = typeof o.url === 'string' ? [o.url] : [...o.url];
  if (urls.length === 0) throw bad('--url is required');
  const endpointType = o.endpointType ?? D.endpointType;
  if (!(endpointType in ENDPOINT_PATHS)) throw bad(`--endpoint-type must be chat, completions or embeddings (got ${String(endpointType)})`);
  let endpoint = o.endpointPath ?? D.endpointPaths[endpointType];
  if (!endpoint.startsWith('/')) endpoint = `/${endpoint}`;
  if (/[\s\0]/.test(endpoint)) throw bad(`--endpoint "${endpoint}" must not contain spaces or line breaks`);
  for (const [k, v] of Object.entries(o.headers ?? {})) checkHeader(k, v);
  if (o.sessionHeader !== undefined && !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(o.sessionHeader)) throw bad(`--session-header: "${o.sessionHeader}" is not a valid header name`);
  if (o.apiKey !== undefined && /[\r\n\0]/.test(o.apiKey)) throw bad('--api-key must not contain line breaks');
  checkNumbers(o);
  checkPrefill(o);
  if (o.cacheBust !== undefined && !CACHE_BUST_TARGETS.includes(o.cacheBust)) throw bad(`--cache-bust must be one of ${CACHE_BUST_TARGETS.join(', ')} (got ${String(o.cacheBust)})`);
  const workload = resolveWorkload(o);
  if (o.sequenceDistribution !== undefined && workload.kind === 'trace') throw bad('--sequence-distribution draws synthetic prompt lengths: a trace brings its own (drop one)');
  if (o.datasetSamplingStrategy !== undefined && !SAMPLING_STRATEGIES.includes(o.datasetSamplingStrategy)) {
    throw bad(`unknown --dataset-sampling-strategy "${String(o.datasetSamplingStrategy)}" (use one of: ${SAMPLING_STRATEGIES.join(', ')})`);
  }
  // As AIPerf: a trace with timestamps runs on them (--concurrency is then a ceiling) unless --no-fixed-schedule.
  const fixedSchedule = workload.kind === 'trace' && (o.fixedSchedule ?? traceHasTimestamps(workload.file));
  checkSchedule(o, workload, endpointType, fixedSchedule);
  const userCentric = userCentricOf(o, workload, fixedSchedule);
  const adaptiveScale = o.adaptiveScale === undefined ? null : resolveAdaptiveScale(o.adaptiveScale, {
    concurrency: o.concurrency, benchmarkDurationMs: o.benchmarkDurationMs, concurrencyRampMs: o.concurrencyRampMs, threads: o.threads,
    prefillConcurrency: o.prefillConcurrency, prefillConcurrencyRampMs: o.prefillConcurrencyRampMs,
    openLoop: o.requestRate !== undefined || fixedSchedule || userCentric !== null,
  });
  for (const tag of Object.keys(o.goodput ?? {})) {
    if (!GOODPUT_TAGS.includes(tag)) throw bad(`unknown --goodput metric "${tag}" (use one of: ${GOODPUT_TAGS.join(', ')})`);
  }
  const concurrency = o.concurrency ?? D.concurrency;
  const durationMs = o.benchmarkDurationMs ?? null;
  if (o.conversationNum !== undefined && o.requestCount !== undefined) {
    throw bad('--request-count and --conversation-num are both stop conditions: give one (AIPerf refuses the pair too)');
  }
  // AIPerf's --conversation-num counts conversations run: one request each unless they are multi-turn (a trace's sessions may be).
  const multiTurn = workload.kind === 'public' || workload.kind === 'trace' || (workload.kind === 'synthetic' && (workload.turnsMean > 1 || workload.turnsStddev > 0));
  const sessionCount = o.conversationNum !== undefined && multiTurn ? o.conversationNum : null;
  if (sessionCount !== null) oneThread(o, '--conversation-num with multi-turn conversations');
  const defaultCount = sessionCount !== null || durationMs !== null || fixedSchedule ? null : Math.max(D.requestCount.min, D.requestCount.perConcurrency * concurrency);
  // A replayed trace sends every line once unless a count is given.
  const requestCount = o.requestCount ?? (o.conversationNum !== undefined && !multiTurn ? o.conversationNum : defaultCount);
  const targets = urls.map((raw) => {
    const { url, origin, basePath } = parseBaseUrl(raw);
    // A URL already ending in the endpoint's path is used as is, as AIPerf's tutorials give it (--url http://host:8000/v1/chat/completions).
    return { url, origin, path: basePath.endsWith(endpoint) ? basePath : basePath + endpoint };
  });
  const models = o.models !== undefined && o.models.length > 0 ? [...o.models] : [o.model];
  return {
    targets,
    model: o.model,
    endpointType,
    streaming: o.streaming ?? false,
    concurrency,
    maxConcurrency: o.requestRate !== undefined || fixedSchedule || userCentric !== null ? (o.concurrency ?? null) : null,
    userCentric,
    requestRate: o.requestRate ?? null,
    requestRateSeries: series,
    cacheBust: o.cacheBust ?? D.cacheBust,
    requestRateMode: o.requestRateMode ?? D.requestRateMode,
    arrivalSmoothness: o.arrivalSmoothness ?? D.arrivalSmoothness,
    requestCount,
    sessionCount,
    warmupRequestCount: o.warmupRequestCount ?? D.warmupRequestCount,
    warmupDurationMs: o.warmupDurationMs !== undefined && o.warmupDurationMs > 0 ? o.warmupDurationMs : null,
    benchmarkDurationMs: durationMs,
    benchmarkGracePeriodMs: o.benchmarkGracePeriodMs ?? D.benchmarkGracePeriodMs,
    inputTokensMean: o.inputTokensMean ?? D.inputTokensMean,
    inputTokensStddev: o.inputTokensStddev ?? 0,
    outputTokensMean: o.outputTokensMean ?? null,
    sequenceDistribution: o.sequenceDistribution ?? null,
    media: resolveMedia(o.media, workload.kind, endpointType),
    outputTokensStddev: o.outputTokensStddev ?? 0,
    numDatasetEntries: o.numDatasetEntries ?? D.numDatasetEntries,
    randomSeed: o.randomSeed ?? D.randomSeed,
    workload,
    // AIPerf reads a public dataset in order, as it reads a trace.
    datasetSampling: o.datasetSamplingStrategy ?? D.datasetSampling[workload.kind === 'synthetic' ? 'synthetic' : 'trace'],
    fixedSchedule,
    extraInputs: { ...(o.extraInputs ?? {}) },
    useLegacyMaxTokens: o.useLegacyMaxTokens ?? false,
    requestCancellationRate: o.requestCancellationRate ?? 0,
    requestCancellationDelayMs: o.requestCancellationDelayMs ?? D.requestCancellationDelayMs,
    failedRequestThreshold: o.failedRequestThreshold ?? null,
    concurrencyRampMs: o.concurrencyRampMs ?? 0,
    requestRateRampMs: o.requestRateRampMs ?? 0,
    models,
    modelSelectionStrategy: o.modelSelectionStrategy ?? D.modelSelectionStrategy,
    modelOf: modelChooser(models, o),
    warmup: {
      concurrency: o.warmupConcurrency ?? concurrency,
      // AIPerf: each warm-up setting falls back to the profiling phase's; its grace period to none (wait for every response).
      concurrencyRampMs: o.warmupConcurrencyRampMs ?? o.concurrencyRampMs ?? 0,
      requestRate: o.warmupRequestRate ?? o.requestRate ?? null,
      requestRateMode: o.warmupRequestRateMode ?? o.requestRateMode ?? D.requestRateMode,
      requestRateRampMs: o.warmupRequestRateRampMs ?? o.requestRateRampMs ?? 0,
      gracePeriodMs: o.warmupGracePeriodMs ?? Number.POSITIVE_INFINITY,
      prefillConcurrency: o.warmupPrefillConcurrency ?? o.prefillConcurrency ?? null,
      prefillConcurrencyRampMs: o.warmupPrefillConcurrencyRampMs ?? 0,
    },
    prefillConcurrency: o.prefillConcurrency ?? null,
    prefillConcurrencyRampMs: o.prefillConcurrencyRampMs ?? 0,
    adaptiveScale,
    useServerTokenCount: o.useServerTokenCount ?? false,
    applyChatTemplate: o.applyChatTemplate ?? false,
    headers: { ...(o.headers ?? {}) },
    sessionHeader: (o.sessionHeader ?? D.sessionHeader).toLowerCase(),
    apiKey: o.apiKey ?? null,
    requestTimeoutMs: o.requestTimeoutMs ?? D.requestTimeoutMs,
    goodput: { ...(o.goodput ?? {}) },
    workerHeader: (o.workerHeader ?? D.workerHeader).toLowerCase(),
    tokenizer: o.tokenizer ?? defaultTokenizer,
    threads: o.threads ?? D.threads,
    transport: o.transport ?? (targets.some((t) => t.origin.startsWith('https:')) ? 'undici' : 'socket'),
  };
}

/** Refuses `--threads` beside an option that runs on one thread (its schedule or its limit is one process's). */
function oneThread(o: BenchOptions, what: string): void {
  if ((o.threads ?? D.threads) > 1) throw bad(`${what} runs on one thread: drop --threads`);
}

/** The first rate of a `--request-rate-series`, after AIPerf's rules for what it excludes. */
function rateSeriesStart(o: BenchOptions, series: readonly RatePoint[]): number {
  if (o.requestRate !== undefined) throw bad('--request-rate and --request-rate-series are mutually exclusive (as in AIPerf)');
  if (o.userCentricRate !== undefined) throw bad('--request-rate-series is not supported with --user-centric-rate (as in AIPerf)');
  oneThread(o, '--request-rate-series');
  checkRateSeries(series, '(the requestRateSeries option)');
  return series[0]!.qps;
}

/** AIPerf's rules for `--user-centric-rate` and `--num-users` (its own error texts where it has them). */
function userCentricOf(o: BenchOptions, workload: BenchWorkloadSpec, fixedSchedule: boolean): ResolvedBenchOptions['userCentric'] {
  numAtLeast('--user-centric-rate', o.userCentricRate, 0, true);
  intAtLeast('--num-users', o.numUsers, 1);
  if (o.userCentricRate === undefined) {
    if (o.numUsers !== undefined) throw bad('--num-users can only be used with --user-centric-rate');
    return null;
  }
  if (o.numUsers === undefined) throw bad('--user-centric-rate requires --num-users to be set');
  if (o.requestRate !== undefined || o.requestRateMode !== undefined) throw bad('--user-centric-rate cannot be used together with --request-rate or --arrival-pattern');
  if (fixedSchedule || workload.kind !== 'synthetic') throw bad('--user-centric-rate runs synthetic conversations: drop --input-file');
  if (workload.turnsMean < 2) throw bad('--user-centric-rate requires multi-turn conversations (--session-turns-mean >= 2)');
  oneThread(o, '--user-centric-rate');
  return { ratePerS: o.userCentricRate, numUsers: o.numUsers, sessionTurns: Math.round(workload.turnsMean) };
}

/** AIPerf's rules for `--prefill-concurrency` and its warm-up and ramp companions. */
function checkPrefill(o: BenchOptions): void {
  intAtLeast('--prefill-concurrency', o.prefillConcurrency, 1);
  intAtLeast('--warmup-prefill-concurrency', o.warmupPrefillConcurrency, 1);
  numAtLeast('--prefill-concurrency-ramp-duration', o.prefillConcurrencyRampMs, 0, true);
  numAtLeast('--warmup-prefill-concurrency-ramp-duration', o.warmupPrefillConcurrencyRampMs, 0, true);
  const any = o.prefillConcurrency ?? o.warmupPrefillConcurrency ?? o.prefillConcurrencyRampMs ?? o.warmupPrefillConcurrencyRampMs;
  if (any === undefined) return;
  if (o.streaming !== true) throw bad('--prefill-concurrency requires --streaming (the first token frees a slot), as in AIPerf');
  if (o.prefillConcurrency !== undefined && o.concurrency !== undefined && o.prefillConcurrency > o.concurrency) {
    throw bad(`--prefill-concurrency (${o.prefillConcurrency}) must be <= --concurrency (${o.concurrency}), as in AIPerf`);
  }
  oneThread(o, '--prefill-concurrency');
}

/** Checks the dataset flags and gathers them (AIPerf's rules: the two prefix styles exclude each other). */
function resolveWorkload(o: BenchOptions): BenchWorkloadSpec {
  for (const [name, v] of [
    ['--num-prefix-prompts', o.numPrefixPrompts], ['--prefix-prompt-length', o.prefixPromptLength],
    ['--user-context-prompt-length', o.userContextPromptLength],
  ] as const) intAtLeast(name, v, 0);
  intAtLeast('--shared-system-prompt-length', o.sharedSystemPromptLength, 1);
  intAtLeast('--conversation-num', o.conversationNum, 1);
  intAtLeast('--prompt-input-tokens-block-size', o.blockTokens, 1);
  numAtLeast('--conversation-turn-mean', o.conversationTurnMean, 1);
  numAtLeast('--conversation-turn-stddev', o.conversationTurnStddev, 0);
  numAtLeast('--conversation-turn-delay-mean', o.conversationTurnDelayMeanMs, 0);
  numAtLeast('--conversation-turn-delay-stddev', o.conversationTurnDelayStddevMs, 0);
  numAtLeast('--conversation-turn-delay-ratio', o.conversationTurnDelayRatio, 0);
  const pool = o.numPrefixPrompts ?? 0;
  const poolLength = o.prefixPromptLength ?? 0;
  const legacy = pool > 0 || poolLength > 0;
  if (legacy && (o.sharedSystemPromptLength !== undefined || o.userContextPromptLength !== undefined)) {
    throw bad('--num-prefix-prompts/--prefix-prompt-length and --shared-system-prompt-length/--user-context-prompt-length exclude each other (as in AIPerf)');
  }
  if ((pool > 0) !== (poolLength > 0)) throw bad('--num-prefix-prompts and --prefix-prompt-length go together (both > 0)');
  if (o.publicDataset !== undefined) {
    if (o.inputFile !== undefined) throw bad('--public-dataset and --input-file both name the dataset: give one');
    const shaping = legacy || o.sharedSystemPromptLength !== undefined || o.userContextPromptLength !== undefined || o.conversationTurnMean !== undefined
      || o.inputTokensMean !== undefined || o.inputTokensStddev !== undefined || o.sequenceDistribution !== undefined;
    if (shaping) throw bad('--public-dataset sends the dataset\'s own prompts and turns: drop the synthetic prompt, prefix and conversation flags');
    if (o.requestRate !== undefined) throw bad('--public-dataset sharegpt entries are conversations, run in a closed loop: use --concurrency, not --request-rate');
    return { kind: 'public', name: o.publicDataset };
  }
  if (o.synthesis !== undefined && o.inputFile === undefined) throw bad('--synthesis-* reshape a Mooncake trace: give it with --input-file');
  if (o.inputFile !== undefined) {
    const synthetic = legacy || o.sharedSystemPromptLength !== undefined || o.userContextPromptLength !== undefined || (o.conversationTurnMean ?? D.conversationTurnMean) > 1;
    if (synthetic) throw bad('--input-file replays a trace: drop the prefix and conversation flags');
    const start = o.fixedScheduleStartOffsetMs ?? null;
    const end = o.fixedScheduleEndOffsetMs ?? null;
    if (start !== null && o.fixedScheduleAutoOffset === true) throw bad('--fixed-schedule-start-offset and --fixed-schedule-auto-offset exclude each other (as in AIPerf)');
    if (start !== null && end !== null && start > end) throw bad(`--fixed-schedule-start-offset (${start}) must be <= --fixed-schedule-end-offset (${end})`);
    return { kind: 'trace', file: o.inputFile, blockTokens: o.blockTokens ?? D.blockTokens, autoOffset: o.fixedScheduleAutoOffset ?? false, startOffsetMs: start, endOffsetMs: end, synthesis: { ...NO_SYNTHESIS, ...o.synthesis } };
  }
  const shared = o.sharedSystemPromptLength;
  return {
    kind: 'synthetic',
    sessions: o.conversationNum ?? o.numDatasetEntries ?? D.numDatasetEntries,
    prefixGroups: legacy ? pool : shared !== undefined ? 1 : 0,
    prefixTokens: legacy ? poolLength : (shared ?? 0),
    prefixRole: legacy ? 'user' : 'system',
    userContextTokens: o.userContextPromptLength ?? 0,
    turnsMean: o.conversationTurnMean ?? D.conversationTurnMean,
    turnsStddev: o.conversationTurnStddev ?? 0,
    turnDelayMeanMs: o.conversationTurnDelayMeanMs ?? 0,
    turnDelayStddevMs: o.conversationTurnDelayStddevMs ?? 0,
    turnDelayRatio: o.conversationTurnDelayRatio ?? D.conversationTurnDelayRatio,
  };
}

/** The run's settings in AIPerf's `input_config` layout (written into the JSON export). */
export function aiperfInputConfig(r: ResolvedBenchOptions): Record<string, unknown> {
  return {
    endpoint: {
      model_names: r.models,
      model_selection_strategy: r.modelSelectionStrategy,
      type: r.endpointType,
      custom_endpoint: r.targets[0]!.path,
      streaming: r.streaming,
      urls: r.targets.map((t) => t.url),
      timeout: r.requestTimeoutMs / 1000,
    },
    input: {
      extra: Object.entries(r.extraInputs),
      headers: Object.keys(r.headers),
      random_seed: r.randomSeed,
      dataset_sampling_strategy: r.datasetSampling,
      goodput: r.goodput,
      prompt: {
        input_tokens: { mean: r.inputTokensMean, stddev: r.inputTokensStddev },
        output_tokens: { mean: r.outputTokensMean, stddev: r.outputTokensStddev },
        ...(r.sequenceDistribution !== null && {
          sequence_distribution: r.sequenceDistribution.map((p) => ({ isl: p.isl, isl_stddev: p.islStddev, osl: p.osl, osl_stddev: p.oslStddev, prob: p.prob })),
        }),
      },
      conversation: conversationConfig(r),
      ...mediaInputConfig(r.media),
      ...(r.workload.kind === 'synthetic' && r.workload.prefixGroups + r.workload.userContextTokens > 0 && { prefix_prompt: prefixConfig(r.workload) }),
      ...(r.workload.kind === 'trace' && {
        file: r.workload.file,
        custom_dataset_type: 'mooncake_trace',
        fixed_schedule: r.fixedSchedule,
        fixed_schedule_auto_offset: r.workload.autoOffset,
        prompt_input_tokens_block_size: r.workload.blockTokens,
        synthesis: { speedup_ratio: r.workload.synthesis.speedupRatio, prefix_len_multiplier: r.workload.synthesis.prefixLenMultiplier, prefix_root_multiplier: r.workload.synthesis.prefixRootMultiplier, prompt_len_multiplier: r.workload.synthesis.promptLenMultiplier, max_isl: r.workload.synthesis.maxIsl, max_osl: r.workload.synthesis.maxOsl },
      }),
    },
    loadgen: {
      concurrency: r.requestRate === null ? r.concurrency : r.maxConcurrency,
      request_rate: r.requestRate,
      ...(r.requestRateSeries !== null && { request_rate_series: { points: r.requestRateSeries.map((p) => ({ time_s: p.timeS, qps: p.qps })) } }),
      request_rate_mode: r.requestRateMode,
      ...(r.requestRateMode === 'gamma' && { arrival_smoothness: r.arrivalSmoothness }),
      request_count: r.requestCount,
      ...(r.prefillConcurrency !== null && { prefill_concurrency: r.prefillConcurrency }),
      ...(r.userCentric !== null && { user_centric_rate: r.userCentric.ratePerS, num_users: r.userCentric.numUsers }),
      ...(r.adaptiveScale !== null && { adaptive_scale: adaptiveConfig(r.adaptiveScale) }),
      warmup_request_count: r.warmupRequestCount,
      warmup_duration: r.warmupDurationMs === null ? null : r.warmupDurationMs / 1000,
      benchmark_duration: r.benchmarkDurationMs === null ? null : r.benchmarkDurationMs / 1000,
      benchmark_grace_period: r.benchmarkGracePeriodMs / 1000,
    },
    tokenizer: { name: r.tokenizer.name },
    ...((r.useLegacyMaxTokens || r.useServerTokenCount) && { use_legacy_max_tokens: r.useLegacyMaxTokens, use_server_token_count: r.useServerTokenCount }),
    tailgate: { worker_header: r.workerHeader, transport: r.transport, threads: r.threads },
  };
}

function adaptiveConfig(a: ResolvedAdaptiveScale): Record<string, unknown> {
  return {
    control: { variable: a.variable, min: a.min, max: a.max },
    assessment_period: a.assessmentPeriodMs / 1000,
    min_completed_requests: a.minCompletedRequests,
    sustain_duration: a.sustainDurationMs / 1000,
    strategy: { type: 'ramp_until_fail', step_policy: a.stepPolicy, base_step: a.baseStep, max_step_multiplier: a.maxStepMultiplier, step_percent: a.stepPercent },
    sla: a.sla.map((f) => `${f.metric}:${f.stat}:${f.op}:${f.threshold}`),
  };
}

function conversationConfig(r: ResolvedBenchOptions): Record<string, unknown> {
  const w = r.workload;
  if (w.kind !== 'synthetic' || (w.turnsMean <= 1 && w.turnsStddev === 0)) return { num_dataset_entries: r.numDatasetEntries };
  return {
    num_dataset_entries: r.numDatasetEntries,
    num: w.sessions,
    turn: { mean: w.turnsMean, stddev: w.turnsStddev, delay: { mean: w.turnDelayMeanMs, stddev: w.turnDelayStddevMs, ratio: w.turnDelayRatio } },
  };
}

function prefixConfig(w: Extract<BenchWorkloadSpec, { kind: 'synthetic' }>): Record<string, unknown> {
  if (w.prefixRole === 'user') return { pool_size: w.prefixGroups, length: w.prefixTokens };
  return {
    shared_system_prompt_length: w.prefixGroups > 0 ? w.prefixTokens : null,
    user_context_prompt_length: w.userContextTokens > 0 ? w.userContextTokens : null,
  };
}

/** The summary settings of a resolved run (the run's summary, warm-up, time slices). */
export function summaryOptionsOf(o: ResolvedBenchOptions): SummarizeOptions {
  return { goodput: o.goodput, useServerTokenCount: o.useServerTokenCount, producesTokens: o.endpointType !== 'embeddings', timeWeighted: true };
}

/** Which model each dataset entry asks for: AIPerf's `--model-selection-strategy` over the models given. */
function modelChooser(models: readonly string[], o: BenchOptions): (sessionIndex: number) => string {
  if (models.length === 1) return () => models[0]!;
  if (o.modelSelectionStrategy === 'random') {
    // Seeded per entry, so an entry asks for the same model in every run of the seed.
    const rng = createRng((o.randomSeed ?? D.randomSeed) + 31_337);
    const picks: number[] = [];
    return (i) => {
      while (picks.length <= i) picks.push(Math.floor(rng.next() * models.length));
      return models[picks[i]!]!;
    };
  }
  return (i) => models[i % models.length]!;
}

/**
 * The headers of every request a run sends (its own, the readiness probes', `--reset-kv-cache`'s): JSON, the
 * API key, then the `--header`s, names lowercased so a user's replaces bench's own (AIPerf applies them last).
 */
export function requestHeadersOf(o: ResolvedBenchOptions, streaming: boolean): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: streaming ? 'text/event-stream' : 'application/json' };
  if (o.apiKey !== null) headers['authorization'] = `Bearer ${o.apiKey}`;
  for (const [k, v] of Object.entries(o.headers)) headers[k.toLowerCase()] = v;
  return headers;
}

/** The payload settings of a resolved run (shared by the request builder and `inputs.json`); `sessionIndex` picks the entry's model. */
export function payloadOptionsOf(o: ResolvedBenchOptions, sessionIndex = 0): PayloadOptions {
  return {
    model: o.modelOf(sessionIndex), endpointType: o.endpointType, streaming: o.streaming,
    sendMaxTokens: o.outputTokensMean !== null || o.sequenceDistribution !== null || o.workload.kind !== 'synthetic', useLegacyMaxTokens: o.useLegacyMaxTokens, extraInputs: o.extraInputs,
  };
}
