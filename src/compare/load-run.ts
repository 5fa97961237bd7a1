import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { TailgateError, type RequestRecord } from '../core/index.js';
import { AIPERF_FILES, readShardExport } from '../report/index.js';
import type { CollectorSeries } from '../scrape/index.js';
import type { GpuSeries } from '../gate/index.js';

/** The load a run was measured under: two runs are comparable only when these agree. */
export interface LoadSettings {
  model: string;
  concurrency: number | null;
  requestRate: number | null;
  inputTokens: string;
  outputTokens: string;
  dataset: string;
}

/** One trial as read back from its output folder. */
export interface TrialData {
  /** `A/trial-2`: the run folder's name and the trial's label. */
  label: string;
  verdict: 'pass' | 'fail' | null;
  shape: string | null;
  /** Index of the worker the shape names, in the run's worker order; null when none. */
  shapeWorker: number | null;
  locus: string | null;
  /** Gated figures as `metric.stat` (e.g. `time_to_first_token.p99`). */
  gated: string[];
  /** Profiling requests, times in ms from the trial's start. */
  records: RequestRecord[];
  /** Worker ids in the order the run addressed them (index = worker number). */
  workers: string[];
  scrape: CollectorSeries | null;
  /** GPU telemetry per worker id; null when the run had none. */
  gpu: Record<string, GpuSeries> | null;
  host: { cpuSomeAvg10: number | null; loadAvg1: number; cpus: number }[];
  client: { eventLoopDelayP99Ms: number | null; cpuPercent: number | null } | null;
  load: LoadSettings;
}

/** One side of a comparison: the trials of one or several output folders. */
export interface RunSide {
  name: string;
  paths: string[];
  tool: string;
  trials: TrialData[];
}

const bad = (message: string): TailgateError => new TailgateError('CONFIG_INVALID', message);

async function readJson(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    throw bad(`cannot read ${path}`);
  }
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw bad(`${path} is not JSON`);
  }
}

const isFile = (p: string): Promise<boolean> => stat(p).then((s) => s.isFile(), () => false);
const obj = (v: unknown): Record<string, unknown> => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const numOrNull = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** The load of one AIPerf export's `input_config`. */
export function loadOf(inputConfig: Record<string, unknown>): LoadSettings {
  const endpoint = obj(inputConfig['endpoint']);
  const input = obj(inputConfig['input']);
  const prompt = obj(input['prompt']);
  const loadgen = obj(inputConfig['loadgen']);
  const lengths = (v: unknown): string => {
    const o = obj(v);
    return `${String(o['mean'] ?? '?')}${Number(o['stddev'] ?? 0) > 0 ? ` +/- ${String(o['stddev'])}` : ''}`;
  };
  const conv = obj(input['conversation']);
  const kind = typeof input['custom_dataset_type'] === 'string' ? `${input['custom_dataset_type']} ${String(input['file'] ?? '')}` : input['prefix_prompt'] ? `shared-prefix ${JSON.stringify(input['prefix_prompt'])}` : 'synthetic';
  return {
    model: Array.isArray(endpoint['model_names']) ? endpoint['model_names'].join(',') : String(endpoint['model_names'] ?? '?'),
    concurrency: numOrNull(loadgen['concurrency']),
    requestRate: numOrNull(loadgen['request_rate']),
    inputTokens: lengths(prompt['input_tokens']),
    outputTokens: lengths(prompt['output_tokens']),
    dataset: `${kind}, ${String(conv['num_dataset_entries'] ?? '?')} entries`,
  };
}

/** Reads one trial folder (AIPerf exports, with tailgate's block when tailgate wrote it). */
async function readTrialDir(dir: string, label: string, meta: Partial<TrialData> & { workers?: string[] }): Promise<TrialData> {
  const doc = await readJson(join(dir, AIPERF_FILES.json));
  const start = new Date(String(doc['start_time'] ?? ''));
  if (Number.isNaN(start.getTime())) throw bad(`${join(dir, AIPERF_FILES.json)} has no start_time`);
  if (!(await isFile(join(dir, AIPERF_FILES.jsonl)))) throw bad(`${dir} has no ${AIPERF_FILES.jsonl}: compare needs the per-request export (--export-level records, the default)`);
  const shard = await readShardExport(dir, start.getTime());
  const tg = obj(doc['tailgate']);
  const self = obj(tg['self_check']);
  const records = shard.records.filter((r) => r.phase === 'profiling');
  const seen = [...new Set(records.map((r) => r.worker).filter((w): w is string => w !== null))];
  const perWorker = Object.keys(obj(tg['per_worker']));
  const workers = meta.workers && meta.workers.length > 0 ? meta.workers : [...new Set([...perWorker, ...seen])].sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  const hostRaw = Array.isArray(tg['host_pressure']) ? (tg['host_pressure'] as Record<string, unknown>[]) : [];
  return {
    label,
    verdict: meta.verdict ?? null,
    shape: meta.shape ?? null,
    shapeWorker: meta.shapeWorker ?? null,
    locus: meta.locus ?? null,
    gated: meta.gated ?? ['time_to_first_token.p99', 'output_token_throughput.avg'],
    records,
    workers,
    scrape: tg['scrape'] && typeof tg['scrape'] === 'object' ? (tg['scrape'] as CollectorSeries) : null,
    gpu: tg['gpu_telemetry'] && typeof tg['gpu_telemetry'] === 'object' ? (tg['gpu_telemetry'] as Record<string, GpuSeries>) : null,
    host: hostRaw.map((h) => ({ cpuSomeAvg10: numOrNull(h['cpuSomeAvg10']), loadAvg1: Number(h['loadAvg1'] ?? 0), cpus: Number(h['cpus'] ?? 0) })),
    client: tg['self_check'] ? { eventLoopDelayP99Ms: numOrNull(self['event_loop_delay_p99_ms']), cpuPercent: numOrNull(self['client_cpu_percent']) } : null,
    load: loadOf(shard.inputConfig),
  };
}

/** Reads a `validate` (or `simulate --export`) folder: `verdict.json` names the trials and their judgement. */
async function readVerdictDir(dir: string): Promise<{ tool: string; trials: TrialData[] }> {
  const v = await readJson(join(dir, 'verdict.json'));
  const readiness = obj(v['readiness']);
  const workers = (Array.isArray(readiness['workers']) ? readiness['workers'] : []).map((w) => String(obj(w)['id'] ?? ''));
  const gates = (Array.isArray(obj(v['inputs'])['gates']) ? (obj(v['inputs'])['gates'] as unknown[]) : []).map((g) => `${String(obj(g)['metric'])}.${String(obj(g)['stat'])}`);
  const trials: TrialData[] = [];
  for (const raw of Array.isArray(v['trials']) ? v['trials'] : []) {
    const t = obj(raw);
    const label = String(t['label'] ?? `trial-${trials.length + 1}`);
    const sub = join(dir, String(t['artifacts'] ?? `${label}/`));
    if (!(await isFile(join(sub, AIPERF_FILES.json)))) continue;
    const worker = typeof t['worker'] === 'string' ? t['worker'] : null;
    const locus = obj(t['locus']);
    trials.push(await readTrialDir(sub, `${basename(dir)}/${label}`, {
      verdict: t['verdict'] === 'pass' ? 'pass' : 'fail',
      shape: typeof t['shape'] === 'string' ? t['shape'] : null,
      shapeWorker: worker === null ? null : workers.indexOf(worker) >= 0 ? workers.indexOf(worker) : null,
      locus: typeof locus['locus'] === 'string' ? locus['locus'] : null,
      gated: gates.length > 0 ? gates : ['time_to_first_token.p99', 'output_token_throughput.avg'],
      workers,
    }));
  }
  if (trials.length === 0) throw bad(`${dir}/verdict.json lists no trial with AIPerf exports: nothing to compare`);
  return { tool: String(v['tool'] ?? 'tailgate validate'), trials };
}

/**
 * Reads one output folder of `validate`, `bench` or `simulate --export` (or a folder of bench
 * runs): every trial it holds, with its records, scrapes, GPU telemetry and judgement.
 *
 * @example const side = await readRunSide('A', ['out/gke']); side.trials.length; // 3
 * @throws TailgateError CONFIG_INVALID when a path is not such a folder
 */
export async function readRunSide(name: string, paths: readonly string[]): Promise<RunSide> {
  if (paths.length === 0) throw bad(`side ${name} names no folder`);
  const trials: TrialData[] = [];
  const tools = new Set<string>();
  for (const p of paths) {
    if (!(await stat(p).then((s) => s.isDirectory(), () => false))) throw bad(`${p} is not a folder (expected the output folder of tailgate validate or bench)`);
    if (await isFile(join(p, 'verdict.json'))) {
      const r = await readVerdictDir(p);
      tools.add(r.tool);
      trials.push(...r.trials);
    } else if (await isFile(join(p, AIPERF_FILES.json))) {
      tools.add('tailgate bench');
      trials.push(await readTrialDir(p, basename(p), {}));
    } else {
      const subs = (await readdir(p, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => join(p, e.name)).sort();
      const runs = [];
      for (const s of subs) if (await isFile(join(s, AIPERF_FILES.json))) runs.push(s);
      if (runs.length === 0) throw bad(`${p} holds neither verdict.json nor ${AIPERF_FILES.json} (expected the output folder of tailgate validate or bench)`);
      tools.add('tailgate bench');
      for (const s of runs) trials.push(await readTrialDir(s, `${basename(p)}/${basename(s)}`, {}));
    }
  }
  return { name, paths: [...paths], tool: [...tools].join(' + '), trials };
}

/** The first load setting the two sides differ in, as `concurrency: 32 vs 64`; null when none. */
export function loadDifference(a: RunSide, b: RunSide): string | null {
  const keys: (keyof LoadSettings)[] = ['model', 'concurrency', 'requestRate', 'inputTokens', 'outputTokens', 'dataset'];
  const names: Record<keyof LoadSettings, string> = { model: 'model', concurrency: 'concurrency', requestRate: 'request rate', inputTokens: 'input tokens', outputTokens: 'output tokens', dataset: 'dataset' };
  for (const k of keys) {
    const va = [...new Set(a.trials.map((t) => String(t.load[k])))].sort();
    const vb = [...new Set(b.trials.map((t) => String(t.load[k])))].sort();
    if (va.join('|') !== vb.join('|')) return `${names[k]}: ${va.join('/')} (A) vs ${vb.join('/')} (B)`;
  }
  return null;
}
