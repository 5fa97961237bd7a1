import type { RequestRecord } from '../core/index.js';

/** Peak concurrent requests and when it was first reached. */
export interface InflightPeak {
  peak: number;
  atMs: number | null;
}

/**
 * Indices of records ordered by event time: each record yields a start (+1) and an end (-1);
 * at equal times ends come first, so back-to-back requests in a closed loop do not overlap.
 */
export function inflightEvents(records: readonly RequestRecord[]): { t: Float64Array; delta: Int8Array; rec: Uint32Array } {
  const n = records.length;
  const order = new Uint32Array(2 * n);
  const t = new Float64Array(2 * n);
  for (let i = 0; i < n; i++) {
    const r = records[i]!;
    t[2 * i] = r.startMs;
    t[2 * i + 1] = Math.max(r.startMs, r.endMs);
  }
  for (let i = 0; i < 2 * n; i++) order[i] = i;
  // Odd slots are ends: sort by time, then ends before starts.
  order.sort((a, b) => t[a]! - t[b]! || (b & 1) - (a & 1));
  const ts = new Float64Array(2 * n);
  const delta = new Int8Array(2 * n);
  const rec = new Uint32Array(2 * n);
  for (let k = 0; k < 2 * n; k++) {
    const e = order[k]!;
    ts[k] = t[e]!;
    delta[k] = e & 1 ? -1 : 1;
    rec[k] = e >>> 1;
  }
  return { t: ts, delta, rec };
}

/** Peak of requests open at once, given sorted start and end times; ends go first at equal times. */
function peakOfSorted(starts: Float64Array, ends: Float64Array): InflightPeak {
  const peak: InflightPeak = { peak: 0, atMs: null };
  let open = 0;
  let j = 0;
  // The count only rises at a start, so the sweep can stop after the last one.
  for (let i = 0; i < starts.length; i++) {
    const t = starts[i]!;
    while (j < ends.length && ends[j]! <= t) {
      open--;
      j++;
    }
    if (++open > peak.peak) {
      peak.peak = open;
      peak.atMs = t;
    }
  }
  return peak;
}

/**
 * Peak in-flight overall and per worker from request columns: `worker[i]` indexes `names`, -1
 * for a request that named no worker (it counts only overall). Same figures as sweeping the
 * ordered events of {@link inflightEvents}, with numeric sorts per worker instead of one
 * comparator sort.
 */
export function peakInflightOf(start: ArrayLike<number>, end: ArrayLike<number>, worker: ArrayLike<number>, names: readonly string[]): { overall: InflightPeak; byWorker: Record<string, InflightPeak> } {
  const n = start.length;
  const starts = new Float64Array(n);
  const ends = new Float64Array(n);
  // Per worker, a contiguous segment of both arrays (counting sort by worker; no worker last).
  const from = new Int32Array(names.length + 2);
  for (let i = 0; i < n; i++) from[(worker[i]! < 0 ? names.length : worker[i]!) + 2]!++;
  for (let w = 2; w < from.length; w++) from[w]! += from[w - 1]!;
  for (let i = 0; i < n; i++) {
    const k = from[(worker[i]! < 0 ? names.length : worker[i]!) + 1]!++;
    starts[k] = start[i]!;
    ends[k] = Math.max(start[i]!, end[i]!);
  }
  const byWorker: Record<string, InflightPeak> = {};
  for (let w = 0; w < names.length; w++) {
    if (from[w + 1] === from[w]) continue;
    const s = starts.subarray(from[w], from[w + 1]).sort();
    const e = ends.subarray(from[w], from[w + 1]).sort();
    byWorker[names[w]!] = peakOfSorted(s, e);
  }
  return { overall: peakOfSorted(starts.slice().sort(), ends.slice().sort()), byWorker };
}

/**
 * Peak in-flight overall and per worker (records with `worker: null` count only overall).
 *
 * @example
 * peakInflight(records).byWorker['10.0.0.3:8000']?.peak;
 */
export function peakInflight(records: readonly RequestRecord[]): { overall: InflightPeak; byWorker: Record<string, InflightPeak> } {
  const names: string[] = [];
  const index = new Map<string, number>();
  const worker = Int32Array.from(records, (r) => {
    if (r.worker === null) return -1;
    let w = index.get(r.worker);
    if (w === undefined) index.set(r.worker, (w = names.push(r.worker) - 1));
    return w;
  });
  return peakInflightOf(
    Float64Array.from(records, (r) => r.startMs),
    Float64Array.from(records, (r) => r.endMs),
    worker,
    names,
  );
}
