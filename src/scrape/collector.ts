import { performance } from 'node:perf_hooks';
import { scrapeOnce } from './scrape-once.js';
import type { Sample } from './prometheus-text.js';

/** The time series of one target. `values[key][i]` was read at `tMs[i]`; NaN where the key was absent. */
export interface TargetSeries {
  /** Milliseconds since `originMs` (performance.now() based), when each page arrived. */
  tMs: number[];
  values: Record<string, number[]>;
  /** Scrapes that failed (timeout, refused, non-200). */
  errors: number;
  /** The last failure's reason, if any. */
  lastError: string | null;
}

/** What a `Collector` hands back: one series per target id. */
export interface CollectorSeries {
  targets: Record<string, TargetSeries>;
}

/** Options of `Collector`. */
export interface CollectorOptions {
  targets: { id: string; url: string }[];
  intervalMs: number;
  /** `performance.now()` at run start, so stamps line up with RequestRecord times. */
  originMs: number;
  /** Turns a page into named numbers. @default `pickDefault` */
  pick?: (samples: Sample[]) => Record<string, number>;
  /** Per-scrape timeout. @default max(intervalMs, 2000) */
  timeoutMs?: number;
}

const SUMMED = ['vllm:num_requests_running', 'vllm:num_requests_waiting', 'vllm:kv_cache_usage_perc'];

/**
 * The default pick: the vLLM scheduler gauges summed over label sets, and the router's
 * `tailgate_router_worker_inflight` per `worker` label as `inflight:<worker>`. Only keys present on the page appear.
 */
export function pickDefault(samples: Sample[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of samples) {
    if (SUMMED.includes(s.name)) out[s.name] = (out[s.name] ?? 0) + s.value;
    else if (s.name === 'tailgate_router_worker_inflight') {
      const key = `inflight:${s.labels['worker'] ?? ''}`;
      out[key] = (out[key] ?? 0) + s.value;
    }
  }
  return out;
}

interface Loop {
  id: string;
  url: string;
  series: TargetSeries;
  timer: NodeJS.Timeout | null;
  running: Promise<void> | null;
}

/**
 * Scrapes every target's `/metrics` each `intervalMs` and keeps the picked numbers as time series.
 * Each target runs its own loop: a slow scrape delays only its own next scrape and never overlaps it.
 * Timers are unref()ed; `stop()` cancels in-flight scrapes and returns the series.
 *
 * @example
 * const c = new Collector({ targets: [{ id: 'w0', url: 'http://127.0.0.1:8000/metrics' }], intervalMs: 500, originMs: performance.now() });
 * c.start(); ...; const series = await c.stop();
 */
export class Collector {
  private readonly loops: Loop[];
  private readonly intervalMs: number;
  private readonly originMs: number;
  private readonly timeoutMs: number;
  private readonly pick: (samples: Sample[]) => Record<string, number>;
  private readonly abort = new AbortController();
  private started = false;
  private stopped = false;

  constructor(opts: CollectorOptions) {
    if (!(opts.intervalMs > 0)) throw new RangeError(`intervalMs must be > 0, got ${opts.intervalMs}`);
    this.intervalMs = opts.intervalMs;
    this.originMs = opts.originMs;
    this.timeoutMs = opts.timeoutMs ?? Math.max(opts.intervalMs, 2000);
    this.pick = opts.pick ?? pickDefault;
    this.loops = opts.targets.map((t) => ({ id: t.id, url: t.url, series: { tMs: [], values: {}, errors: 0, lastError: null }, timer: null, running: null }));
  }

  /** Starts scraping (first scrape immediately). Idempotent. */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    for (const l of this.loops) this.tick(l, performance.now());
  }

  /** The series so far (a copy), without stopping. */
  snapshot(): CollectorSeries {
    const targets: Record<string, TargetSeries> = {};
    for (const l of this.loops) {
      const values: Record<string, number[]> = {};
      for (const [k, v] of Object.entries(l.series.values)) values[k] = v.slice();
      targets[l.id] = { tMs: l.series.tMs.slice(), values, errors: l.series.errors, lastError: l.series.lastError };
    }
    return { targets };
  }

  /**
   * Stops the loops, cancels scrapes in flight, and returns everything collected. With
   * `finalScrape`, scrapes in flight are let finish and every target is read once more first, so
   * counters' deltas cover the whole run up to now.
   */
  async stop(opts: { finalScrape?: boolean } = {}): Promise<CollectorSeries> {
    if (opts.finalScrape === true && this.started && !this.stopped) {
      this.stopped = true;
      for (const l of this.loops) {
        if (l.timer !== null) clearTimeout(l.timer);
        l.timer = null;
      }
      await Promise.all(this.loops.map((l) => l.running));
      await Promise.all(this.loops.map((l) => this.scrape(l)));
    }
    this.stopped = true;
    this.abort.abort();
    for (const l of this.loops) {
      if (l.timer !== null) clearTimeout(l.timer);
      l.timer = null;
    }
    await Promise.all(this.loops.map((l) => l.running));
    return this.snapshot();
  }

  /** Same as `stop()`, for owners that only need to release resources. */
  async close(): Promise<void> {
    await this.stop();
  }

  private tick(l: Loop, dueMs: number): void {
    l.timer = null;
    if (this.stopped) return;
    l.running = this.scrape(l).finally(() => {
      l.running = null;
      if (this.stopped) return;
      // Keep the cadence; if a scrape overran, skip the missed ticks instead of bunching up.
      const now = performance.now();
      let next = dueMs + this.intervalMs;
      if (next < now) next = now + this.intervalMs - ((now - dueMs) % this.intervalMs);
      l.timer = setTimeout(() => this.tick(l, next), Math.max(0, next - now));
      l.timer.unref();
    });
  }

  private async scrape(l: Loop): Promise<void> {
    const r = await scrapeOnce(l.url, this.timeoutMs, this.abort.signal);
    if (this.stopped && !r.ok) return;
    if (!r.ok) {
      l.series.errors++;
      l.series.lastError = r.error;
      return;
    }
    const tMs = performance.now() - this.originMs;
    let picked: Record<string, number>;
    try {
      picked = this.pick(r.samples);
    } catch (e) {
      l.series.errors++;
      l.series.lastError = `pick failed: ${(e as Error).message}`;
      return;
    }
    const s = l.series;
    const i = s.tMs.length;
    s.tMs.push(tMs);
    for (const [k, v] of Object.entries(picked)) {
      let arr = s.values[k];
      if (arr === undefined) {
        arr = new Array<number>(i).fill(NaN);
        s.values[k] = arr;
      }
      arr.push(v);
    }
    for (const arr of Object.values(s.values)) if (arr.length === i) arr.push(NaN);
  }
}
