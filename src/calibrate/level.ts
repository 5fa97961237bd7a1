/** The figures the fit compares, each the AIPerf statistic it is read from. */
export interface LevelFigures {
  /** output_token_throughput.avg, tokens/s over all workers. */
  outputTokPerS: number;
  /** request_throughput.avg, requests/s over all workers. */
  requestsPerS: number;
  /** time_to_first_token.p50; NaN when the file has none (a published table's mean only). */
  ttftP50Ms: number;
  /** time_to_first_token.avg (smoother in the parameters than p50: the fit reads it); NaN when the file has none. */
  ttftMeanMs: number;
  /** Absent when the file has none (a published table with p50 and p95 only). */
  ttftP99Ms: number | null;
  /** inter_token_latency.p50; NaN when the file has none (a published table's TPOT is a mean). */
  itlP50Ms: number;
  /** inter_token_latency.avg (the mean step time the fit reads); NaN when the file has none. */
  itlMeanMs: number;
  latencyP50Ms: number;
  /** Standard error of itlMeanMs (std / sqrt(count)), null when the file gives no spread. */
  itlMeanSeMs: number | null;
  /** Standard error of ttftMeanMs (std / sqrt(count)), null when the file gives no spread. */
  ttftMeanSeMs: number | null;
}

/** What the server's own /metrics showed during the level (AIPerf's server_metrics_export.json). */
export interface LevelServerMetrics {
  runningMax: number;
  runningAvg: number;
  waitingMax: number;
  kvUsageAvg: number | null;
  /** Share of prompt tokens found in the prefix cache over the run, null when not reported. */
  prefixHitRatio: number | null;
  preemptions: number | null;
}

/** One load level read from one RUN: the workload, the load, and what was measured. */
export interface Level {
  /** The file it was read from (named in errors and reports). */
  source: string;
  /** A short label: c=8 or rate=4/s. */
  label: string;
  model: string;
  /** The endpoint benchmarked (the first URL), '' when the file does not say. */
  server: string;
  load: { kind: 'closed'; concurrency: number } | { kind: 'rate'; ratePerS: number };
  /** Workers behind the endpoint (tailgate's per-worker block; 1 when the file does not say). */
  workers: number;
  inputTokens: number;
  outputTokens: number;
  /** Spread (standard deviation) of the request lengths: from the per-request records where present, else the summary's std, else 0. */
  inputTokensStd: number;
  outputTokensStd: number;
  /** Per-request records read (bench's profile_export.jsonl beside the export), null when none were. */
  records: number | null;
  requestCount: number;
  warmupRequestCount: number;
  /** Distinct prompts the run drew from (input_config.input.conversation.num_dataset_entries), null when not said. */
  datasetEntries: number | null;
  measured: LevelFigures;
  serverMetrics: LevelServerMetrics | null;
}
