import type { RequestRecord } from '../core/index.js';
import { describeGate, type GateResult, type GpuSeries, type LocusVerdict, type ShapeVerdict, type WorkerSeries } from '../gate/index.js';
import type { Chart, ReportSection } from '../report/index.js';
import { timeSeries } from '../stats/index.js';
import type { WorkerWarning } from './warnings.js';

/** Input of {@link trialReportSections}: one trial (or any run with records and per-worker series). */
export interface TrialReportInput {
  /** Section title, e.g. `Trial 2 of 3 (concurrency 2048)`. */
  title: string;
  /** Unique among the report's charts: chart ids become `<idPrefix>-inflight` and so on. */
  idPrefix: string;
  records: readonly RequestRecord[];
  workerSeries: Record<string, WorkerSeries>;
  shape?: ShapeVerdict;
  gates?: readonly GateResult[];
  verdict?: 'pass' | 'fail';
  /** Per-worker GPU telemetry: utilisation and power charts on the in-flight chart's time axis. */
  gpuSeries?: Record<string, GpuSeries>;
  /** Where the failure lives, written under the shape. */
  locus?: LocusVerdict | null;
  /** Workers that stood out: named in the text and marked (`⚠ rule`) on their lines of the per-worker charts. */
  warnings?: readonly WorkerWarning[];
  /** Bucket of the TTFT and throughput charts. @default 1000 */
  bucketMs?: number;
}

const sec = (ms: number, originMs: number): number => Math.round((ms - originMs) / 10) / 100;

/**
 * The report section of one trial: verdict, shape and explanation as text, the gates as a table,
 * and three charts over time: per-worker in-flight (one line per worker, a backed-up worker stands
 * out), TTFT p99 by request start, and output throughput. Times are seconds from the first request.
 *
 * @example
 * renderHtmlReport({ title: 'demo', sections: trialReportSections({ title: 'round-robin', idPrefix: 'rr', records, workerSeries }) });
 */
export function trialReportSections(t: TrialReportInput): ReportSection[] {
  const bucketMs = t.bucketMs ?? 1000;
  const originMs = t.records.length > 0 ? Math.min(...t.records.map((r) => r.startMs)) : 0;
  const text: string[] = [];
  if (t.verdict !== undefined || t.shape !== undefined) {
    text.push(`${t.verdict === undefined ? '' : `${t.verdict.toUpperCase()}. `}${t.shape ? `Shape: ${t.shape.shape}${t.shape.worker ? ` (worker ${t.shape.worker})` : ''}. ${t.shape.explanation}` : ''}`.trim());
  }
  if (t.shape && Object.keys(t.shape.evidence).length > 0) {
    text.push(`Evidence: ${Object.entries(t.shape.evidence).map(([k, v]) => `${k}=${typeof v === 'number' ? Math.round(v * 100) / 100 : v}`).join(', ')}.`);
  }
  if (t.locus) {
    const l = t.locus;
    text.push(`Locus: ${l.locus}${l.worker ? ` (worker ${l.worker}${l.gpu ? `, ${l.gpu}` : ''})` : ''}. ${l.explanation}${l.missing.length > 0 ? ` Missing: ${l.missing.join('; ')}.` : ''}`);
  }
  const warned = new Map<string, string[]>();
  for (const w of t.warnings ?? []) warned.set(w.worker, [...(warned.get(w.worker) ?? []), w.rule]);
  for (const w of t.warnings ?? []) text.push(`Warning: ${w.message}; locus ${w.locus}.`);
  const lineName = (w: string): string => (warned.has(w) ? `${w} ⚠ ${warned.get(w)!.join(', ')}` : w);
  const charts: Chart[] = [];
  const workers = Object.keys(t.workerSeries).sort();
  if (workers.length > 0) {
    charts.push({
      id: `${t.idPrefix}-inflight`,
      title: 'In-flight requests per worker',
      xLabel: 'time (s)',
      yLabel: 'in-flight',
      kind: 'step',
      series: workers.map((w) => {
        const s = t.workerSeries[w]!;
        return { name: lineName(w), points: s.tMs.map((x, i) => [sec(x, originMs), s.inflight[i] ?? 0] as [number, number]) };
      }),
    });
  }
  const gpuWorkers = Object.keys(t.gpuSeries ?? {}).sort();
  const gpuChart = (key: 'utilPct' | 'powerW', id: string, title: string, yLabel: string): Chart => ({
    id: `${t.idPrefix}-${id}`,
    title,
    xLabel: 'time (s)',
    yLabel,
    kind: 'line',
    series: gpuWorkers.map((w) => {
      const g = t.gpuSeries![w]!;
      const points: [number, number][] = [];
      g.tMs.forEach((x, i) => {
        const v = g[key][i];
        if (v !== undefined && Number.isFinite(v)) points.push([sec(x, originMs), v]);
      });
      return { name: lineName(w), points };
    }),
  });
  if (gpuWorkers.length > 0) {
    charts.push(gpuChart('utilPct', 'gpu-util', 'GPU utilisation per worker', '%'), gpuChart('powerW', 'gpu-power', 'GPU power per worker', 'W'));
  }
  if (t.records.length > 0) {
    const ts = timeSeries(t.records, { bucketMs });
    const mid = (i: number): number => sec(ts.tMs[i]! + bucketMs / 2, originMs);
    const ttft: [number, number][] = [];
    ts.ttftP99Ms.forEach((v, i) => {
      if (v !== null) ttft.push([mid(i), v]);
    });
    const lines: Chart['series'] = [{ name: 'TTFT p99 (by request start)', points: ttft }];
    const ceiling = t.gates?.find((g) => g.gate.metric === 'time_to_first_token' && g.gate.op === '<=');
    if (ceiling && ttft.length > 0) lines.push({ name: `ceiling ${describeGate(ceiling.gate)}`, points: [[ttft[0]![0], ceiling.gate.threshold], [ttft[ttft.length - 1]![0], ceiling.gate.threshold]] });
    charts.push({ id: `${t.idPrefix}-ttft`, title: 'TTFT p99 over time', xLabel: 'time (s)', yLabel: 'ms', kind: 'line', series: lines });
    charts.push({
      id: `${t.idPrefix}-throughput`,
      title: 'Output token throughput over time',
      xLabel: 'time (s)',
      yLabel: 'tokens/s',
      kind: 'line',
      series: [{ name: 'output tokens/s', points: ts.outputTokensPerS.map((v, i) => [mid(i), v] as [number, number]) }],
    });
  }
  const section: ReportSection = { title: t.title, charts };
  if (text.length > 0) section.text = text.join('\n\n');
  if (t.gates && t.gates.length > 0) {
    section.table = {
      columns: ['gate', 'value', 'limit', 'result'],
      rows: t.gates.map((g) => [describeGate(g.gate), g.value === null ? 'missing' : Math.round(g.value * 100) / 100, `${g.gate.op} ${Math.round(g.limit * 100) / 100}`, g.pass ? 'pass' : 'fail']),
    };
  }
  return [section];
}
