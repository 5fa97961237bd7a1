import type { RequestRecord } from '../core/index.js';
import type { GateResult, TrialEvidence, WorkerSeries } from '../gate/index.js';
import type { CollectorSeries, TargetSeries } from '../scrape/index.js';
import { timeSeries, type Summary } from '../stats/index.js';

/** Collector target id of the router's `/metrics` (worker targets use the worker's `host:port`). */
export const ROUTER_TARGET = 'router';

/** Input of {@link trialEvidence}: what one trial measured, from bench, collector and host. */
export interface TrialEvidenceInput {
  summary: Summary;
  records: readonly RequestRecord[];
  gates: GateResult[];
  expectedWorkers: number;
  /** Workers ready when the trial started; omit when they could not be counted. */
  readyWorkers?: number;
  /** The collector's series: `router` (per-worker `inflight:<id>`) and one target per worker id. */
  series?: CollectorSeries | null;
  selfCheck?: { eventLoopDelayP99Ms: number; cpuPercent: number };
  /** Worst host CPU pressure (PSI some avg10, %) seen during the trial. */
  hostCpuSomeAvg10?: number | null;
  /** Limit the series to this window (ms from the trial's origin), e.g. the profiling phase. */
  windowMs?: { fromMs: number; toMs: number };
}

const clean = (v: number | undefined): number => (v === undefined || Number.isNaN(v) ? 0 : v);

/** The sample of `s[key]` at or just before `t` (0 before the first sample). */
function sampleAt(s: TargetSeries, key: string, t: number, from: { i: number }): number {
  const arr = s.values[key];
  if (!arr) return 0;
  while (from.i + 1 < s.tMs.length && s.tMs[from.i + 1]! <= t) from.i++;
  return s.tMs[from.i]! <= t ? clean(arr[from.i]) : 0;
}

function window(ws: WorkerSeries, w: { fromMs: number; toMs: number } | undefined): WorkerSeries {
  if (!w) return ws;
  const keep = ws.tMs.map((t) => t >= w.fromMs && t <= w.toMs);
  if (!keep.some(Boolean)) return ws;
  const pick = <T>(a: T[] | undefined): T[] | undefined => a?.filter((_, i) => keep[i]);
  const out: WorkerSeries = { tMs: pick(ws.tMs)!, inflight: pick(ws.inflight)! };
  if (ws.running) out.running = pick(ws.running)!;
  if (ws.waiting) out.waiting = pick(ws.waiting)!;
  return out;
}

/**
 * Per-worker load over time, best source first: the router's own in-flight count per worker
 * (`tailgate_router_worker_inflight`), with the worker's running/waiting gauges aligned onto the
 * router's timestamps; else the worker's gauges alone (in-flight = running + waiting); else, when
 * nothing was scraped, in-flight derived from the request records (250 ms buckets).
 *
 * @example
 * workerSeriesFrom(await collector.stop(), result.records)['127.0.0.1:8103']?.inflight;
 */
export function workerSeriesFrom(series: CollectorSeries | null | undefined, records: readonly RequestRecord[], workerIds: readonly string[] = []): Record<string, WorkerSeries> {
  const out: Record<string, WorkerSeries> = {};
  const router = series?.targets[ROUTER_TARGET];
  const routerIds = router ? Object.keys(router.values).filter((k) => k.startsWith('inflight:')).map((k) => k.slice('inflight:'.length)) : [];
  const scrapedIds = series ? Object.keys(series.targets).filter((id) => id !== ROUTER_TARGET) : [];
  const ids = [...new Set([...workerIds, ...routerIds, ...scrapedIds])].filter((id) => id !== '');
  for (const id of ids) {
    const own = series?.targets[id];
    const hasOwn = own !== undefined && own.tMs.length > 0 && own.values['vllm:num_requests_running'] !== undefined;
    if (router && router.tMs.length > 0 && router.values[`inflight:${id}`]) {
      const ws: WorkerSeries = { tMs: router.tMs.slice(), inflight: router.values[`inflight:${id}`]!.map(clean) };
      if (hasOwn) {
        const a = { i: 0 };
        const b = { i: 0 };
        ws.running = router.tMs.map((t) => sampleAt(own, 'vllm:num_requests_running', t, a));
        ws.waiting = router.tMs.map((t) => sampleAt(own, 'vllm:num_requests_waiting', t, b));
      }
      out[id] = ws;
    } else if (hasOwn) {
      const running = own.values['vllm:num_requests_running']!.map(clean);
      const waiting = (own.values['vllm:num_requests_waiting'] ?? []).map(clean);
      out[id] = { tMs: own.tMs.slice(), inflight: running.map((r, i) => r + (waiting[i] ?? 0)), running, waiting };
    }
  }
  if (Object.keys(out).length === 0 && records.some((r) => r.worker !== null)) {
    const ts = timeSeries(records, { bucketMs: 250 });
    for (const [id, inflight] of Object.entries(ts.perWorkerInflight)) out[id] = { tMs: ts.tMs.map((t) => t + ts.bucketMs), inflight };
  }
  return out;
}

/**
 * Builds the gate module's `TrialEvidence` for one trial: summary, gate results, readiness, per-worker
 * series over the profiling window ({@link workerSeriesFrom}), the load generator's self-check and
 * host pressure.
 *
 * @example
 * classifyTrial(trialEvidence({ summary, records, gates: judgeGates(summary, gates), expectedWorkers: 8, series }));
 */
export function trialEvidence(input: TrialEvidenceInput): TrialEvidence {
  const all = workerSeriesFrom(input.series, input.records);
  const win = input.windowMs ?? (input.summary.profilingCount > 0 ? { fromMs: input.summary.startMs, toMs: input.summary.endMs } : undefined);
  const workerSeries: Record<string, WorkerSeries> = {};
  for (const [id, ws] of Object.entries(all)) workerSeries[id] = window(ws, win);
  const ev: TrialEvidence = { summary: input.summary, gates: input.gates, expectedWorkers: input.expectedWorkers };
  if (input.readyWorkers !== undefined) ev.readyWorkers = input.readyWorkers;
  if (Object.keys(workerSeries).length > 0) ev.workerSeries = workerSeries;
  if (input.selfCheck) ev.client = { eventLoopDelayP99Ms: input.selfCheck.eventLoopDelayP99Ms, cpuPercent: input.selfCheck.cpuPercent };
  if (input.hostCpuSomeAvg10 !== undefined) ev.host = { cpuSomeAvg10: input.hostCpuSomeAvg10 };
  return ev;
}
