import type { RequestRecord } from '../core/index.js';
import type { GateResult, GpuSeries, WorkerSeries } from '../gate/index.js';
import { timeSeries } from '../stats/index.js';
import type { Chart } from './report-doc.js';
import { workerNames, workerOrder } from './worker-names.js';

/** Input of {@link runCharts}: one run (a validate trial, a demo run, a bench run, a simulated trial). */
export interface RunChartsInput {
  /** Unique among the report's charts: ids become `<idPrefix>-inflight`, `-ttft`, `-throughput`... */
  idPrefix: string;
  /** Put before every chart title, e.g. `round-robin: `. */
  titlePrefix?: string;
  records: readonly RequestRecord[];
  /** Per-worker in-flight over time, keyed by `host:port`; ms on the records' clock. */
  workerSeries?: Record<string, WorkerSeries>;
  /** The order the user addressed the workers in (URLs or `host:port`): see `workerNames`. */
  workerOrder?: readonly string[];
  /** A note after a worker's name on its panels, e.g. `⚠ ejected` for a worker a warning names. */
  workerNotes?: Record<string, string>;
  /** Per-worker GPU telemetry, keyed like `workerSeries`. */
  gpuSeries?: Record<string, GpuSeries>;
  /** Judged gates: a TTFT p99 ceiling and a throughput floor are drawn at the limit the gate compared with. */
  gates?: readonly GateResult[];
  /** Windows shaded on every chart (ms on the records' clock), e.g. a worker's stall. */
  windows?: readonly { fromMs: number; toMs: number; label: string }[];
  /** Time zero of the x axis, ms on the records' clock. @default the first request's start */
  originMs?: number;
  /** Bucket of the TTFT and throughput charts. @default 1000 */
  bucketMs?: number;
  /** Logarithmic TTFT axis (a stall's minute-long TTFTs next to healthy 100 ms ones). */
  ttftLog?: boolean;
}

/** Workers drawn as their own panel; past this the busiest keep theirs and one panel shows the rest's peak. */
export const MAX_WORKER_PANELS = 16;

const round = (v: number): number => Math.round(v * 100) / 100;

/** Series per worker, named `worker i (host:port)`, in the user's order; past the cap the busiest and the rest's max. */
function perWorker<T extends { tMs: number[] }>(byId: Record<string, T>, values: (s: T) => readonly number[], r: RunChartsInput, toS: (ms: number) => number): Chart['series'] {
  const order = r.workerOrder ?? [];
  const ids = workerOrder(Object.keys(byId), order);
  const names = new Map([...workerNames(ids, order)].map(([id, name]) => [id, r.workerNotes?.[id] ? `${name} ${r.workerNotes[id]}` : name]));
  const series = (id: string): [number, number][] => {
    const s = byId[id]!;
    const v = values(s);
    const out: [number, number][] = [];
    s.tMs.forEach((t, i) => {
      const y = v[i];
      if (y !== undefined && Number.isFinite(y)) out.push([toS(t), y]);
    });
    return out;
  };
  if (ids.length <= MAX_WORKER_PANELS) return ids.map((id) => ({ name: names.get(id)!, points: series(id) }));
  const peak = (id: string): number => values(byId[id]!).reduce((a, b) => (Number.isFinite(b) && b > a ? b : a), Number.NEGATIVE_INFINITY);
  const busiest = new Set([...ids].sort((a, b) => peak(b) - peak(a)).slice(0, MAX_WORKER_PANELS - 1));
  const rest = ids.filter((id) => !busiest.has(id));
  const max = new Map<number, number>();
  for (const id of rest) for (const [x, y] of series(id)) max.set(x, Math.max(max.get(x) ?? Number.NEGATIVE_INFINITY, y));
  return [
    ...ids.filter((id) => busiest.has(id)).map((id) => ({ name: names.get(id)!, points: series(id) })),
    { name: `highest of the other ${rest.length} workers`, points: [...max.entries()].sort((a, b) => a[0] - b[0]) },
  ];
}

/**
 * The charts of one run, stacked on one shared time axis with the same windows shaded on each:
 * in-flight per worker (one small panel per worker, so a backed-up worker stands out and none
 * hides another), GPU utilisation and power per worker when scraped, TTFT p99 of the requests
 * started in each bucket with the TTFT gate's limit, and output throughput with the throughput
 * gate's limit. Workers are named as the user addressed them (`worker 3 (127.0.0.1:8103)`).
 *
 * @example
 * renderHtmlReport({ title: 'bench', sections: [{ title: 'run', charts: runCharts({ idPrefix: 'run', records, workerSeries }) }] });
 */
export function runCharts(r: RunChartsInput): Chart[] {
  const bucketMs = r.bucketMs ?? 1000;
  // A loop, not Math.min(...): a spread of over ~120k records overflows the call stack.
  const originMs = r.originMs ?? (r.records.length > 0 ? r.records.reduce((m, x) => Math.min(m, x.startMs), Number.POSITIVE_INFINITY) : 0);
  const toS = (ms: number): number => Math.round(ms - originMs) / 1000;
  const title = (t: string): string => `${r.titlePrefix ?? ''}${t}`;
  const charts: Chart[] = [];
  const ws = r.workerSeries ?? {};
  if (Object.keys(ws).length > 0) {
    charts.push({
      id: `${r.idPrefix}-inflight`, title: title('requests in flight at each worker'), xLabel: 'time (s)', yLabel: 'in flight', kind: 'step', facets: true,
      series: perWorker(ws, (s) => s.inflight, r, toS),
    });
  }
  const gpu = r.gpuSeries ?? {};
  if (Object.keys(gpu).length > 0) {
    charts.push(
      { id: `${r.idPrefix}-gpu-util`, title: title('GPU utilisation at each worker'), xLabel: 'time (s)', yLabel: '%', kind: 'line', facets: true, series: perWorker(gpu, (g) => g.utilPct, r, toS) },
      { id: `${r.idPrefix}-gpu-power`, title: title('GPU power at each worker'), xLabel: 'time (s)', yLabel: 'W', kind: 'line', facets: true, series: perWorker(gpu, (g) => g.powerW, r, toS) },
    );
  }
  if (r.records.length > 0) {
    const ts = timeSeries(r.records, { bucketMs });
    const mid = (i: number): number => toS(ts.tMs[i]! + bucketMs / 2);
    const ttft: [number, number][] = [];
    ts.ttftP99Ms.forEach((v, i) => {
      if (v !== null) ttft.push([mid(i), v]);
    });
    const bucket = `${round(bucketMs / 1000)} s`;
    const limitsOf = (metric: string, stat: string | null, unit: string): NonNullable<Chart['limits']> =>
      (r.gates ?? []).filter((g) => g.gate.metric === metric && (stat === null || g.gate.stat === stat)).map((g) => ({
        y: g.limit,
        label: `gate limit ${g.gate.op} ${round(g.limit)} ${unit} (${g.gate.threshold} x${g.gate.tolerance}, ${g.gate.stat} of the run)`,
      }));
    charts.push(
      {
        id: `${r.idPrefix}-ttft`, title: title(`TTFT p99 of the requests started in each ${bucket}`), xLabel: 'time (s)', yLabel: 'TTFT p99 (ms)', kind: 'line',
        ...(r.ttftLog === true ? { yLog: true } : {}), series: [{ name: 'TTFT p99', points: ttft }], limits: limitsOf('time_to_first_token', 'p99', 'ms'),
      },
      {
        id: `${r.idPrefix}-throughput`, title: title(`output tokens per second, all workers, per ${bucket}`), xLabel: 'time (s)', yLabel: 'tokens/s', kind: 'line',
        series: [{ name: 'output tokens/s', points: ts.outputTokensPerS.map((v, i): [number, number] => [mid(i), v]) }], limits: limitsOf('output_token_throughput', null, 'tok/s'),
      },
    );
  }
  const bands = (r.windows ?? []).map((w) => ({ from: toS(w.fromMs), to: toS(w.toMs), label: w.label }));
  return shareTimeAxis(charts, bands, 0);
}

/** Gives every chart the same x range (the union of theirs, the bands' and `fromX`) and the same shaded bands. */
export function shareTimeAxis(charts: readonly Chart[], bands: NonNullable<Chart['bands']> = [], fromX = Number.POSITIVE_INFINITY): Chart[] {
  let lo = fromX;
  let hi = Number.NEGATIVE_INFINITY;
  for (const c of charts) {
    for (const s of c.series) {
      for (const [x] of s.points) {
        if (x < lo) lo = x;
        if (x > hi) hi = x;
      }
    }
  }
  for (const b of bands) {
    lo = Math.min(lo, b.from);
    hi = Math.max(hi, b.to);
  }
  const shared = hi > lo ? { xDomain: [lo, hi] as [number, number] } : {};
  return charts.map((c) => ({ ...c, ...shared, ...(bands.length > 0 ? { bands: [...(c.bands ?? []), ...bands] } : {}) }));
}
