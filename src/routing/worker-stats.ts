import type { FleetLatency, WorkerView } from './policy.js';

/** Recent latency of one worker, smoothed. */
export interface WorkerStatsOptions {
  /** EWMA weight of a new TTFT sample. @default 0.2 */
  ttftAlpha?: number;
  /** EWMA weight of a new per-token latency sample. @default 0.05 */
  itlAlpha?: number;
  /**
   * After the first 8 samples, a sample counts as at most this multiple of the current average, so one stall (which the
   * adaptive policy sees live as silence) does not mark a recovered worker slow for long.
   * @default 4
   */
  outlierCap?: number;
}

/**
 * Per-worker EWMA of time to first token and of per-token latency, plus the last time a token
 * arrived. Pure: the caller passes every sample and timestamp, from whatever clock it runs on.
 *
 * @example
 * const s = new WorkerStats();
 * s.recordTtft(120); s.recordItl(15); s.progress(1000);
 * s.relativeTo({ ttftMs: 60, itlMs: 15 }); // 2: twice as slow as the fleet to first token
 */
export class WorkerStats {
  ttftMsEwma = Number.NaN;
  itlMsEwma = Number.NaN;
  lastProgressMs = Number.NEGATIVE_INFINITY;
  /** When it last went from idle to busy; silence before that is not a stall. */
  busySinceMs = Number.NEGATIVE_INFINITY;
  readonly #ttftAlpha: number;
  readonly #itlAlpha: number;
  readonly #cap: number;
  #ttftSamples = 0;
  #itlSamples = 0;

  constructor(opts: WorkerStatsOptions = {}) {
    this.#ttftAlpha = opts.ttftAlpha ?? 0.2;
    this.#itlAlpha = opts.itlAlpha ?? 0.05;
    this.#cap = opts.outlierCap ?? 4;
  }

  recordTtft(ms: number): void {
    if (!(ms >= 0)) return;
    this.ttftMsEwma = this.#update(this.ttftMsEwma, ms, this.#ttftAlpha, this.#ttftSamples++);
  }

  /**
   * `count` per-token samples of the same latency (one engine step's tokens, counted at once):
   * the rule applied `count` times, the uncapped part in closed form (equal to within rounding).
   */
  recordItl(ms: number, count = 1): void {
    if (!(ms >= 0) || count <= 0) return;
    let avg = this.itlMsEwma;
    let seen = this.#itlSamples;
    this.#itlSamples += count;
    let left = count;
    // One at a time: the first samples, an average of 0 (no cap yet), and capped outliers (each
    // moves the average up by a fixed factor); an average that stops changing stays put.
    while (left > 0 && (seen < 8 || !(avg > 0) || ms > this.#cap * avg)) {
      const next = this.#update(avg, ms, this.#itlAlpha, seen++);
      left = next === avg && seen > 8 ? 0 : left - 1;
      avg = next;
    }
    // from here every sample is uncapped (the average only moves toward `ms`): n steps of avg += alpha (ms - avg)
    if (left > 0) avg = ms + (avg - ms) * (1 - this.#itlAlpha) ** left;
    this.itlMsEwma = avg;
  }

  #update(avg: number, sample: number, alpha: number, seen: number): number {
    if (Number.isNaN(avg)) return sample;
    // the first samples set the level (uncapped, weighted up) so one early low sample cannot anchor it
    if (seen < 8) return avg + Math.max(alpha, 1 / (seen + 1)) * (sample - avg);
    const capped = avg > 0 ? Math.min(sample, this.#cap * avg) : sample;
    return avg + alpha * (capped - avg);
  }

  /** A token arrived from this worker at `nowMs`. */
  progress(nowMs: number): void {
    if (nowMs > this.lastProgressMs) this.lastProgressMs = nowMs;
  }

  /** The later of the last token and the last idle-to-busy change: where a silence starts. */
  get silentSinceMs(): number {
    return Math.max(this.lastProgressMs, this.busySinceMs);
  }

  /** This worker's latency relative to the fleet's (1 = typical); see {@link relativeLatency}. */
  relativeTo(fleet: FleetLatency): number {
    return relativeLatency(this.ttftMsEwma, this.itlMsEwma, fleet);
  }
}

/**
 * The fleet's typical latency: lower medians over workers that have data (NaN when none has);
 * the lower median stays typical while fewer than half the workers are slow.
 */
function lowerMedian(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  values.sort((a, b) => a - b);
  return values[(values.length - 1) >> 1]!;
}

/** Median TTFT and per-token latency over the given workers' EWMAs (robust to one bad worker). */
export function fleetLatency(workers: readonly Pick<WorkerView, 'ttftMsEwma' | 'itlMsEwma'>[]): FleetLatency {
  const t: number[] = [];
  const i: number[] = [];
  for (const w of workers) {
    if (w.ttftMsEwma >= 0) t.push(w.ttftMsEwma);
    if (w.itlMsEwma >= 0) i.push(w.itlMsEwma);
  }
  return { ttftMs: lowerMedian(t), itlMs: lowerMedian(i) };
}

function ratio(own: number, fleet: number): number {
  return own >= 0 && fleet > 0 ? own / fleet : 1;
}

/**
 * The larger of (TTFT / fleet TTFT) and (per-token latency / fleet per-token latency); 1 when
 * either side has no data, so an unmeasured worker is treated as typical.
 */
export function relativeLatency(ttftMs: number, itlMs: number, fleet: FleetLatency): number {
  return Math.max(ratio(ttftMs, fleet.ttftMs), ratio(itlMs, fleet.itlMs));
}
