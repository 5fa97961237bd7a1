import type { RequestRecord } from '../core/index.js';
import { inflightEvents } from './inflight.js';
import { percentile } from './percentile.js';

/** Options of {@link timeSeries}. */
export interface TimeSeriesOptions {
  bucketMs: number;
  /** First bucket start; default the earliest request start. */
  fromMs?: number;
  /** End of the last bucket; default the latest request end. */
  toMs?: number;
  /** Which records to plot. @default 'all' (warm-up load is real load on the fleet) */
  phase?: 'all' | 'profiling';
}

/** Per-bucket figures of a run; `tMs[i]` is the start of bucket i. */
export interface TimeSeries {
  bucketMs: number;
  tMs: number[];
  /** Output tokens whose chunks arrived in the bucket, per second. */
  outputTokensPerS: number[];
  /** Peak requests open at once during the bucket (peaks matter: a 6 s average hides a backup). */
  inflight: number[];
  /** TTFT p99 of ok requests that STARTED in the bucket; null when none did. */
  ttftP99Ms: (number | null)[];
  /** Peak in-flight per worker per bucket. */
  perWorkerInflight: Record<string, number[]>;
}

/**
 * Buckets a run's records over time: throughput (each record's output tokens split evenly over
 * its chunks), peak in-flight overall and per worker, TTFT p99 by start time.
 *
 * @example
 * const ts = timeSeries(records, { bucketMs: 1000 });
 * ts.perWorkerInflight['127.0.0.1:9003']; // [12, 30, 250, ...]
 */
export function timeSeries(records: readonly RequestRecord[], opts: TimeSeriesOptions): TimeSeries {
  const bucketMs = opts.bucketMs;
  if (!(bucketMs > 0)) throw new RangeError('bucketMs must be > 0');
  const recs = opts.phase === 'profiling' ? records.filter((r) => r.phase === 'profiling') : records;
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (const r of recs) {
    if (r.startMs < lo) lo = r.startMs;
    if (r.endMs > hi) hi = r.endMs;
  }
  const fromMs = opts.fromMs ?? (recs.length > 0 ? lo : 0);
  const toMs = opts.toMs ?? (recs.length > 0 ? hi : fromMs);
  const n = Math.max(1, Math.ceil((toMs - fromMs) / bucketMs));
  const bucketOf = (t: number): number => Math.floor((t - fromMs) / bucketMs);
  const inRange = (b: number): boolean => b >= 0 && b < n;

  const tMs = Array.from({ length: n }, (_, i) => fromMs + i * bucketMs);
  const tokens = new Float64Array(n);
  const ttftByBucket: number[][] = Array.from({ length: n }, () => []);
  for (const r of recs) {
    if (r.outcome !== 'ok') continue;
    const out = r.outputTokens.client;
    if (r.chunkMs.length > 0) {
      const each = out / r.chunkMs.length;
      for (const c of r.chunkMs) {
        const b = bucketOf(c);
        if (inRange(b)) tokens[b]! += each;
      }
    } else {
      const b = bucketOf(r.endMs);
      if (inRange(b)) tokens[b]! += out;
    }
    if (r.firstTokenMs !== null) {
      const b = bucketOf(r.startMs);
      if (inRange(b)) ttftByBucket[b]!.push(r.firstTokenMs - r.startMs);
    }
  }

  // Sweep start/end events; each bucket's peak starts at the level carried into it.
  const ev = inflightEvents(recs);
  const inflight = new Array<number>(n).fill(0);
  const workers = [...new Set(recs.map((r) => r.worker).filter((w): w is string => w !== null))].sort();
  const wIndex = new Map(workers.map((w, i) => [w, i]));
  const perW = workers.map(() => new Array<number>(n).fill(0));
  const level = new Array<number>(workers.length).fill(0);
  let total = 0;
  let k = 0;
  for (let b = 0; b < n; b++) {
    const end = fromMs + (b + 1) * bucketMs;
    let peak = total;
    for (let i = 0; i < workers.length; i++) perW[i]![b] = level[i]!;
    // Events before the window fold into the level the first bucket starts from.
    while (k < ev.t.length && ev.t[k]! < end) {
      const d = ev.delta[k]!;
      total += d;
      const w = recs[ev.rec[k]!]!.worker;
      const wi = w === null ? undefined : wIndex.get(w);
      if (wi !== undefined) {
        level[wi]! += d;
        if (ev.t[k]! >= fromMs && level[wi]! > perW[wi]![b]!) perW[wi]![b] = level[wi]!;
        else if (ev.t[k]! < fromMs) perW[wi]![b] = level[wi]!;
      }
      if (ev.t[k]! < fromMs) peak = total;
      else if (total > peak) peak = total;
      k++;
    }
    inflight[b] = peak;
  }

  const perWorkerInflight: Record<string, number[]> = {};
  workers.forEach((w, i) => (perWorkerInflight[w] = perW[i]!));
  return {
    bucketMs,
    tMs,
    outputTokensPerS: Array.from(tokens, (x) => x / (bucketMs / 1000)),
    inflight,
    ttftP99Ms: ttftByBucket.map((v) => (v.length === 0 ? null : percentile(Float64Array.from(v).sort(), 99))),
    perWorkerInflight,
  };
}
