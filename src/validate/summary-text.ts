import { describeGate, type Gate, type TrialStat } from '../gate/index.js';
import { metricValue } from '../gate/index.js';
import { gateVerdictLine, ruleText, verdictBasis, workerNamerFor } from './gate-verdicts.js';
import type { SummaryInput } from './outcome.js';
import type { TrialOutcome } from './trial.js';
import type { WorkerWarning } from './warnings.js';
import { mergeEvidence } from './worker-figures.js';

export type { SummaryInput };

const int = (v: number | null): string => (v === null ? '-' : Math.round(v).toLocaleString('en-US'));
const pct = (v: number): string => `${(v * 100).toFixed(1)}%`;

function tput(t: TrialOutcome): number | null {
  return metricValue(t.summary, 'output_token_throughput', 'avg');
}

function ttft(t: TrialOutcome): number | null {
  return metricValue(t.summary, 'time_to_first_token', 'p99');
}

function gatesLine(gates: readonly Gate[]): string {
  return gates.length === 0 ? 'none (only errors and readiness are judged)' : gates.map(describeGate).join('; ');
}

/**
 * The terminal summary: verdict first, one line per trial (verdict, shape, throughput, TTFT p99,
 * the implicated worker), the spread, why, and where the files are.
 */
export function consoleSummary(s: SummaryInput): string {
  const passed = s.trials.filter((t) => t.pass).length;
  const head = s.verdict === 'cancelled'
    ? `tailgate validate: CANCELLED (interrupted after ${s.trials.length} trial(s); not judged)`
    : s.search
    ? `tailgate validate: ${s.verdict.toUpperCase()} (search: ${s.search.points.length} levels tried, rule ${s.o.passRule})`
    : s.sweep
    ? `tailgate validate: ${s.verdict.toUpperCase()} (sweep of ${s.trials.length} levels)`
    : `tailgate validate: ${s.verdict.toUpperCase()} (${passed} of ${s.trials.length} trials passed; rule ${s.o.passRule})`;
  const lines = [head, `  gates: ${gatesLine(s.o.gates)}`];
  if (!s.readiness.ok || s.readiness.probe?.ok === false) lines.push(`  readiness: ${s.readiness.message}`);
  const shapeW = Math.max(5, ...s.trials.map((t) => t.shape.shape.length));
  const name = workerNamerFor(s.readiness);
  for (const t of s.trials) {
    const worker = t.shape.worker ? `  ${name(t.shape.worker)}` : '';
    lines.push(
      `  ${t.label.padEnd(10)} ${(t.pass ? 'PASS' : t.interrupted ? 'CUT' : 'FAIL').padEnd(4)}  ${t.shape.shape.padEnd(shapeW)}  ${int(tput(t)).padStart(9)} tok/s  TTFT p99 ${int(ttft(t)).padStart(7)} ms${worker}`,
    );
    if (t.locus) lines.push(`  ${''.padEnd(10)} locus ${t.locus.locus}${t.locus.worker ? `: ${name(t.locus.worker)}` : ''}${t.locus.gpu ? `, ${t.locus.gpu}` : ''}${t.locus.locus === 'unknown' && t.locus.missing.length > 0 ? ` (missing: ${t.locus.missing[0]})` : ''}`);
  }
  const basis = verdictBasis(s);
  // a run cut short is not judged: its gates are in the files, figures and all, not read out as verdicts
  if (s.verdict !== 'cancelled') for (const g of basis.gates) lines.push(`  gate ${gateVerdictLine(g, basis.rule)}`);
  const st = s.aggregate?.stats;
  if (st && s.trials.length > 1) {
    const a = st['output_token_throughput.avg'];
    const b = st['time_to_first_token.p99'];
    const ci = (v: TrialStat): string => (v.ci ? `, ${Math.round(v.ci.level * 1000) / 10}% CI ${int(v.ci.low)}-${int(v.ci.high)}` : '');
    if (a && b) lines.push(`  across trials: throughput median ${int(a.median)} tok/s (cv ${pct(a.cv)}${ci(a)}), TTFT p99 median ${int(b.median)} ms (cv ${pct(b.cv)}${ci(b)})`);
  }
  if (s.search) {
    const f = s.search.maxPassingPerGpu;
    lines.push(`  search: largest passing ${f === null ? 'none' : `${f} per GPU`}${s.search.minFailingPerGpu !== null ? `, ${s.search.minFailingPerGpu} fails` : ''} (range ${s.search.lo}:${s.search.hi}, step ${s.search.step}); tried ${s.search.points.map((p) => `${p.concurrencyPerGpu} ${p.pass ? 'pass' : 'fail'}`).join(', ')}`);
  }
  if (s.sweep) {
    const k = s.sweep;
    lines.push(`  knee: ${k.kneeConcurrencyPerGpu === null ? 'none found' : `${k.kneeConcurrencyPerGpu} per GPU`}; recommended: ${k.recommendedConcurrencyPerGpu === null ? 'none' : `${k.recommendedConcurrencyPerGpu} per GPU (${k.recommendedConcurrencyPerGpu * s.o.gpus} total)`}`);
    const p = k.predicted;
    if (p) {
      lines.push(`  PREDICTED (${p.source}; not measured, not gated): ${p.points.map((q) => `${q.concurrencyPerGpu} per GPU ${int(q.throughputPerGpu)} tok/s per GPU, TTFT p99 ${int(q.ttftP99Ms)} ms`).join('; ') || 'none'}`);
      if (p.knee) lines.push(`  predicted knee: ${p.kneeConcurrencyPerGpu === null ? 'none found' : `${p.kneeConcurrencyPerGpu} per GPU`}; predicted recommended: ${p.recommendedConcurrencyPerGpu === null ? 'none' : `${p.recommendedConcurrencyPerGpu} per GPU`}`);
      for (const n of p.notes) lines.push(`    note: ${n}`);
    }
  }
  if (s.trials.length > 0) {
    const groups = groupedWarnings(s.trials);
    lines.push(`  warnings: ${groups.length === 0 ? 'none' : groups.length} (evidence: ${evidenceLine(s.trials)})${groups.length > 0 && !s.o.failOnWarning ? '; --fail-on-warning makes them fail the verdict' : ''}`);
    for (const g of groups) lines.push(`    WARNING ${g.w.message}; locus ${g.w.locus} (${g.trials.join(', ')})`);
  }
  if (s.autoStop) lines.push(`  trials auto: ${s.autoStop}`);
  lines.push(`  why: ${s.reason}`);
  lines.push(`  files: ${s.outDir}/ (verdict.json, junit.xml, summary.md, report.html${s.trials.length > 0 ? `, ${s.trials[0]!.label}/...` : ''})`);
  return `${lines.join('\n')}\n`;
}

const md = (v: string): string => v.replace(/\|/g, '\\|');

/** Warnings grouped by worker and rule (the first trial's figures), with the trials each was seen in. */
function groupedWarnings(trials: readonly TrialOutcome[]): { w: WorkerWarning; trials: string[] }[] {
  const groups = new Map<string, { w: WorkerWarning; trials: string[] }>();
  for (const w of trials.flatMap((t) => t.warnings)) {
    const k = `${w.worker}\u0000${w.rule}`;
    const g = groups.get(k);
    if (g) g.trials.push(w.trial);
    else groups.set(k, { w, trials: [w.trial] });
  }
  return [...groups.values()];
}

const evidenceLine = (trials: readonly TrialOutcome[]): string => mergeEvidence(trials.map((t) => t.warningEvidence)).text;

/** `summary.md`: the same facts as the terminal summary, as Markdown tables (CI job summaries render it). */
export function summaryMarkdown(s: SummaryInput): string {
  const out = [
    `# tailgate validate: ${s.verdict.toUpperCase()}`,
    '',
    `${s.reason}`,
    '',
    `- target: ${s.o.url} (model ${s.o.model}), ${s.o.gpus} GPU(s), ${s.o.expectedWorkers} expected worker(s)`,
    `- gates: ${md(gatesLine(s.o.gates))}`,
    `- readiness: ${md(s.readiness.message)}${s.readiness.probe ? `; serve probe ${s.readiness.probe.ok ? `ok in ${Math.round(s.readiness.probe.latencyMs)} ms` : `failed: ${md(s.readiness.probe.error ?? '')}`}` : ''}`,
    `- seed ${s.o.randomSeed}; input ${s.o.inputTokensMean} / output ${s.o.outputTokensMean} tokens; streaming ${s.o.streaming ? 'on' : 'off'}; pass rule ${s.o.passRule}`,
    '',
  ];
  if (s.trials.length > 0) {
    out.push('| trial | concurrency | verdict | shape | worker | output tok/s | tok/s per GPU | TTFT p99 ms | errors |', '|---|---:|---|---|---|---:|---:|---:|---:|');
    for (const t of s.trials) {
      const tp = tput(t);
      out.push(`| ${t.label} | ${t.concurrency} | ${t.pass ? 'pass' : 'fail'} | ${t.shape.shape} | ${t.shape.worker === null ? '' : md(workerNamerFor(s.readiness)(t.shape.worker))} | ${int(tp)} | ${int(tp === null ? null : tp / s.o.gpus)} | ${int(ttft(t))} | ${t.summary.errorCount} |`);
    }
    out.push('', '## Why each trial got its shape', '');
    for (const t of s.trials) out.push(`- **${t.label}** (${t.shape.shape}): ${md(t.shape.explanation)}`);
    out.push('');
    const located = s.trials.filter((t) => t.locus !== null);
    if (located.length > 0) {
      out.push('## Where each failure lives', '');
      for (const t of located) {
        const l = t.locus!;
        out.push(`- **${t.label}**: locus \`${l.locus}\`${l.worker ? ` (worker ${l.worker}${l.gpu ? `, ${md(l.gpu)}` : ''})` : ''}: ${md(l.explanation)}${l.missing.length > 0 ? ` Missing: ${md(l.missing.join('; '))}.` : ''}`);
      }
      out.push('');
    }
  }
  const basis = verdictBasis(s);
  if (basis.gates.length > 0) {
    out.push(`## Gates under ${s.sweep ? `the recommended level (${basis.trials[0]?.label ?? ''})` : ruleText(basis.rule)}`, '');
    for (const g of basis.gates) out.push(`- ${md(gateVerdictLine(g, basis.rule))}`);
    out.push('');
  }
  if (s.trials.length > 0) {
    const groups = groupedWarnings(s.trials);
    out.push('## Warnings', '', `Workers that stood out from the fleet's median: ${groups.length === 0 ? 'none' : groups.length}. Evidence: ${evidenceLine(s.trials)}.${s.o.failOnWarning ? ' `--fail-on-warning` was set.' : ''}`, '');
    if (groups.length > 0) {
      out.push('| worker | rule | figure | value | fleet median | evidence | locus | trials |', '|---|---|---|---:|---:|---|---|---|');
      for (const { w, trials } of groups) out.push(`| ${md(w.workerName)} | ${w.rule} | ${w.figure} | ${w.value}${w.unit === 'count' ? '' : ` ${w.unit}`} | ${w.fleetMedian}${w.unit === 'count' ? '' : ` ${w.unit}`} | ${w.source} | ${w.locus} | ${trials.join(', ')} |`);
      out.push('');
      for (const { w } of groups) out.push(`- ${md(w.message)}${w.missing.length > 0 ? ` Missing: ${md(w.missing.join('; '))}.` : ''}`);
      out.push('');
    }
  }
  if (s.autoStop) out.push(`Trials auto: ${md(s.autoStop)}.`, '');
  const st = s.aggregate?.stats;
  if (st && s.trials.length > 1) {
    out.push('## Across trials', '', `| figure | mean | median | min | max | std | CV | ${Math.round(s.o.confidenceLevel * 1000) / 10}% CI of the mean |`, '|---|---:|---:|---:|---:|---:|---:|---|');
    const keys = ['output_token_throughput.avg', 'time_to_first_token.p99', ...s.o.gates.map((g) => `${g.metric}.${g.stat}`)];
    for (const k of [...new Set(keys)]) {
      const v = st[k];
      if (v) out.push(`| ${k} | ${int(v.mean)} | ${int(v.median)} | ${int(v.min)} | ${int(v.max)} | ${int(v.std)} | ${pct(v.cv)} | ${v.ci ? `${int(v.ci.low)} to ${int(v.ci.high)}` : '-'} |`);
    }
    out.push('');
  }
  if (s.search) {
    const f = s.search.maxPassingPerGpu;
    out.push('## Search: max concurrency', '', `Largest concurrency per GPU that passes the gates under rule ${s.o.passRule}: **${f === null ? 'none' : f}**${s.search.minFailingPerGpu !== null ? ` (${s.search.minFailingPerGpu} fails)` : ''}; bisection over ${s.search.lo}:${s.search.hi}, step ${s.search.step}.`, '', '| # | per GPU | total | verdict | why |', '|---:|---:|---:|---|---|');
    s.search.points.forEach((p, i) => out.push(`| ${i + 1} | ${p.concurrencyPerGpu} | ${p.concurrencyPerGpu * s.o.gpus} | ${p.pass ? 'pass' : 'fail'} | ${md(p.why)} |`));
    out.push('');
  }
  if (s.sweep) {
    out.push('## Sweep', '', '| per GPU | total | output tok/s | tok/s per GPU | TTFT p99 ms | verdict |', '|---:|---:|---:|---:|---:|---|');
    for (const p of s.sweep.points) out.push(`| ${p.concurrencyPerGpu} | ${p.concurrency} | ${int(p.throughput)} | ${int(p.throughputPerGpu)} | ${int(p.ttftP99Ms)} | ${p.verdict} |`);
    out.push('', md(s.sweep.knee.explanation), '');
    const p = s.sweep.predicted;
    if (p) {
      out.push(`### Predicted beyond the sweep (${md(p.source)})`, '', 'Not measured and not gated: figures of the engine model.', '', '| per GPU | total | tok/s per GPU (predicted) | TTFT p99 ms (predicted) |', '|---:|---:|---:|---:|');
      for (const q of p.points) out.push(`| ${q.concurrencyPerGpu} | ${q.concurrency} | ${int(q.throughputPerGpu)} | ${int(q.ttftP99Ms)} |`);
      out.push('', p.knee ? `Measured and predicted together: ${md(p.knee.explanation)}` : '', ...p.notes.map((n) => `- ${md(n)}`), '');
    }
  }
  return `${out.join('\n')}\n`;
}
