import { TailgateError } from '../core/index.js';
import type { Summary } from '../stats/index.js';

/** Statistics a gate can read from a metric block (run-level metrics have only `avg`). */
export type GateStat = 'avg' | 'p50' | 'p90' | 'p95' | 'p99' | 'min' | 'max';
const STATS: readonly GateStat[] = ['avg', 'p50', 'p90', 'p95', 'p99', 'min', 'max'];

/**
 * One pass/fail rule on an AIPerf metric: a floor (`>=`) or a ceiling (`<=`). The limit is
 * `threshold x tolerance`: floors pass at 90% of the threshold, ceilings at 110% by default.
 */
export interface Gate {
  /** AIPerf tag, e.g. `output_token_throughput`, `time_to_first_token`. */
  metric: string;
  stat: GateStat;
  op: '>=' | '<=';
  threshold: number;
  tolerance: number;
}

/** A gate applied to one run. `value` is null when the run has no such metric (fails). */
export interface GateResult {
  gate: Gate;
  value: number | null;
  /** threshold x tolerance: the number the value was compared with. */
  limit: number;
  pass: boolean;
}

/** The reference's tolerances: 0.9 for floors, 1.1 for ceilings. */
export function defaultTolerance(op: Gate['op']): number {
  return op === '>=' ? 0.9 : 1.1;
}

/** Reads `metric.stat` from a summary; null when absent. */
export function metricValue(summary: Summary, metric: string, stat: GateStat): number | null {
  const m = summary.metrics[metric] as unknown as Record<string, unknown> | undefined;
  if (!m) return null;
  const v = m[stat];
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/**
 * Judges every gate against a run's summary.
 *
 * @example
 * judgeGates(summary, seedGates({ gpus: 8 })).every((r) => r.pass);
 */
export function judgeGates(summary: Summary, gates: readonly Gate[]): GateResult[] {
  return gates.map((gate) => {
    const value = metricValue(summary, gate.metric, gate.stat);
    const limit = gate.threshold * gate.tolerance;
    const pass = value !== null && (gate.op === '>=' ? value >= limit : value <= limit);
    return { gate, value, limit, pass };
  });
}

/** `time_to_first_token.p99 <= 2000 (x1.1)` */
export function describeGate(g: Gate): string {
  return `${g.metric}.${g.stat} ${g.op} ${g.threshold}${g.tolerance !== 1 ? ` (x${g.tolerance})` : ''}`;
}

/** One line a person reads: `FAIL time_to_first_token.p99 = 9120.4, limit <= 2200 (2000 x1.1)`. */
export function describeResult(r: GateResult): string {
  const v = r.value === null ? 'missing' : String(Math.round(r.value * 100) / 100);
  return `${r.pass ? 'PASS' : 'FAIL'} ${r.gate.metric}.${r.gate.stat} = ${v}, limit ${r.gate.op} ${Math.round(r.limit * 100) / 100} (${r.gate.threshold} x${r.gate.tolerance})`;
}

/**
 * The reference cluster-validation gates (docs/reference.md#the-seed): output throughput >= 50000 tok/s for a
 * full node, scaled by gpus / gpusPerNode only when part of a node is used; TTFT p99 <= 2000 ms.
 */
export function seedGates(opts: { gpus: number; gpusPerNode?: number }): Gate[] {
  const perNode = opts.gpusPerNode ?? 8;
  const scale = Math.min(1, opts.gpus / perNode);
  return [
    { metric: 'output_token_throughput', stat: 'avg', op: '>=', threshold: 50_000 * scale, tolerance: 0.9 },
    { metric: 'time_to_first_token', stat: 'p99', op: '<=', threshold: 2000, tolerance: 1.1 },
  ];
}

/**
 * Parses a gate written as `metric[.stat]>=value` or `<=value`, optional `@tolerance`.
 *
 * @example
 * parseGate('time_to_first_token.p99<=2000');        // tolerance 1.1
 * parseGate('output_token_throughput>=50000@0.95');
 */
export function parseGate(spec: string): Gate {
  const m = /^\s*([a-z_][a-z0-9_]*)(?:\.([a-z0-9]+))?\s*(>=|<=)\s*([0-9]+(?:\.[0-9]+)?)\s*(?:@\s*([0-9]+(?:\.[0-9]+)?))?\s*$/i.exec(spec);
  if (!m) throw new TailgateError('CONFIG_INVALID', `invalid gate "${spec}" (expected e.g. time_to_first_token.p99<=2000 or output_token_throughput>=50000@0.9)`);
  const stat = (m[2] ?? 'avg') as GateStat;
  if (!STATS.includes(stat)) throw new TailgateError('CONFIG_INVALID', `invalid gate "${spec}": stat must be one of ${STATS.join(', ')}`);
  const op = m[3] as Gate['op'];
  const tolerance = m[5] === undefined ? defaultTolerance(op) : Number(m[5]);
  if (!(tolerance > 0)) throw new TailgateError('CONFIG_INVALID', `invalid gate "${spec}": tolerance must be > 0`);
  return { metric: m[1]!, stat, op, threshold: Number(m[4]), tolerance };
}
