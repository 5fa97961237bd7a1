import type { Locus } from '../gate/index.js';
import type { WorkerFigures } from './worker-figures.js';

/** The rules a worker can stand out by. */
export type WarningRuleName = 'ejected' | 'failing' | 'rescued' | 'slow' | 'low-share' | 'gpu-throttled' | 'gpu-xid' | 'preempting' | 'cache-loss';

/** Where a warning's figures came from. */
export type WarningSource = 'router counters' | 'worker metrics' | 'GPU telemetry' | 'requests';

/** A worker that stood out in one trial, with its figure against the fleet's median. */
export interface WorkerWarning {
  /** The trial's label (`trial-1`, `sweep-64`). */
  trial: string;
  /** `host:port` */
  worker: string;
  /** How reports name it: `worker 2 (10.0.0.3:8000)`. */
  workerName: string;
  rule: WarningRuleName;
  /** What was measured, e.g. `failure rate`. */
  figure: string;
  value: number;
  fleetMedian: number;
  unit: '%' | 'ms' | 'count' | 'x';
  /** Every figure the rule read, by name. */
  figures: Record<string, number | null>;
  source: WarningSource;
  /** Where the trouble likely lives, as for failures; `unknown` says what telemetry would settle it in `missing`. */
  locus: Locus;
  missing: string[];
  /** One sentence with numbers. */
  message: string;
}

/** What a rule found on one worker: the figure, the fleet's median of it, and everything it read. */
interface Finding {
  figure: string;
  value: number;
  fleetMedian: number;
  unit: WorkerWarning['unit'];
  figures: Record<string, number | null>;
  source: WarningSource;
  text: string;
}

/** One rule: its thresholds (documented in docs/validate.md, "Warnings") and its check over the fleet. */
interface WarningRule {
  name: WarningRuleName;
  /** The threshold in words, as the docs state it. */
  threshold: string;
  check(w: WorkerFigures, fleet: readonly WorkerFigures[]): Finding | null;
}

const median = (xs: readonly number[]): number => {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const pct = (x: number): string => `${(x * 100).toFixed(x < 0.1 && x > 0 ? 1 : 0)}%`;
const r1 = (x: number): number => Math.round(x * 10) / 10;

/** Thresholds of the warning rules, chosen so the fleet's normal jitter gives none (test/validate-warnings.test.ts). */
export const WARNING_THRESHOLDS = {
  /** failing / rescued: at least this share of the worker's attempts ... */
  rateMin: 0.05,
  /** ... and at least this many ... */
  countMin: 3,
  /** ... and this many times the fleet's median rate (which counts as at least 1%). */
  rateVsMedian: 3,
  /** slow: the worker's TTFT p50 or per-token latency p50 is this many times the fleet's median, over at least `slowRequestsMin` requests. */
  slowVsMedian: 3,
  slowRequestsMin: 3,
  /** low-share: the worker finished less than this fraction of the fleet's median share, the median worker finishing at least `shareRequestsMin`. */
  shareVsMedian: 0.4,
  shareRequestsMin: 20,
  /** gpu-throttled: slowdown reasons set (or SM clock under 0.85 x the fleet's median) in at least this fraction of samples, this much over the fleet's median fraction. */
  throttledFractionMin: 0.2,
  clockVsMedian: 0.85,
  /** preempting: at least this many preemptions, and this many times the fleet's median (counted as at least 1). */
  preemptionsMin: 10,
  preemptionsVsMedian: 4,
  /** cache-loss: hit rate at most this fraction of the fleet's median hit rate, which is at least `hitRateFleetMin`, over at least `cacheQueriesMin` queried tokens. */
  hitRateVsMedian: 0.5,
  hitRateFleetMin: 0.2,
  cacheQueriesMin: 500,
} as const;

const T = WARNING_THRESHOLDS;

/** The failure rate of a worker from the best source it has: router attempts, HTTP 5xx, vLLM error finishes, else its requests. */
function failureRate(w: WorkerFigures): { failed: number; of: number; source: WarningSource; what: string } | null {
  // A stream migrated off a stalled worker also counts as failed at the router: that is `rescued`.
  if (w.router) return { failed: Math.max(0, w.router.failed - w.router.migrated), of: w.router.dispatched, source: 'router counters', what: 'attempts failed at the router' };
  if (w.engine?.http5xx !== null && w.engine?.http5xx !== undefined && w.engine.httpRequests !== null) return { failed: w.engine.http5xx, of: w.engine.httpRequests, source: 'worker metrics', what: 'HTTP responses were 5xx' };
  if (w.engine?.finishedError !== null && w.engine?.finishedError !== undefined && w.engine.finished !== null) return { failed: w.engine.finishedError, of: w.engine.finished, source: 'worker metrics', what: 'requests finished with an error' };
  if (w.requests.count > 0) return { failed: w.requests.errors, of: w.requests.count, source: 'requests', what: 'requests failed' };
  return null;
}

/** Requests a worker finished, from the router, its own metrics or the records. */
function finished(w: WorkerFigures): { n: number; source: WarningSource } {
  if (w.router) return { n: w.router.completed, source: 'router counters' };
  if (w.engine?.finished !== null && w.engine?.finished !== undefined) return { n: w.engine.finished, source: 'worker metrics' };
  return { n: w.requests.count - w.requests.errors, source: 'requests' };
}

function rateRule(name: 'failing' | 'rescued', threshold: string, read: (w: WorkerFigures) => { failed: number; of: number; source: WarningSource; what: string } | null): WarningRule {
  return {
    name,
    threshold,
    check(w, fleet) {
      const mine = read(w);
      if (!mine || mine.of <= 0) return null;
      const rate = mine.failed / mine.of;
      const others = fleet.map(read).filter((x): x is NonNullable<typeof x> => x !== null && x.of > 0).map((x) => x.failed / x.of);
      const med = median(others);
      if (mine.failed < T.countMin || rate < T.rateMin || rate < T.rateVsMedian * Math.max(med, 0.01)) return null;
      return {
        figure: name === 'failing' ? 'failure rate' : 'rescued rate',
        value: r1(rate * 100),
        fleetMedian: r1(med * 100),
        unit: '%',
        figures: { [name === 'failing' ? 'failed' : 'rescued']: mine.failed, of: mine.of },
        source: mine.source,
        text: `${mine.failed} of ${mine.of} ${mine.what} (${pct(rate)}; fleet median ${pct(med)})`,
      };
    },
  };
}

const FAILING = rateRule('failing', 'at least 5% of its attempts failed, at least 3 of them, and 3x the fleet\'s median failure rate (at least 1%)', failureRate);
const RESCUED = rateRule('rescued', 'at least 5% of its requests were re-dispatched (no first token by the deadline) or migrated (stream stopped), at least 3, and 3x the fleet\'s median', (w) =>
  w.router ? { failed: w.router.redispatched + w.router.migrated, of: w.router.dispatched, source: 'router counters', what: `requests were taken off it (${w.router.redispatched} re-dispatched, ${w.router.migrated} migrated)` } : null,
);

/** The rules, in the order warnings are listed. */
export const WARNING_RULES: readonly WarningRule[] = [
  {
    name: 'ejected',
    threshold: 'the router ejected the worker at least once in the window',
    check(w, fleet) {
      if (!w.router || w.router.ejected < 1) return null;
      const med = median(fleet.filter((x) => x.router).map((x) => x.router!.ejected));
      return { figure: 'ejections', value: w.router.ejected, fleetMedian: med, unit: 'count', figures: { ejected: w.router.ejected, failed: w.router.failed }, source: 'router counters', text: `ejected ${w.router.ejected} time(s) by the router after failures (fleet median ${med})` };
    },
  },
  FAILING,
  RESCUED,
  {
    name: 'slow',
    threshold: 'its TTFT p50 or per-token latency p50 is at least 3x the fleet\'s median, over at least 3 requests',
    check(w, fleet) {
      if (w.requests.count - w.requests.errors < T.slowRequestsMin) return null;
      for (const [key, label] of [['itlP50Ms', 'per-token latency p50'], ['ttftP50Ms', 'TTFT p50']] as const) {
        const mine = w.requests[key];
        const med = median(fleet.map((x) => x.requests[key]).filter((v): v is number => v !== null));
        if (mine === null || med <= 0 || mine < T.slowVsMedian * med) continue;
        return {
          figure: label,
          value: r1(mine),
          fleetMedian: r1(med),
          unit: 'ms',
          figures: { [key]: r1(mine), ratioToMedian: r1(mine / med), requests: w.requests.count },
          source: 'requests',
          text: `${label} ${r1(mine)} ms, ${r1(mine / med)}x the fleet median ${r1(med)} ms, over ${w.requests.count} requests`,
        };
      }
      return null;
    },
  },
  {
    name: 'low-share',
    threshold: 'it finished under 40% of the fleet\'s median share of requests (the median worker finishing at least 20) while not ejected, failing or rescued',
    check(w, fleet) {
      const mine = finished(w);
      const med = median(fleet.map((x) => finished(x).n));
      if (med < T.shareRequestsMin || mine.n >= T.shareVsMedian * med) return null;
      if ((w.router?.ejected ?? 0) > 0 || FAILING.check(w, fleet) !== null || RESCUED.check(w, fleet) !== null) return null;
      const total = fleet.reduce((a, x) => a + finished(x).n, 0);
      return {
        figure: 'requests finished',
        value: mine.n,
        fleetMedian: med,
        unit: 'count',
        figures: { finished: mine.n, sharePct: total > 0 ? r1((mine.n / total) * 100) : null, fairSharePct: r1(100 / fleet.length) },
        source: mine.source,
        text: `finished ${mine.n} requests against a fleet median of ${med} (${total > 0 ? pct(mine.n / total) : '-'} of all; a fair share is ${pct(1 / fleet.length)}), though healthy`,
      };
    },
  },
  {
    name: 'gpu-throttled',
    threshold: 'slowdown clock-event reasons (0x4, 0x8, 0x20, 0x40, 0x80) in at least 20% of its GPU samples, 20 points over the fleet\'s median, or its median SM clock under 0.85x the fleet\'s',
    check(w, fleet) {
      if (!w.gpu) return null;
      const gs = fleet.filter((x) => x.gpu).map((x) => x.gpu!);
      const medFrac = median(gs.map((g) => g.throttledFraction));
      const medClock = median(gs.map((g) => g.smClockMedianMhz).filter((v): v is number => v !== null));
      const byReason = w.gpu.throttledFraction >= T.throttledFractionMin && w.gpu.throttledFraction >= medFrac + T.throttledFractionMin;
      const byClock = w.gpu.smClockMedianMhz !== null && medClock > 0 && w.gpu.smClockMedianMhz < T.clockVsMedian * medClock;
      if (!byReason && !byClock) return null;
      return {
        figure: byReason ? 'samples throttled' : 'SM clock',
        value: byReason ? r1(w.gpu.throttledFraction * 100) : w.gpu.smClockMedianMhz!,
        fleetMedian: byReason ? r1(medFrac * 100) : medClock,
        unit: byReason ? '%' : 'count',
        figures: { throttledPct: r1(w.gpu.throttledFraction * 100), smClockMhz: w.gpu.smClockMedianMhz, fleetSmClockMhz: medClock, utilPct: w.gpu.utilMedianPct },
        source: 'GPU telemetry',
        text: `${w.gpu.name} throttled in ${pct(w.gpu.throttledFraction)} of samples (fleet median ${pct(medFrac)}), SM clock ${w.gpu.smClockMedianMhz ?? '-'} MHz against ${medClock} MHz`,
      };
    },
  },
  {
    name: 'gpu-xid',
    threshold: 'its GPU reported an XID error (> 0) in the window',
    check(w) {
      if (!w.gpu || !(w.gpu.xidMax > 0)) return null;
      return { figure: 'XID', value: w.gpu.xidMax, fleetMedian: 0, unit: 'count', figures: { xid: w.gpu.xidMax }, source: 'GPU telemetry', text: `${w.gpu.name} reported XID ${w.gpu.xidMax}` };
    },
  },
  {
    name: 'preempting',
    threshold: 'at least 10 preemptions, and 4x the fleet\'s median (counted as at least 1)',
    check(w, fleet) {
      const mine = w.engine?.preemptions;
      if (mine === null || mine === undefined) return null;
      const med = median(fleet.map((x) => x.engine?.preemptions).filter((v): v is number => v !== null && v !== undefined));
      if (mine < T.preemptionsMin || mine < T.preemptionsVsMedian * Math.max(1, med)) return null;
      return {
        figure: 'preemptions',
        value: mine,
        fleetMedian: med,
        unit: 'count',
        figures: { preemptions: mine, kvUsageMax: w.engine!.kvUsageMax },
        source: 'worker metrics',
        text: `${mine} preemptions (fleet median ${med})${w.engine!.kvUsageMax === null ? '' : `, KV cache up to ${pct(w.engine!.kvUsageMax)}`}`,
      };
    },
  },
  {
    name: 'cache-loss',
    threshold: 'its prefix-cache hit rate is at most half the fleet\'s median, which is at least 20%, over at least 500 queried tokens',
    check(w, fleet) {
      const rate = (x: WorkerFigures): number | null => {
        const q = x.engine?.prefixQueries;
        const h = x.engine?.prefixHits;
        return q === null || q === undefined || h === null || h === undefined || q < T.cacheQueriesMin ? null : h / q;
      };
      const mine = rate(w);
      const med = median(fleet.map(rate).filter((v): v is number => v !== null));
      if (mine === null || med < T.hitRateFleetMin || mine > T.hitRateVsMedian * med) return null;
      return {
        figure: 'prefix-cache hit rate',
        value: r1(mine * 100),
        fleetMedian: r1(med * 100),
        unit: '%',
        figures: { hits: w.engine!.prefixHits, queries: w.engine!.prefixQueries },
        source: 'worker metrics',
        text: `prefix-cache hit rate ${pct(mine)} against a fleet median of ${pct(med)} (${w.engine!.prefixHits} of ${w.engine!.prefixQueries} queried tokens)`,
      };
    },
  },
];

const GPU_RULES = new Set<WarningRuleName>(['gpu-throttled', 'gpu-xid']);
const ENGINE_RULES = new Set<WarningRuleName>(['failing', 'ejected', 'preempting', 'cache-loss']);

/** Where a warning's trouble likely lives: its GPU when that shows throttling, an XID or a busy GPU behind a slow worker; the engine host when the GPU idles or the engine itself reports it. */
function locate(rule: WarningRuleName, w: WorkerFigures, fleet: readonly WorkerFigures[]): { locus: Locus; missing: string[] } {
  if (GPU_RULES.has(rule)) return { locus: 'gpu', missing: [] };
  const gpuFlag = WARNING_RULES.some((r) => GPU_RULES.has(r.name) && r.check(w, fleet) !== null);
  if (gpuFlag) return { locus: 'gpu', missing: [] };
  if (ENGINE_RULES.has(rule)) return { locus: 'engine-host', missing: [] };
  if (!w.gpu) return { locus: 'unknown', missing: [`GPU telemetry for worker ${w.id} (--gpu-metrics URL of its dcgm-exporter, or --gpu-map)`] };
  const util = w.gpu.utilMedianPct;
  if (util !== null && util >= 60) return { locus: 'gpu', missing: [] };
  if (util !== null && util <= 40) return { locus: 'engine-host', missing: [] };
  return { locus: 'unknown', missing: [] };
}

/**
 * Every worker that stands out from the fleet in one trial, one warning per rule it breaks
 * ({@link WARNING_RULES}); figures are deltas over the profiling window against the fleet's median.
 * A fleet of one worker has no peers and gets no warnings.
 *
 * @example
 * const warnings = workerWarnings('trial-1', figures, (id) => `worker ${ids.indexOf(id)} (${id})`);
 */
export function workerWarnings(trial: string, fleet: readonly WorkerFigures[], nameOf: (id: string) => string): WorkerWarning[] {
  if (fleet.length < 2) return [];
  const out: WorkerWarning[] = [];
  for (const w of fleet) {
    for (const rule of WARNING_RULES) {
      const f = rule.check(w, fleet);
      if (f === null) continue;
      const where = locate(rule.name, w, fleet);
      out.push({
        trial,
        worker: w.id,
        workerName: nameOf(w.id),
        rule: rule.name,
        figure: f.figure,
        value: f.value,
        fleetMedian: f.fleetMedian,
        unit: f.unit,
        figures: f.figures,
        source: f.source,
        locus: where.locus,
        missing: where.missing,
        message: `${nameOf(w.id)} ${rule.name}: ${f.text} [${f.source}]`,
      });
    }
  }
  return out;
}
