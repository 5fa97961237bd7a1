import type { RequestRecord } from '../core/index.js';
import type { GpuSeries } from '../gate/index.js';
import { THROTTLE_REASON_MASK, type CollectorSeries, type Sample, type TargetSeries } from '../scrape/index.js';
import { percentile } from '../stats/index.js';
import { ROUTER_TARGET } from './evidence.js';

/** The router's per-worker counters (`tailgate_router_*{worker=...}`), by the short name validate keeps them under. */
const ROUTER_COUNTERS = {
  tailgate_router_requests_dispatched_total: 'dispatched',
  tailgate_router_requests_completed_total: 'completed',
  tailgate_router_requests_failed_total: 'failed',
  tailgate_router_requests_retried_total: 'retried',
  tailgate_router_requests_redispatched_total: 'redispatched',
  tailgate_router_requests_migrated_total: 'migrated',
  tailgate_router_worker_ejections_total: 'ejected',
} as const;

type RouterCounter = (typeof ROUTER_COUNTERS)[keyof typeof ROUTER_COUNTERS];

/** Key of a router counter for one worker in the collector's router target, e.g. `router:failed:10.0.0.3:8000`. */
export const routerCounterKey = (counter: RouterCounter, worker: string): string => `router:${counter}:${worker}`;

/** Worker counters kept (vLLM V1 names, docs/reference.md#the-vllm-worker, plus prometheus-fastapi-instrumentator's `http_requests_total`). */
const WORKER_COUNTERS = ['vllm:num_preemptions_total', 'vllm:prefix_cache_hits_total', 'vllm:prefix_cache_queries_total', 'vllm:request_success_total', 'http_requests_total'];
const FINISHED_ERROR = 'vllm:request_success_total:error';
const HTTP_5XX = 'http_requests_total:5xx';

/**
 * Adds the counters the warnings read to a collector pick: the router's per-worker counters and a
 * worker's vLLM counters (summed over label sets; `finished_reason="error"` and 5xx responses also apart).
 */
export function pickCounters(samples: readonly Sample[], out: Record<string, number>): void {
  const add = (k: string, v: number): void => {
    out[k] = (out[k] ?? 0) + v;
  };
  for (const s of samples) {
    const rc = (ROUTER_COUNTERS as Record<string, RouterCounter | undefined>)[s.name];
    if (rc !== undefined) add(routerCounterKey(rc, s.labels['worker'] ?? ''), s.value);
    else if (WORKER_COUNTERS.includes(s.name)) {
      add(s.name, s.value);
      if (s.name === 'vllm:request_success_total' && s.labels['finished_reason'] === 'error') add(FINISHED_ERROR, s.value);
      if (s.name === 'http_requests_total' && (s.labels['status'] ?? '').startsWith('5')) add(HTTP_5XX, s.value);
    }
  }
}

/** Which evidence a trial had for its warnings. */
export interface WarningEvidence {
  /** The router's per-worker counters (a tailgate router). */
  routerCounters: boolean;
  /** The workers' own `/metrics` (vLLM counters). */
  workerMetrics: boolean;
  /** dcgm-exporter GPU telemetry mapped to workers. */
  gpuTelemetry: boolean;
  /** Request records naming their worker (`x-tailgate-worker`). */
  requests: boolean;
}

/** The sources a run had, in words: `router counters, worker metrics` or `none`. */
export function describeEvidence(e: WarningEvidence): string {
  const have = [e.routerCounters && 'router counters', e.workerMetrics && 'worker metrics', e.gpuTelemetry && 'GPU telemetry', e.requests && 'requests naming their worker'].filter((x): x is string => typeof x === 'string');
  return have.length === 0 ? 'none' : have.join(', ');
}

/** The sources the warnings had in any of several trials, and in words (`text`). */
export function mergeEvidence(list: readonly WarningEvidence[]): WarningEvidence & { text: string } {
  const e: WarningEvidence = { routerCounters: false, workerMetrics: false, gpuTelemetry: false, requests: false };
  for (const x of list) for (const k of Object.keys(e) as (keyof WarningEvidence)[]) e[k] ||= x[k];
  return { ...e, text: describeEvidence(e) };
}

/** One worker's figures over a trial's profiling window: counter deltas, medians, fractions. */
export interface WorkerFigures {
  id: string;
  /** From the request records whose final worker this is. */
  requests: { count: number; errors: number; ttftP50Ms: number | null; itlP50Ms: number | null };
  /** The router's counters (deltas); null without a tailgate router. */
  router: Record<RouterCounter, number> | null;
  /** The worker's own counters (deltas) and KV usage; null when its `/metrics` was not read. */
  engine: {
    finished: number | null;
    finishedError: number | null;
    httpRequests: number | null;
    http5xx: number | null;
    preemptions: number | null;
    prefixHits: number | null;
    prefixQueries: number | null;
    kvUsageMax: number | null;
  } | null;
  /** Its GPU over the window; null without telemetry for it. */
  gpu: { name: string; samples: number; throttledFraction: number; smClockMedianMhz: number | null; utilMedianPct: number | null; xidMax: number } | null;
}

/** A counter's increase over `[fromMs, toMs]`: the last reading at or before the start (else the first) to the first at or after the end (else the last); a reset counts from 0. */
export function counterDelta(s: TargetSeries | undefined, key: string, fromMs: number, toMs: number): number | null {
  const arr = s?.values[key];
  if (!s || !arr) return null;
  let start: number | null = null;
  let end: number | null = null;
  for (let i = 0; i < s.tMs.length; i++) {
    const v = arr[i]!;
    if (Number.isNaN(v)) continue;
    const t = s.tMs[i]!;
    if (start === null || t <= fromMs) start = v;
    end = v;
    if (t >= toMs) break;
  }
  if (start === null || end === null) return null;
  return end >= start ? end - start : end;
}

const median = (xs: readonly number[]): number | null => (xs.length === 0 ? null : percentile([...xs].sort((a, b) => a - b), 50));

/** Input of {@link workerFigures}. */
export interface WorkerFiguresInput {
  /** Every worker validate knows of (readiness order), plus any the records or series name. */
  workers: readonly string[];
  records: readonly RequestRecord[];
  series: CollectorSeries | null;
  gpu: Record<string, GpuSeries> | null;
  /** The profiling window, ms from the trial's origin. */
  window: { fromMs: number; toMs: number };
}

/**
 * Each worker's figures over the profiling window, from the router's counters, the workers' vLLM
 * counters, the GPU telemetry and the request records, and which of those sources had data.
 *
 * @example
 * const { figures, evidence } = workerFigures({ workers, records, series, gpu: null, window: { fromMs: 0, toMs: 60_000 } });
 */
export function workerFigures(input: WorkerFiguresInput): { figures: WorkerFigures[]; evidence: WarningEvidence } {
  const { fromMs, toMs } = input.window;
  const router = input.series?.targets[ROUTER_TARGET];
  const routerIds = router ? Object.keys(router.values).filter((k) => k.startsWith('router:dispatched:')).map((k) => k.slice('router:dispatched:'.length)) : [];
  const recordIds = input.records.map((r) => r.worker).filter((w): w is string => w !== null);
  const ids = [...new Set([...input.workers, ...routerIds, ...recordIds])].filter((id) => id !== '' && id !== ROUTER_TARGET);
  const byWorker = new Map<string, RequestRecord[]>();
  for (const r of input.records) {
    if (r.phase !== 'profiling' || r.worker === null) continue;
    let list = byWorker.get(r.worker);
    if (!list) byWorker.set(r.worker, (list = []));
    list.push(r);
  }
  const evidence: WarningEvidence = { routerCounters: false, workerMetrics: false, gpuTelemetry: false, requests: recordIds.length > 0 };
  const figures = ids.map((id): WorkerFigures => {
    const recs = byWorker.get(id) ?? [];
    const ok = recs.filter((r) => r.outcome === 'ok');
    const ttft = ok.filter((r) => r.firstTokenMs !== null).map((r) => r.firstTokenMs! - r.startMs);
    const itl = ok.filter((r) => r.chunkMs.length > 1).map((r) => (r.chunkMs[r.chunkMs.length - 1]! - r.chunkMs[0]!) / (r.chunkMs.length - 1));
    const f: WorkerFigures = {
      id,
      requests: { count: recs.length, errors: recs.length - ok.length, ttftP50Ms: median(ttft), itlP50Ms: median(itl) },
      router: null,
      engine: null,
      gpu: null,
    };
    if (router && router.values[routerCounterKey('dispatched', id)]) {
      const d = (c: RouterCounter): number => counterDelta(router, routerCounterKey(c, id), fromMs, toMs) ?? 0;
      f.router = { dispatched: d('dispatched'), completed: d('completed'), failed: d('failed'), retried: d('retried'), redispatched: d('redispatched'), migrated: d('migrated'), ejected: d('ejected') };
      evidence.routerCounters = true;
    }
    const own = input.series?.targets[id];
    if (own && own.tMs.length > 0 && WORKER_COUNTERS.some((k) => own.values[k] !== undefined)) {
      const d = (k: string): number | null => counterDelta(own, k, fromMs, toMs);
      const kv = (own.values['vllm:kv_cache_usage_perc'] ?? []).filter((v, i) => !Number.isNaN(v) && own.tMs[i]! >= fromMs && own.tMs[i]! <= toMs);
      const finished = d('vllm:request_success_total');
      f.engine = {
        finished,
        finishedError: finished === null ? null : (d(FINISHED_ERROR) ?? 0),
        httpRequests: d('http_requests_total'),
        http5xx: own.values['http_requests_total'] ? (d(HTTP_5XX) ?? 0) : null,
        preemptions: d('vllm:num_preemptions_total'),
        prefixHits: d('vllm:prefix_cache_hits_total'),
        prefixQueries: d('vllm:prefix_cache_queries_total'),
        kvUsageMax: kv.length > 0 ? Math.max(...kv) : null,
      };
      evidence.workerMetrics = true;
    }
    const g = input.gpu?.[id];
    if (g) {
      const idx = g.tMs.map((t, i) => (t >= fromMs && t <= toMs ? i : -1)).filter((i) => i >= 0);
      const keep = idx.length > 0 ? idx : g.tMs.map((_, i) => i);
      if (keep.length > 0) {
        const clocks = keep.map((i) => g.smClockMhz[i]!).filter(Number.isFinite);
        const utils = keep.map((i) => g.utilPct[i]!).filter(Number.isFinite);
        const slowed = keep.filter((i) => Number.isFinite(g.clockEventReasons[i]!) && (g.clockEventReasons[i]! & THROTTLE_REASON_MASK) !== 0).length;
        const xids = keep.map((i) => g.xid[i]!).filter(Number.isFinite);
        f.gpu = {
          name: g.gpu,
          samples: keep.length,
          throttledFraction: slowed / keep.length,
          smClockMedianMhz: median(clocks),
          utilMedianPct: median(utils),
          xidMax: xids.length > 0 ? Math.max(...xids) : 0,
        };
        evidence.gpuTelemetry = true;
      }
    }
    return f;
  });
  return { figures, evidence };
}
