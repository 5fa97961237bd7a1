/* eslint-disable @typescript-eslint/no-explicit-any -- assertions walk parsed JSON */
// The export schema of AIPerf (its JSON export schema page, schema 1.5, and metrics reference) checked
// field by field against a real run: `runBench` against an in-process simulated fleet.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBench, writeBenchArtifacts } from '../src/bench/index.js';
import { startFleet } from '../src/fleet/index.js';
import { aiperfJson, AIPERF_FILES } from '../src/report/index.js';
import { METRIC_CATALOG, summarize } from '../src/stats/index.js';
import type { RequestRecord } from '../src/core/index.js';

const MODEL = 'Qwen/Qwen3-8B';
const STATS = ['unit', 'avg', 'min', 'max', 'p1', 'p5', 'p10', 'p25', 'p50', 'p75', 'p90', 'p95', 'p99', 'std', 'count', 'sum'];

/** Tags a clean streaming chat run with goodput SLOs writes (metrics reference: record, aggregate, derived). */
const RECORD_TAGS = [
  'request_latency', 'time_to_first_token', 'time_to_second_token', 'time_to_first_output_token', 'inter_token_latency',
  'inter_chunk_latency', 'output_token_throughput_per_user', 'prefill_throughput_per_user', 'output_sequence_length',
  'input_sequence_length', 'output_token_count', 'usage_prompt_tokens', 'usage_completion_tokens', 'usage_total_tokens',
];
const SCALAR_TAGS = [
  'benchmark_duration', 'request_throughput', 'request_count', 'output_token_throughput', 'total_token_throughput',
  'total_output_tokens', 'total_osl', 'total_isl', 'goodput', 'good_request_count', 'good_request_fraction', 'request_error_rate',
  'min_request_timestamp', 'max_response_timestamp',
];
/** AIPerf writes these only for a run with failed requests. */
const ERROR_ONLY = ['error_request_count', 'error_isl', 'total_error_isl'];

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-schema-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

test('a run writes every field and metric tag of AIPerf\'s documented export, with its omission rules', async (t) => {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: MODEL });
  t.after(() => fleet.close());
  const dir = await tempDir(t);
  const result = await runBench({
    url: fleet.workers[0]!.url, model: MODEL, streaming: true, concurrency: 4, requestCount: 12, warmupRequestCount: 2,
    inputTokensMean: 32, outputTokensMean: 6, numDatasetEntries: 8, randomSeed: 5, goodput: { time_to_first_token: 60_000 },
  });
  await writeBenchArtifacts(dir, result, { version: '9.9.9', runInfo: { cli_command: 'tailgate bench -m x --api-key <redacted>' } });
  const doc = JSON.parse(await readFile(join(dir, AIPERF_FILES.json), 'utf8')) as Record<string, any>;

  assert.equal(doc.schema_version, '1.5');
  assert.equal(doc.aiperf_version, null, 'no AIPerf release wrote this file: compatibility is the schema version');
  assert.deepEqual(doc.generator, { name: 'tailgate', version: '9.9.9' });
  assert.deepEqual(doc.ignored_flags, []);
  assert.deepEqual(doc.output_only_flags, []);
  assert.equal(doc.tailgate.version, '9.9.9', "tailgate's own version lives under its key");
  assert.match(doc.benchmark_id, /^[0-9a-f-]{36}$/);
  assert.ok(!Number.isNaN(Date.parse(doc.start_time)) && !Number.isNaN(Date.parse(doc.end_time)));
  assert.equal(doc.was_cancelled, false);
  assert.equal(typeof doc.input_config, 'object');
  assert.deepEqual(doc.error_summary, []);
  assert.deepEqual(doc.runtime_submission_invalid_reasons, []);
  assert.deepEqual(Object.keys(doc.run_info).sort(), ['benchmark_id', 'cli_command', 'random_seed', 'run_label', 'sweep_id', 'trial', 'variation_index', 'variation_label', 'variation_values']);
  assert.equal(doc.run_info.benchmark_id, doc.benchmark_id);
  assert.equal(doc.run_info.random_seed, 5);
  assert.equal(doc.run_info.trial, 0);
  assert.equal(doc.run_info.variation_label, 'base');
  assert.equal(doc.run_info.cli_command, 'tailgate bench -m x --api-key <redacted>');

  for (const tag of RECORD_TAGS) {
    assert.deepEqual(Object.keys(doc[tag] ?? {}).sort(), [...STATS].sort(), `${tag}: a record metric carries the full stats block`);
    assert.equal(doc[tag].unit, METRIC_CATALOG.find((m) => m.tag === tag)!.unit, `${tag} unit`);
    assert.equal(doc[tag].count, tag === 'inter_chunk_latency' ? 12 * 5 : 12, `${tag}: one value per profiling request (per gap for ICL)`);
  }
  for (const tag of SCALAR_TAGS) {
    assert.deepEqual(Object.keys(doc[tag] ?? {}).sort(), ['avg', 'unit'], `${tag}: a run-level metric is {unit, avg} only`);
  }
  for (const tag of ERROR_ONLY) assert.equal(doc[tag], undefined, `${tag} is omitted on a clean run, as AIPerf omits it`);
  assert.equal(doc.request_count.avg, 12);
  assert.equal(doc.total_osl.avg, 12 * 6, 'chat bodies carry max_completion_tokens and the fleet honours it');
  assert.equal(doc.total_output_tokens.avg, doc.total_osl.avg);
  assert.equal(doc.total_isl.avg, doc.input_sequence_length.sum);
  assert.equal(doc.good_request_count.avg, 12);
  assert.equal(doc.good_request_fraction.avg, 1);
  assert.equal(doc.request_error_rate.avg, 0);
  assert.ok(doc.max_response_timestamp.avg > doc.min_request_timestamp.avg && doc.min_request_timestamp.avg > 1.7e18, 'epoch nanoseconds');
  assert.equal(doc.warmup_metrics.request_count.avg, 2, 'warm-up requests are reported apart (schema 1.4)');
  assert.equal(doc.warmup_metrics.input_sequence_length.count, 2);

  // The CSV: AIPerf's two sections, rows in the catalog's order, the unit in parentheses.
  const csv = await readFile(join(dir, AIPERF_FILES.csv), 'utf8');
  const [dist, scalars] = csv.trim().split('\n\n');
  const distRows = dist!.split('\n');
  assert.equal(distRows[0], 'Metric,avg,min,max,p1,p5,p10,p25,p50,p75,p90,p95,p99,std');
  assert.equal(distRows[1]!.split(',')[0], 'Request Latency (ms)');
  assert.equal(distRows[2]!.split(',')[0], 'Time to First Token (ms)');
  assert.ok(distRows.includes(distRows.find((l) => l.startsWith('Output Sequence Length (tokens),'))!));
  const scalarRows = scalars!.split('\n');
  assert.deepEqual(scalarRows.slice(0, 5).map((l) => l.split(',')[0]), ['Metric', 'Benchmark Duration (sec)', 'Request Throughput (requests/sec)', 'Request Count', 'Output Token Throughput (tokens/sec)']);

  // The records file: AIPerf's metadata and metric names per request.
  const lines = (await readFile(join(dir, AIPERF_FILES.jsonl), 'utf8')).trim().split('\n');
  assert.equal(lines.length, 12);
  const rec = JSON.parse(lines[0]!) as { metadata: Record<string, unknown>; metrics: Record<string, { value: unknown; unit: string }>; error: null };
  for (const k of ['session_num', 'x_request_id', 'x_correlation_id', 'conversation_id', 'turn_index', 'request_start_ns', 'request_end_ns', 'worker_id', 'benchmark_phase', 'was_cancelled', 'cancellation_time_ns']) {
    assert.ok(k in rec.metadata, `metadata.${k}`);
  }
  for (const k of ['input_sequence_length', 'time_to_first_token', 'request_latency', 'output_token_count', 'output_sequence_length', 'inter_token_latency']) assert.ok(k in rec.metrics, `metrics.${k}`);
  assert.equal(rec.error, null);
});

test('a run with failed requests writes the error metrics; a cancelled one is code 499 as in AIPerf', () => {
  const rec = (id: string, outcome: RequestRecord['outcome'], status: number | null): RequestRecord => ({
    id, phase: 'profiling', worker: null, startMs: 0, firstTokenMs: outcome === 'ok' ? 10 : null, chunkMs: outcome === 'ok' ? [10, 20] : [],
    endMs: 20, inputTokens: { client: 40, server: null }, outputTokens: { client: outcome === 'ok' ? 2 : 0, server: null },
    outcome, status, error: outcome === 'ok' ? null : 'x', redispatched: false, migrated: false,
  });
  const records = [rec('a', 'ok', 200), rec('b', 'http_error', 500), rec('c', 'aborted', null), rec('d', 'ok', 200)];
  const doc = aiperfJson({ summary: summarize(records), records, inputConfig: {}, exportLevel: 'summary', startTime: new Date(), endTime: new Date() }) as Record<string, any>;
  assert.deepEqual(doc.error_request_count, { unit: 'requests', avg: 2 });
  assert.deepEqual(doc.total_error_isl, { unit: 'tokens', avg: 80 });
  assert.equal(doc.error_isl.count, 2);
  assert.deepEqual(doc.request_error_rate, { unit: '%', avg: 50 });
  const cancelled = (doc.error_summary as Array<{ error_details: { code: number; type: string } }>).find((g) => g.error_details.type === 'RequestCancellationError');
  assert.equal(cancelled?.error_details.code, 499);
});
