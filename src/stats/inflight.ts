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

/**
 * Peak in-flight overall and per worker (records with `worker: null` count only overall).
 *
 * @example
 * peakInflight(records).byWorker['10.0.0.3:8000']?.peak;
 */
export function peakInflight(records: readonly RequestRecord[]): { overall: InflightPeak; byWorker: Record<string, InflightPeak> } {
  const ev = inflightEvents(records);
  const cur = new Map<string, number>();
  const byWorker: Record<string, InflightPeak> = {};
  const overall: InflightPeak = { peak: 0, atMs: null };
  let total = 0;
  for (let k = 0; k < ev.t.length; k++) {
    const d = ev.delta[k]!;
    total += d;
    if (total > overall.peak) {
      overall.peak = total;
      overall.atMs = ev.t[k]!;
    }
    const w = records[ev.rec[k]!]!.worker;
    if (w === null) continue;
    const c = (cur.get(w) ?? 0) + d;
    cur.set(w, c);
    const p = (byWorker[w] ??= { peak: 0, atMs: null });
    if (c > p.peak) {
      p.peak = c;
      p.atMs = ev.t[k]!;
    }
  }
  return { overall, byWorker };
}
