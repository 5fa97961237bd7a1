import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BenchResult } from '../bench/index.js';
import { describeGate } from '../gate/index.js';
import { metricsTable, renderHtmlReport, workerIdOf, workerNames, type ReportDoc, type ReportSection } from '../report/index.js';
import { workerSeriesFrom } from './evidence.js';
import { trialReportSections } from './report-sections.js';
import type { SummaryInput } from './outcome.js';
import { TAILGATE_VERSION } from './verdict-doc.js';
import { mergeEvidence } from './worker-figures.js';

const int = (v: number): number => Math.round(v);

/** The sweep curve: throughput and TTFT p99 per GPU against concurrency per GPU, knee marked. */
function sweepSection(s: SummaryInput): ReportSection | null {
  const sw = s.sweep;
  if (!sw || sw.points.length === 0) return null;
  const markers: { x: number; label: string }[] = [];
  if (sw.kneeConcurrencyPerGpu !== null) markers.push({ x: sw.kneeConcurrencyPerGpu, label: 'knee' });
  if (sw.recommendedConcurrencyPerGpu !== null) markers.push({ x: sw.recommendedConcurrencyPerGpu, label: 'recommended' });
  const pr = sw.predicted;
  if (pr?.kneeConcurrencyPerGpu != null && pr.kneeConcurrencyPerGpu !== sw.kneeConcurrencyPerGpu) markers.push({ x: pr.kneeConcurrencyPerGpu, label: 'predicted knee' });
  // Predicted levels are their own series, never joined to the measured line.
  const predicted = (of: (p: { throughputPerGpu: number; ttftP99Ms: number }) => number): { name: string; points: [number, number][] }[] =>
    pr && pr.points.length > 0 ? [{ name: `predicted (${pr.source})`, points: pr.points.map((p): [number, number] => [p.concurrencyPerGpu, of(p)]) }] : [];
  return {
    title: 'Concurrency sweep',
    text: pr ? `${sw.knee.explanation}\n\nPredicted beyond the sweep (${pr.source}; not measured, not gated): ${pr.knee ? pr.knee.explanation : 'none'}${pr.notes.length > 0 ? ` Notes: ${pr.notes.join(' ')}` : ''}` : sw.knee.explanation,
    table: {
      columns: ['per GPU', 'total', 'output tok/s', 'tok/s per GPU', 'TTFT p99 ms', 'shape', 'verdict'],
      rows: sw.points.map((p) => [p.concurrencyPerGpu, p.concurrency, int(p.throughput), int(p.throughputPerGpu), int(p.ttftP99Ms), p.shape, p.verdict]),
    },
    charts: [
      {
        id: 'sweep-throughput',
        title: 'Output throughput per GPU against concurrency per GPU',
        xLabel: 'concurrency per GPU',
        yLabel: 'tokens/s per GPU',
        kind: 'line',
        series: [{ name: 'tok/s per GPU', points: sw.points.map((p) => [p.concurrencyPerGpu, p.throughputPerGpu]) }, ...predicted((p) => p.throughputPerGpu)],
        markers,
      },
      {
        id: 'sweep-ttft',
        title: 'TTFT p99 against concurrency per GPU',
        xLabel: 'concurrency per GPU',
        yLabel: 'ms',
        kind: 'line',
        series: [{ name: 'TTFT p99', points: sw.points.map((p) => [p.concurrencyPerGpu, p.ttftP99Ms]) }, ...predicted((p) => p.ttftP99Ms)],
        markers,
      },
    ],
  };
}

/** The validate report: verdict and why, readiness, the sweep curve, then one section per trial. */
export function validateReportDoc(s: SummaryInput): ReportDoc {
  const sections: ReportSection[] = [];
  const passed = s.trials.filter((t) => t.pass).length;
  const order = s.readiness.workers.map((w) => w.id);
  const nameOf = (id: string | null): string => (id === null ? '' : workerNames([id], order).get(id)!);
  sections.push({
    title: `Verdict: ${s.verdict.toUpperCase()}`,
    text: `${s.reason}\n\nReadiness: ${s.readiness.message}${s.readiness.probe ? `; serve probe ${s.readiness.probe.ok ? `answered in ${int(s.readiness.probe.latencyMs)} ms` : `failed: ${s.readiness.probe.error ?? ''}`}` : ''}.`,
    table: {
      columns: ['trial', 'concurrency', 'verdict', 'shape', 'worker', 'output tok/s', 'TTFT p99 ms'],
      rows: s.trials.map((t) => {
        const tp = t.summary.metrics['output_token_throughput']?.avg ?? 0;
        const p99 = (t.summary.metrics['time_to_first_token'] as { p99?: number } | undefined)?.p99 ?? 0;
        return [t.label, t.concurrency, t.pass ? 'pass' : 'fail', t.shape.shape, nameOf(t.shape.worker), int(tp), int(p99)];
      }),
    },
  });
  const warnings = s.trials.flatMap((t) => t.warnings);
  sections.push({
    title: `Warnings: ${warnings.length === 0 ? 'none' : warnings.length}`,
    text: `Workers that stood out from the fleet's median, passing trial or not (rules: docs/validate.md, "Warnings"). Evidence: ${mergeEvidence(s.trials.map((t) => t.warningEvidence)).text}.`,
    ...(warnings.length > 0 ? {
      table: {
        columns: ['trial', 'worker', 'rule', 'figure', 'value', 'fleet median', 'evidence', 'locus'],
        rows: warnings.map((w) => [w.trial, w.workerName, w.rule, w.figure, w.value, w.fleetMedian, w.source, w.locus]),
      },
    } : {}),
  });
  if (s.search) {
    sections.push({
      title: 'Search: max concurrency',
      text: `Bisection over ${s.search.lo}:${s.search.hi} per GPU, step ${s.search.step}, each level judged by rule ${s.o.passRule}. Largest passing: ${s.search.maxPassingPerGpu ?? 'none'} per GPU${s.search.minFailingPerGpu !== null ? `; ${s.search.minFailingPerGpu} fails` : ''}.`,
      table: { columns: ['#', 'per GPU', 'total', 'verdict', 'why'], rows: s.search.points.map((p, i) => [i + 1, p.concurrencyPerGpu, p.concurrencyPerGpu * s.o.gpus, p.pass ? 'pass' : 'fail', p.why]) },
    });
  }
  const sweep = sweepSection(s);
  if (sweep) sections.push(sweep);
  for (const t of s.trials) {
    sections.push(
      ...trialReportSections({
        title: `${t.label} (concurrency ${t.concurrency}): ${t.pass ? 'pass' : 'fail'}, ${t.shape.shape}`,
        idPrefix: t.label,
        records: t.records,
        workerSeries: t.workerSeries,
        workerOrder: order,
        shape: t.shape,
        ...(t.gpu ? { gpuSeries: t.gpu.perWorker } : {}),
        locus: t.locus,
        warnings: t.warnings,
        gates: t.gates,
        verdict: t.pass ? 'pass' : 'fail',
      }),
    );
  }
  return {
    title: `tailgate validate: ${s.verdict.toUpperCase()}`,
    subtitle: s.search ? `Search over ${s.search.lo}:${s.search.hi} per GPU: ${s.search.points.length} levels tried` : s.sweep ? `Sweep of ${s.trials.length} concurrency levels` : `${passed} of ${s.trials.length} trials passed (rule ${s.o.passRule})`,
    meta: {
      target: s.o.url,
      model: s.o.model,
      gpus: String(s.o.gpus),
      concurrency: `${s.o.concurrency} (${s.o.concurrencyPerGpu} per GPU)`,
      gates: s.o.gates.map(describeGate).join('; ') || 'none',
      seed: String(s.o.randomSeed),
      tailgate: TAILGATE_VERSION,
      node: process.version,
    },
    sections,
  };
}

/**
 * The report of one `tailgate bench` run: the metrics table, then in-flight per worker (from the
 * records' worker header), TTFT p99 and output throughput over time, on one time axis.
 *
 * @example
 * renderHtmlReport(benchReportDoc(await runBench(opts)));
 */
export function benchReportDoc(r: BenchResult): ReportDoc {
  const o = r.options;
  const urls = o.targets.map((t) => t.url);
  const load = o.requestRate !== null ? `${o.requestRate} requests/s (${o.requestRateMode})` : `concurrency ${o.concurrency}`;
  const workerSeries = workerSeriesFrom(null, r.records, []);
  // The --url list names the workers only when bench talked to them directly (not through a router).
  const ids = new Set(urls.map(workerIdOf));
  const order = Object.keys(workerSeries).every((id) => ids.has(id)) ? urls : [];
  const overTime = trialReportSections({ title: 'Over time (warm-up included: it loads the fleet too)', idPrefix: 'bench', records: r.records, workerSeries, workerOrder: order });
  if (Object.keys(workerSeries).length === 0) for (const s of overTime) s.text = `No per-worker figures: no response carried the ${o.workerHeader} header (tailgate route sets it).`;
  return {
    title: `tailgate bench: ${o.model}`,
    subtitle: `${r.summary.profilingCount} requests, ${r.summary.errorCount} failed, ${load}${r.cancelled ? ' (interrupted)' : ''}`,
    meta: { target: urls.join(', '), model: o.model, load, seed: String(o.randomSeed), started: r.startTime.toISOString(), tailgate: TAILGATE_VERSION, node: process.version },
    sections: [{ title: 'Metrics (profiling phase)', table: metricsTable(r.summary) }, ...overTime],
  };
}

/** Writes {@link benchReportDoc} as `report.html` into `dir`; returns its path. */
export async function writeBenchReport(dir: string, r: BenchResult): Promise<string> {
  const path = join(dir, 'report.html');
  await mkdir(dir, { recursive: true });
  await writeFile(path, renderHtmlReport(benchReportDoc(r)));
  return path;
}
