import type { RequestRecord } from '../core/index.js';
import { describeGate, type GateResult, type GpuSeries, type LocusVerdict, type ShapeVerdict, type WorkerSeries } from '../gate/index.js';
import { runCharts, workerNames, type ReportSection } from '../report/index.js';
import type { WorkerWarning } from './warnings.js';

/** Input of {@link trialReportSections}: one trial (or any run with records and per-worker series). */
export interface TrialReportInput {
  /** Section title, e.g. `Trial 2 of 3 (concurrency 2048)`. */
  title: string;
  /** Unique among the report's charts: chart ids become `<idPrefix>-inflight` and so on. */
  idPrefix: string;
  records: readonly RequestRecord[];
  workerSeries: Record<string, WorkerSeries>;
  /** The order the user addressed the workers in (router `/workers`, `--worker-url`): names them `worker i (host:port)`. */
  workerOrder?: readonly string[];
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

/**
 * The report section of one trial: verdict, shape and explanation as text, the gates as a table,
 * and the run's charts on one time axis (see `runCharts`): in-flight per worker, GPU telemetry,
 * TTFT p99 by request start and output throughput, with the gates' limits. Times are seconds from the first request.
 *
 * @example
 * renderHtmlReport({ title: 'demo', sections: trialReportSections({ title: 'round-robin', idPrefix: 'rr', records, workerSeries }) });
 */
export function trialReportSections(t: TrialReportInput): ReportSection[] {
  const text: string[] = [];
  const names = workerNames([...Object.keys(t.workerSeries), ...(t.shape?.worker ? [t.shape.worker] : []), ...(t.locus?.worker ? [t.locus.worker] : [])], t.workerOrder ?? []);
  const nameOf = (id: string): string => names.get(id) ?? id;
  if (t.verdict !== undefined || t.shape !== undefined) {
    text.push(`${t.verdict === undefined ? '' : `${t.verdict.toUpperCase()}. `}${t.shape ? `Shape: ${t.shape.shape}${t.shape.worker ? ` (${nameOf(t.shape.worker)})` : ''}. ${t.shape.explanation}` : ''}`.trim());
  }
  if (t.shape && Object.keys(t.shape.evidence).length > 0) {
    text.push(`Evidence: ${Object.entries(t.shape.evidence).map(([k, v]) => `${k}=${typeof v === 'number' ? Math.round(v * 100) / 100 : v}`).join(', ')}.`);
  }
  if (t.locus) {
    const l = t.locus;
    text.push(`Locus: ${l.locus}${l.worker ? ` (${nameOf(l.worker)}${l.gpu ? `, ${l.gpu}` : ''})` : ''}. ${l.explanation}${l.missing.length > 0 ? ` Missing: ${l.missing.join('; ')}.` : ''}`);
  }
  const warned = new Map<string, string[]>();
  for (const w of t.warnings ?? []) warned.set(w.worker, [...(warned.get(w.worker) ?? []), w.rule]);
  for (const w of t.warnings ?? []) text.push(`Warning: ${w.message}; locus ${w.locus}.`);
  const charts = runCharts({
    idPrefix: t.idPrefix, records: t.records, workerSeries: t.workerSeries, bucketMs: t.bucketMs ?? 1000,
    workerNotes: Object.fromEntries([...warned].map(([w, rules]) => [w, `⚠ ${rules.join(', ')}`])),
    ...(t.workerOrder ? { workerOrder: t.workerOrder } : {}), ...(t.gpuSeries ? { gpuSeries: t.gpuSeries } : {}), ...(t.gates ? { gates: t.gates } : {}),
  });
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
