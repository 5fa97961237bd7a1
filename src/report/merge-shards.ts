import { createReadStream } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { join, resolve } from 'node:path';
import { TailgateError, type Outcome, type RequestRecord } from '../core/index.js';
import { summarize, type Summary } from '../stats/index.js';
import { AIPERF_FILES, writeAiperfExports } from './aiperf-exports.js';
import { MERGE_DEFAULTS } from './merge-defaults.js';

/** One shard as read back from its AIPerf exports. */
export interface ShardExport {
  dir: string;
  /** Absolute nanosecond epochs are kept exact as bigint; `records` times are ms from `originEpochMs`. */
  startTime: Date;
  endTime: Date;
  wasCancelled: boolean;
  inputConfig: Record<string, unknown>;
  /** The JSON export's `tailgate` block (shard index, start lag...). */
  tailgate: Record<string, unknown>;
  records: RequestRecord[];
}

/** Options of {@link mergeShardExports}. */
export interface MergeOptions {
  /** A shard that began more than this after the common start is named late. @default 1000 */
  lateAfterMs?: number;
  /** @default '0.1.0' */
  version?: string;
}

/** What {@link mergeShardExports} wrote. */
export interface MergeResult {
  outDir: string;
  shards: Array<{ dir: string; records: number; startLagMs: number | null; late: boolean }>;
  summary: Summary;
  records: number;
}

const OUTCOMES: readonly Outcome[] = ['ok', 'http_error', 'timeout', 'aborted', 'protocol_error', 'connection_error'];

function bad(message: string): TailgateError {
  return new TailgateError('CONFIG_INVALID', message);
}

async function isShard(dir: string): Promise<boolean> {
  return stat(join(dir, AIPERF_FILES.json)).then((s) => s.isFile(), () => false);
}

/**
 * The shard folders named by `paths`: each is a shard (it holds `profile_export_aiperf.json`) or a
 * folder of shards (its direct subfolders that hold one, in name order). `exclude` is skipped.
 */
export async function findShardDirs(paths: readonly string[], exclude?: string): Promise<string[]> {
  const out: string[] = [];
  const skip = exclude === undefined ? undefined : resolve(exclude);
  for (const p of paths) {
    const st = await stat(p).catch(() => undefined);
    if (!st?.isDirectory()) throw bad(`${p} is not a folder`);
    if (await isShard(p)) {
      out.push(p);
      continue;
    }
    const subs = (await readdir(p, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => join(p, e.name)).sort();
    const shards: string[] = [];
    for (const s of subs) if (resolve(s) !== skip && (await isShard(s))) shards.push(s);
    if (shards.length === 0) throw bad(`${p} holds no ${AIPERF_FILES.json} (neither itself nor a subfolder is a bench shard)`);
    out.push(...shards);
  }
  return out;
}

interface JsonlLine {
  metadata?: Record<string, unknown>;
  metrics?: Record<string, { value?: unknown }>;
  error?: { code?: number | null; type?: string; message?: string } | null;
}

function num(m: JsonlLine['metrics'], tag: string): number | undefined {
  const v = m?.[tag]?.value;
  return typeof v === 'number' ? v : undefined;
}

/**
 * One `profile_export.jsonl` line back into a record (times in ms from `originNs`). Request start
 * and end are read as exact integers; chunk times are rebuilt from TTFT, the inter-chunk gaps and
 * the request latency, so every per-request metric comes out as it went in.
 */
export function recordFromJsonl(line: string, originNs: bigint, where: string): RequestRecord {
  let j: JsonlLine;
  try {
    j = JSON.parse(line) as JsonlLine;
  } catch {
    throw bad(`${where} is not a JSON line`);
  }
  // Nanosecond epochs exceed 2^53: take them from the text, not from the parsed number.
  const startNs = /"request_start_ns":(\d+)/.exec(line)?.[1];
  const endNs = /"request_end_ns":(\d+)/.exec(line)?.[1];
  if (startNs === undefined || endNs === undefined || !j.metadata) throw bad(`${where} has no metadata.request_start_ns/request_end_ns (not an AIPerf record)`);
  const ms = (ns: string): number => Number(BigInt(ns) - originNs) / 1e6;
  const md = j.metadata;
  const m = j.metrics ?? {};
  const startMs = ms(startNs);
  const endMs = ms(endNs);
  const id = typeof md['x_request_id'] === 'string' ? md['x_request_id'] : `${where}`;
  const base = {
    id,
    phase: md['benchmark_phase'] === 'warmup' ? ('warmup' as const) : ('profiling' as const),
    worker: typeof md['tailgate_worker'] === 'string' ? md['tailgate_worker'] : null,
    startMs,
    endMs,
    redispatched: md['tailgate_redispatched'] === true,
    migrated: md['tailgate_migrated'] === true,
  };
  if (j.error) {
    const type = (j.error.type === 'RequestCancellationError' ? 'aborted' : j.error.type) as Outcome;
    return {
      ...base,
      firstTokenMs: null,
      chunkMs: [],
      inputTokens: { client: num(m, 'error_isl') ?? 0, server: null },
      outputTokens: { client: 0, server: null },
      outcome: OUTCOMES.includes(type) ? type : 'http_error',
      status: typeof j.error.code === 'number' ? j.error.code : null,
      error: j.error.message ?? null,
    };
  }
  const ttft = num(m, 'time_to_first_token');
  const latency = num(m, 'request_latency') ?? endMs - startMs;
  const gapsRaw = m['inter_chunk_latency']?.value;
  const gaps = Array.isArray(gapsRaw) ? gapsRaw.filter((g): g is number => typeof g === 'number') : [];
  let chunkMs: number[];
  if (gaps.length > 0 && ttft !== undefined) {
    chunkMs = new Array<number>(gaps.length + 1);
    chunkMs[0] = startMs + ttft;
    for (let k = 0; k < gaps.length; k++) chunkMs[k + 1] = chunkMs[k]! + gaps[k]!;
    chunkMs[gaps.length] = startMs + latency;
  } else {
    chunkMs = [startMs + latency];
  }
  return {
    ...base,
    firstTokenMs: ttft === undefined ? null : startMs + ttft,
    chunkMs,
    inputTokens: { client: num(m, 'input_sequence_length') ?? 0, server: num(m, 'usage_prompt_tokens') ?? null },
    outputTokens: { client: num(m, 'output_sequence_length') ?? num(m, 'output_token_count') ?? 0, server: num(m, 'usage_completion_tokens') ?? null },
    outcome: 'ok',
    status: 200,
    error: null,
  };
}

/** Reads one shard's JSON and JSONL exports; record times are ms from `originEpochMs`. */
export async function readShardExport(dir: string, originEpochMs: number): Promise<ShardExport> {
  const doc = await readJson(join(dir, AIPERF_FILES.json));
  const path = join(dir, AIPERF_FILES.jsonl);
  if (!(await stat(path).then((s) => s.isFile(), () => false))) {
    throw bad(`${dir} has no ${AIPERF_FILES.jsonl}: write shards with --export-level records (the default) so they can be merged`);
  }
  const originNs = BigInt(Math.round(originEpochMs)) * 1_000_000n;
  const records: RequestRecord[] = [];
  let n = 0;
  // Line by line: a large shard's JSONL can exceed the longest string V8 allows.
  for await (const line of createInterface({ input: createReadStream(path), crlfDelay: Infinity })) {
    n++;
    if (line.trim() !== '') records.push(recordFromJsonl(line, originNs, `${path} line ${n}`));
  }
  return { dir, ...shardHeader(dir, doc), records };
}

async function readJson(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw bad(`cannot read ${path}: ${(e as Error).message}`);
  }
  try {
    const v = JSON.parse(text) as unknown;
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not an object');
    return v as Record<string, unknown>;
  } catch (e) {
    throw bad(`${path} is not an AIPerf JSON export: ${(e as Error).message}`);
  }
}

function shardHeader(dir: string, doc: Record<string, unknown>): Omit<ShardExport, 'dir' | 'records'> {
  const date = (k: string): Date => {
    const d = new Date(String(doc[k]));
    if (Number.isNaN(d.getTime())) throw bad(`${join(dir, AIPERF_FILES.json)} has no valid ${k}`);
    return d;
  };
  const obj = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
  return { startTime: date('start_time'), endTime: date('end_time'), wasCancelled: doc['was_cancelled'] === true, inputConfig: obj(doc['input_config']), tailgate: obj(doc['tailgate']) };
}

/** Sums the per-shard load (concurrency, counts, rate) into the merged run's `input_config`. */
function mergedInputConfig(shards: readonly ShardExport[]): Record<string, unknown> {
  const first = structuredClone(shards[0]!.inputConfig);
  const loadgen = first['loadgen'] as Record<string, unknown> | undefined;
  if (loadgen) {
    for (const k of ['concurrency', 'request_rate', 'request_count', 'warmup_request_count']) {
      const vals = shards.map((s) => (s.inputConfig['loadgen'] as Record<string, unknown> | undefined)?.[k]);
      if (vals.every((v) => typeof v === 'number')) loadgen[k] = (vals as number[]).reduce((a, b) => a + b, 0);
    }
  }
  return first;
}

function goodputOf(config: Record<string, unknown>): Record<string, number> | undefined {
  const g = (config['input'] as Record<string, unknown> | undefined)?.['goodput'];
  if (typeof g !== 'object' || g === null || Array.isArray(g) || Object.keys(g).length === 0) return undefined;
  return g as Record<string, number>;
}

/**
 * Combines bench shards (one per pod of a distributed run) into one AIPerf-compatible export in
 * `outDir`: records are concatenated on a common time origin and summarized again, so every
 * percentile is exactly the percentile over all requests (never an average of shard percentiles).
 * Shards that began late (by their own `tailgate.start_lag_ms`) are named.
 *
 * @example
 * const r = await mergeShardExports(['results/shard-0', 'results/shard-1'], 'results/merged');
 * r.summary.metrics.time_to_first_token; // over both shards' requests
 */
export async function mergeShardExports(dirs: readonly string[], outDir: string, opts: MergeOptions = {}): Promise<MergeResult> {
  if (dirs.length === 0) throw bad('no shard folders to merge');
  const headers = await Promise.all(dirs.map(async (d) => shardHeader(d, await readJson(join(d, AIPERF_FILES.json)))));
  // A whole-millisecond origin keeps every nanosecond epoch exact when written again.
  const originEpochMs = Math.floor(Math.min(...headers.map((h) => h.startTime.getTime())));
  const shards: ShardExport[] = [];
  for (const d of dirs) shards.push(await readShardExport(d, originEpochMs));
  const records = shards.flatMap((s) => s.records);
  const inputConfig = mergedInputConfig(shards);
  const goodput = goodputOf(inputConfig);
  const summary = summarize(records, goodput ? { goodput } : {});
  const lateAfter = opts.lateAfterMs ?? MERGE_DEFAULTS.lateAfterMs;
  const shardInfo = shards.map((s) => {
    const lag = s.tailgate['start_lag_ms'];
    const startLagMs = typeof lag === 'number' ? lag : null;
    return { dir: s.dir, records: s.records.length, startLagMs, late: startLagMs !== null && startLagMs > lateAfter };
  });
  await writeAiperfExports(outDir, {
    summary,
    records,
    inputConfig,
    exportLevel: 'records',
    startTime: new Date(Math.min(...shards.map((s) => s.startTime.getTime()))),
    endTime: new Date(Math.max(...shards.map((s) => s.endTime.getTime()))),
    originEpochMs,
    wasCancelled: shards.some((s) => s.wasCancelled),
    extra: {
      merged_shards: shardInfo.map((s) => ({ dir: s.dir, records: s.records, start_lag_ms: s.startLagMs, late: s.late })),
      late_shards: shardInfo.filter((s) => s.late).map((s) => s.dir),
    },
    ...(opts.version !== undefined ? { version: opts.version } : {}),
  });
  return { outDir, shards: shardInfo, summary, records: records.length };
}
