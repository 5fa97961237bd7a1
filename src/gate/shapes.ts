import type { Summary } from '../stats/index.js';
import type { GateResult } from './gate.js';

/** The names a failing (or marginal) trial can get, see docs/validate.md, "Failure shapes". */
export type Shape = 'clean' | 'knee-jitter' | 'single-worker-backup' | 'broad-degradation' | 'under-provisioned' | 'client-bound' | 'errors';

/** Per-worker load over time: router in-flight, and/or the worker's own running/waiting gauges. */
export interface WorkerSeries {
  tMs: number[];
  inflight: number[];
  running?: number[];
  waiting?: number[];
}

/** Everything known about one trial. */
export interface TrialEvidence {
  summary: Summary;
  gates: GateResult[];
  expectedWorkers: number;
  /** Workers ready when the trial started (readiness check); undefined when not checked. */
  readyWorkers?: number;
  /** From the router's /metrics or worker /metrics via the collector, or `timeSeries(...).perWorkerInflight`. */
  workerSeries?: Record<string, WorkerSeries>;
  client?: { eventLoopDelayP99Ms: number; cpuPercent: number };
  host?: { cpuSomeAvg10: number | null };
}

/** The named shape of a trial, the worker it implicates, and why, in numbers. */
export interface ShapeVerdict {
  shape: Shape;
  worker: string | null;
  evidence: Record<string, number | string>;
  /** One sentence with numbers. */
  explanation: string;
}

/** Thresholds of the rules; documented in docs/validate.md, "Failure shapes". */
export const SHAPE_RULES = {
  /** `errors`: more than this share of profiling requests failed. */
  errorShare: 0.05,
  /** `single-worker-backup`: peak in-flight above this multiple of the other workers' median... */
  backupRatio: 2,
  /** ...and holding more than this many times its fair share (1/N) of all in-flight at its peak... */
  backupFairShareMultiple: 1.5,
  /** ...and at least this many requests above that median (tiny counts are noise). */
  backupMinExcess: 4,
  /** ...or, when a latency ceiling failed: one worker's TTFT p99 above this multiple of the others' median. */
  backupTtftRatio: 3,
  /** `knee-jitter`: latency ceilings missed by less than this multiple of the threshold. */
  kneeJitterMaxRatio: 1.5,
  /** `client-bound`: the load generator's event-loop delay p99 above this (ms). */
  clientLoopDelayP99Ms: 100,
} as const;

interface Peak {
  worker: string;
  peak: number;
  atMs: number | null;
  /** This worker's in-flight / all workers' in-flight at its peak. */
  share: number;
}

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

const round = (v: number, d = 1): number => Math.round(v * 10 ** d) / 10 ** d;
const fmt = (v: number): string => round(v, v >= 100 ? 0 : 1).toLocaleString('en-US');

function peaksFromSeries(series: Record<string, WorkerSeries>): Peak[] {
  const ids = Object.keys(series);
  const load = (s: WorkerSeries, i: number): number =>
    Math.max(s.inflight[i] ?? 0, (s.running?.[i] ?? 0) + (s.waiting?.[i] ?? 0));
  return ids.map((w) => {
    const s = series[w]!;
    let peak = 0;
    let at = -1;
    const n = Math.max(s.inflight.length, s.running?.length ?? 0);
    for (let i = 0; i < n; i++) {
      const v = load(s, i);
      if (v > peak) {
        peak = v;
        at = i;
      }
    }
    let total = 0;
    if (at >= 0) {
      const t = s.tMs[at]!;
      for (const other of ids) {
        const o = series[other]!;
        // Series sampled together (one collector, the simulator) share their timestamps, often the
        // very array: the same index; otherwise the nearest sample at or before t.
        let j = o === s || o.tMs === s.tMs ? at : o.tMs.findIndex((x) => x > t) - 1;
        if (j < -1) j = o.tMs.length - 1;
        total += j >= 0 ? load(o, j) : 0;
      }
    }
    return { worker: w, peak, atMs: at >= 0 ? s.tMs[at]! : null, share: total > 0 ? peak / total : 0 };
  });
}

function peaksFromSummary(summary: Summary): Peak[] {
  const entries = Object.entries(summary.perWorker);
  const total = entries.reduce((n, [, w]) => n + w.peakInflight, 0);
  return entries.map(([worker, w]) => ({ worker, peak: w.peakInflight, atMs: w.peakAtMs, share: total > 0 ? w.peakInflight / total : 0 }));
}

/** The worker that backed up, if the single-worker-backup rule holds. */
function findBackup(peaks: Peak[]): { top: Peak; medianOthers: number; ratio: number; fair: number } | null {
  if (peaks.length < 2) return null;
  const top = peaks.reduce((a, b) => (b.peak > a.peak ? b : a));
  const medianOthers = median(peaks.filter((p) => p !== top).map((p) => p.peak));
  const ratio = medianOthers > 0 ? top.peak / medianOthers : Number.POSITIVE_INFINITY;
  const fair = 1 / peaks.length;
  const holds = top.peak > SHAPE_RULES.backupRatio * medianOthers
    && top.share > SHAPE_RULES.backupFairShareMultiple * fair
    && top.peak - medianOthers >= SHAPE_RULES.backupMinExcess;
  return holds ? { top, medianOthers, ratio, fair } : null;
}

/** The worker whose TTFT p99 stands far above the others' median, if one does. */
function ttftOutlier(summary: Summary): { worker: string; ttftP99Ms: number; medianOthers: number; ratio: number; requests: number } | null {
  const rows = Object.entries(summary.perWorker).filter(([, w]) => w.ttftP99Ms !== null && w.requests > 0);
  if (rows.length < 3) return null;
  const [worker, top] = rows.reduce((a, b) => (b[1].ttftP99Ms! > a[1].ttftP99Ms! ? b : a));
  const medianOthers = median(rows.filter(([w]) => w !== worker).map(([, w]) => w.ttftP99Ms!));
  const ratio = medianOthers > 0 ? top.ttftP99Ms! / medianOthers : Number.POSITIVE_INFINITY;
  return ratio > SHAPE_RULES.backupTtftRatio ? { worker, ttftP99Ms: top.ttftP99Ms!, medianOthers, ratio, requests: top.requests } : null;
}

const FIGURE_NAMES: Record<string, [string, string]> = {
  'time_to_first_token.p99': ['TTFT p99', ' ms'],
  'output_token_throughput.avg': ['throughput', ' tok/s'],
};

/**
 * One gated figure against the limit the gate used (threshold x tolerance).
 *
 * @example
 * figureText(result); // 'TTFT p99 4,000 ms past the 1,100 ms ceiling (1,000 x1.1)'
 */
export function figureText(g: GateResult): string {
  const key = `${g.gate.metric}.${g.gate.stat}`;
  const [name, unit] = FIGURE_NAMES[key] ?? [key, ''];
  const kind = g.gate.op === '<=' ? 'ceiling' : 'floor';
  if (g.value === null) return `${name} missing (${kind} ${fmt(g.limit)}${unit})`;
  return `${name} ${fmt(g.value)}${unit} ${g.pass ? 'within' : 'past'} the ${fmt(g.limit)}${unit} ${kind} (${fmt(g.gate.threshold)} x${g.gate.tolerance})`;
}

/**
 * Names the shape of one trial. First rule that holds wins:
 * under-provisioned > single-worker-backup > errors > client-bound > knee-jitter > broad-degradation > clean.
 *
 * @example
 * classifyTrial({ summary, gates: judgeGates(summary, gates), expectedWorkers: 8 }).shape;
 */
export function classifyTrial(input: TrialEvidence): ShapeVerdict {
  const { summary, gates, expectedWorkers } = input;
  const failed = gates.filter((g) => !g.pass);
  const gatesPass = failed.length === 0;
  const base: Record<string, number | string> = {
    requests: summary.profilingCount,
    errors: summary.errorCount,
    expectedWorkers,
  };
  for (const g of gates) if (g.value !== null) base[`${g.gate.metric}.${g.gate.stat}`] = round(g.value, 2);
  // Names only the gates that failed (all of them for a clean trial), each against the limit it was judged by.
  const gateText = (only: readonly GateResult[] = failed): string => only.map(figureText).join(', ');
  const verdict = (shape: Shape, worker: string | null, evidence: Record<string, number | string>, explanation: string): ShapeVerdict =>
    ({ shape, worker, evidence: { ...base, ...evidence }, explanation });

  // 1. under-provisioned: fewer workers ready, or serving, than expected.
  const named = Object.entries(summary.perWorker).filter(([, w]) => w.requests > 0).map(([id]) => id);
  const seriesServing = input.workerSeries
    ? Object.entries(input.workerSeries).filter(([, s]) => s.inflight.some((v) => v > 0) || (s.running ?? []).some((v) => v > 0)).length
    : null;
  // Take the larger count: a stalled worker may show only in the collector's series.
  const serving = named.length > 0 || seriesServing !== null ? Math.max(named.length, seriesServing ?? 0) : null;
  if (input.readyWorkers !== undefined && input.readyWorkers < expectedWorkers) {
    return verdict('under-provisioned', null, { readyWorkers: input.readyWorkers, servingWorkers: serving ?? 'unknown' },
      `Only ${input.readyWorkers} of ${expectedWorkers} expected workers were ready when the trial started${gateText() ? `; ${gateText()}` : ''}.`);
  }
  // Every worker ready and the gates held: a worker the router chose to spare (slow, say) is not a
  // measurement gone wrong; the warnings name it.
  const routerSpared = gatesPass && input.readyWorkers !== undefined && input.readyWorkers >= expectedWorkers;
  if (serving !== null && serving > 0 && serving < expectedWorkers && !routerSpared) {
    return verdict('under-provisioned', null, { servingWorkers: serving },
      `Requests were served by only ${serving} of ${expectedWorkers} expected workers${gateText() ? `; ${gateText()}` : ''}.`);
  }

  // 2. single-worker-backup (only when something is wrong: a gate failed or errors piled up).
  const errorShare = summary.profilingCount > 0 ? summary.errorCount / summary.profilingCount : 0;
  const peaks = input.workerSeries && Object.keys(input.workerSeries).length > 0 ? peaksFromSeries(input.workerSeries) : peaksFromSummary(summary);
  const backup = findBackup(peaks);
  const peakEvidence = (): Record<string, number | string> => {
    const all = peaks.map((p) => p.peak);
    return all.length > 0 ? { maxWorkerPeakInflight: Math.max(...all), medianWorkerPeakInflight: median(all) } : {};
  };
  if (backup && (!gatesPass || errorShare > SHAPE_RULES.errorShare)) {
    const { top, medianOthers, ratio } = backup;
    const when = top.atMs === null ? '' : ` at t=${round((top.atMs - summary.startMs) / 1000)} s`;
    return verdict('single-worker-backup', top.worker, {
      peakInflight: top.peak,
      medianOthersPeakInflight: medianOthers,
      ratioToMedian: Number.isFinite(ratio) ? round(ratio, 2) : 'inf',
      sharePct: round(top.share * 100),
      peakAtMs: top.atMs ?? 'unknown',
      peakAtS: top.atMs === null ? 'unknown' : round((top.atMs - summary.startMs) / 1000, 2),
      workers: peaks.length,
      errorSharePct: round(errorShare * 100, 2),
    }, `Worker ${top.worker} backed up: its in-flight peaked at ${fmt(top.peak)}${when} against a median of ${fmt(medianOthers)} on the other ${peaks.length - 1} workers (${Number.isFinite(ratio) ? `${round(ratio)}x` : 'others idle'}, ${round(top.share * 100)}% of all in-flight)${gateText() ? `; ${gateText()}` : ''}.`);
  }

  // 2b. A worker that held few requests but held them for long (a stall under a load-aware policy):
  // the latency ceiling failed and the tail lives on one worker.
  const slowest = ttftOutlier(summary);
  const ceilingFailed = failed.some((g) => g.gate.op === '<=');
  if (slowest && ceilingFailed) {
    return verdict('single-worker-backup', slowest.worker, {
      workerTtftP99Ms: round(slowest.ttftP99Ms),
      medianOthersTtftP99Ms: round(slowest.medianOthers),
      ratioToMedian: round(slowest.ratio, 2),
      workerRequests: slowest.requests,
      ...peakEvidence(),
    }, `Worker ${slowest.worker} held the tail: its TTFT p99 was ${fmt(slowest.ttftP99Ms)} ms against a median of ${fmt(slowest.medianOthers)} ms on the other workers (${round(slowest.ratio)}x, over ${slowest.requests} requests)${gateText() ? `; ${gateText()}` : ''}.`);
  }

  // 3. errors.
  if (errorShare > SHAPE_RULES.errorShare) {
    const top = summary.errorSummary[0];
    return verdict('errors', null, {
      errorSharePct: round(errorShare * 100, 2),
      topError: top ? `${top.kind}${top.status !== null ? ` ${top.status}` : ''}: ${top.message}` : 'unknown',
    }, `${summary.errorCount} of ${summary.profilingCount} requests failed (${round(errorShare * 100)}%)${top ? `, most as ${top.kind}${top.status !== null ? ` ${top.status}` : ''} "${top.message.slice(0, 80)}"` : ''}.`);
  }

  // 4. client-bound: the load generator could not keep up (only named when a gate failed).
  if (!gatesPass && input.client && input.client.eventLoopDelayP99Ms > SHAPE_RULES.clientLoopDelayP99Ms) {
    return verdict('client-bound', null, {
      eventLoopDelayP99Ms: round(input.client.eventLoopDelayP99Ms, 1),
      clientCpuPercent: round(input.client.cpuPercent),
      hostCpuSomeAvg10: input.host?.cpuSomeAvg10 ?? 'unknown',
    }, `The load generator was saturated: event-loop delay p99 ${fmt(input.client.eventLoopDelayP99Ms)} ms (limit ${SHAPE_RULES.clientLoopDelayP99Ms} ms) at ${round(input.client.cpuPercent)}% CPU, so client-side latencies are inflated${gateText() ? `; ${gateText()}` : ''}.`);
  }

  // 5. knee-jitter: latency ceilings only, missed narrowly or met only thanks to tolerance.
  const ceilings = gates.filter((g) => g.gate.op === '<=' && g.value !== null);
  const floorsFail = failed.some((g) => g.gate.op === '>=' || g.value === null);
  const narrowMiss = !gatesPass && !floorsFail && failed.every((g) => g.value! < SHAPE_RULES.kneeJitterMaxRatio * g.gate.threshold);
  const byTolerance = gatesPass && ceilings.filter((g) => g.value! > g.gate.threshold);
  if (narrowMiss || (byTolerance && byTolerance.length > 0)) {
    const g = (narrowMiss ? failed[0] : (byTolerance as GateResult[])[0])!;
    const ratio = g.value! / g.gate.threshold;
    return verdict('knee-jitter', null, { ...peakEvidence(), ceilingRatio: round(ratio, 3), metric: `${g.gate.metric}.${g.gate.stat}` },
      `${g.gate.metric}.${g.gate.stat} was ${fmt(g.value!)} against a ${fmt(g.gate.threshold)} ceiling (${round(ratio, 2)}x) with load balanced across workers: ${narrowMiss ? 'a narrow miss' : 'a pass only thanks to the tolerance'} typical of running at the knee.`);
  }

  // 6. broad-degradation: gates fail with no single worker to blame.
  if (!gatesPass) {
    return verdict('broad-degradation', null, { ...peakEvidence(), failedGates: failed.length },
      `Gates failed with load balanced across ${peaks.length || 'the'} workers (largest peak in-flight ${fmt(peaks.length > 0 ? Math.max(...peaks.map((p) => p.peak)) : 0)}, median ${fmt(median(peaks.map((p) => p.peak)))}): ${gateText() || failed.map((f) => `${f.gate.metric}.${f.gate.stat}`).join(', ')}.`);
  }
  return verdict('clean', null, peakEvidence(), `All ${gates.length} gates passed${gates.length > 0 ? `: ${gateText(gates)}` : ''}.`);
}
