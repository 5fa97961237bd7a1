import type { RequestRecord } from '../core/index.js';
import type { ScalarMetric } from './metric-block.js';

/**
 * A time-weighted metric as AIPerf writes it (its sweep-line metrics): the statistics of a step
 * function over the run window, each value weighted by how long it held. No count, sum or low
 * percentiles, as in AIPerf's export.
 */
export interface TimeWeightedBlock extends ScalarMetric {
  min: number;
  max: number;
  p50: number;
  p90: number;
  p95: number;
  p99: number;
  std: number;
}

/** A step function: `values[i]` holds from `ts[i]` to `ts[i + 1]`. */
interface Step {
  ts: Float64Array;
  values: Float64Array;
}

/** Events of a step function as they are added: times and deltas in typed arrays that grow by doubling. */
class Events {
  times = new Float64Array(1024);
  deltas = new Float64Array(1024);
  length = 0;

  add(t: number, d: number): void {
    if (this.length === this.times.length) {
      const times = new Float64Array(this.length * 2);
      const deltas = new Float64Array(this.length * 2);
      times.set(this.times);
      deltas.set(this.deltas);
      this.times = times;
      this.deltas = deltas;
    }
    this.times[this.length] = t;
    this.deltas[this.length++] = d;
  }
}

/** Whether event `i` sorts before event `j`: by key, then flag, then index (a total order). */
function before(keys: Float64Array, flags: Uint8Array | null, i: number, j: number): boolean {
  const a = keys[i]!;
  const b = keys[j]!;
  if (a !== b) return a < b;
  const fa = flags === null ? 0 : flags[i]!;
  const fb = flags === null ? 0 : flags[j]!;
  return fa !== fb ? fa < fb : i < j;
}

/**
 * The indices 0..n-1 ordered by (key, flag, index): a merge sort of the natural runs with the order
 * inline, since a run's events come request by request, each already in time order (no comparator calls).
 */
export function sortedIndices(keys: Float64Array, flags: Uint8Array | null, n: number): Uint32Array {
  let src = new Uint32Array(n);
  let dst = new Uint32Array(n);
  for (let i = 0; i < n; i++) src[i] = i;
  const starts: number[] = [0];
  for (let i = 1; i < n; i++) if (before(keys, flags, i, i - 1)) starts.push(i);
  let runs = starts;
  while (runs.length > 1) {
    const next: number[] = [];
    for (let r = 0; r < runs.length; r += 2) {
      const lo = runs[r]!;
      const mid = r + 1 < runs.length ? runs[r + 1]! : n;
      const hi = r + 2 < runs.length ? runs[r + 2]! : n;
      next.push(lo);
      let a = lo;
      let b = mid;
      for (let k = lo; k < hi; k++) dst[k] = b >= hi || (a < mid && !before(keys, flags, src[b]!, src[a]!)) ? src[a++]! : src[b++]!;
    }
    [src, dst] = [dst, src];
    runs = next;
  }
  return src;
}

/** Sorts the events (by time, ends before starts at equal times as AIPerf's tie rule, then as added) and sums them. */
function sweep(e: Events): Step {
  const { times, deltas, length: n } = e;
  const starts = new Uint8Array(n);
  for (let i = 0; i < n; i++) starts[i] = deltas[i]! > 0 ? 1 : 0;
  const order = sortedIndices(times, starts, n);
  const ts = new Float64Array(n);
  const values = new Float64Array(n);
  let sum = 0;
  let peak = 0;
  for (let k = 0; k < n; k++) {
    const i = order[k]!;
    ts[k] = times[i]!;
    sum += deltas[i]!;
    values[k] = sum;
    peak = Math.max(peak, Math.abs(sum));
  }
  // Snap float residue of cancelled +x/-x pairs to 0, as AIPerf does (relative 1e-9 of the peak).
  for (let k = 0; k < n; k++) if (Math.abs(values[k]!) < 1e-9 * peak) values[k] = 0;
  return { ts, values };
}

/**
 * AIPerf's `compute_time_weighted_stats`: the step function clipped to [start, end]; avg and std
 * weighted by duration over the whole window; percentiles from the duration-weighted distribution
 * (the first value whose cumulative share of time reaches q).
 */
function timeWeightedStats(step: Step, startMs: number, endMs: number, unit: string): TimeWeightedBlock | null {
  const total = endMs - startMs;
  if (step.ts.length === 0 || total <= 0) return null;
  // Zero before the first event; each value held to the next event (the last to the window's end).
  const n = step.ts.length + 1;
  const vals = new Float64Array(n);
  const durs = new Float64Array(n);
  durs[0] = Math.max(0, Math.min(step.ts[0]!, endMs) - startMs);
  for (let k = 0; k < step.ts.length; k++) {
    const from = Math.max(step.ts[k]!, startMs);
    const to = Math.min(k + 1 < step.ts.length ? step.ts[k + 1]! : endMs, endMs);
    vals[k + 1] = step.values[k]!;
    durs[k + 1] = Math.max(0, to - from);
  }
  let held = 0;
  for (let i = 0; i < n; i++) if (durs[i]! > 0) held++;
  if (held === 0) return null;
  const heldVals = new Float64Array(held);
  const heldDurs = new Float64Array(held);
  let area = 0;
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0, h = 0; i < n; i++) {
    if (!(durs[i]! > 0)) continue;
    heldVals[h] = vals[i]!;
    heldDurs[h++] = durs[i]!;
    area += vals[i]! * durs[i]!;
    min = Math.min(min, vals[i]!);
    max = Math.max(max, vals[i]!);
  }
  const avg = area / total;
  let m2 = 0;
  for (let h = 0; h < held; h++) m2 += heldDurs[h]! * (heldVals[h]! - avg) ** 2;
  const order = sortedIndices(heldVals, null, held);
  let heldMs = 0;
  for (const h of order) heldMs += heldDurs[h]!;
  const pct = (q: number): number => {
    let cum = 0;
    for (const h of order) {
      cum += heldDurs[h]!;
      if (cum / heldMs >= q) return heldVals[h]!;
    }
    return heldVals[order[order.length - 1]!]!;
  };
  return { unit, avg, min, max, p50: pct(0.5), p90: pct(0.9), p95: pct(0.95), p99: pct(0.99), std: Math.sqrt(m2 / total) };
}

/** Token counts of a record, as the run counts them (client tokenizer, or the server's usage). */
export type TokensOf = (r: RequestRecord) => { isl: number; osl: number };

/**
 * AIPerf's three time-weighted load metrics over the profiling records, on the window from the
 * first request start to the last request end (AIPerf's default window, the span of its
 * concurrency curve):
 * - `effective_concurrency`: requests in flight (start to end), failed ones included;
 * - `effective_prefill_concurrency`: requests between their start and their first token;
 * - `tokens_in_flight`: each completed request's prompt tokens from its start while it has a first
 *   token, plus its output tokens as they stream (1 at the first token, the other osl - 1 spread
 *   evenly over its later chunks, AIPerf's ICL-aware curve; all at the first token when the run
 *   did not stream), all freed at its end.
 */
export function timeWeightedMetrics(records: readonly RequestRecord[], tokensOf: TokensOf): Record<string, TimeWeightedBlock> {
  const prof = records.filter((r) => r.phase === 'profiling' && r.endMs >= r.startMs);
  if (prof.length === 0) return {};
  const startMs = prof.reduce((m, r) => Math.min(m, r.startMs), Number.POSITIVE_INFINITY);
  const endMs = prof.reduce((m, r) => Math.max(m, r.endMs), Number.NEGATIVE_INFINITY);
  const inFlight = new Events();
  const prefill = new Events();
  for (const r of prof) {
    inFlight.add(r.startMs, 1);
    inFlight.add(r.endMs, -1);
    if (r.firstTokenMs === null || r.firstTokenMs < r.startMs) continue;
    prefill.add(r.startMs, 1);
    prefill.add(r.firstTokenMs, -1);
  }
  const out: Record<string, TimeWeightedBlock> = {};
  const put = (tag: string, step: Step, unit: string): void => {
    const b = timeWeightedStats(step, startMs, endMs, unit);
    if (b) out[tag] = b;
  };
  put('effective_concurrency', sweep(inFlight), 'requests');
  put('effective_prefill_concurrency', sweep(prefill), 'requests');
  put('tokens_in_flight', tokensInFlight(prof, tokensOf), 'tokens');
  return out;
}

/** The tokens-in-flight curve (see {@link timeWeightedMetrics}). */
function tokensInFlight(prof: readonly RequestRecord[], tokensOf: TokensOf): Step {
  const e = new Events();
  // AIPerf switches to the chunk-by-chunk curve when the run has inter-chunk gaps at all.
  const streamed = prof.some((r) => r.outcome === 'ok' && r.chunkMs.length >= 2);
  for (const r of prof) {
    if (r.outcome !== 'ok' || r.firstTokenMs === null || r.firstTokenMs <= r.startMs) continue;
    const { isl, osl } = tokensOf(r);
    e.add(r.startMs, isl);
    const chunks = r.chunkMs.length;
    if (streamed && chunks >= 2) {
      e.add(r.firstTokenMs, 1);
      // A chunk stamped at or past the end counts just before it, so the release comes after it.
      for (let k = 1; k < chunks; k++) e.add(Math.min(r.chunkMs[k]!, r.endMs - 1e-6), (osl - 1) / (chunks - 1));
      e.add(r.endMs, -(isl + osl));
    } else if (!streamed) {
      e.add(r.firstTokenMs, osl);
      e.add(r.endMs, -(isl + osl));
    } else e.add(r.endMs, -isl);
  }
  return sweep(e);
}
