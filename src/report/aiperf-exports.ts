import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { mkdir, writeFile } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { RequestRecord } from '../core/index.js';
import { METRIC_CATALOG, OUTPUT_TOKEN_TAGS, isMetricBlock, recordMetrics, type Summary } from '../stats/index.js';

/**
 * Version of `profile_export_aiperf.json` we write, as AIPerf's JSON export schema page documents
 * it: 1.5 = `run_info`, `warmup_metrics`, `count`/`sum` on record metrics only.
 */
export const AIPERF_SCHEMA_VERSION = '1.5';

/** What wrote the file: AIPerf's schema carries compatibility; `aiperf_version` stays null (no AIPerf ran). */
export const GENERATOR_NAME = 'tailgate';

/** File names, exactly as AIPerf writes them. */
export const AIPERF_FILES = {
  json: 'profile_export_aiperf.json',
  csv: 'profile_export_aiperf.csv',
  jsonl: 'profile_export.jsonl',
  raw: 'profile_export_raw.jsonl',
} as const;

/**
 * AIPerf's export file names under `--profile-export-prefix P`: `P.json`, `P.csv`, `P.jsonl`,
 * `P_raw.jsonl`, ... (a known suffix on P is dropped); the default names without one.
 */
export function exportFileNames(prefix?: string): { json: string; csv: string; jsonl: string; raw: string; timeslicesJson: string; timeslicesCsv: string; gpuTelemetry: string; serverMetrics: string; outputs: string } {
  if (prefix === undefined || prefix === '') {
    return { ...AIPERF_FILES, timeslicesJson: 'profile_export_aiperf_timeslices.json', timeslicesCsv: 'profile_export_aiperf_timeslices.csv', gpuTelemetry: 'gpu_telemetry_export.jsonl', serverMetrics: 'server_metrics_export', outputs: 'outputs.json' };
  }
  const p = prefix.replace(/(_raw\.jsonl|_timeslices\.(csv|json)|_gpu_telemetry\.jsonl|_server_metrics\.(jsonl|json|csv|parquet)|_outputs\.json|\.jsonl|\.json|\.csv)$/, '');
  return { json: `${p}.json`, csv: `${p}.csv`, jsonl: `${p}.jsonl`, raw: `${p}_raw.jsonl`, timeslicesJson: `${p}_timeslices.json`, timeslicesCsv: `${p}_timeslices.csv`, gpuTelemetry: `${p}_gpu_telemetry.jsonl`, serverMetrics: `${p}_server_metrics`, outputs: `${p}_outputs.json` };
}

/** AIPerf's `run_info` block (schema 1.2+): what reproduces this run from its JSON alone. */
export interface RunInfo {
  random_seed: number | null;
  trial: number;
  run_label: string;
  variation_label: string;
  variation_index: number;
  variation_values: Record<string, unknown>;
  sweep_id: string | null;
  cli_command: string | null;
}

/** Input of {@link writeAiperfExports}. */
export interface AiperfExportInput {
  summary: Summary;
  records: readonly RequestRecord[];
  /** The resolved configuration (AIPerf flag names where they exist); written as `input_config`. */
  inputConfig: Record<string, unknown>;
  /** `summary`: JSON + CSV; `records` and `raw`: also the per-request JSONL. */
  exportLevel: 'summary' | 'records' | 'raw';
  startTime: Date;
  endTime: Date;
  /** Wall-clock epoch ms of the records' time origin (record ms 0). @default startTime */
  originEpochMs?: number;
  /** The run was interrupted (Ctrl-C, SIGTERM, stuck trial). */
  wasCancelled?: boolean;
  /** Our own fields (self-checks, seed, per-worker...): written under the `tailgate` key. */
  extra?: Record<string, unknown>;
  /** tailgate's version, written as `tailgate.version`. @default '0.1.0' */
  version?: string;
  /** `run_info` (the benchmark id is filled in). @default a single run of this seed-less invocation */
  runInfo?: Partial<RunInfo>;
  /** Metrics of the warm-up requests alone (`warmup_metrics`, schema 1.4); omitted when null or absent. */
  warmupSummary?: Summary | null;
  /** `--profile-export-prefix`. */
  filePrefix?: string;
  /** `--use-server-token-count`: per-request ISL/OSL from the server's usage. */
  useServerTokenCount?: boolean;
  /** The endpoint answers with tokens (false: embeddings, whose records carry no output metrics). @default true */
  producesTokens?: boolean;
  /** AIPerf's `telemetry_data` (GPU telemetry). */
  telemetryData?: Record<string, unknown>;
  /**
   * AIPerf flags given but not applied: refused ones run anyway under `--allow-ignored-flags`
   * (`ignored_flags`) and output-only ones (`output_only_flags`). @default none
   */
  aiperfFlags?: { ignored: readonly UnappliedFlagEntry[]; outputOnly: readonly UnappliedFlagEntry[] };
  /** Appended to the CSV export as is (AIPerf's GPU telemetry section). */
  csvAppendix?: string;
}

/** One AIPerf flag given but not applied, as `ignored_flags` / `output_only_flags` list it. */
export interface UnappliedFlagEntry {
  flag: string;
  value: string | string[] | null;
  /** What AIPerf does with it. */
  aiperf: string;
}

/** Redacts the value after `--api-key` (and `Authorization` headers) from a command line. */
export function redactCommand(argv: readonly string[]): string {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--api-key' && i + 1 < argv.length) {
      out.push(a, '<redacted>');
      i++;
    } else if (a.startsWith('--api-key=')) out.push('--api-key=<redacted>');
    else out.push(/^authorization:/i.test(a) ? 'Authorization:<redacted>' : /\s/.test(a) ? JSON.stringify(a) : a);
  }
  return out.join(' ');
}

/**
 * The `profile_export_aiperf.json` document: AIPerf's top-level fields, one block per metric
 * tag (record metrics full, run-level metrics `{unit, avg}`), our own fields under `tailgate`.
 */
export function aiperfJson(input: AiperfExportInput): Record<string, unknown> {
  const { summary } = input;
  const wasCancelled = input.wasCancelled ?? input.extra?.was_cancelled === true;
  const benchmarkId = randomUUID();
  const ri = input.runInfo ?? {};
  const doc: Record<string, unknown> = {
    schema_version: AIPERF_SCHEMA_VERSION,
    // AIPerf's schema types this as optional (null for exports no AIPerf release wrote).
    aiperf_version: null,
    generator: { name: GENERATOR_NAME, version: input.version ?? '0.1.0' },
    benchmark_id: benchmarkId,
    start_time: input.startTime.toISOString(),
    end_time: input.endTime.toISOString(),
    was_cancelled: wasCancelled,
    input_config: input.inputConfig,
    run_info: {
      benchmark_id: benchmarkId,
      sweep_id: ri.sweep_id ?? null,
      random_seed: ri.random_seed ?? null,
      trial: ri.trial ?? 0,
      run_label: ri.run_label ?? 'run_0001',
      variation_label: ri.variation_label ?? 'base',
      variation_index: ri.variation_index ?? 0,
      variation_values: ri.variation_values ?? {},
      cli_command: ri.cli_command ?? null,
    },
    error_summary: summary.errorSummary.map((g) => ({
      error_details: { code: errorCode(g.kind, g.status), type: errorType(g.kind), message: g.message },
      count: g.count,
    })),
    runtime_submission_invalid_reasons: [],
    ignored_flags: input.aiperfFlags?.ignored ?? [],
    output_only_flags: input.aiperfFlags?.outputOnly ?? [],
  };
  Object.assign(doc, metricsWithTimestamps(summary, input.originEpochMs ?? input.startTime.getTime()));
  if (input.warmupSummary && input.warmupSummary.profilingCount > 0) doc.warmup_metrics = metricsWithTimestamps(input.warmupSummary, input.originEpochMs ?? input.startTime.getTime());
  if (input.telemetryData) doc.telemetry_data = input.telemetryData;
  doc.tailgate = {
    version: input.version ?? '0.1.0',
    per_worker: summary.perWorker,
    token_sources: summary.tokenSources,
    profiling_count: summary.profilingCount,
    ...input.extra,
  };
  return doc;
}

/** HTTP status of a failed request as AIPerf reports it: 499 for a cancellation, as AIPerf does. */
export function errorCode(kind: string, status: number | null): number | null {
  return kind === 'aborted' ? 499 : status;
}

/** AIPerf's error type names where one exists (its exception class names). */
export function errorType(kind: string): string {
  return kind === 'aborted' ? 'RequestCancellationError' : kind;
}

/** The metric blocks in catalog order, with AIPerf's two wall-clock timestamps (epoch ns). */
function metricsWithTimestamps(summary: Summary, originEpochMs: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const info of METRIC_CATALOG) {
    const m = summary.metrics[info.tag];
    if (m) out[info.tag] = m;
  }
  for (const [tag, m] of Object.entries(summary.metrics)) if (!(tag in out)) out[tag] = m;
  if (summary.profilingCount > 0) {
    out.min_request_timestamp = { unit: 'ns', avg: Math.round((originEpochMs + summary.startMs) * 1e6) };
    out.max_response_timestamp = { unit: 'ns', avg: Math.round((originEpochMs + summary.endMs) * 1e6) };
  }
  return out;
}

function csvNumber(v: number): string {
  return Number.isFinite(v) ? v.toFixed(2) : '';
}

/** AIPerf's human name with its unit, e.g. `Time to First Token (ms)`; counts carry no unit. */
export function metricLabel(tag: string, unit: string): string {
  const info = METRIC_CATALOG.find((m) => m.tag === tag);
  const name = info?.header ?? tag.split('_').map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join(' ');
  return unit === 'requests' ? name : `${name} (${unit})`;
}

/** The `profile_export_aiperf.csv` text: distributions, a blank line, then `Metric,Value` scalars. */
export function aiperfCsv(summary: Summary): string {
  const stats = ['avg', 'min', 'max', 'p1', 'p5', 'p10', 'p25', 'p50', 'p75', 'p90', 'p95', 'p99', 'std'] as const;
  const dist: string[] = [`Metric,${stats.join(',')}`];
  const scalars: string[] = ['Metric,Value'];
  const tags = [...METRIC_CATALOG.map((m) => m.tag), ...Object.keys(summary.metrics).filter((t) => !METRIC_CATALOG.some((m) => m.tag === t))];
  for (const tag of tags) {
    const m = summary.metrics[tag];
    if (!m) continue;
    const label = metricLabel(tag, m.unit);
    if (isMetricBlock(m)) dist.push([label, ...stats.map((s) => csvNumber(m[s]))].join(','));
    // A time-weighted metric is a distribution without the low percentiles: those cells stay empty.
    else if ('p50' in m) dist.push([label, ...stats.map((s) => csvNumber((m as unknown as Record<string, number>)[s] ?? Number.NaN))].join(','));
    else scalars.push(`${label},${csvNumber(m.avg)}`);
  }
  return `${dist.join('\n')}\n\n${scalars.join('\n')}\n`;
}

/** `originEpochMs + ms` in integer nanoseconds since the epoch, as digits (past 2^53, so not a number). */
export function epochNs(originEpochMs: number, ms: number): string {
  return (BigInt(Math.round(originEpochMs)) * 1_000_000n + BigInt(Math.round(ms * 1e6))).toString();
}

/** One `profile_export.jsonl` line (no newline) in AIPerf's record shape, ns as exact integers. */
export function aiperfJsonlLine(r: RequestRecord, index: number, originEpochMs: number, useServerTokenCount = false, producesTokens = true): string {
  const start = epochNs(originEpochMs, r.startMs);
  const end = epochNs(originEpochMs, r.endMs);
  const cancelled = r.outcome === 'aborted';
  // Nanosecond epochs exceed 2^53, so they are spliced in as integer text rather than numbers.
  const conversation = r.conversationId === undefined ? 'null' : JSON.stringify(r.conversationId);
  const metadata = `{"session_num":${index},"x_request_id":${JSON.stringify(r.id)},"x_correlation_id":${JSON.stringify(r.conversationId ?? r.id)},`
    + `"conversation_id":${conversation},"turn_index":${r.turnIndex ?? 0},"request_start_ns":${start},"request_ack_ns":null,"request_end_ns":${end},`
    + `"worker_id":"tailgate_bench","record_processor_id":"tailgate_stats","benchmark_phase":"${r.phase}",`
    + `"was_cancelled":${cancelled},"cancellation_time_ns":${cancelled ? end : 'null'},`
    + `"tailgate_worker":${JSON.stringify(r.worker)},"tailgate_redispatched":${r.redispatched},"tailgate_migrated":${r.migrated}}`;
  const metrics: Record<string, { value: number | number[]; unit: string }> = {};
  let error: { code: number | null; type: string; message: string } | null = null;
  if (r.outcome === 'ok') {
    const m = recordMetrics(r, undefined, useServerTokenCount);
    metrics.input_sequence_length = { value: m.isl, unit: 'tokens' };
    if (m.ttftMs !== null) metrics.time_to_first_token = { value: m.ttftMs, unit: 'ms' };
    if (m.ttstMs !== null) metrics.time_to_second_token = { value: m.ttstMs, unit: 'ms' };
    if (m.ttfoMs !== null) metrics.time_to_first_output_token = { value: m.ttfoMs, unit: 'ms' };
    metrics.request_latency = { value: m.requestLatencyMs, unit: 'ms' };
    // With a reasoning channel, AIPerf splits the OSL: answer tokens (none: no value) and reasoning tokens.
    if (m.reasoning === null) metrics.output_token_count = { value: m.osl, unit: 'tokens' };
    else {
      if (m.osl - m.reasoning > 0) metrics.output_token_count = { value: m.osl - m.reasoning, unit: 'tokens' };
      metrics.reasoning_token_count = { value: m.reasoning, unit: 'tokens' };
    }
    if (r.chunkMs.length > 1) {
      const gaps = new Array<number>(r.chunkMs.length - 1);
      for (let k = 1; k < r.chunkMs.length; k++) gaps[k - 1] = r.chunkMs[k]! - r.chunkMs[k - 1]!;
      metrics.inter_chunk_latency = { value: gaps, unit: 'ms' };
    }
    metrics.output_sequence_length = { value: m.osl, unit: 'tokens' };
    if (m.itlMs !== null) metrics.inter_token_latency = { value: m.itlMs, unit: 'ms' };
    if (m.outputTokensPerSPerUser !== null) metrics.output_token_throughput_per_user = { value: m.outputTokensPerSPerUser, unit: 'tokens/sec/user' };
    if (r.inputTokens.server !== null) metrics.usage_prompt_tokens = { value: r.inputTokens.server, unit: 'tokens' };
    if (r.outputTokens.server !== null) metrics.usage_completion_tokens = { value: r.outputTokens.server, unit: 'tokens' };
    if (r.reasoningTokens?.server != null) metrics.usage_reasoning_tokens = { value: r.reasoningTokens.server, unit: 'tokens' };
    if (!producesTokens) for (const tag of OUTPUT_TOKEN_TAGS) delete metrics[tag];
  } else {
    metrics.error_isl = { value: r.inputTokens.client, unit: 'tokens' };
    error = { code: errorCode(r.outcome, r.status), type: errorType(r.outcome), message: r.error ?? r.outcome };
  }
  return `{"metadata":${metadata},"metrics":${JSON.stringify(metrics)},"error":${JSON.stringify(error)}}`;
}

/**
 * Writes AIPerf-compatible exports into `dir` (created if missing): `profile_export_aiperf.json`,
 * `profile_export_aiperf.csv`, and for export level `records`/`raw` `profile_export.jsonl` with
 * one line per profiling request (our worker in `metadata.tailgate_worker`).
 *
 * @example
 * await writeAiperfExports('artifacts/run1', { summary, records, inputConfig, exportLevel: 'records',
 *   startTime, endTime });
 */
export async function writeAiperfExports(dir: string, input: AiperfExportInput): Promise<void> {
  await mkdir(dir, { recursive: true });
  const files = exportFileNames(input.filePrefix);
  await writeFile(join(dir, files.json), `${JSON.stringify(aiperfJson(input), null, 2)}\n`);
  await writeFile(join(dir, files.csv), aiperfCsv(input.summary) + (input.csvAppendix ?? ''));
  if (input.exportLevel === 'summary') return;
  const origin = input.originEpochMs ?? input.startTime.getTime();
  await writeJsonl(join(dir, files.jsonl), input.records, origin, input.useServerTokenCount === true, input.producesTokens !== false);
}

/** Streams the JSONL in slices with backpressure: 260k records never become one giant string. */
async function writeJsonl(path: string, records: readonly RequestRecord[], originEpochMs: number, useServerTokenCount: boolean, producesTokens: boolean): Promise<void> {
  const out = createWriteStream(path);
  const finished = new Promise<void>((resolve, reject) => {
    out.once('finish', resolve);
    out.once('error', reject);
  });
  try {
    const SLICE = 1000;
    let lines: string[] = [];
    let i = 0;
    for (const r of records) {
      if (r.phase !== 'profiling') continue;
      lines.push(aiperfJsonlLine(r, i++, originEpochMs, useServerTokenCount, producesTokens));
      if (lines.length < SLICE) continue;
      // once() rejects if the stream errors while we wait, and removes its listeners either way.
      if (!out.write(`${lines.join('\n')}\n`)) await once(out, 'drain');
      lines = [];
    }
    if (lines.length > 0) out.write(`${lines.join('\n')}\n`);
    out.end();
  } catch (e) {
    out.destroy();
    finished.catch(() => undefined);
    throw e;
  }
  await finished;
}
