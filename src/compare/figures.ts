import type { RequestRecord } from '../core/index.js';
import { percentile } from '../stats/index.js';
import type { TrialData } from './load-run.js';

/** Where a figure lives: the whole fleet, one worker, the router, the client's host. */
export type Scope = 'fleet' | 'worker' | 'router' | 'host' | 'client';

/**
 * How a figure's change is weighed: `ratio` figures by their ratio, `share` figures (0..1) and
 * `count` figures by their difference, `bits` figures (clock-event reasons, XID) by any change.
 */
export type FigureKind = 'ratio' | 'share' | 'count' | 'bits';

/** What one figure is. */
export interface FigureDef {
  /** Stable key, e.g. `worker 2 step time` or `TTFT p99`. */
  key: string;
  /** The figure without its scope, e.g. `step time`; figures of one `metric` are compared across workers. */
  metric: string;
  unit: string;
  scope: Scope;
  /** Worker number (index in the run's order) for scope `worker`. */
  worker: number | null;
  /** Judged by the run's gates (the gap that diagnostic figures explain). */
  gated: boolean;
  /** An outcome of the whole fleet (TTFT, latency, throughput): part of the gap, not an explanation of it. */
  outcome?: boolean;
  kind: FigureKind;
  /** The statistic the value is, over the samples. */
  stat: 'p99' | 'p50' | 'mean' | 'max' | 'or' | 'last';
  /** Smallest change that counts: a ratio for `ratio`, a difference for `share` and `count`. */
  material: number;
  /** The trial's value is not the statistic of its samples (throughput: tokens over the window, samples per second). */
  ownValue?: boolean;
}

/** One trial's value of a figure, and the samples inside the trial it was computed from (per request or per scrape). */
export interface TrialFigure {
  def: FigureDef;
  value: number;
  samples: number[];
}

const statOf = (stat: FigureDef['stat'], xs: number[]): number => {
  if (xs.length === 0) return Number.NaN;
  if (stat === 'mean') return xs.reduce((a, b) => a + b, 0) / xs.length;
  if (stat === 'max') return Math.max(...xs);
  if (stat === 'last') return xs[xs.length - 1]!;
  if (stat === 'or') return xs.reduce((a, b) => a | b, 0);
  return percentile(Float64Array.from(xs).sort(), stat === 'p99' ? 99 : 50);
};

/** The value of `stat` over `xs` (NaN for none). */
export function statValue(stat: FigureDef['stat'], xs: number[]): number {
  return statOf(stat, xs);
}

const ttftOf = (r: RequestRecord): number | null => (r.outcome === 'ok' && r.firstTokenMs !== null ? r.firstTokenMs - r.startMs : null);
/** Mean gap between a request's chunks after the first: one decode step per token, the step time seen from the client. */
const stepOf = (r: RequestRecord): number | null => {
  if (r.outcome !== 'ok' || r.chunkMs.length < 2) return null;
  return (r.chunkMs[r.chunkMs.length - 1]! - r.chunkMs[0]!) / (r.chunkMs.length - 1);
};
const present = (xs: (number | null)[]): number[] => xs.filter((v): v is number => v !== null && Number.isFinite(v));

/** Output tokens per whole second of the window (the last, partial second left out), each chunk's tokens in the second it arrived. */
function tokensPerSecond(rs: readonly RequestRecord[], startMs: number, endMs: number): number[] {
  const n = Math.floor((endMs - startMs) / 1000);
  const out = new Array<number>(Math.max(0, n)).fill(0);
  for (const r of rs) {
    if (r.outcome !== 'ok' || r.chunkMs.length === 0) continue;
    const per = (r.outputTokens.server ?? r.outputTokens.client) / r.chunkMs.length;
    for (const t of r.chunkMs) {
      const i = Math.floor((t - startMs) / 1000);
      if (i >= 0 && i < n) out[i]! += per;
    }
  }
  return out;
}

/** Builds figures of one trial; `add` ignores figures with no value. */
class FigureSet {
  readonly out = new Map<string, TrialFigure>();
  add(def: Omit<FigureDef, 'key'> & { key?: string }, samples: number[], value?: number): void {
    const v = value ?? statOf(def.stat, samples);
    if (!Number.isFinite(v)) return;
    const key = def.key ?? (def.worker === null ? def.metric : `worker ${def.worker} ${def.metric}`);
    this.out.set(key, { def: { ...def, key }, value: v, samples });
  }
}

function requestFigures(f: FigureSet, t: TrialData): void {
  const rs = t.records;
  if (rs.length === 0) return;
  const gated = new Set(t.gated);
  const fleet = { scope: 'fleet' as const, worker: null };
  const outcome = { ...fleet, outcome: true };
  const ttft = present(rs.map(ttftOf));
  const steps = present(rs.map(stepOf));
  f.add({ ...outcome, metric: 'TTFT p99', unit: 'ms', gated: gated.has('time_to_first_token.p99'), kind: 'ratio', stat: 'p99', material: 1.15 }, ttft);
  f.add({ ...outcome, metric: 'TTFT p50', unit: 'ms', gated: gated.has('time_to_first_token.p50'), kind: 'ratio', stat: 'p50', material: 1.15 }, ttft);
  f.add({ ...fleet, metric: 'step time (ITL)', unit: 'ms', gated: gated.has('inter_token_latency.avg'), kind: 'ratio', stat: 'mean', material: 1.15 }, steps);
  f.add({ ...outcome, metric: 'request latency p99', unit: 'ms', gated: gated.has('request_latency.p99'), kind: 'ratio', stat: 'p99', material: 1.15 }, present(rs.map((r) => (r.outcome === 'ok' ? r.endMs - r.startMs : null))));
  f.add({ ...fleet, metric: 'error share', unit: 'share', gated: false, kind: 'share', stat: 'mean', material: 0.02 }, rs.map((r) => (r.outcome === 'ok' ? 0 : 1)));
  let startMs = Number.POSITIVE_INFINITY;
  let endMs = Number.NEGATIVE_INFINITY;
  for (const r of rs) {
    startMs = Math.min(startMs, r.startMs);
    endMs = Math.max(endMs, r.endMs);
  }
  const tokens = rs.reduce((n, r) => n + (r.outcome === 'ok' ? (r.outputTokens.server ?? r.outputTokens.client) : 0), 0);
  const durS = (endMs - startMs) / 1000;
  if (durS > 0) f.add({ ...outcome, metric: 'output throughput', unit: 'tok/s', gated: gated.has('output_token_throughput.avg'), kind: 'ratio', stat: 'mean', material: 1.1, ownValue: true }, tokensPerSecond(rs, startMs, endMs), tokens / durS);

  const byWorker = new Map<string, RequestRecord[]>();
  for (const r of rs) {
    if (r.worker === null) continue;
    const list = byWorker.get(r.worker);
    if (list) list.push(r);
    else byWorker.set(r.worker, [r]);
  }
  for (const [id, list] of byWorker) {
    const w = t.workers.indexOf(id);
    if (w < 0) continue;
    const at = { scope: 'worker' as const, worker: w, gated: false };
    const wt = present(list.map(ttftOf));
    f.add({ ...at, metric: 'TTFT p99', unit: 'ms', kind: 'ratio', stat: 'p99', material: 1.15 }, wt);
    f.add({ ...at, metric: 'TTFT p50', unit: 'ms', kind: 'ratio', stat: 'p50', material: 1.15 }, wt);
    f.add({ ...at, metric: 'step time (ITL)', unit: 'ms', kind: 'ratio', stat: 'mean', material: 1.15 }, present(list.map(stepOf)));
    f.add({ ...at, metric: 'error share', unit: 'share', kind: 'share', stat: 'mean', material: 0.02 }, list.map((r) => (r.outcome === 'ok' ? 0 : 1)));
    f.add({ ...at, metric: 'share of requests', unit: 'share', kind: 'share', stat: 'mean', material: 0.5 / Math.max(1, t.workers.length) }, [], list.length / rs.length);
  }
}

/** Series `key` of target `id`, finite values only. */
function series(t: TrialData, id: string, key: string): number[] {
  const v = t.scrape?.targets[id]?.values[key];
  return v ? v.filter((x) => Number.isFinite(x)) : [];
}

/** A counter's increase over the trial (last minus first sample). */
const delta = (xs: number[]): number => (xs.length === 0 ? Number.NaN : xs[xs.length - 1]! - xs[0]!);

const ROUTER_COUNTERS = ['failed', 'retried', 'redispatched', 'migrated', 'ejected'] as const;

function scrapeFigures(f: FigureSet, t: TrialData): void {
  if (t.scrape === null) return;
  const queue = series(t, 'router', 'router:queue_length');
  const router = { scope: 'router' as const, worker: null, gated: false };
  f.add({ ...router, metric: 'router queue mean', unit: 'requests', kind: 'count', stat: 'mean', material: 1 }, queue);
  f.add({ ...router, metric: 'router queue peak', unit: 'requests', kind: 'count', stat: 'max', material: 2 }, queue);
  const peaks: number[] = [];
  t.workers.forEach((id, w) => {
    const at = { scope: 'worker' as const, worker: w, gated: false };
    const routed = series(t, 'router', `inflight:${id}`);
    const running = series(t, id, 'vllm:num_requests_running');
    const waiting = series(t, id, 'vllm:num_requests_waiting');
    const inflight = routed.length > 0 ? routed : running.map((r, i) => r + (waiting[i] ?? 0));
    f.add({ ...at, metric: 'in-flight mean', unit: 'requests', kind: 'ratio', stat: 'mean', material: 1.25 }, inflight);
    f.add({ ...at, metric: 'in-flight peak', unit: 'requests', kind: 'ratio', stat: 'max', material: 1.25 }, inflight);
    if (inflight.length > 0) peaks.push(Math.max(...inflight));
    f.add({ ...at, metric: 'engine queue (waiting) mean', unit: 'requests', kind: 'count', stat: 'mean', material: 1 }, waiting);
    f.add({ ...at, metric: 'preemptions', unit: 'requests', kind: 'count', stat: 'last', material: 1 }, [], delta(series(t, id, 'vllm:num_preemptions_total')));
    for (const c of ROUTER_COUNTERS) f.add({ ...at, metric: `router ${c}`, unit: 'requests', kind: 'count', stat: 'last', material: 1 }, [], delta(series(t, 'router', `router:${c}:${id}`)));
  });
  if (peaks.length > 0) f.add({ ...router, metric: 'worker in-flight peak (highest)', unit: 'requests', kind: 'ratio', stat: 'max', material: 1.25 }, peaks);
}

function gpuFigures(f: FigureSet, t: TrialData): void {
  if (t.gpu === null) return;
  t.workers.forEach((id, w) => {
    const g = t.gpu![id];
    if (!g) return;
    const at = { scope: 'worker' as const, worker: w, gated: false };
    const fin = (xs: number[] | undefined): number[] => (xs ?? []).filter((x) => typeof x === 'number' && Number.isFinite(x));
    f.add({ ...at, metric: 'GPU utilisation', unit: '%', kind: 'ratio', stat: 'mean', material: 1.2 }, fin(g.utilPct));
    f.add({ ...at, metric: 'GPU SM clock', unit: 'MHz', kind: 'ratio', stat: 'mean', material: 1.1 }, fin(g.smClockMhz));
    f.add({ ...at, metric: 'GPU power', unit: 'W', kind: 'ratio', stat: 'mean', material: 1.2 }, fin(g.powerW));
    f.add({ ...at, metric: 'GPU clock-event reasons', unit: 'bits', kind: 'bits', stat: 'or', material: 1 }, fin(g.clockEventReasons));
    f.add({ ...at, metric: 'GPU XID', unit: 'xid', kind: 'bits', stat: 'max', material: 1 }, fin(g.xid));
  });
}

function hostFigures(f: FigureSet, t: TrialData): void {
  const host = { scope: 'host' as const, worker: null, gated: false };
  f.add({ ...host, metric: 'CPU pressure (PSI some avg10) max', unit: '%', kind: 'count', stat: 'max', material: 10 }, present(t.host.map((h) => h.cpuSomeAvg10)));
  const cpus = t.host[0]?.cpus ?? 0;
  if (cpus > 0) f.add({ ...host, metric: 'load average per CPU max', unit: 'per CPU', kind: 'count', stat: 'max', material: 0.5 }, t.host.map((h) => h.loadAvg1 / cpus));
  const c = t.client;
  if (c?.eventLoopDelayP99Ms != null) f.add({ scope: 'client', worker: null, gated: false, metric: 'client event-loop delay p99', unit: 'ms', kind: 'count', stat: 'last', material: 20 }, [], c.eventLoopDelayP99Ms);
}

/** A trial's figures, computed once however many comparisons read them. */
const CACHE = new WeakMap<TrialData, Map<string, TrialFigure>>();

/**
 * Every figure of one trial: the gated ones, the fleet's and each worker's request figures, the
 * router's queue and counters, each worker's GPU telemetry, the host's pressure, the client.
 *
 * @example trialFigures(trial).get('worker 2 step time (ITL)')?.value; // 48.1 (ms)
 */
export function trialFigures(t: TrialData): Map<string, TrialFigure> {
  const cached = CACHE.get(t);
  if (cached) return cached;
  const f = new FigureSet();
  requestFigures(f, t);
  scrapeFigures(f, t);
  gpuFigures(f, t);
  hostFigures(f, t);
  CACHE.set(t, f.out);
  return f.out;
}
