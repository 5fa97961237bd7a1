import { TailgateError } from '../core/index.js';
import { GOODPUT_TAGS } from '../stats/index.js';
import { checkHeader } from './flag-values.js';
import { defaultTokenizer, type ArrivalMode, type Tokenizer } from '../workload/index.js';
import { ENDPOINT_PATHS, type EndpointType, type PayloadOptions } from './payload.js';
import type { CallResult } from './request-call.js';

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
  /** @default 'chat' */
  endpointType?: EndpointType;
  /** Overrides the endpoint path (AIPerf `--endpoint`). */
  endpointPath?: string;
  /** @default false (as in AIPerf) */
  streaming?: boolean;
  /** Closed loop at this many requests in flight; with `requestRate`, the concurrency ceiling. @default 1 */
  concurrency?: number;
  /** Open loop at this many requests per second. */
  requestRate?: number;
  /** @default 'poisson' (AIPerf's default) */
  requestRateMode?: ArrivalMode;
  /** Profiling requests. @default max(10, 2 x concurrency) unless `benchmarkDurationMs` is set */
  requestCount?: number;
  /** @default 0 */
  warmupRequestCount?: number;
  benchmarkDurationMs?: number;
  /** Time to wait for in-flight responses after the duration ends. @default 30000 */
  benchmarkGracePeriodMs?: number;
  /** @default 550 (AIPerf's default) */
  inputTokensMean?: number;
  /** @default 0 */
  inputTokensStddev?: number;
  /** Requested output length (`max_tokens`); when unset, no `max_tokens` is sent. */
  outputTokensMean?: number;
  /** @default 0 */
  outputTokensStddev?: number;
  /** @default 100 */
  numDatasetEntries?: number;
  /** @default 0 */
  randomSeed?: number;
  extraInputs?: Record<string, unknown>;
  headers?: Record<string, string>;
  apiKey?: string;
  /** Whole-request bound. @default 600000 */
  requestTimeoutMs?: number;
  goodput?: Record<string, number>;
  /** Response header naming the worker. @default 'x-tailgate-worker' */
  workerHeader?: string;
  /** @default defaultTokenizer */
  tokenizer?: Tokenizer;
  /** `performance.now()` at run start; record times are milliseconds from it. @default performance.now() at call */
  originMs?: number;
  onProgress?: (p: BenchProgress) => void;
  /** Probe the URL (TCP connect) before sending anything. @default true */
  probe?: boolean;
  /**
   * HTTP client: tailgate's raw-socket HTTP/1.1 client (less CPU per SSE message, tighter stamps;
   * see perf/bench.ts) or undici's dispatch API. @default 'socket' for http:// URLs, 'undici' when any is https://
   */
  transport?: 'undici' | 'socket';
  /** Worker threads sharing the load (concurrency, requests and warm-up split evenly). @default 1 */
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
}

/** {@link BenchOptions} with every default applied and the URL split into origin and path. */
/** One endpoint to send to: `origin` for the connection pool, `path` for the request line. */
export interface BenchTarget {
  url: string;
  origin: string;
  path: string;
}

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
  requestRateMode: ArrivalMode;
  requestCount: number | null;
  warmupRequestCount: number;
  benchmarkDurationMs: number | null;
  benchmarkGracePeriodMs: number;
  inputTokensMean: number;
  inputTokensStddev: number;
  outputTokensMean: number | null;
  outputTokensStddev: number;
  numDatasetEntries: number;
  randomSeed: number;
  extraInputs: Record<string, unknown>;
  headers: Record<string, string>;
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

/** Applies defaults and checks every option; bad values are CONFIG_INVALID errors (exit 2). */
export function resolveBenchOptions(o: BenchOptions): ResolvedBenchOptions {
  if (!o.model) throw bad('--model is required');
  const urls = typeof o.url === 'string' ? [o.url] : [...o.url];
  if (urls.length === 0) throw bad('--url is required');
  const endpointType = o.endpointType ?? 'chat';
  if (!(endpointType in ENDPOINT_PATHS)) throw bad(`--endpoint-type must be chat or completions (got ${String(endpointType)})`);
  let endpoint = o.endpointPath ?? ENDPOINT_PATHS[endpointType];
  if (!endpoint.startsWith('/')) endpoint = `/${endpoint}`;
  if (/[\s\0]/.test(endpoint)) throw bad(`--endpoint "${endpoint}" must not contain spaces or line breaks`);
  for (const [k, v] of Object.entries(o.headers ?? {})) checkHeader(k, v);
  if (o.apiKey !== undefined && /[\r\n\0]/.test(o.apiKey)) throw bad('--api-key must not contain line breaks');
  intAtLeast('--concurrency', o.concurrency, 1);
  intAtLeast('--request-count', o.requestCount, 1);
  intAtLeast('--warmup-request-count', o.warmupRequestCount, 0);
  intAtLeast('--num-dataset-entries', o.numDatasetEntries, 1);
  intAtLeast('--threads', o.threads, 1);
  intAtLeast('--random-seed', o.randomSeed, 0);
  numAtLeast('--request-rate', o.requestRate, 0, true);
  numAtLeast('--benchmark-duration', o.benchmarkDurationMs, 0, true);
  numAtLeast('--benchmark-grace-period', o.benchmarkGracePeriodMs, 0);
  numAtLeast('--request-timeout-seconds', o.requestTimeoutMs, 0, true);
  numAtLeast('--synthetic-input-tokens-mean', o.inputTokensMean, 1);
  numAtLeast('--synthetic-input-tokens-stddev', o.inputTokensStddev, 0);
  numAtLeast('--output-tokens-mean', o.outputTokensMean, 1);
  numAtLeast('--output-tokens-stddev', o.outputTokensStddev, 0);
  for (const tag of Object.keys(o.goodput ?? {})) {
    if (!GOODPUT_TAGS.includes(tag)) throw bad(`unknown --goodput metric "${tag}" (use one of: ${GOODPUT_TAGS.join(', ')})`);
  }
  const concurrency = o.concurrency ?? 1;
  const durationMs = o.benchmarkDurationMs ?? null;
  const requestCount = o.requestCount ?? (durationMs === null ? Math.max(10, 2 * concurrency) : null);
  const targets = urls.map((raw) => {
    const { url, origin, basePath } = parseBaseUrl(raw);
    return { url, origin, path: basePath + endpoint };
  });
  return {
    targets,
    model: o.model,
    endpointType,
    streaming: o.streaming ?? false,
    concurrency,
    maxConcurrency: o.requestRate !== undefined ? (o.concurrency ?? null) : null,
    requestRate: o.requestRate ?? null,
    requestRateMode: o.requestRateMode ?? 'poisson',
    requestCount,
    warmupRequestCount: o.warmupRequestCount ?? 0,
    benchmarkDurationMs: durationMs,
    benchmarkGracePeriodMs: o.benchmarkGracePeriodMs ?? 30_000,
    inputTokensMean: o.inputTokensMean ?? 550,
    inputTokensStddev: o.inputTokensStddev ?? 0,
    outputTokensMean: o.outputTokensMean ?? null,
    outputTokensStddev: o.outputTokensStddev ?? 0,
    numDatasetEntries: o.numDatasetEntries ?? 100,
    randomSeed: o.randomSeed ?? 0,
    extraInputs: { ...(o.extraInputs ?? {}) },
    headers: { ...(o.headers ?? {}) },
    apiKey: o.apiKey ?? null,
    requestTimeoutMs: o.requestTimeoutMs ?? 600_000,
    goodput: { ...(o.goodput ?? {}) },
    workerHeader: (o.workerHeader ?? 'x-tailgate-worker').toLowerCase(),
    tokenizer: o.tokenizer ?? defaultTokenizer,
    threads: o.threads ?? 1,
    transport: o.transport ?? (targets.some((t) => t.origin.startsWith('https:')) ? 'undici' : 'socket'),
  };
}

/** The run's settings in AIPerf's `input_config` layout (written into the JSON export). */
export function aiperfInputConfig(r: ResolvedBenchOptions): Record<string, unknown> {
  return {
    endpoint: {
      model_names: [r.model],
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
      goodput: r.goodput,
      prompt: {
        input_tokens: { mean: r.inputTokensMean, stddev: r.inputTokensStddev },
        output_tokens: { mean: r.outputTokensMean, stddev: r.outputTokensStddev },
      },
      conversation: { num_dataset_entries: r.numDatasetEntries },
    },
    loadgen: {
      concurrency: r.requestRate === null ? r.concurrency : r.maxConcurrency,
      request_rate: r.requestRate,
      request_rate_mode: r.requestRateMode,
      request_count: r.requestCount,
      warmup_request_count: r.warmupRequestCount,
      benchmark_duration: r.benchmarkDurationMs === null ? null : r.benchmarkDurationMs / 1000,
      benchmark_grace_period: r.benchmarkGracePeriodMs / 1000,
    },
    tokenizer: { name: r.tokenizer.name },
    tailgate: { worker_header: r.workerHeader, transport: r.transport, threads: r.threads },
  };
}

/** The payload settings of a resolved run (shared by the request builder and `inputs.json`). */
export function payloadOptionsOf(o: ResolvedBenchOptions): PayloadOptions {
  return { model: o.model, endpointType: o.endpointType, streaming: o.streaming, sendMaxTokens: o.outputTokensMean !== null, extraInputs: o.extraInputs };
}
