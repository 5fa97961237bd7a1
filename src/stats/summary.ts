import type { Outcome } from '../core/index.js';
import type { MetricBlock, ScalarMetric } from './metric-block.js';

/** Requests that failed the same way, counted together (AIPerf's `error_summary`). */
export interface ErrorGroup {
  kind: Outcome;
  status: number | null;
  message: string;
  count: number;
}

/** One worker's share of a run, from `record.worker` (profiling phase). */
export interface WorkerSummary {
  requests: number;
  ok: number;
  /** requests / all profiling requests that named a worker. */
  shareOfRequests: number;
  outputTokens: number;
  ttftP50Ms: number | null;
  ttftP99Ms: number | null;
  requestLatencyP99Ms: number | null;
  /** Most requests open on this worker at once (all phases, from start/end times). */
  peakInflight: number;
  /** When that peak was first reached (ms, run origin). */
  peakAtMs: number | null;
}

/** Everything `stats/` derives from one run's records. */
export interface Summary {
  /** AIPerf tag -> block (record metrics) or `{unit, avg}` (run-level metrics). */
  metrics: Record<string, MetricBlock | ScalarMetric>;
  /** Min request start over profiling records (ms, run origin); 0 when there are none. */
  startMs: number;
  /** Max request end over profiling records. */
  endMs: number;
  durationMs: number;
  profilingCount: number;
  okCount: number;
  errorCount: number;
  errorSummary: ErrorGroup[];
  perWorker: Record<string, WorkerSummary>;
  /**
   * Where token counts come from: the client's tokenizer (as AIPerf). `disagreementPct` is the
   * largest relative gap between client and server `usage` totals (input or output), null when
   * the server sent no usage. `tokenizer` names the client tokenizer (bench sets it); `fallback`
   * says why the word rule stood in for the one asked for.
   */
  tokenSources: { input: 'client'; output: 'client'; disagreementPct: number | null; tokenizer?: string; fallback?: string };
}
