import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { aiperfJsonlLine, epochNs, exportFileNames, writeAiperfExports, type RunInfo, type UnappliedFlagEntry } from '../report/index.js';
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { recordMetrics, summarize, timeSeries } from '../stats/index.js';
import { turnMessages } from '../workload/index.js';
import { aiperfInputConfig, payloadOptionsOf, summaryOptionsOf } from './options.js';
import { requestPayload } from './payload.js';
import type { BenchResult } from './run-bench.js';
import { hasRowFields, rowPayload } from './trace-rows.js';

/** Options of {@link writeBenchArtifacts}. */
export interface BenchArtifactOptions {
  /** AIPerf `--export-level`. @default 'records' */
  exportLevel?: 'summary' | 'records' | 'raw';
  /** tailgate's version for the export header. */
  version?: string;
  /** More fields for the `tailgate` block of the JSON export. */
  extra?: Record<string, unknown>;
  /** `--profile-export-prefix`. */
  filePrefix?: string;
  /** AIPerf's `run_info` (trial, labels, the command line); the seed is filled in. */
  runInfo?: Partial<RunInfo>;
  /** AIPerf's `telemetry_data`. */
  telemetryData?: Record<string, unknown>;
  /** Appended to the CSV export (AIPerf's GPU telemetry section). */
  csvAppendix?: string;
  /** `--slice-duration`, ms: also write the metrics per time slice. */
  sliceDurationMs?: number;
  /** AIPerf flags given but not applied (`ignored_flags`, `output_only_flags` in the JSON export). */
  aiperfFlags?: { ignored: readonly UnappliedFlagEntry[]; outputOnly: readonly UnappliedFlagEntry[] };
  /** AIPerf `--export-outputs-json`: write `outputs.json` (needs the run's `keepRaw`). @default exportLevel === 'raw' */
  exportOutputsJson?: boolean;
}

/** File name of the request payloads, as AIPerf writes it. */
export const INPUTS_FILE = 'inputs.json';

/**
 * AIPerf's `inputs.json`: one session per dataset entry or conversation, one payload per turn.
 * A first turn's payload is exactly what was sent; a later turn's shows its new user message (the
 * history with the answers as received is prepended when it is sent). Session ids are derived
 * from the seed, so the same seed gives the same file byte for byte.
 */
export function inputsJson(result: BenchResult): { data: Array<{ session_id: string; payloads: Record<string, unknown>[] }> } {
  const o = result.options;
  return {
    data: result.workload.sessions.map((session) => ({
      session_id: `tailgate-${o.randomSeed}-${session.index}`,
      payloads: session.turns.map((turn, k) =>
        hasRowFields(turn)
          ? rowPayload(o, session, k, k === 0 || turn.verbatim ? null : turnMessages(session, k, []).slice(-1))
          : requestPayload(
              { messages: k === 0 ? turnMessages(session, 0, []) : turnMessages(session, k, []).slice(-1), maxTokens: turn.maxTokens },
              payloadOptionsOf(o, session.index),
            ),
      ),
    })),
  };
}

/**
 * Writes `inputs.json`, `profile_export_aiperf.json`/`.csv` and (export level records or raw)
 * `profile_export.jsonl` into `dir`. Self-checks, warnings and a per-second time series go under
 * the JSON export's `tailgate` key.
 *
 * @example
 * await writeBenchArtifacts('artifacts/run1', await runBench(opts));
 */
export async function writeBenchArtifacts(dir: string, result: BenchResult, opts: BenchArtifactOptions = {}): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, INPUTS_FILE), `${JSON.stringify(inputsJson(result), null, 2)}\n`);
  const s = result.selfCheck;
  const prof = result.records.filter((r) => r.phase === 'profiling');
  const warmup = result.records.filter((r) => r.phase === 'warmup').map((r) => ({ ...r, phase: 'profiling' as const }));
  await writeAiperfExports(dir, {
    summary: result.summary,
    records: result.records,
    inputConfig: aiperfInputConfig(result.options),
    exportLevel: opts.exportLevel ?? 'records',
    startTime: result.startTime,
    endTime: result.endTime,
    originEpochMs: result.originEpochMs,
    wasCancelled: result.cancelled,
    ...(opts.version === undefined ? {} : { version: opts.version }),
    ...(opts.filePrefix !== undefined && { filePrefix: opts.filePrefix }),
    ...(opts.telemetryData !== undefined && { telemetryData: opts.telemetryData }),
    ...(opts.csvAppendix !== undefined && { csvAppendix: opts.csvAppendix }),
    ...(opts.aiperfFlags !== undefined && { aiperfFlags: opts.aiperfFlags }),
    runInfo: { random_seed: result.options.randomSeed, ...opts.runInfo },
    warmupSummary: warmup.length > 0 ? summarize(warmup, summaryOptionsOf(result.options)) : null,
    useServerTokenCount: result.options.useServerTokenCount,
    producesTokens: result.options.endpointType !== 'embeddings',
    extra: {
      random_seed: result.options.randomSeed,
      self_check: {
        event_loop_delay_p99_ms: s.eventLoopDelayP99Ms,
        schedule_lag_p99_ms: s.scheduleLagP99Ms,
        client_cpu_percent: s.cpuPercent,
        client_bound: s.clientBound,
      },
      warnings: result.warnings,
      time_series: prof.length > 0 ? timeSeries(prof, { bucketMs: 1000 }) : null,
      ...opts.extra,
    },
  });
  if (opts.exportLevel === 'raw') await writeRawExport(join(dir, exportFileNames(opts.filePrefix).raw), result);
  if (opts.exportOutputsJson ?? opts.exportLevel === 'raw') {
    await writeFile(join(dir, exportFileNames(opts.filePrefix).outputs), `${jsonWithNs(outputsJson(result), ['request_start_ns', 'request_end_ns'])}\n`);
  }
  if (opts.sliceDurationMs !== undefined) await writeTimeSlices(dir, result, opts.sliceDurationMs, opts.filePrefix);
}

/** `value` as indented JSON, its {@link epochNs} strings under `keys` written as the integers they are. */
function jsonWithNs(value: unknown, keys: readonly string[]): string {
  return JSON.stringify(value, null, 2).replace(new RegExp(`"(${keys.join('|')})": "(\\d+)"`, 'g'), '"$1": $2');
}

/**
 * AIPerf's time-slice exports (`--slice-duration`): the profiling window cut into slices of
 * `sliceMs`, each request in the slice where it started, each slice's metrics as the run's.
 */
async function writeTimeSlices(dir: string, result: BenchResult, sliceMs: number, filePrefix?: string): Promise<void> {
  const prof = result.records.filter((r) => r.phase === 'profiling');
  const start = result.summary.startMs;
  const n = prof.length === 0 ? 0 : Math.max(1, Math.ceil((result.summary.endMs - start) / sliceMs));
  const buckets: (typeof prof)[] = Array.from({ length: n }, () => []);
  for (const r of prof) buckets[Math.min(n - 1, Math.floor((r.startMs - start) / sliceMs))]!.push(r);
  const ns = (ms: number): string => epochNs(result.originEpochMs, ms);
  const slices = buckets.map((rs, i) => ({
    slice_index: i,
    start_ns: ns(start + i * sliceMs),
    end_ns: ns(start + (i + 1) * sliceMs),
    metrics: rs.length > 0 ? summarize(rs, summaryOptionsOf(result.options)).metrics : {},
  }));
  const names = exportFileNames(filePrefix);
  await writeFile(join(dir, names.timeslicesJson), `${jsonWithNs({ slice_duration_sec: sliceMs / 1000, slices }, ['start_ns', 'end_ns'])}\n`);
  const stats = ['avg', 'min', 'max', 'p50', 'p90', 'p99', 'std'] as const;
  const rows = [`Timeslice,Metric,Unit,${stats.join(',')}`];
  for (const s of slices) {
    for (const [tag, m] of Object.entries(s.metrics)) {
      rows.push(`${s.slice_index},${tag},${m.unit},${stats.map((k) => { const v = (m as unknown as Record<string, number | undefined>)[k]; return v === undefined ? '' : v.toFixed(2); }).join(',')}`);
    }
  }
  await writeFile(join(dir, names.timeslicesCsv), `${rows.join('\n')}\n`);
}

/** Version of AIPerf's `outputs.json` (its own; 1.1 added `warmup` and `benchmark_phase`). */
const OUTPUTS_SCHEMA_VERSION = '1.1';

/**
 * AIPerf's `outputs.json` (`--export-outputs-json`, implied by `--export-level raw`): each request's
 * generated text (reasoning then answer; null when none came) with its identity, timestamps and a
 * few metrics in display units; profiling requests under `data`, warm-up ones under `warmup`,
 * each sorted by (session_num, turn_index).
 */
function outputsJson(result: BenchResult): { schema_version: string; data: Record<string, unknown>[]; warmup: Record<string, unknown>[] } {
  // Nanosecond epochs exceed 2^53: kept as digit strings here and written as exact integers by writeOutputsJson.
  const ns = (ms: number): string => epochNs(result.originEpochMs, ms);
  const entries: Record<'profiling' | 'warmup', Record<string, unknown>[]> = { profiling: [], warmup: [] };
  const useServer = result.options.useServerTokenCount;
  for (const r of result.records) {
    const list = entries[r.phase];
    const metrics: Record<string, number> = { input_sequence_length: useServer ? (r.inputTokens.server ?? r.inputTokens.client) : r.inputTokens.client };
    if (r.outcome === 'ok') {
      const m = recordMetrics(r, undefined, useServer);
      if (result.options.endpointType !== 'embeddings') {
        metrics['output_token_count'] = m.reasoning === null ? m.osl : m.osl - m.reasoning;
        metrics['output_sequence_length'] = m.osl;
      }
      metrics['request_latency'] = m.requestLatencyMs;
      if (m.ttftMs !== null) metrics['time_to_first_token'] = m.ttftMs;
      if (m.itlMs !== null) metrics['inter_token_latency'] = m.itlMs;
    }
    const raw = result.raw?.get(r.id);
    const text = raw ? raw.reasoning + raw.response : '';
    list.push({
      session_num: list.length, conversation_id: r.conversationId ?? null, turn_index: r.turnIndex ?? 0, x_request_id: r.id,
      benchmark_phase: r.phase, request_start_ns: ns(r.startMs), request_end_ns: ns(r.endMs), metrics, response_text: text === '' ? null : text,
    });
  }
  return { schema_version: OUTPUTS_SCHEMA_VERSION, data: entries.profiling, warmup: entries.warmup };
}

/**
 * AIPerf's `profile_export_raw.jsonl` (`--export-level raw`): each profiling request's record line
 * with the request body as sent (`request`) and the answer's text as received (`response_text`).
 */
async function writeRawExport(path: string, result: BenchResult): Promise<void> {
  const out = createWriteStream(path);
  const finished = once(out, 'finish');
  let i = 0;
  for (const r of result.records) {
    if (r.phase !== 'profiling') continue;
    const line = aiperfJsonlLine(r, i++, result.originEpochMs, result.options.useServerTokenCount, result.options.endpointType !== 'embeddings');
    const raw = result.raw?.get(r.id);
    // The body is JSON text already: spliced in as sent.
    const extra = raw ? `,"request":${raw.request},"response_text":${JSON.stringify(raw.response)}` : ',"request":null,"response_text":null';
    if (!out.write(`${line.slice(0, -1)}${extra}}\n`)) await once(out, 'drain');
  }
  out.end();
  await finished;
}
