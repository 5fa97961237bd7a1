import { describeGate } from '../gate/index.js';
import type { ReportDoc, ReportSection } from '../report/index.js';
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
  return {
    title: 'Concurrency sweep',
    text: sw.knee.explanation,
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
        series: [{ name: 'tok/s per GPU', points: sw.points.map((p) => [p.concurrencyPerGpu, p.throughputPerGpu]) }],
        markers,
      },
      {
        id: 'sweep-ttft',
        title: 'TTFT p99 against concurrency per GPU',
        xLabel: 'concurrency per GPU',
        yLabel: 'ms',
        kind: 'line',
        series: [{ name: 'TTFT p99', points: sw.points.map((p) => [p.concurrencyPerGpu, p.ttftP99Ms]) }],
        markers,
      },
    ],
  };
}

/** The validate report: verdict and why, readiness, the sweep curve, then one section per trial. */
export function validateReportDoc(s: SummaryInput): ReportDoc {
  const sections: ReportSection[] = [];
  const passed = s.trials.filter((t) => t.pass).length;
  sections.push({
    title: `Verdict: ${s.verdict.toUpperCase()}`,
    text: `${s.reason}\n\nReadiness: ${s.readiness.message}${s.readiness.probe ? `; serve probe ${s.readiness.probe.ok ? `answered in ${int(s.readiness.probe.latencyMs)} ms` : `failed: ${s.readiness.probe.error ?? ''}`}` : ''}.`,
    table: {
      columns: ['trial', 'concurrency', 'verdict', 'shape', 'worker', 'output tok/s', 'TTFT p99 ms'],
      rows: s.trials.map((t) => {
        const tp = t.summary.metrics['output_token_throughput']?.avg ?? 0;
        const p99 = (t.summary.metrics['time_to_first_token'] as { p99?: number } | undefined)?.p99 ?? 0;
        return [t.label, t.concurrency, t.pass ? 'pass' : 'fail', t.shape.shape, t.shape.worker ?? '', int(tp), int(p99)];
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
  const sweep = sweepSection(s);
  if (sweep) sections.push(sweep);
  for (const t of s.trials) {
    sections.push(
      ...trialReportSections({
        title: `${t.label} (concurrency ${t.concurrency}): ${t.pass ? 'pass' : 'fail'}, ${t.shape.shape}`,
        idPrefix: t.label,
        records: t.records,
        workerSeries: t.workerSeries,
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
    subtitle: s.sweep ? `Sweep of ${s.trials.length} concurrency levels` : `${passed} of ${s.trials.length} trials passed (rule ${s.o.passRule})`,
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
