import type { GpuSeries } from '../gate/index.js';
import { pickCounters } from './worker-figures.js';
import { describeGpu, gpuValueKey, mapGpusToWorkers, pickDefault, type CollectorSeries, type GpuField, type GpuIdentity, type GpuMapEntry, type Sample, type TargetSeries } from '../scrape/index.js';

/** Key of the router's queue length in the collector's router target. */
export const ROUTER_QUEUE_KEY = 'router:queue_length';

/** The collector pick of validate's router and worker targets: the default pick, the router's queue length and the counters the warnings read. */
export function validatePick(samples: Sample[]): Record<string, number> {
  const out = pickDefault(samples);
  let queue: number | null = null;
  for (const s of samples) if (s.name === 'tailgate_router_queue_length') queue = (queue ?? 0) + s.value;
  if (queue !== null) out[ROUTER_QUEUE_KEY] = queue;
  pickCounters(samples, out);
  return out;
}

/** Per-worker GPU telemetry of one trial and how it was mapped. */
export interface TrialGpuTelemetry {
  /** Worker id -> its GPU series (one GPU, or several aggregated). */
  perWorker: Record<string, GpuSeries>;
  /** Worker id -> the GPUs mapped to it, described. */
  mapped: Record<string, string[]>;
  unmapped: string[];
  workersWithoutGpu: string[];
  /** One line per problem: failed scrapes, --gpu-map entries that matched nothing. */
  problems: string[];
}

const FIELDS: readonly GpuField[] = ['utilPct', 'powerW', 'smClockMhz', 'clockEventReasons', 'xid'];

function targetWith(series: CollectorSeries, key: string): TargetSeries | undefined {
  return Object.values(series.targets).find((t) => FIELDS.some((f) => t.values[gpuValueKey(f, key)] !== undefined));
}

/** `t.values[k]` at or before each time of `times` (NaN before the first sample). */
function aligned(t: TargetSeries, k: string, times: readonly number[]): number[] {
  const arr = t.values[k];
  if (!arr) return times.map(() => Number.NaN);
  let i = -1;
  return times.map((x) => {
    while (i + 1 < t.tMs.length && t.tMs[i + 1]! <= x) i++;
    return i >= 0 ? (arr[i] ?? Number.NaN) : Number.NaN;
  });
}

/** Several GPUs of one worker as one series: mean utilisation, summed power, lowest clock, OR-ed reasons, max XID. */
function workerSeries(series: CollectorSeries, gpus: readonly GpuIdentity[]): GpuSeries | null {
  const first = gpus.map((g) => targetWith(series, g.key)).find((t) => t !== undefined);
  if (first === undefined) return null;
  const tMs = first.tMs.slice();
  const per = gpus.map((g) => {
    const t = targetWith(series, g.key);
    return Object.fromEntries(FIELDS.map((f) => [f, t ? aligned(t, gpuValueKey(f, g.key), tMs) : tMs.map(() => Number.NaN)])) as Record<GpuField, number[]>;
  });
  const combine = (f: GpuField, how: (vs: number[]) => number): number[] =>
    tMs.map((_, i) => {
      const vs = per.map((p) => p[f][i]!).filter((v) => Number.isFinite(v));
      return vs.length === 0 ? Number.NaN : how(vs);
    });
  return {
    gpu: gpus.map(describeGpu).join(' + '),
    tMs,
    utilPct: combine('utilPct', (vs) => vs.reduce((a, b) => a + b, 0) / vs.length),
    powerW: combine('powerW', (vs) => vs.reduce((a, b) => a + b, 0)),
    smClockMhz: combine('smClockMhz', (vs) => Math.min(...vs)),
    clockEventReasons: combine('clockEventReasons', (vs) => vs.reduce((a, b) => a | b, 0)),
    xid: combine('xid', (vs) => Math.max(...vs)),
  };
}

/**
 * Turns the GPU collector's series into per-worker GPU series: each GPU seen is mapped to a worker
 * by `--gpu-map`, else by its `pod` label (see `mapGpusToWorkers`).
 *
 * @example gpuTelemetry(await gpuCollector.stop(), identities, ['127.0.0.1:8101'], []).perWorker['127.0.0.1:8101']?.utilPct
 */
export function gpuTelemetry(series: CollectorSeries, identities: ReadonlyMap<string, GpuIdentity>, workerIds: readonly string[], explicit: readonly GpuMapEntry[]): TrialGpuTelemetry {
  const mapping = mapGpusToWorkers([...identities.values()], workerIds, explicit);
  const perWorker: Record<string, GpuSeries> = {};
  const mapped: Record<string, string[]> = {};
  for (const [w, gpus] of Object.entries(mapping.byWorker)) {
    const s = workerSeries(series, gpus);
    if (s !== null) perWorker[w] = s;
    mapped[w] = gpus.map(describeGpu);
  }
  const problems = [...mapping.problems];
  for (const [url, t] of Object.entries(series.targets)) {
    if (t.errors > 0) problems.push(`GPU telemetry ${url}: ${t.errors} failed scrapes${t.lastError ? ` (last: ${t.lastError})` : ''}`);
    else if (t.tMs.length > 0 && Object.keys(t.values).length === 0) problems.push(`GPU telemetry ${url}: no DCGM_FI_DEV_* GPU figures on the page`);
  }
  if (identities.size > 0 && mapping.workersWithoutGpu.length > 0 && workerIds.length > 0) {
    problems.push(`no GPU mapped to ${mapping.workersWithoutGpu.length} worker(s) (${mapping.workersWithoutGpu.slice(0, 4).join(', ')}${mapping.workersWithoutGpu.length > 4 ? ', ...' : ''}): no pod label names them; use --gpu-map WORKER=GPU`);
  }
  return { perWorker, mapped, unmapped: mapping.unmapped.map(describeGpu), workersWithoutGpu: mapping.workersWithoutGpu, problems };
}
