import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TailgateError } from '../core/index.js';
import { renderHtmlReport, type Chart, type ReportDoc } from '../report/index.js';
import { timeSeries } from '../stats/index.js';
import { trialFigures } from './figures.js';
import { compareSides, type FigureComparison } from './judge.js';
import { loadDifference, readRunSide, type RunSide } from './load-run.js';
import { describeComparison, fmt, type CompareFinding } from './paragraph.js';

/** Options of {@link runCompare}. */
export interface RunCompareOptions {
  /** Output folders of side A (validate, bench or simulate --export). */
  a: string[];
  /** Output folders of side B. */
  b: string[];
  /** Compare even when the load differs (concurrency, lengths, dataset, model). @default false */
  force?: boolean;
  /** Where to write `compare.json` and `compare.html`; none when undefined. */
  outDir?: string;
  /** Level of every interval. @default 0.95 */
  level?: number;
  /** Side names in the text. @default 'A', 'B' */
  names?: [string, string];
}

/** What {@link runCompare} found and wrote. */
export interface CompareResult {
  finding: CompareFinding;
  rows: FigureComparison[];
  a: RunSide;
  b: RunSide;
  /** The load setting that differs, when `force` let the comparison go on. */
  loadDifference: string | null;
  files: { json: string; html: string } | null;
}

const num = (v: number): number | null => (Number.isFinite(v) ? Math.round(v * 1000) / 1000 : null);

/** The JSON document `compare.json` holds. */
export function compareJson(r: Omit<CompareResult, 'files'>): Record<string, unknown> {
  const side = (s: RunSide): Record<string, unknown> => ({
    name: s.name,
    paths: s.paths,
    tool: s.tool,
    trials: s.trials.map((t) => ({ label: t.label, verdict: t.verdict, shape: t.shape, shapeWorker: t.shapeWorker, locus: t.locus, requests: t.records.length, load: t.load })),
  });
  return {
    tool: 'tailgate compare',
    verdict: r.finding.verdict,
    where: r.finding.where,
    worker: r.finding.worker,
    paragraph: r.finding.paragraph,
    loadDifference: r.loadDifference,
    a: side(r.a),
    b: side(r.b),
    figures: r.rows.map((c) => ({
      key: c.def.key,
      metric: c.def.metric,
      scope: c.def.scope,
      worker: c.def.worker,
      unit: c.def.unit,
      gated: c.def.gated,
      a: num(c.a),
      b: num(c.b),
      diff: num(c.diff),
      ratio: c.ratio === null ? null : num(c.ratio),
      interval: c.interval === null ? null : c.interval.map(num),
      effect: c.effect === null ? null : num(c.effect),
      basis: c.basis,
      trialsA: c.nA,
      trialsB: c.nB,
      perTrial: { a: c.trialValues.a.map(num), b: c.trialValues.b.map(num) },
      beyondNoise: c.beyondNoise,
      score: num(c.score),
    })),
  };
}

const cellsOf = (c: FigureComparison): string[] => [
  c.def.key,
  fmt(c.a, c.def.unit),
  fmt(c.b, c.def.unit),
  c.ratio === null ? '-' : `${c.ratio.toFixed(2)}x`,
  c.interval === null ? '-' : `[${fmt(c.interval[0], c.def.unit)}, ${fmt(c.interval[1], c.def.unit)}]`,
  c.effect === null ? '-' : c.effect.toFixed(2),
  c.beyondNoise ? (c.def.gated ? 'gated' : c.score.toFixed(2)) : 'noise',
];
const COLUMNS = ['figure', 'A', 'B', 'B/A', 'interval of B-A', 'effect', 'rank score'];

/** Gated figures first, then the diagnostic ones that moved (best explanation first), then at most `rest` within noise. */
export function rankedRows(rows: FigureComparison[], rest = 12): FigureComparison[] {
  const gated = rows.filter((r) => r.def.gated);
  const moved = rows.filter((r) => !r.def.gated && r.beyondNoise).sort((x, y) => y.score - x.score);
  const quiet = rows.filter((r) => !r.def.gated && !r.beyondNoise && r.def.scope !== 'worker').slice(0, rest);
  return [...gated, ...moved, ...quiet];
}

/**
 * The console text: the paragraph, then a table of the gated figures and the figures that moved.
 *
 * @example process.stdout.write(formatCompare(result));
 */
export function formatCompare(r: Omit<CompareResult, 'files'>, maxRows = 30): string {
  const rows = rankedRows(r.rows).slice(0, maxRows).map(cellsOf);
  const widths = COLUMNS.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  const warn = r.loadDifference ? `warning: the load differs (${r.loadDifference}); compared because --force was given\n` : '';
  return `tailgate compare: ${r.finding.verdict === 'noise' ? 'NO DIFFERENCE' : 'DIFFERENT'} (A: ${r.a.trials.length} trial(s), B: ${r.b.trials.length})\n${warn}${r.finding.paragraph}\n\n${line(COLUMNS)}\n${rows.map(line).join('\n')}\n`;
}

/** Per-worker figures of A and B on one axis (x = worker number), for the figures that moved most. */
function workerCharts(r: Omit<CompareResult, 'files'>): Chart[] {
  const metrics = [...new Set(r.rows.filter((c) => c.def.scope === 'worker' && c.score > 0).sort((x, y) => y.score - x.score).map((c) => c.def.metric))];
  for (const m of ['step time (ITL)', 'TTFT p99']) if (!metrics.includes(m)) metrics.push(m);
  return metrics.slice(0, 4).map((m) => {
    const list = r.rows.filter((c) => c.def.scope === 'worker' && c.def.metric === m).sort((x, y) => x.def.worker! - y.def.worker!);
    return {
      id: `worker-${m.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}`,
      title: `${m} per worker, A and B`,
      xLabel: 'worker',
      yLabel: list[0]?.def.unit ?? '',
      kind: 'line' as const,
      series: [
        { name: 'A', points: list.map((c) => [c.def.worker!, c.a] as [number, number]) },
        { name: 'B', points: list.map((c) => [c.def.worker!, c.b] as [number, number]) },
      ],
    };
  }).filter((c) => c.series[0]!.points.length > 0);
}

/** Per-second throughput and TTFT p99 of each trial of A and B on one time axis (from each trial's start). */
function timeCharts(r: Omit<CompareResult, 'files'>): Chart[] {
  const per = (s: RunSide): { name: string; ts: ReturnType<typeof timeSeries> }[] =>
    s.trials.filter((t) => t.records.length > 0).slice(0, 4).map((t) => ({ name: `${s.name} ${t.label}`, ts: timeSeries(t.records, { bucketMs: 1000 }) }));
  const all = [...per(r.a), ...per(r.b)];
  const x = (ts: ReturnType<typeof timeSeries>, i: number): number => (ts.tMs[i]! - ts.tMs[0]!) / 1000;
  return [
    { id: 'throughput-over-time', title: 'Output throughput per second, A and B', xLabel: 's from the trial start', yLabel: 'tok/s', kind: 'line', series: all.map((s) => ({ name: s.name, points: s.ts.outputTokensPerS.map((v, i) => [x(s.ts, i), v] as [number, number]) })) },
    { id: 'ttft-over-time', title: 'TTFT p99 per second, A and B', xLabel: 's from the trial start', yLabel: 'ms', kind: 'line', series: all.map((s) => ({ name: s.name, points: s.ts.ttftP99Ms.flatMap((v, i) => (v === null ? [] : [[x(s.ts, i), v] as [number, number]])) })) },
  ];
}

/** Every trial of both sides: its judgement and its outcome figures. */
function trialTable(r: Omit<CompareResult, 'files'>): { columns: string[]; rows: string[][] } {
  const keys = ['TTFT p99', 'TTFT p50', 'output throughput', 'step time (ITL)', 'error share'];
  const rows = [r.a, r.b].flatMap((side) => side.trials.map((t) => {
    const f = trialFigures(t);
    return [side.name, t.label, t.verdict ?? '-', t.shape ?? '-', t.shapeWorker === null ? '-' : `worker ${t.shapeWorker}`, t.locus ?? '-', ...keys.map((k) => {
      const x = f.get(k);
      return x ? fmt(x.value, x.def.unit) : '-';
    })];
  }));
  return { columns: ['side', 'trial', 'verdict', 'shape', 'worker', 'locus', ...keys], rows };
}

/** The HTML page: the paragraph, the table, per-worker and per-second figures of A and B side by side. */
export function compareReportDoc(r: Omit<CompareResult, 'files'>): ReportDoc {
  return {
    title: 'tailgate compare',
    subtitle: r.finding.verdict === 'noise' ? 'No difference beyond run-to-run noise' : `Differs most at ${r.finding.where ?? 'the gated figures'}`,
    meta: { A: r.a.paths.join(', '), B: r.b.paths.join(', '), 'A trials': String(r.a.trials.length), 'B trials': String(r.b.trials.length), ...(r.loadDifference ? { 'load differs': r.loadDifference } : {}) },
    sections: [
      { title: 'What differs', text: r.finding.paragraph },
      { title: 'Figures, ranked by how much they explain the gap', table: { columns: COLUMNS, rows: rankedRows(r.rows, 40).map(cellsOf) } },
      { title: 'Per trial', table: trialTable(r) },
      { title: 'Per worker', charts: workerCharts(r) },
      { title: 'Over time', charts: timeCharts(r) },
    ],
  };
}

/**
 * `tailgate compare A B` as a library: reads both sides, refuses a different load unless `force`,
 * compares every figure, says what differs most, and writes `compare.json` and `compare.html`.
 *
 * @example
 * const r = await runCompare({ a: ['out/gke'], b: ['out/eks'], outDir: 'out/compare' });
 * console.log(r.finding.paragraph);
 * @throws TailgateError CONFIG_INVALID for unreadable folders, or a load that differs without `force`
 */
export async function runCompare(opts: RunCompareOptions): Promise<CompareResult> {
  const [nameA, nameB] = opts.names ?? ['A', 'B'];
  const a = await readRunSide(nameA, opts.a);
  const b = await readRunSide(nameB, opts.b);
  const differs = loadDifference(a, b);
  if (differs !== null && opts.force !== true) throw new TailgateError('CONFIG_INVALID', `the runs were measured under different load (${differs}); compare like with like, or give --force`);
  const level = opts.level === undefined ? {} : { level: opts.level };
  const rows = compareSides(a, b, level);
  // B failing where A passes, some trials and not others (or in several shapes): each failing trial
  // of B against all of A, as the seed's authors compared bad runs with clean ones.
  const failsA = a.trials.filter((t) => t.verdict === 'fail').length;
  const failing = b.trials.filter((t) => t.verdict === 'fail');
  const mixed = failing.length < b.trials.length || new Set(failing.map((t) => t.shape)).size > 1;
  const contrasts = failing.length > failsA && mixed ? failing.slice(0, 3).map((t) => ({ label: b.paths.length > 1 ? t.label : t.label.split('/').pop()!, shape: t.shape, rows: compareSides(a, { ...b, trials: [t] }, level) })) : [];
  const finding = describeComparison(rows, a, b, contrasts);
  const core = { finding, rows, a, b, loadDifference: differs };
  let files: CompareResult['files'] = null;
  if (opts.outDir !== undefined) {
    await mkdir(opts.outDir, { recursive: true });
    files = { json: join(opts.outDir, 'compare.json'), html: join(opts.outDir, 'compare.html') };
    await writeFile(files.json, `${JSON.stringify(compareJson(core), null, 2)}\n`);
    await writeFile(files.html, renderHtmlReport(compareReportDoc(core)));
  }
  return { ...core, files };
}
