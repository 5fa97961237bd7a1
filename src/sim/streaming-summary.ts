import type { RequestRecord } from '../core/index.js';
import type { WorkerSeries } from '../gate/index.js';
import { ErrorGroups, LogHistogram, blankMetrics, recordMetrics, type MetricBlock, type ScalarMetric, type Summary, type WorkerSummary } from '../stats/index.js';

type Tag = 'time_to_first_token' | 'request_latency' | 'inter_token_latency' | 'output_token_throughput_per_user' | 'output_sequence_length' | 'input_sequence_length';

/**
 * A Summary built as records end, without keeping them (fleet-scale runs): the same AIPerf tags
 * as `summarize`, with percentiles from 0.1% log histograms. Inter-chunk gaps are not kept.
 */
export class StreamingSummary {
  readonly #m = blankMetrics();
  readonly #h = {
    time_to_first_token: new LogHistogram(),
    request_latency: new LogHistogram(),
    inter_token_latency: new LogHistogram(),
    output_token_throughput_per_user: new LogHistogram(),
    output_sequence_length: new LogHistogram(),
    input_sequence_length: new LogHistogram(),
  };
  readonly #units: Record<Tag, string> = {
    time_to_first_token: 'ms',
    request_latency: 'ms',
    inter_token_latency: 'ms',
    output_token_throughput_per_user: 'tokens/sec/user',
    output_sequence_length: 'tokens',
    input_sequence_length: 'tokens',
  };
  #startMs = Number.POSITIVE_INFINITY;
  #endMs = Number.NEGATIVE_INFINITY;
  #profiling = 0;
  #ok = 0;
  #outputTokens = 0;
  readonly #errors = new ErrorGroups();
  readonly #perWorker: Record<string, WorkerSummary> = {};
  /** The same, by the caller's worker index (a string-keyed lookup among a fleet's ids cost more). */
  readonly #byIndex: (WorkerSummary | undefined)[] = [];

  /**
   * Folds one record in (warm-up records are ignored, as in `summarize`). `workerIndex`: a number
   * the caller gives `r.worker` (always the same for the same worker), or -1.
   */
  add(r: RequestRecord, workerIndex = -1): void {
    if (r.phase !== 'profiling') return;
    this.#profiling++;
    if (r.startMs < this.#startMs) this.#startMs = r.startMs;
    if (r.endMs > this.#endMs) this.#endMs = r.endMs;
    let ws: WorkerSummary | undefined;
    if (r.worker !== null) {
      ws = workerIndex >= 0 ? (this.#byIndex[workerIndex] ??= this.#workerSummary(r.worker)) : this.#workerSummary(r.worker);
      ws.requests++;
    }
    if (r.outcome !== 'ok') {
      this.#errors.add(r);
      return;
    }
    this.#ok++;
    const m = recordMetrics(r, this.#m);
    this.#outputTokens += m.osl;
    if (ws) {
      ws.ok++;
      ws.outputTokens += m.osl;
    }
    const h = this.#h;
    if (m.ttftMs !== null) h.time_to_first_token.add(m.ttftMs);
    h.request_latency.add(m.requestLatencyMs);
    if (m.itlMs !== null) h.inter_token_latency.add(m.itlMs);
    if (m.outputTokensPerSPerUser !== null) h.output_token_throughput_per_user.add(m.outputTokensPerSPerUser);
    h.output_sequence_length.add(m.osl);
    h.input_sequence_length.add(m.isl);
  }

  #workerSummary(id: string): WorkerSummary {
    return (this.#perWorker[id] ??= {
      requests: 0, ok: 0, shareOfRequests: 0, outputTokens: 0,
      ttftP50Ms: null, ttftP99Ms: null, requestLatencyP99Ms: null, peakInflight: 0, peakAtMs: null,
    });
  }

  /** The summary so far; per-worker peaks come from the sampled series. */
  summary(series: Record<string, WorkerSeries>): Summary {
    const empty = this.#profiling === 0;
    const startMs = empty ? 0 : this.#startMs;
    const endMs = empty ? 0 : this.#endMs;
    const durationMs = Math.max(0, endMs - startMs);
    const durationS = durationMs / 1000;
    const rate = (v: number): number => (durationS > 0 ? v / durationS : 0);
    const metrics: Record<string, MetricBlock | ScalarMetric> = {};
    for (const [tag, hist] of Object.entries(this.#h)) {
      const b = hist.toBlock(this.#units[tag as Tag]);
      if (b) metrics[tag] = b;
    }
    metrics['output_token_throughput'] = { unit: 'tokens/sec', avg: rate(this.#outputTokens) };
    metrics['request_throughput'] = { unit: 'requests/sec', avg: rate(this.#ok) };
    metrics['request_count'] = { unit: 'requests', avg: this.#ok };
    metrics['error_request_count'] = { unit: 'requests', avg: this.#profiling - this.#ok };
    metrics['benchmark_duration'] = { unit: 'sec', avg: durationS };
    let named = 0;
    for (const ws of Object.values(this.#perWorker)) named += ws.requests;
    for (const [id, ws] of Object.entries(this.#perWorker)) {
      ws.shareOfRequests = named > 0 ? ws.requests / named : 0;
      const s = series[id];
      if (s) {
        for (let i = 0; i < s.inflight.length; i++) {
          if (s.inflight[i]! > ws.peakInflight) {
            ws.peakInflight = s.inflight[i]!;
            ws.peakAtMs = s.tMs[i]!;
          }
        }
      }
    }
    return {
      metrics,
      startMs,
      endMs,
      durationMs,
      profilingCount: this.#profiling,
      okCount: this.#ok,
      errorCount: this.#profiling - this.#ok,
      errorSummary: this.#errors.list(),
      perWorker: this.#perWorker,
      tokenSources: { input: 'client', output: 'client', disagreementPct: this.#ok > 0 ? 0 : null },
    };
  }
}
