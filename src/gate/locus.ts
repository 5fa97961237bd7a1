import type { ShapeVerdict, WorkerSeries } from './shapes.js';

/** Where a failure lives; see docs/validate.md, "Where a failure lives". */
export type Locus = 'engine-host' | 'gpu' | 'router' | 'client' | 'unknown';

/** One worker's GPU telemetry over time (a worker with several GPUs: mean utilisation, summed power, lowest clock). NaN where a scrape had no value. */
export interface GpuSeries {
  /** How the GPU is named in verdicts, e.g. `gpu 1 (GPU-b18e6d42) on node-03`. */
  gpu: string;
  tMs: number[];
  utilPct: number[];
  powerW: number[];
  smClockMhz: number[];
  /** NVML clock-event (throttle) reasons bitmask; NaN when not exported. */
  clockEventReasons: number[];
  /** Last XID error code (0: none). */
  xid: number[];
}

/** Everything the locus rules read about one failing trial. */
export interface LocusInput {
  shape: ShapeVerdict;
  workerSeries: Record<string, WorkerSeries>;
  /** Worker id -> its GPU telemetry (mapped by `pod` label or `--gpu-map`). */
  gpuSeries: Record<string, GpuSeries>;
  /** The router's queue (`tailgate_router_queue_length`), when the target is a tailgate router. */
  routerQueue?: { tMs: number[]; length: number[] };
  client?: { eventLoopDelayP99Ms: number; cpuPercent: number };
  host?: { cpuSomeAvg10: number | null; note: string | null };
  /** Why telemetry is missing (scrape errors, unmapped GPUs), carried into `missing`. */
  notes?: string[];
}

/** The locus of a failing trial, with the numbers that put it there. */
export interface LocusVerdict {
  locus: Locus;
  /** The worker it implicates, when one. */
  worker: string | null;
  /** That worker's GPU, when known. */
  gpu: string | null;
  evidence: Record<string, number | string>;
  /** One sentence with numbers. */
  explanation: string;
  /** What was missing to say more (empty when nothing was). */
  missing: string[];
}

/** Thresholds of the locus rules (docs/validate.md, "Where a failure lives"). */
export const LOCUS_RULES = {
  /** A GPU at or below this median utilisation (%) while its worker holds requests is waiting on the host. */
  idleUtilPct: 40,
  /** A GPU at or above this median utilisation (%) is busy. */
  busyUtilPct: 60,
  /** A median SM clock below this fraction of the reference clock counts as throttled. */
  clockDropRatio: 0.85,
  /** The implicated worker's window: samples where its load is at least this fraction of its peak. */
  backupWindowFraction: 0.5,
  /** `client`: the load generator's event-loop delay p99 above this (ms), as the `client-bound` shape. */
  clientLoopDelayP99Ms: 100,
  /** `router`: the router's queue holds at least this many requests on average... */
  routerQueueMin: 1,
  /** ...while workers hold fewer than this many requests each on average. */
  routerIdleWorkerLoad: 1,
} as const;

/** Clock-event reason bits that mean slowdown (SW power cap, HW slowdown, SW/HW thermal, power brake). */
const THROTTLE_BITS = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

const round = (v: number, d = 1): number => Math.round(v * 10 ** d) / 10 ** d;

function median(values: readonly number[]): number {
  const s = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

function load(s: WorkerSeries, i: number): number {
  return Math.max(s.inflight[i] ?? 0, (s.running?.[i] ?? 0) + (s.waiting?.[i] ?? 0));
}

/** Index of the last sample at or before t (-1 when none). */
function at(tMs: readonly number[], t: number): number {
  let lo = 0;
  let hi = tMs.length - 1;
  let best = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (tMs[mid]! <= t) {
      best = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return best;
}

interface GpuWindow {
  samples: number;
  utilPct: number;
  powerW: number;
  smClockMhz: number;
  maxClockMhz: number;
  reasons: number;
  xid: number;
}

/** Medians of a GPU series over the samples `keep` selects (reasons OR-ed, XID max). */
function gpuWindow(g: GpuSeries, keep: (t: number) => boolean): GpuWindow {
  const idx = g.tMs.map((t, i) => (keep(t) ? i : -1)).filter((i) => i >= 0);
  const pick = (a: number[]): number[] => idx.map((i) => a[i] ?? Number.NaN);
  let reasons = 0;
  for (const v of pick(g.clockEventReasons)) if (Number.isFinite(v)) reasons |= v;
  const xids = pick(g.xid).filter((v) => Number.isFinite(v) && v > 0);
  const clocks = g.smClockMhz.filter((v) => Number.isFinite(v));
  return {
    samples: idx.length,
    utilPct: median(pick(g.utilPct)),
    powerW: median(pick(g.powerW)),
    smClockMhz: median(pick(g.smClockMhz)),
    maxClockMhz: clocks.length > 0 ? Math.max(...clocks) : Number.NaN,
    reasons,
    xid: xids.length > 0 ? Math.max(...xids) : 0,
  };
}

const num = (v: number, d = 1): number | string => (Number.isFinite(v) ? round(v, d) : 'unknown');
const txt = (v: number, unit: string): string => (Number.isFinite(v) ? `${Math.round(v)}${unit}` : `?${unit}`);

const MISSING_GPU = (w: string): string =>
  `GPU telemetry for worker ${w} (give --gpu-metrics URL of its dcgm-exporter, and --gpu-map ${w}=GPU when the pod label does not name the worker)`;

/** The implicated worker: the locus of its GPU during its backup. */
function workerLocus(input: LocusInput, worker: string): LocusVerdict {
  const missing = [...(input.notes ?? [])];
  const g = input.gpuSeries[worker];
  const ws = input.workerSeries[worker];
  if (g === undefined || g.tMs.length === 0) {
    return {
      locus: 'unknown', worker, gpu: null, evidence: { gpuSamples: 0 }, missing: [MISSING_GPU(worker), ...missing],
      explanation: `Worker ${worker} held the tail, but there is no GPU telemetry for it, so host-side and GPU-side causes cannot be told apart.`,
    };
  }
  // The window: while the worker's load stood at or above half its peak (the whole trial without a series).
  let keep: (t: number) => boolean = () => true;
  let peak = 0;
  if (ws !== undefined && ws.tMs.length > 0) {
    for (let i = 0; i < ws.tMs.length; i++) peak = Math.max(peak, load(ws, i));
    const floor = Math.max(1, peak * LOCUS_RULES.backupWindowFraction);
    keep = (t) => {
      const i = at(ws.tMs, t);
      return i >= 0 && load(ws, i) >= floor;
    };
  }
  let w = gpuWindow(g, keep);
  if (w.samples === 0) w = gpuWindow(g, () => true);
  const others = Object.entries(input.gpuSeries).filter(([id]) => id !== worker).map(([, s]) => gpuWindow(s, keep));
  const othersUtil = median(others.map((o) => o.utilPct));
  const othersPower = median(others.map((o) => o.powerW));
  const othersClock = median(others.map((o) => o.smClockMhz));
  const refClock = Math.max(Number.isFinite(w.maxClockMhz) ? w.maxClockMhz : 0, Number.isFinite(othersClock) ? othersClock : 0);
  const clockRatio = refClock > 0 && Number.isFinite(w.smClockMhz) ? w.smClockMhz / refClock : Number.NaN;
  const throttleBits = w.reasons & THROTTLE_BITS;
  const evidence: Record<string, number | string> = {
    gpuSamples: w.samples,
    peakLoad: peak,
    gpuUtilPct: num(w.utilPct),
    gpuPowerW: num(w.powerW),
    smClockMhz: num(w.smClockMhz, 0),
    referenceSmClockMhz: refClock > 0 ? refClock : 'unknown',
    clockRatio: num(clockRatio, 2),
    clockEventReasons: w.reasons,
    xid: w.xid,
    othersGpuUtilPct: num(othersUtil),
    othersGpuPowerW: num(othersPower),
  };
  const others_ = others.length > 0 ? `; the other GPUs: ${txt(othersUtil, '%')}, ${txt(othersPower, ' W')}` : '';
  const v = (locus: Locus, explanation: string): LocusVerdict => ({ locus, worker, gpu: g.gpu, evidence, explanation, missing });
  const where = `Worker ${worker} (${g.gpu})`;
  if (w.xid > 0) return v('gpu', `${where} reported XID error ${w.xid} while it held the tail: a GPU fault, not the host.`);
  if (!Number.isFinite(w.utilPct)) {
    missing.push(`GPU utilisation (DCGM_FI_DEV_GPU_UTIL) for worker ${worker}`);
    return v('unknown', `${where} held the tail, but its GPU utilisation was not exported, so busy and idle cannot be told apart.`);
  }
  if (w.utilPct >= LOCUS_RULES.busyUtilPct) {
    const slowed = (Number.isFinite(clockRatio) && clockRatio < LOCUS_RULES.clockDropRatio) || throttleBits !== 0;
    if (slowed) {
      return v('gpu', `${where} was busy (${txt(w.utilPct, '%')} utilisation, ${txt(w.powerW, ' W')}) but throttled: SM clock ${txt(w.smClockMhz, ' MHz')} against ${txt(refClock, ' MHz')}${throttleBits !== 0 ? `, clock-event reasons 0x${w.reasons.toString(16)}` : ''}${others_}: the GPU itself is slow.`);
    }
    return v('gpu', `${where} was busy (${txt(w.utilPct, '%')} utilisation, ${txt(w.powerW, ' W')}) at full clocks (${txt(w.smClockMhz, ' MHz')}) yet fell behind${others_}: the GPU side is slow (check its health, memory and interconnect).`);
  }
  if (w.utilPct <= LOCUS_RULES.idleUtilPct) {
    const clocks = Number.isFinite(clockRatio) && clockRatio >= LOCUS_RULES.clockDropRatio ? 'full clocks' : 'clocks';
    return v('engine-host', `${where} sat at ${txt(w.utilPct, '%')} utilisation and ${txt(w.powerW, ' W')} at ${clocks} (${txt(w.smClockMhz, ' MHz')}) while its queue held up to ${peak} requests${others_}: the GPU was waiting on the host, a CPU-side or scheduler stall in the engine process.`);
  }
  return v('unknown', `${where} held the tail with its GPU at ${txt(w.utilPct, '%')} utilisation, between idle (<= ${LOCUS_RULES.idleUtilPct}%) and busy (>= ${LOCUS_RULES.busyUtilPct}%): neither the host nor the GPU stands out.`);
}

/**
 * Names where a failing trial's trouble lives, from the shape, per-worker load, per-worker GPU
 * telemetry, the router's queue and the load generator's self-check. First rule that holds wins:
 * a worker the shape implicates (its GPU: `gpu` or `engine-host`) > `client` > `router` > the
 * fleet's GPUs as a whole (`gpu` or `engine-host`) > `unknown`. Rules and thresholds: docs/validate.md, "Where a failure lives".
 *
 * @example
 * locateTrial({ shape, workerSeries, gpuSeries }).locus // 'engine-host'
 */
export function locateTrial(input: LocusInput): LocusVerdict {
  const { shape } = input;
  if (shape.worker !== null && shape.shape === 'single-worker-backup') return workerLocus(input, shape.worker);

  const c = input.client;
  if (shape.shape === 'client-bound' || (c !== undefined && c.eventLoopDelayP99Ms > LOCUS_RULES.clientLoopDelayP99Ms)) {
    return {
      locus: 'client', worker: null, gpu: null, missing: [...(input.notes ?? [])],
      evidence: { eventLoopDelayP99Ms: c ? round(c.eventLoopDelayP99Ms) : 'unknown', clientCpuPercent: c ? round(c.cpuPercent) : 'unknown', hostCpuSomeAvg10: input.host?.cpuSomeAvg10 ?? 'unknown', ...(input.host?.note ? { hostNote: input.host.note } : {}) },
      explanation: `The load generator was starved: event-loop delay p99 ${c ? Math.round(c.eventLoopDelayP99Ms) : '?'} ms (limit ${LOCUS_RULES.clientLoopDelayP99Ms} ms) at ${c ? Math.round(c.cpuPercent) : '?'}% CPU${input.host?.cpuSomeAvg10 != null ? `, host CPU pressure ${input.host.cpuSomeAvg10}%` : ''}; the latencies measured include the client's own delay.`,
    };
  }

  const workers = Object.keys(input.workerSeries);
  const meanLoad = (s: WorkerSeries): number => (s.tMs.length === 0 ? 0 : s.tMs.reduce((n, _, i) => n + load(s, i), 0) / s.tMs.length);
  const perWorkerLoad = median(workers.map((w) => meanLoad(input.workerSeries[w]!)));
  const gpuIds = Object.keys(input.gpuSeries).filter((id) => input.gpuSeries[id]!.tMs.length > 0);
  const wins = gpuIds.map((id) => gpuWindow(input.gpuSeries[id]!, () => true));
  const fleetUtil = median(wins.map((x) => x.utilPct));
  const q = input.routerQueue;
  const queueMean = q && q.length.length > 0 ? q.length.reduce((a, b) => a + b, 0) / q.length.length : Number.NaN;
  const missing = [...(input.notes ?? [])];
  if (gpuIds.length === 0) missing.push('GPU telemetry for every worker (give --gpu-metrics URL of the dcgm-exporter)');
  if (q === undefined) missing.push("the router's queue (the target is not a tailgate router)");
  const base = { workers: workers.length, gpus: gpuIds.length, medianWorkerLoad: num(perWorkerLoad, 2), fleetGpuUtilPct: num(fleetUtil), routerQueueMean: num(queueMean, 2) };
  const v = (locus: Locus, explanation: string, extra: Record<string, number | string> = {}): LocusVerdict => ({ locus, worker: null, gpu: null, evidence: { ...base, ...extra }, explanation, missing: locus === 'unknown' ? missing : [...(input.notes ?? [])] });

  const idleWorkers = Number.isFinite(fleetUtil) ? fleetUtil <= LOCUS_RULES.idleUtilPct : !(perWorkerLoad >= LOCUS_RULES.routerIdleWorkerLoad);
  if (queueMean >= LOCUS_RULES.routerQueueMin && idleWorkers) {
    return v('router', `The router held ${round(queueMean)} requests in its queue on average while the workers ${Number.isFinite(fleetUtil) ? `ran their GPUs at ${Math.round(fleetUtil)}%` : `held ${round(perWorkerLoad)} requests each`}: the router, not the fleet, held the requests back (in-flight cap or dispatch).`);
  }
  if (gpuIds.length === 0) return v('unknown', 'No worker is singled out and there is no GPU telemetry to say whether the GPUs were busy or waiting.');
  if (fleetUtil >= LOCUS_RULES.busyUtilPct) {
    const throttled = wins.filter((x) => (Number.isFinite(x.maxClockMhz) && x.smClockMhz / x.maxClockMhz < LOCUS_RULES.clockDropRatio) || (x.reasons & THROTTLE_BITS) !== 0 || x.xid > 0).length;
    if (throttled * 2 > wins.length) return v('gpu', `${throttled} of ${wins.length} GPUs were busy (median ${Math.round(fleetUtil)}%) but throttled or faulted: the GPUs themselves are slow.`, { throttledGpus: throttled });
    return v('gpu', `Every GPU was busy (median ${Math.round(fleetUtil)}% utilisation) at full clocks: the fleet is GPU-bound at this load; lower the concurrency or add GPUs.`, { throttledGpus: throttled });
  }
  if (fleetUtil <= LOCUS_RULES.idleUtilPct && perWorkerLoad >= LOCUS_RULES.routerIdleWorkerLoad) {
    return v('engine-host', `The workers held ${round(perWorkerLoad)} requests each while their GPUs ran at a median ${Math.round(fleetUtil)}% utilisation: the GPUs were waiting on the hosts (CPU-side or scheduler work in the engines).`);
  }
  return v('unknown', `No worker is singled out; GPUs at a median ${txt(fleetUtil, '%')} utilisation with ${round(perWorkerLoad)} requests per worker and ${Number.isFinite(queueMean) ? `${round(queueMean)} queued at the router` : 'no router queue known'} point at no single place.`);
}
