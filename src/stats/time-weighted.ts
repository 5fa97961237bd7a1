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

/**
 * The typed arrays of one `timeWeightedMetrics` call, sized for its largest curve and reused by the
 * three curves in turn: the events' times and deltas, and a second pair of the same for the sort.
 */
class Scratch {
  readonly keys: Float64Array;
  readonly keys2: Float64Array;
  readonly deltas: Float64Array;
  readonly deltas2: Float64Array;
  length = 0;

  constructor(capacity: number) {
    // One slot more than the events: a curve's values are stored after the zero before its first event.
    this.keys = new Float64Array(capacity + 1);
    this.keys2 = new Float64Array(capacity + 1);
    this.deltas = new Float64Array(capacity + 1);
    this.deltas2 = new Float64Array(capacity + 1);
  }

  add(t: number, d: number): void {
    this.keys[this.length] = t;
    this.deltas[this.length++] = d;
  }
}

/** Whether (key a, payload pa) sorts before (b, pb): by key, then a payload not above 0 (an end) before one above (a start). */
function precedes(a: number, pa: number, b: number, pb: number): boolean {
  return a < b || (a === b && !(pa > 0) && pb > 0);
}

/**
 * Sorts `keys[0..n)` with their payloads `pay` by {@link precedes}, stably (ties stay in index order),
 * in a merge of the natural runs (a curve's events come request by request, each in time order),
 * pairs moved together so that each pass reads memory in order; `keys2` and `pay2` are the other
 * buffer. Returns the pair that holds the result.
 */
function mergeRuns(keys: Float64Array, pay: Float64Array, keys2: Float64Array, pay2: Float64Array, n: number): [Float64Array, Float64Array] {
  let runs = 1;
  for (let i = 1; i < n; i++) if (precedes(keys[i]!, pay[i]!, keys[i - 1]!, pay[i - 1]!)) runs++;
  const bounds = new Uint32Array(runs + 1);
  for (let i = 1, r = 1; i < n; i++) if (precedes(keys[i]!, pay[i]!, keys[i - 1]!, pay[i - 1]!)) bounds[r++] = i;
  bounds[runs] = n;
  let [k1, p1, k2, p2] = [keys, pay, keys2, pay2];
  while (runs > 1) {
    let next = 0;
    for (let r = 0; r < runs; r += 2) {
      const lo = bounds[r]!;
      const mid = bounds[Math.min(r + 1, runs)]!;
      const hi = bounds[Math.min(r + 2, runs)]!;
      let a = lo;
      let b = mid;
      let k = lo;
      while (a < mid && b < hi) {
        const ka = k1[a]!;
        const kb = k1[b]!;
        if (precedes(kb, p1[b]!, ka, p1[a]!)) {
          k2[k] = kb;
          p2[k++] = p1[b++]!;
        } else {
          k2[k] = ka;
          p2[k++] = p1[a++]!;
        }
      }
      // One of the two runs is left over: copied as it is.
      const [from, to] = a < mid ? [a, mid] : [b, hi];
      k2.set(k1.subarray(from, to), k);
      p2.set(p1.subarray(from, to), k);
      bounds[next++] = lo;
    }
    bounds[next] = n;
    runs = next;
    [k1, p1, k2, p2] = [k2, p2, k1, p1];
  }
  return [k1, p1];
}

/**
 * Sorts as {@link mergeRuns} does, stably: a distribution into about n/4 buckets by key (monotone in
 * the key, so only a bucket's own pairs need ordering), then each bucket ordered in place, by
 * insertion when small, else by this sort again or the merge. Returns the pair that holds the result.
 */
function sortPairs(keys: Float64Array, pay: Float64Array, keys2: Float64Array, pay2: Float64Array, n: number): [Float64Array, Float64Array] {
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < n; i++) {
    lo = Math.min(lo, keys[i]!);
    hi = Math.max(hi, keys[i]!);
  }
  const buckets = n >> 2;
  const scale = (buckets - 1) / (hi - lo);
  // Few pairs, all keys equal, or a NaN or infinite key: the merge alone.
  if (buckets < 2 || !Number.isFinite(scale) || !Number.isFinite(lo) || !Number.isFinite(hi)) return mergeRuns(keys, pay, keys2, pay2, n);
  const ends = new Uint32Array(buckets + 1);
  for (let i = 0; i < n; i++) ends[Math.floor((keys[i]! - lo) * scale) + 1]!++;
  for (let b = 1; b <= buckets; b++) ends[b]! += ends[b - 1]!;
  // Stable: afterwards ends[b] is where bucket b ends.
  for (let i = 0; i < n; i++) {
    const at = ends[Math.floor((keys[i]! - lo) * scale)]!++;
    keys2[at] = keys[i]!;
    pay2[at] = pay[i]!;
  }
  for (let b = 0, from = 0; b < buckets; from = ends[b++]!) {
    const to = ends[b]!;
    if (to - from > 32) {
      // A cluster (events of one engine step): its own buckets over its own range, or the merge when
      // it holds most of the pairs (so each level at least halves the pairs: n log n at worst).
      const sort = to - from > n / 2 ? mergeRuns : sortPairs;
      const [k, p] = sort(keys2.subarray(from, to), pay2.subarray(from, to), keys.subarray(from, to), pay.subarray(from, to), to - from);
      if (k.buffer !== keys2.buffer) {
        keys2.set(k, from);
        pay2.set(p, from);
      }
      continue;
    }
    for (let i = from + 1; i < to; i++) {
      const key = keys2[i]!;
      const p = pay2[i]!;
      let j = i - 1;
      for (; j >= from && precedes(key, p, keys2[j]!, pay2[j]!); j--) {
        keys2[j + 1] = keys2[j]!;
        pay2[j + 1] = pay2[j]!;
      }
      keys2[j + 1] = key;
      pay2[j + 1] = p;
    }
  }
  return [keys2, pay2];
}

/**
 * The indices 0..n-1 ordered by (key, flag, index), flags 0 or 1: the sort that orders a curve's events.
 *
 * @example [...sortedIndices(Float64Array.of(2, 1, 1), Uint8Array.of(0, 1, 0), 3)] // [2, 1, 0]
 */
export function sortedIndices(keys: Float64Array, flags: Uint8Array | null, n: number): Uint32Array {
  // The index as the payload, its sign the flag.
  const pay = Float64Array.from({ length: n }, (_, i) => (flags !== null && flags[i] ? i + 1 : -(i + 1)));
  const [, sorted] = sortPairs(keys.slice(0, n), pay, new Float64Array(n), new Float64Array(n), n);
  return Uint32Array.from(sorted, (p) => Math.abs(p) - 1);
}

/**
 * A step function: `values[k + 1]` holds from `ts[k]` to `ts[k + 1]`, `values[0]` (zero) before
 * `ts[0]`; `spare` and `spare2` are scratch no longer in use.
 */
interface Step {
  ts: Float64Array;
  values: Float64Array;
  n: number;
  spare: Float64Array;
  spare2: Float64Array;
}

/** Sorts the events (by time, ends before starts at equal times as AIPerf's tie rule, then as added) and sums them. */
function sweep(s: Scratch): Step {
  const n = s.length;
  const [ts, deltas] = sortPairs(s.keys, s.deltas, s.keys2, s.deltas2, n);
  const values = ts === s.keys ? s.keys2 : s.keys;
  values[0] = 0;
  let sum = 0;
  let peak = 0;
  for (let k = 0; k < n; k++) {
    sum += deltas[k]!;
    values[k + 1] = sum;
    peak = Math.max(peak, Math.abs(sum));
  }
  // Snap float residue of cancelled +x/-x pairs to 0, as AIPerf does (relative 1e-9 of the peak).
  for (let k = 1; k <= n; k++) if (Math.abs(values[k]!) < 1e-9 * peak) values[k] = 0;
  return { ts, values, n, spare: deltas, spare2: deltas === s.deltas ? s.deltas2 : s.deltas };
}

/**
 * AIPerf's `compute_time_weighted_stats`: the step function clipped to [start, end]; avg and std
 * weighted by duration over the whole window; percentiles from the duration-weighted distribution
 * (the first value whose cumulative share of time reaches q).
 */
function timeWeightedStats(s: Scratch, startMs: number, endMs: number, unit: string): TimeWeightedBlock | null {
  const total = endMs - startMs;
  if (s.length === 0 || total <= 0) return null;
  const { ts, values, n, spare: durs, spare2 } = sweep(s);
  // The values held a positive time, moved in place to the front, with their durations.
  let held = 0;
  let area = 0;
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (let j = 0; j <= n; j++) {
    const from = j === 0 ? startMs : Math.max(ts[j - 1]!, startMs);
    const to = Math.min(j < n ? ts[j]! : endMs, endMs);
    const d = Math.max(0, to - from);
    if (!(d > 0)) continue;
    const v = values[j]!;
    values[held] = v;
    durs[held++] = d;
    area += v * d;
    min = Math.min(min, v);
    max = Math.max(max, v);
  }
  if (held === 0) return null;
  const avg = area / total;
  let m2 = 0;
  for (let h = 0; h < held; h++) m2 += durs[h]! * (values[h]! - avg) ** 2;
  const [p50, p90, p95, p99] = heldPercentiles(values, durs, held, min, max, ts, spare2);
  return { unit, avg, min, max, p50, p90, p95, p99, std: Math.sqrt(m2 / total) };
}

/**
 * p50, p90, p95 and p99 of the held `values` weighted by their `durs`, walking them in (value, index)
 * order: a counting sort when they are integers in a range no wider than the scratch (requests,
 * tokens), else the sort of pairs. `spare` and `spare2` are scratch of the same length.
 */
function heldPercentiles(values: Float64Array, durs: Float64Array, held: number, min: number, max: number, spare: Float64Array, spare2: Float64Array): Quartet {
  let integers = max - min < spare2.length;
  for (let h = 0; h < held && integers; h++) integers = Number.isInteger(values[h]);
  if (integers) {
    const ends = spare2;
    ends.fill(0, 0, max - min + 1);
    for (let h = 0; h < held; h++) ends[values[h]! - min]!++;
    for (let r = 0, at = 0; r <= max - min; r++) {
      const count = ends[r]!;
      ends[r] = at;
      at += count;
    }
    // Stable: each value's durations in index order; afterwards ends[r] is where value min + r ends.
    for (let h = 0; h < held; h++) spare[ends[values[h]! - min]!++] = durs[h]!;
    return weightedPercentiles(spare, held, (k) => min + firstAbove(ends, max - min + 1, k));
  }
  // Durations are above 0, so the pairs sort by value alone.
  const [sorted, sortedDurs] = sortPairs(values, durs, spare, spare2, held);
  return weightedPercentiles(sortedDurs, held, (k) => sorted[k]!);
}

/** p50, p90, p95, p99. */
type Quartet = [number, number, number, number];

/** The first index r < `n` with `ends[r] > k` (ends non-decreasing, `ends[n - 1]` above k). */
function firstAbove(ends: Float64Array, n: number, k: number): number {
  let lo = 0;
  let hi = n - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ends[mid]! > k) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** The 50th, 90th, 95th and 99th percentiles of values whose durations are `durs[0..n)` in value order. */
function weightedPercentiles(durs: Float64Array, n: number, valueAt: (k: number) => number): Quartet {
  const qs: Quartet = [0.5, 0.9, 0.95, 0.99];
  const out: Quartet = [0, 0, 0, 0];
  let heldMs = 0;
  for (let k = 0; k < n; k++) heldMs += durs[k]!;
  let i = 0;
  let cum = 0;
  for (let k = 0; k < n && i < 4; k++) {
    cum += durs[k]!;
    while (i < 4 && cum / heldMs >= qs[i]!) out[i++] = valueAt(k);
  }
  while (i < 4) out[i++] = valueAt(n - 1);
  return out;
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
  // Every curve has at most two events per record plus one per later chunk: one scratch for the three.
  const s = new Scratch(prof.reduce((n, r) => n + Math.max(1, r.chunkMs.length) + 2, 0));
  const out: Record<string, TimeWeightedBlock> = {};
  const put = (tag: string, unit: string): void => {
    const b = timeWeightedStats(s, startMs, endMs, unit);
    if (b) out[tag] = b;
    s.length = 0;
  };
  for (const r of prof) {
    s.add(r.startMs, 1);
    s.add(r.endMs, -1);
  }
  put('effective_concurrency', 'requests');
  for (const r of prof) {
    if (r.firstTokenMs === null || r.firstTokenMs < r.startMs) continue;
    s.add(r.startMs, 1);
    s.add(r.firstTokenMs, -1);
  }
  put('effective_prefill_concurrency', 'requests');
  tokensInFlight(s, prof, tokensOf);
  put('tokens_in_flight', 'tokens');
  return out;
}

/** Adds the tokens-in-flight curve's events to `e` (see {@link timeWeightedMetrics}). */
function tokensInFlight(e: Scratch, prof: readonly RequestRecord[], tokensOf: TokensOf): void {
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
}
