import type { EngineProfile } from '../engine/index.js';
import type { ReportDoc } from '../report/index.js';
import { fitProfile, fmt, type FitOptions, type FitResult } from './fit.js';
import type { Level, LevelFigures } from './level.js';
import { predictLevel, simLevelOf, type SimLevel } from './predict.js';
import { CALIBRATE_DEFAULTS } from './defaults.js';

/** The figures a fit report compares, keyed by the AIPerf metric and statistic they are. */
export const COMPARED = [
  { key: 'output_token_throughput.avg', label: 'output tok/s', of: (f: LevelFigures) => f.outputTokPerS },
  { key: 'time_to_first_token.avg', label: 'TTFT mean ms', of: (f: LevelFigures) => f.ttftMeanMs },
  { key: 'time_to_first_token.p50', label: 'TTFT p50 ms', of: (f: LevelFigures) => f.ttftP50Ms },
  { key: 'time_to_first_token.p99', label: 'TTFT p99 ms', of: (f: LevelFigures) => f.ttftP99Ms },
  { key: 'inter_token_latency.p50', label: 'ITL p50 ms', of: (f: LevelFigures) => f.itlP50Ms },
  { key: 'inter_token_latency.avg', label: 'ITL mean ms', of: (f: LevelFigures) => f.itlMeanMs },
  { key: 'request_latency.p50', label: 'latency p50 ms', of: (f: LevelFigures) => f.latencyP50Ms },
] as const;

/** One level of the fit report: measured, predicted by the fit, predicted by a fit without it. */
export interface LevelComparison {
  label: string;
  source: string;
  measured: Record<string, number | null>;
  predicted: Record<string, number>;
  /** Predicted by a fit on the other levels (null with fewer than three levels). */
  leftOut: Record<string, number> | null;
}

/** The whole fit report. */
export interface CalibrationReport {
  fit: FitResult;
  levels: LevelComparison[];
  /** Mean absolute relative error of each figure over the left-out levels (null without leave-one-out). */
  leaveOneOutError: Record<string, number> | null;
  fitMs: number;
}

const figures = (f: LevelFigures): Record<string, number | null> => Object.fromEntries(COMPARED.map((c) => [c.key, c.of(f)]));

/**
 * Fits, then checks the fit: every level predicted by the fit, and by a fit made without it.
 *
 * @example
 * const report = calibrate(runs.map(readRun), { base: getProfile('small') });
 */
export function calibrate(levels: readonly Level[], opts: FitOptions): CalibrationReport {
  const t0 = performance.now();
  const fit = fitProfile(levels, opts);
  const fitMs = performance.now() - t0;
  const seed = opts.seed ?? CALIBRATE_DEFAULTS.seed;
  const out: LevelComparison[] = levels.map((l) => ({ label: l.label, source: l.source, measured: figures(l.measured), predicted: figures(predictLevel(simLevelOf(l), fit.profile, seed)) as Record<string, number>, leftOut: null }));
  let leaveOneOutError: Record<string, number> | null = null;
  if (levels.length >= 3) {
    const errors = new Map<string, number[]>();
    levels.forEach((l, i) => {
      const others = levels.filter((_, j) => j !== i);
      const without = fitProfile(others, { ...opts, noIntervals: true, evaluations: Math.ceil((opts.evaluations ?? 30) / 2) });
      const got = figures(predictLevel(simLevelOf(l), without.profile, seed)) as Record<string, number>;
      out[i]!.leftOut = got;
      for (const c of COMPARED) {
        const m = c.of(l.measured);
        if (m !== null && Number.isFinite(m) && m > 0) errors.set(c.key, [...(errors.get(c.key) ?? []), Math.abs(got[c.key]! / m - 1)]);
      }
    });
    leaveOneOutError = Object.fromEntries([...errors].map(([k, v]) => [k, v.reduce((a, b) => a + b, 0) / v.length]));
  }
  return { fit, levels: out, leaveOneOutError, fitMs };
}

/** Options of {@link predictAt}. */
export interface PredictOptions {
  seed?: number;
  /** Requests of each predicted run (AIPerf `--request-count`). @default the nearest measured level's */
  requestCount?: number;
  /** @default the nearest measured level's */
  warmupRequestCount?: number;
}

/** A load to predict at: `concurrency=2,8,32` or `request-rate=1,2.5`. */
export type PredictLoad = SimLevel['load'];

/**
 * Predicted figures at other loads of the measured workload on `profile`: each load simulated at the
 * lengths and request counts of the measured level nearest in load (of the same kind where there is one).
 *
 * @example
 * predictLoads([{ kind: 'closed', concurrency: 64 }], levels, fit.profile)[0]!.figures.outputTokPerS;
 */
export function predictLoads(loads: readonly PredictLoad[], levels: readonly Level[], profile: EngineProfile, opts: PredictOptions = {}): { near: Level; sim: SimLevel; figures: LevelFigures }[] {
  const seed = opts.seed ?? CALIBRATE_DEFAULTS.seed;
  return loads.map((load) => {
    const x = load.kind === 'closed' ? load.concurrency : load.ratePerS;
    const same = levels.filter((l) => l.load.kind === load.kind);
    const near = (same.length > 0 ? same : levels).reduce((best, l) => (Math.abs(loadOf(l) - x) < Math.abs(loadOf(best) - x) ? l : best));
    const from = simLevelOf(near);
    const inFlight = load.kind === 'closed' ? load.concurrency : Math.max(1, Math.ceil((from.inFlight * load.ratePerS) / loadOf(near)));
    const sim = { ...from, load, inFlight, requestCount: opts.requestCount ?? near.requestCount, warmupRequestCount: opts.warmupRequestCount ?? near.warmupRequestCount };
    return { near, sim, figures: predictLevel(sim, profile, seed) };
  });
}

/**
 * Predicted AIPerf figures at other loads of the measured workload (the lengths and request counts
 * of the level nearest in load), each row keyed by AIPerf's metric names, with the leave-one-out error.
 */
export function predictAt(loads: readonly PredictLoad[], levels: readonly Level[], report: CalibrationReport, opts: PredictOptions = {}): Record<string, unknown>[] {
  return predictLoads(loads, levels, report.fit.profile, opts).map(({ near, sim, figures: f }) => ({
    ...(sim.load.kind === 'closed' ? { concurrency: sim.load.concurrency } : { request_rate: sim.load.ratePerS }),
    request_count: sim.requestCount,
    warmup_request_count: sim.warmupRequestCount,
    input_sequence_length: near.inputTokens,
    output_sequence_length: near.outputTokens,
    output_token_throughput: { unit: 'tokens/sec', avg: f.outputTokPerS },
    request_throughput: { unit: 'requests/sec', avg: f.requestsPerS },
    time_to_first_token: { unit: 'ms', avg: f.ttftMeanMs, p50: f.ttftP50Ms, p99: f.ttftP99Ms },
    inter_token_latency: { unit: 'ms', p50: f.itlP50Ms, avg: f.itlMeanMs },
    request_latency: { unit: 'ms', p50: f.latencyP50Ms },
    leave_one_out_error: report.leaveOneOutError,
  }));
}

const loadOf = (l: Level): number => (l.load.kind === 'closed' ? l.load.concurrency : l.load.ratePerS);

/** The console view: parameters with intervals, warnings, then measured/predicted per level. */
export function formatCalibration(report: CalibrationReport, outFile: string | null): string {
  const lines: string[] = [];
  lines.push(`fitted ${report.levels.length} levels in ${(report.fitMs / 1000).toFixed(1)} s (${report.fit.simulations} simulated runs)${outFile ? ` -> ${outFile}` : ''}`);
  for (const p of report.fit.params) lines.push(`  ${p.name.padEnd(19)} ${fmt(p.value).padStart(10)}  [${fmt(p.low)}, ${fmt(p.high)}]${p.pinned ? '' : '  (not pinned down)'}  ${p.method}`);
  for (const w of report.fit.warnings) lines.push(`warning: ${w}`);
  lines.push('', `level       ${COMPARED.map((c) => c.label.padStart(22)).join('')}`);
  lines.push(`            ${COMPARED.map(() => 'measured/fit/left-out'.padStart(22)).join('')}`);
  for (const l of report.levels) {
    const cell = (k: string): string => [l.measured[k], l.predicted[k], l.leftOut?.[k] ?? null].map((v) => (v === null || v === undefined || !Number.isFinite(v) ? '-' : fmt(v))).join('/');
    lines.push(`${l.label.padEnd(12)}${COMPARED.map((c) => cell(c.key).padStart(22)).join('')}`);
  }
  if (report.leaveOneOutError) lines.push(`leave-one-out error: ${COMPARED.filter((c) => report.leaveOneOutError![c.key] !== undefined).map((c) => `${c.label} ${(100 * report.leaveOneOutError![c.key]!).toFixed(1)}%`).join(', ')}`);
  else lines.push('leave-one-out error: needs three levels or more');
  return `${lines.join('\n')}\n`;
}

/** The JSON view (the `--json` file). */
export function calibrationJson(report: CalibrationReport, predictions: Record<string, unknown>[]): Record<string, unknown> {
  return {
    profile: report.fit.profile,
    parameters: report.fit.params.map((p) => ({ ...p, high: Number.isFinite(p.high) ? p.high : null })),
    warnings: report.fit.warnings,
    fit_ms: report.fitMs,
    simulations: report.fit.simulations,
    levels: report.levels,
    leave_one_out_error: report.leaveOneOutError,
    predictions,
  };
}

/** The HTML view, through report/'s renderer: parameters, warnings, a table and a chart per figure. */
export function calibrationReportDoc(report: CalibrationReport, profile: EngineProfile): ReportDoc {
  const loads = report.levels.map((_, i) => i + 1);
  return {
    title: `tailgate calibrate: ${profile.name}`,
    subtitle: `${report.levels.length} load levels, fitted in ${(report.fitMs / 1000).toFixed(1)} s`,
    sections: [
      {
        title: 'Fitted parameters (95% intervals)',
        ...(report.fit.warnings.length > 0 && { text: report.fit.warnings.join('\n\n') }),
        table: { columns: ['parameter', 'value', 'low', 'high', 'pinned down', 'method'], rows: report.fit.params.map((p) => [p.name, fmt(p.value), fmt(p.low), fmt(p.high), p.pinned ? 'yes' : 'no', p.method]) },
      },
      {
        title: 'Measured, fitted and left out, per level',
        text: report.leaveOneOutError ? `Leave-one-out mean absolute error: ${COMPARED.filter((c) => report.leaveOneOutError![c.key] !== undefined).map((c) => `${c.label} ${(100 * report.leaveOneOutError![c.key]!).toFixed(1)}%`).join(', ')}.` : 'Leave-one-out needs three levels or more.',
        table: {
          columns: ['level', ...COMPARED.flatMap((c) => [`${c.label} measured`, 'fit', 'left out'])],
          rows: report.levels.map((l) => [l.label, ...COMPARED.flatMap((c) => [l.measured[c.key], l.predicted[c.key], l.leftOut?.[c.key] ?? null].map((v) => (v === null || v === undefined || !Number.isFinite(v) ? '-' : fmt(v))))]),
        },
        charts: COMPARED.map((c) => ({
          id: `calibrate-${c.key}`,
          title: c.label,
          xLabel: 'level (as given)',
          yLabel: c.label,
          kind: 'line' as const,
          series: [
            { name: 'measured', points: report.levels.flatMap((l, i): [number, number][] => (Number.isFinite(l.measured[c.key] ?? Number.NaN) ? [[loads[i]!, l.measured[c.key]!]] : [])) },
            { name: 'fit', points: report.levels.map((l, i): [number, number] => [loads[i]!, l.predicted[c.key]!]) },
            ...(report.leaveOneOutError ? [{ name: 'left out', points: report.levels.map((l, i): [number, number] => [loads[i]!, l.leftOut![c.key]!]) }] : []),
          ],
        })),
      },
    ],
  };
}
