import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { TailgateError } from '../core/index.js';
import { AIPERF_FILES } from '../report/index.js';
import type { Level, LevelFigures, LevelServerMetrics } from './level.js';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** `a.b.c` of a parsed JSON value, or undefined. */
function at(o: unknown, path: string): unknown {
  let v: unknown = o;
  for (const k of path.split('.')) v = isObject(v) ? v[k] : undefined;
  return v;
}

/**
 * The runs behind each path: a file or a bench output directory is one run; a `validate` output
 * directory (its exports in `trial-N/`, `sweep-C/` and the like) is each subdirectory that has
 * an AIPerf export.
 *
 * @example
 * expandRuns(['validate-out']); // ['validate-out/sweep-128', 'validate-out/sweep-256', ...]
 * @throws TailgateError CONFIG_INVALID for a directory with no export in it or one level down
 */
export function expandRuns(paths: readonly string[]): string[] {
  return paths.flatMap((path) => {
    let dir: boolean;
    try {
      dir = statSync(path).isDirectory();
    } catch {
      return [path];
    }
    if (!dir || existsSync(join(path, AIPERF_FILES.json))) return [path];
    const subs = readdirSync(path, { withFileTypes: true })
      .filter((d) => d.isDirectory() && existsSync(join(path, d.name, AIPERF_FILES.json)))
      .map((d) => join(path, d.name))
      .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
    if (subs.length === 0) throw new TailgateError('CONFIG_INVALID', `${path}: no ${AIPERF_FILES.json} in it or in its subdirectories: give a bench/validate output directory or an AIPerf export`);
    return subs;
  });
}

/**
 * Reads one RUN: a `tailgate bench`/`validate` output directory or an AIPerf
 * `profile_export_aiperf.json`, with the server's metrics beside it when they were scraped.
 *
 * @example
 * const level = readRun('artifacts/c8'); level.load; // { kind: 'closed', concurrency: 8 }
 * @throws TailgateError CONFIG_INVALID naming the file and what is missing
 */
export function readRun(path: string): Level {
  let file = path;
  let dir: string | null = null;
  try {
    if (statSync(path).isDirectory()) {
      dir = path;
      file = join(path, AIPERF_FILES.json);
    }
  } catch (e) {
    throw new TailgateError('CONFIG_INVALID', `${path}: cannot read: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { cause: e });
  }
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    const why = e instanceof SyntaxError ? 'not valid JSON' : `cannot read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`;
    throw new TailgateError('CONFIG_INVALID', `${file}: ${why}; give a bench/validate output directory or an AIPerf profile_export_aiperf.json`, { cause: e });
  }
  if (!isObject(doc)) throw new TailgateError('CONFIG_INVALID', `${file}: not an AIPerf export (expected a JSON object)`);
  const level = levelOf(doc, file);
  const metricsFile = dir !== null ? join(dir, 'server_metrics_export.json') : file.replace(/profile_export_aiperf\.json$/, 'server_metrics_export.json');
  if (metricsFile !== file) level.serverMetrics = readServerMetrics(metricsFile);
  const recordsFile = dir !== null ? join(dir, AIPERF_FILES.jsonl) : file.replace(/profile_export_aiperf\.json$/, AIPERF_FILES.jsonl);
  if (recordsFile !== file) applyRecords(level, recordsFile);
  return level;
}

/**
 * Per-request records (bench's profile_export.jsonl, export level records): the measured requests'
 * own lengths give the level's mean and spread (what a server that stops at end-of-sequence did).
 * The simulator then draws lengths with that spread, so its closed-loop waves drift as the server's.
 */
function applyRecords(level: Level, file: string): void {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return;
  }
  const isl: number[] = [];
  const osl: number[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    let r: unknown;
    try {
      r = JSON.parse(line);
    } catch {
      continue;
    }
    if (at(r, 'error') != null || at(r, 'metadata.benchmark_phase') === 'warmup') continue;
    const i = num(at(r, 'metrics.input_sequence_length.value'));
    const o = num(at(r, 'metrics.output_sequence_length.value'));
    if (i !== null && o !== null) {
      isl.push(i);
      osl.push(o);
    }
  }
  if (isl.length < 2) return;
  const meanStd = (v: number[]): [number, number] => {
    const m = v.reduce((a, b) => a + b, 0) / v.length;
    return [m, Math.sqrt(v.reduce((a, b) => a + (b - m) ** 2, 0) / (v.length - 1))];
  };
  [level.inputTokens, level.inputTokensStd] = meanStd(isl);
  [level.outputTokens, level.outputTokensStd] = meanStd(osl);
  level.records = isl.length;
}

/** A level from a parsed `profile_export_aiperf.json`. */
export function levelOf(doc: Json, file: string): Level {
  const missing = (what: string): never => {
    throw new TailgateError('CONFIG_INVALID', `${file}: ${what}`);
  };
  const stat = (tag: string, s: string): number | null => num(at(doc, `${tag}.${s}`));
  const concurrency = num(at(doc, 'input_config.loadgen.concurrency'));
  const rate = num(at(doc, 'input_config.loadgen.request_rate'));
  const load: Level['load'] = rate !== null && rate > 0 ? { kind: 'rate', ratePerS: rate } : concurrency !== null && concurrency > 0 ? { kind: 'closed', concurrency } : missing('no load level: input_config.loadgen has neither concurrency nor request_rate');
  const ttftAny = stat('time_to_first_token', 'p50') ?? stat('time_to_first_token', 'avg');
  const itlAny = stat('inter_token_latency', 'p50') ?? stat('inter_token_latency', 'avg');
  if (ttftAny === null || itlAny === null) missing('no latency figures: time_to_first_token and inter_token_latency (p50 or avg) are needed (a streaming run)');
  const isl = stat('input_sequence_length', 'avg') ?? stat('input_sequence_length', 'p50') ?? num(at(doc, 'input_config.input.prompt.input_tokens.mean'));
  const osl = stat('output_sequence_length', 'avg') ?? stat('output_sequence_length', 'p50') ?? num(at(doc, 'input_config.input.prompt.output_tokens.mean'));
  if (isl === null || osl === null) missing('no request lengths: input_sequence_length and output_sequence_length (or input_config.input.prompt) are needed');
  if (osl! < 2) missing(`output length ${osl} is below 2: inter-token latency says nothing`);
  const outTok = stat('output_token_throughput', 'avg');
  const reqs = stat('request_throughput', 'avg') ?? (outTok !== null ? outTok / osl! : null);
  if (outTok === null || reqs === null) missing('no throughput: output_token_throughput.avg is needed');
  const latencyP50 = stat('request_latency', 'p50') ?? stat('request_latency', 'avg') ?? ttftAny! + (osl! - 1) * itlAny!;
  const se = (tag: string, factor: number): number | null => {
    const std = stat(tag, 'std');
    const count = stat(tag, 'count') ?? stat('request_count', 'avg');
    return std !== null && count !== null && count > 0 ? (factor * std) / Math.sqrt(count) : null;
  };
  const measured: LevelFigures = {
    outputTokPerS: outTok!,
    requestsPerS: reqs!,
    // A file with only a mean (a published table's one column) has no median: the fit and the report leave it out.
    ttftP50Ms: stat('time_to_first_token', 'p50') ?? Number.NaN,
    ttftMeanMs: stat('time_to_first_token', 'avg') ?? Number.NaN,
    ttftP99Ms: stat('time_to_first_token', 'p99'),
    itlP50Ms: stat('inter_token_latency', 'p50') ?? Number.NaN,
    itlMeanMs: stat('inter_token_latency', 'avg') ?? Number.NaN,
    latencyP50Ms: latencyP50,
    itlMeanSeMs: se('inter_token_latency', 1),
    ttftMeanSeMs: stat('time_to_first_token', 'avg') !== null ? se('time_to_first_token', 1) : se('time_to_first_token', 1.25),
  };
  const models = at(doc, 'input_config.endpoint.model_names');
  const urls = at(doc, 'input_config.endpoint.urls');
  const perWorker = at(doc, 'tailgate.per_worker');
  const count = stat('request_count', 'avg') ?? num(at(doc, 'input_config.loadgen.request_count')) ?? 0;
  return {
    source: file,
    label: load.kind === 'closed' ? `c=${load.concurrency}` : `rate=${load.ratePerS}/s`,
    model: Array.isArray(models) && typeof models[0] === 'string' ? models[0] : '',
    server: Array.isArray(urls) && typeof urls[0] === 'string' ? urls[0] : '',
    load,
    workers: isObject(perWorker) && Object.keys(perWorker).length > 0 ? Object.keys(perWorker).length : 1,
    inputTokens: isl!,
    outputTokens: osl!,
    inputTokensStd: stat('input_sequence_length', 'std') ?? 0,
    outputTokensStd: stat('output_sequence_length', 'std') ?? 0,
    records: null,
    requestCount: Math.max(1, Math.round(count)),
    warmupRequestCount: num(at(doc, 'input_config.loadgen.warmup_request_count')) ?? 0,
    datasetEntries: num(at(doc, 'input_config.input.conversation.num_dataset_entries')),
    measured,
    serverMetrics: null,
  };
}

/** vLLM's gauges and counters from AIPerf's server_metrics_export.json (summed over endpoints), or null. */
function readServerMetrics(file: string): LevelServerMetrics | null {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
  const endpoints = at(doc, 'endpoints');
  if (!isObject(endpoints)) return null;
  const sums = new Map<string, { max: number; avg: number; delta: number; n: number }>();
  for (const ep of Object.values(endpoints)) {
    const metrics = at(ep, 'metrics');
    if (!isObject(metrics)) continue;
    for (const [key, m] of Object.entries(metrics)) {
      const name = key.replace(/\{.*$/, '');
      const max = num(at(m, 'max'));
      const min = num(at(m, 'min'));
      const avg = num(at(m, 'avg'));
      if (max === null || min === null || avg === null) continue;
      const s = sums.get(name) ?? { max: 0, avg: 0, delta: 0, n: 0 };
      s.max += max;
      s.avg += avg;
      s.delta += max - min;
      s.n++;
      sums.set(name, s);
    }
  }
  const running = sums.get('vllm:num_requests_running');
  if (!running) return null;
  const hits = sums.get('vllm:prefix_cache_hits_total') ?? sums.get('vllm:gpu_prefix_cache_hits_total');
  const queries = sums.get('vllm:prefix_cache_queries_total') ?? sums.get('vllm:gpu_prefix_cache_queries_total');
  const kv = sums.get('vllm:kv_cache_usage_perc') ?? sums.get('vllm:gpu_cache_usage_perc');
  return {
    runningMax: running.max / running.n,
    runningAvg: running.avg / running.n,
    waitingMax: (sums.get('vllm:num_requests_waiting')?.max ?? 0) / running.n,
    kvUsageAvg: kv ? kv.avg / kv.n : null,
    prefixHitRatio: hits && queries && queries.delta > 0 ? hits.delta / queries.delta : null,
    preemptions: sums.get('vllm:num_preemptions_total')?.delta ?? null,
  };
}
