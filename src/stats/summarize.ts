import { TailgateError, type RequestRecord } from '../core/index.js';
import { describe, type MetricBlock, type ScalarMetric } from './metric-block.js';
import { LogHistogram } from './log-histogram.js';
import { GOODPUT_TAGS, METRIC_CATALOG, metricInfo } from './metric-catalog.js';
import { peakInflightOf } from './inflight.js';
import { percentile } from './percentile.js';
import type { ErrorGroup, Summary, WorkerSummary } from './summary.js';
import { timeWeightedMetrics } from './time-weighted.js';

/** Options of {@link summarize}. */
export interface SummarizeOptions {
  /** AIPerf `--goodput` SLOs: tag -> threshold (ms for latencies, tokens/sec/user for per-user throughput). */
  goodput?: Record<string, number>;
  /**
   * Above this many inter-chunk gaps, `inter_chunk_latency` percentiles come from a 0.1%
   * histogram instead of exact storage (AIPerf bounds memory for this list metric too).
   * @default 4_000_000
   */
  exactChunkGapLimit?: number;
  /**
   * AIPerf `--use-server-token-count`: ISL and OSL from the server's `usage` (a request without
   * usage counts as the client's tokenizer counted it). @default false
   */
  useServerTokenCount?: boolean;
  /**
   * The endpoint answers with tokens (false for embeddings): when false, the metrics about output
   * tokens ({@link OUTPUT_TOKEN_TAGS}) are left out, as AIPerf leaves them out. @default true
   */
  producesTokens?: boolean;
  /**
   * Also AIPerf's time-weighted load metrics (`effective_concurrency`, `effective_prefill_concurrency`,
   * `tokens_in_flight`; see `timeWeightedMetrics`). Off for the simulator's large runs. @default false
   */
  timeWeighted?: boolean;
}

/** AIPerf's metrics that exist only for endpoints that produce tokens (its `PRODUCES_TOKENS_ONLY` flag). */
export const OUTPUT_TOKEN_TAGS: readonly string[] = [
  'output_sequence_length', 'output_token_count', 'reasoning_token_count', 'total_osl', 'total_output_tokens', 'total_reasoning_tokens',
  'output_token_throughput', 'total_token_throughput', 'usage_completion_tokens', 'usage_total_tokens', 'usage_reasoning_tokens',
];

/** Per-request values of one record, as AIPerf defines them; null where not applicable. */
export interface RecordMetrics {
  ttftMs: number | null;
  ttstMs: number | null;
  requestLatencyMs: number;
  itlMs: number | null;
  outputTokensPerSPerUser: number | null;
  osl: number;
  isl: number;
  /** Reasoning tokens (part of `osl`); null when the answer had no reasoning channel. */
  reasoning: number | null;
  /** Time to the first answer token (after any reasoning); null without a first token. */
  ttfoMs: number | null;
}

/**
 * The per-request metrics of one ok record (docs/reference.md#aiperf-metrics): request latency ends at the last
 * content chunk (or the response end when nothing streamed); ITL only when OSL >= 2 and the
 * response streamed at least two chunks (a non-streaming response has no inter-token timing).
 * Written into `into` when given (a caller folding records in one by one reuses one).
 */
export function recordMetrics(r: RequestRecord, into?: RecordMetrics, useServerTokenCount = false): RecordMetrics {
  const n = r.chunkMs.length;
  const lastMs = n > 0 ? r.chunkMs[n - 1]! : r.endMs;
  const requestLatencyMs = lastMs - r.startMs;
  const ttftMs = r.firstTokenMs === null ? null : r.firstTokenMs - r.startMs;
  const ttstMs = n >= 2 ? r.chunkMs[1]! - r.chunkMs[0]! : null;
  const osl = useServerTokenCount ? (r.outputTokens.server ?? r.outputTokens.client) : r.outputTokens.client;
  const itlMs = ttftMs !== null && osl >= 2 && n >= 2 ? (requestLatencyMs - ttftMs) / (osl - 1) : null;
  const outputTokensPerSPerUser = itlMs !== null && itlMs > 0 ? 1000 / itlMs : null;
  const m = into ?? blankMetrics();
  m.ttftMs = ttftMs;
  m.ttstMs = ttstMs;
  m.requestLatencyMs = requestLatencyMs;
  m.itlMs = itlMs;
  m.outputTokensPerSPerUser = outputTokensPerSPerUser;
  m.osl = osl;
  m.isl = useServerTokenCount ? (r.inputTokens.server ?? r.inputTokens.client) : r.inputTokens.client;
  const rt = r.reasoningTokens;
  m.reasoning = rt === undefined ? null : useServerTokenCount ? (rt.server ?? rt.client) : (rt.client ?? rt.server);
  m.ttfoMs = r.firstOutputMs === undefined ? ttftMs : r.firstOutputMs === null || ttftMs === null ? null : r.firstOutputMs - r.startMs;
  return m;
}

// The token counts the time-weighted metrics read: module-level functions, not one closure per summary,
// so V8's optimized code of the curve, which inlines them, does not die with each run's closure.
const tokensScratch = blankMetrics();
const clientTokens = (r: RequestRecord): RecordMetrics => recordMetrics(r, tokensScratch, false);
const serverTokens = (r: RequestRecord): RecordMetrics => recordMetrics(r, tokensScratch, true);

/** A RecordMetrics to fill with `recordMetrics(r, into)`. */
export function blankMetrics(): RecordMetrics {
  return { ttftMs: null, ttstMs: null, requestLatencyMs: 0, itlMs: null, outputTokensPerSPerUser: null, osl: 0, isl: 0, reasoning: null, ttfoMs: null };
}

function goodValue(m: RecordMetrics, tag: string): number | null {
  switch (tag) {
    case 'time_to_first_token':
      return m.ttftMs;
    case 'time_to_second_token':
      return m.ttstMs;
    case 'inter_token_latency':
      return m.itlMs;
    case 'request_latency':
      return m.requestLatencyMs;
    case 'output_token_throughput_per_user':
      return m.outputTokensPerSPerUser;
    default:
      return null;
  }
}

/** Validates goodput SLO tags up front so a typo is a clear user error, not a silent zero. */
function checkGoodput(goodput: Record<string, number>): void {
  for (const [tag, v] of Object.entries(goodput)) {
    if (!GOODPUT_TAGS.includes(tag)) {
      throw new TailgateError('CONFIG_INVALID', `unknown goodput metric "${tag}" (use one of: ${GOODPUT_TAGS.join(', ')})`);
    }
    if (!Number.isFinite(v) || v < 0) throw new TailgateError('CONFIG_INVALID', `goodput threshold for ${tag} must be a non-negative number, got ${v}`);
  }
}

class Column {
  private data = new Float64Array(1024);
  length = 0;
  push(v: number): void {
    if (this.length === this.data.length) {
      const next = new Float64Array(this.data.length * 2);
      next.set(this.data);
      this.data = next;
    }
    this.data[this.length++] = v;
  }
  values(): Float64Array {
    return this.data.subarray(0, this.length);
  }
}

function sortedCopy(values: number[]): Float64Array {
  return Float64Array.from(values).sort();
}

function p(sorted: Float64Array, q: number): number | null {
  return sorted.length === 0 ? null : percentile(sorted, q);
}

/** Messages that carry ids would make one group per request: keep the largest, fold the rest. */
const MAX_ERROR_GROUPS = 20;

/** Failed requests grouped by outcome, status and message (cut to 300 characters), as `error_summary` lists them. */
export class ErrorGroups {
  readonly #groups = new Map<string, ErrorGroup>();

  add(r: RequestRecord): void {
    const message = (r.error ?? r.outcome).slice(0, 300);
    const key = `${r.outcome}\u0000${r.status ?? ''}\u0000${message}`;
    const g = this.#groups.get(key);
    if (g) g.count++;
    else this.#groups.set(key, { kind: r.outcome, status: r.status, message, count: 1 });
  }

  /** The groups, largest first, at most MAX_ERROR_GROUPS (the smallest folded into one). */
  list(): ErrorGroup[] {
    const groups = [...this.#groups.values()].sort((a, b) => b.count - a.count);
    if (groups.length <= MAX_ERROR_GROUPS) return groups;
    const rest = groups.slice(MAX_ERROR_GROUPS - 1);
    const other = rest.reduce((n, g) => n + g.count, 0);
    const kinds = [...new Set(rest.map((g) => g.kind))];
    return [
      ...groups.slice(0, MAX_ERROR_GROUPS - 1),
      { kind: rest[0]!.kind, status: null, message: `${rest.length} other distinct errors (${kinds.join(', ')})`, count: other },
    ];
  }
}

/** Inter-chunk gaps kept exactly by default; more go through the 0.1% histogram. */
const EXACT_GAP_LIMIT = 4_000_000;

/**
 * Builds the same Summary as {@link summarize} one record at a time, keeping only numbers (per
 * metric columns, start/end/worker of every record for the peaks), never the records: a caller
 * that needs only the summary can pass one reused record object. Order of `add` calls matters
 * as in `summarize` (the order of `records`).
 *
 * @example
 * const b = new SummaryBuilder({ exactChunkGapLimit: 0 });
 * for (const r of records) b.add(r);
 * b.build(); // deep-equal to summarize(records, { exactChunkGapLimit: 0 })
 */
export class SummaryBuilder {
  readonly #m = blankMetrics();
  readonly #goodTags: [string, number][];
  readonly #gapLimit: number;
  readonly #cols = {
    time_to_first_token: new Column(),
    time_to_second_token: new Column(),
    time_to_first_output_token: new Column(),
    request_latency: new Column(),
    inter_token_latency: new Column(),
    output_token_throughput_per_user: new Column(),
    prefill_throughput_per_user: new Column(),
    output_sequence_length: new Column(),
    input_sequence_length: new Column(),
    output_token_count: new Column(),
    reasoning_token_count: new Column(),
    usage_prompt_tokens: new Column(),
    usage_completion_tokens: new Column(),
    usage_total_tokens: new Column(),
    usage_reasoning_tokens: new Column(),
    error_isl: new Column(),
  };
  #reasoningTotal = 0;
  #withReasoning = 0;
  readonly #serverCounts: boolean;
  #islTotal = 0;
  #errorIslTotal = 0;
  // Gaps stay exact up to the limit, then move (in order) into the histogram, as summarize decided up front.
  #exactGaps: Column | null = new Column();
  #gapHist: LogHistogram | null = null;
  #startMs = Number.POSITIVE_INFINITY;
  #endMs = Number.NEGATIVE_INFINITY;
  #profiling = 0;
  #okCount = 0;
  #outputTokens = 0;
  #goodCount = 0;
  #clientIn = 0;
  #serverIn = 0;
  #clientOut = 0;
  #serverOut = 0;
  #withUsage = 0;
  readonly #errors = new ErrorGroups();
  readonly #perWorkerTtft = new Map<string, number[]>();
  readonly #perWorkerLatency = new Map<string, number[]>();
  readonly #perWorker: Record<string, WorkerSummary> = {};
  #namedRequests = 0;
  // Every record (all phases), for the in-flight peaks: start, end, worker index (-1: none).
  readonly #evStart = new Column();
  readonly #evEnd = new Column();
  readonly #evWorker = new Column();
  readonly #workerIndex = new Map<string, number>();
  readonly #workerNames: string[] = [];

  readonly #producesTokens: boolean;

  constructor(opts: SummarizeOptions = {}) {
    if (opts.goodput) checkGoodput(opts.goodput);
    this.#goodTags = opts.goodput ? Object.entries(opts.goodput) : [];
    this.#gapLimit = opts.exactChunkGapLimit ?? EXACT_GAP_LIMIT;
    this.#serverCounts = opts.useServerTokenCount === true;
    this.#producesTokens = opts.producesTokens !== false;
    if (this.#gapLimit <= 0) this.#toHistogram();
  }

  #toHistogram(): void {
    const h = new LogHistogram();
    if (this.#exactGaps) for (const v of this.#exactGaps.values()) h.add(v);
    this.#exactGaps = null;
    this.#gapHist = h;
  }

  #addEvent(r: RequestRecord): void {
    this.#evStart.push(r.startMs);
    this.#evEnd.push(r.endMs);
    let w = -1;
    if (r.worker !== null) {
      const known = this.#workerIndex.get(r.worker);
      if (known !== undefined) w = known;
      else {
        w = this.#workerNames.push(r.worker) - 1;
        this.#workerIndex.set(r.worker, w);
      }
    }
    this.#evWorker.push(w);
  }

  /** Folds one record in; the builder keeps nothing that refers to it. */
  add(r: RequestRecord): void {
    this.#addEvent(r);
    if (r.phase !== 'profiling') return;
    this.#profiling++;
    if (r.startMs < this.#startMs) this.#startMs = r.startMs;
    if (r.endMs > this.#endMs) this.#endMs = r.endMs;
    const w = r.worker;
    let ws: WorkerSummary | undefined;
    if (w !== null) {
      this.#namedRequests++;
      ws = this.#perWorker[w] ??= {
        requests: 0, ok: 0, shareOfRequests: 0, outputTokens: 0,
        ttftP50Ms: null, ttftP99Ms: null, requestLatencyP99Ms: null, peakInflight: 0, peakAtMs: null,
      };
      ws.requests++;
    }
    const cols = this.#cols;
    if (r.outcome !== 'ok') {
      this.#errors.add(r);
      cols.error_isl.push(r.inputTokens.client);
      this.#errorIslTotal += r.inputTokens.client;
      return;
    }
    this.#okCount++;
    const m = recordMetrics(r, this.#m, this.#serverCounts);
    this.#outputTokens += m.osl;
    this.#islTotal += m.isl;
    if (m.ttftMs !== null) cols.time_to_first_token.push(m.ttftMs);
    if (m.ttstMs !== null) cols.time_to_second_token.push(m.ttstMs);
    cols.request_latency.push(m.requestLatencyMs);
    if (m.itlMs !== null) cols.inter_token_latency.push(m.itlMs);
    if (m.outputTokensPerSPerUser !== null) cols.output_token_throughput_per_user.push(m.outputTokensPerSPerUser);
    if (m.ttftMs !== null && m.ttftMs > 0) cols.prefill_throughput_per_user.push((m.isl * 1000) / m.ttftMs);
    cols.output_sequence_length.push(m.osl);
    cols.input_sequence_length.push(m.isl);
    if (m.ttfoMs !== null) cols.time_to_first_output_token.push(m.ttfoMs);
    if (m.reasoning === null) cols.output_token_count.push(m.osl);
    else {
      // AIPerf: OSL = answer + reasoning tokens; an answer of no tokens has no output_token_count.
      this.#withReasoning++;
      this.#reasoningTotal += m.reasoning;
      cols.reasoning_token_count.push(m.reasoning);
      if (m.osl - m.reasoning > 0) cols.output_token_count.push(m.osl - m.reasoning);
    }
    if (r.reasoningTokens?.server != null) cols.usage_reasoning_tokens.push(r.reasoningTokens.server);
    if (r.inputTokens.server !== null) cols.usage_prompt_tokens.push(r.inputTokens.server);
    if (r.outputTokens.server !== null) cols.usage_completion_tokens.push(r.outputTokens.server);
    if (r.inputTokens.server !== null && r.outputTokens.server !== null) cols.usage_total_tokens.push(r.inputTokens.server + r.outputTokens.server);
    if (r.inputTokens.server !== null || r.outputTokens.server !== null) {
      this.#withUsage++;
      this.#clientIn += r.inputTokens.client;
      this.#serverIn += r.inputTokens.server ?? r.inputTokens.client;
      this.#clientOut += r.outputTokens.client;
      this.#serverOut += r.outputTokens.server ?? r.outputTokens.client;
    }
    for (let k = 1; k < r.chunkMs.length; k++) {
      const gap = r.chunkMs[k]! - r.chunkMs[k - 1]!;
      if (this.#exactGaps) {
        if (this.#exactGaps.length < this.#gapLimit) {
          this.#exactGaps.push(gap);
          continue;
        }
        this.#toHistogram();
      }
      this.#gapHist!.add(gap);
    }
    if (this.#goodTags.length > 0) {
      let good = true;
      for (const [tag, limit] of this.#goodTags) {
        const v = goodValue(m, tag);
        const higher = metricInfo(tag)?.higherIsBetter === true;
        if (v === null || (higher ? v < limit : v > limit)) {
          good = false;
          break;
        }
      }
      if (good) this.#goodCount++;
    }
    if (w !== null && ws) {
      ws.ok++;
      ws.outputTokens += m.osl;
      if (m.ttftMs !== null) (this.#perWorkerTtft.get(w) ?? this.#perWorkerTtft.set(w, []).get(w)!).push(m.ttftMs);
      (this.#perWorkerLatency.get(w) ?? this.#perWorkerLatency.set(w, []).get(w)!).push(m.requestLatencyMs);
    }
  }

  /** The summary of every record added; call once (it sorts the columns in place). */
  build(): Summary {
    const prof = this.#profiling;
    const okCount = this.#okCount;
    const startMs = prof === 0 ? 0 : this.#startMs;
    const endMs = prof === 0 ? 0 : this.#endMs;
    const durationMs = Math.max(0, endMs - startMs);
    const durationS = durationMs / 1000;
    const metrics: Record<string, MetricBlock | ScalarMetric> = {};
    for (const info of METRIC_CATALOG) {
      if (info.kind !== 'record') continue;
      if (info.tag === 'inter_chunk_latency') {
        const block = this.#exactGaps ? describe(this.#exactGaps.values(), info.unit) : this.#gapHist!.toBlock(info.unit);
        if (block) metrics[info.tag] = block;
        continue;
      }
      const cols = this.#cols;
      const col = cols[info.tag as keyof typeof cols];
      const block = describe(col.values(), info.unit);
      if (block) metrics[info.tag] = block;
    }
    const rate = (n: number): number => (durationS > 0 ? n / durationS : 0);
    const errors = prof - okCount;
    metrics.benchmark_duration = { unit: 'sec', avg: durationS };
    metrics.request_throughput = { unit: 'requests/sec', avg: rate(okCount) };
    metrics.request_count = { unit: 'requests', avg: okCount };
    metrics.output_token_throughput = { unit: 'tokens/sec', avg: rate(this.#outputTokens) };
    metrics.total_token_throughput = { unit: 'tokens/sec', avg: rate(this.#outputTokens + this.#islTotal) };
    metrics.total_output_tokens = { unit: 'tokens', avg: this.#outputTokens - this.#reasoningTotal };
    if (this.#withReasoning > 0) metrics.total_reasoning_tokens = { unit: 'tokens', avg: this.#reasoningTotal };
    metrics.total_osl = { unit: 'tokens', avg: this.#outputTokens };
    metrics.total_isl = { unit: 'tokens', avg: this.#islTotal };
    if (this.#goodTags.length > 0) {
      metrics.goodput = { unit: 'requests/sec', avg: rate(this.#goodCount) };
      metrics.good_request_count = { unit: 'requests', avg: this.#goodCount };
      metrics.good_request_fraction = { unit: 'ratio', avg: prof > 0 ? this.#goodCount / prof : 0 };
    }
    metrics.request_error_rate = { unit: '%', avg: prof > 0 ? (errors / prof) * 100 : 0 };
    // AIPerf writes the error metrics only for a run that had errors.
    if (errors > 0) {
      metrics.error_request_count = { unit: 'requests', avg: errors };
      metrics.total_error_isl = { unit: 'tokens', avg: this.#errorIslTotal };
    }

    if (!this.#producesTokens) for (const tag of OUTPUT_TOKEN_TAGS) delete metrics[tag];

    const peaks = peakInflightOf(this.#evStart.values(), this.#evEnd.values(), this.#evWorker.values(), this.#workerNames).byWorker;
    const named = this.#namedRequests;
    for (const [w, ws] of Object.entries(this.#perWorker)) {
      ws.shareOfRequests = named > 0 ? ws.requests / named : 0;
      const ttft = sortedCopy(this.#perWorkerTtft.get(w) ?? []);
      const lat = sortedCopy(this.#perWorkerLatency.get(w) ?? []);
      ws.ttftP50Ms = p(ttft, 50);
      ws.ttftP99Ms = p(ttft, 99);
      ws.requestLatencyP99Ms = p(lat, 99);
      ws.peakInflight = peaks[w]?.peak ?? 0;
      ws.peakAtMs = peaks[w]?.atMs ?? null;
    }

    const gapPct = (client: number, server: number): number => (client > 0 ? (Math.abs(server - client) / client) * 100 : server > 0 ? 100 : 0);
    const disagreementPct = this.#withUsage > 0 ? Math.max(gapPct(this.#clientIn, this.#serverIn), gapPct(this.#clientOut, this.#serverOut)) : null;

    return {
      metrics,
      startMs,
      endMs,
      durationMs,
      profilingCount: prof,
      okCount,
      errorCount: prof - okCount,
      errorSummary: this.#errors.list(),
      perWorker: this.#perWorker,
      tokenSources: { input: 'client', output: 'client', disagreementPct },
    };
  }
}

/**
 * Turns one run's records into AIPerf-named metrics over the PROFILING phase only (warm-up
 * excluded), plus error groups, a per-worker breakdown and token-source agreement.
 *
 * @example
 * const s = summarize(records, { goodput: { time_to_first_token: 2000 } });
 * s.metrics.time_to_first_token; // { unit: 'ms', avg, min, max, p1..p99, std, count, sum }
 */
export function summarize(records: readonly RequestRecord[], opts: SummarizeOptions = {}): Summary {
  // Past the limit, gaps go straight to the histogram (a builder would first keep the limit's worth exactly).
  let gaps = 0;
  for (const r of records) if (r.phase === 'profiling' && r.outcome === 'ok') gaps += Math.max(0, r.chunkMs.length - 1);
  const b = new SummaryBuilder(gaps > (opts.exactChunkGapLimit ?? EXACT_GAP_LIMIT) ? { ...opts, exactChunkGapLimit: 0 } : opts);
  for (const r of records) b.add(r);
  const summary = b.build();
  if (opts.timeWeighted === true && opts.producesTokens !== false) {
    Object.assign(summary.metrics, timeWeightedMetrics(records, opts.useServerTokenCount === true ? serverTokens : clientTokens));
  }
  return summary;
}
