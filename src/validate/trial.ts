import { isTailgateError, type RequestRecord } from '../core/index.js';
import { runBench, type BenchOptions, type BenchProgress, type BenchResult } from '../bench/index.js';
import { classifyTrial, judgeGates, locateTrial, type GateResult, type GpuSeries, type LocusVerdict, type ShapeVerdict, type WorkerSeries } from '../gate/index.js';
import { Collector, dcgmPick, readHostPressure, type CollectorSeries, type GpuIdentity, type HostPressure } from '../scrape/index.js';
import { workerNames } from '../report/index.js';
import { summarize, type Summary } from '../stats/index.js';
import { ROUTER_TARGET, trialEvidence, workerSeriesFrom } from './evidence.js';
import { requestCountFor, warmupCountFor, type ResolvedValidateOptions, type ValidateEvent } from './options.js';
import { formatWait, type Readiness } from './readiness.js';
import { ROUTER_QUEUE_KEY, gpuTelemetry, validatePick, type TrialGpuTelemetry } from './gpu-evidence.js';
import { workerWarnings, type WorkerWarning } from './warnings.js';
import { workerFigures, type WarningEvidence } from './worker-figures.js';

/** One host-pressure sample, at `tMs` from the trial's origin. */
export interface HostSample extends HostPressure {
  tMs: number;
}

/** Everything one trial measured and how it was judged. */
export interface TrialOutcome {
  /** 1-based. */
  index: number;
  /** `trial-1`, or `sweep-64` for a sweep level (also the artifact folder name). */
  label: string;
  concurrency: number;
  concurrencyPerGpu: number;
  pass: boolean;
  gates: GateResult[];
  shape: ShapeVerdict;
  /** Where a failing trial's trouble lives (null for a passing trial). */
  locus: LocusVerdict | null;
  /** GPU telemetry per worker (`--gpu-metrics`); null when none was asked for. */
  gpu: TrialGpuTelemetry | null;
  /** Workers that stood out from the fleet (passing or failing trial alike). */
  warnings: WorkerWarning[];
  /** Which sources the warnings could read. */
  warningEvidence: WarningEvidence;
  summary: Summary;
  /** Null when the trial could not run at all (see `error`). */
  bench: BenchResult | null;
  records: RequestRecord[];
  series: CollectorSeries | null;
  workerSeries: Record<string, WorkerSeries>;
  host: HostSample[];
  /** Stopped by `--trial-timeout` (judged on what it measured). */
  timedOut: boolean;
  /** Interrupted by the user (Ctrl-C) or the caller's signal. */
  interrupted: boolean;
  error: string | null;
  wallMs: number;
}

/** Shapes that fail a trial even when every gate passes: the run did not measure the fleet it was meant to. */
const FAILING_SHAPES = new Set(['errors', 'under-provisioned']);

function benchOptions(o: ResolvedValidateOptions, concurrency: number, originMs: number, onProgress: (p: BenchProgress) => void): BenchOptions {
  return {
    url: o.url,
    model: o.model,
    endpointType: o.endpointType,
    streaming: o.streaming,
    concurrency,
    requestCount: requestCountFor(o, concurrency),
    warmupRequestCount: warmupCountFor(o, concurrency),
    inputTokensMean: o.inputTokensMean,
    inputTokensStddev: o.inputTokensStddev,
    outputTokensMean: o.outputTokensMean,
    outputTokensStddev: o.outputTokensStddev,
    numDatasetEntries: o.numDatasetEntries,
    randomSeed: o.randomSeed,
    extraInputs: o.extraInputs,
    headers: o.headers,
    ...(o.apiKey === null ? {} : { apiKey: o.apiKey }),
    requestTimeoutMs: o.requestTimeoutMs,
    originMs,
    onProgress,
  };
}

/**
 * Runs one trial: the collector scrapes the router's and every worker's `/metrics` every
 * `scrapeIntervalMs` and the host's pressure every second while bench drives the load; a trial
 * past `trialTimeoutMs` is stopped and judged on what it measured. Gates are judged and the shape
 * classified with its evidence. Throws only for bad options (CONFIG_INVALID).
 */
export async function runTrial(
  o: ResolvedValidateOptions,
  t: { index: number; label: string; concurrencyPerGpu: number; readiness: Readiness },
  onEvent: ValidateEvent,
  signal?: AbortSignal,
): Promise<TrialOutcome> {
  const concurrency = t.concurrencyPerGpu * o.gpus;
  const originMs = performance.now();
  const targets = t.readiness.workers.map((w) => ({ id: w.id, url: `${w.url}/metrics` }));
  if (t.readiness.routerMetricsUrl !== null) targets.push({ id: ROUTER_TARGET, url: t.readiness.routerMetricsUrl });
  const collector = targets.length > 0 ? new Collector({ targets, intervalMs: o.scrapeIntervalMs, originMs, pick: validatePick }) : null;
  const gpuIds = new Map<string, GpuIdentity>();
  const gpuCollector = o.gpuMetricsUrls.length > 0
    ? new Collector({ targets: o.gpuMetricsUrls.map((url) => ({ id: url, url })), intervalMs: Math.max(o.scrapeIntervalMs, 250), originMs, pick: dcgmPick(gpuIds) })
    : null;
  const host: HostSample[] = [];
  const sampleHost = (): void => {
    void readHostPressure().then((p) => host.push({ ...p, tMs: performance.now() - originMs }));
  };
  const hostTimer = setInterval(sampleHost, 1000);
  hostTimer.unref();
  sampleHost();

  const stop = new AbortController();
  let timedOut = false;
  const trialTimer = setTimeout(() => {
    timedOut = true;
    onEvent(`${t.label}: still running after ${formatWait(o.trialTimeoutMs)}; stopping it and judging what it measured`);
    stop.abort();
  }, o.trialTimeoutMs);
  trialTimer.unref();
  const onAbort = (): void => stop.abort();
  if (signal?.aborted === true) stop.abort();
  else signal?.addEventListener('abort', onAbort, { once: true });

  let lastPrint = 0;
  const onProgress = (p: BenchProgress): void => {
    const now = performance.now();
    if (now - lastPrint < 5000 && p.completed !== p.total) return;
    lastPrint = now;
    onEvent(`${t.label}: ${p.phase} ${p.completed}${p.total === null ? '' : `/${p.total}`} done, ${p.inflight} in flight, ${p.errors} errors, ${formatWait(p.elapsedMs)}`);
  };

  collector?.start();
  gpuCollector?.start();
  let bench: BenchResult | null = null;
  let error: string | null = null;
  try {
    bench = await runBench(benchOptions(o, concurrency, originMs, onProgress), stop.signal);
  } catch (e) {
    if (isTailgateError(e) && (e.code === 'CONFIG_INVALID' || e.code === 'CLI_USAGE')) throw e;
    error = e instanceof Error ? e.message : String(e);
  } finally {
    clearTimeout(trialTimer);
    clearInterval(hostTimer);
    signal?.removeEventListener('abort', onAbort);
  }
  // One last reading of every page, so the counters' deltas cover the whole profiling window.
  const [series, gpuSeries] = await Promise.all([collector?.stop({ finalScrape: true }) ?? null, gpuCollector?.stop({ finalScrape: true }) ?? null]);
  const records = bench?.records ?? [];
  const summary = bench?.summary ?? summarize([]);
  const gates = judgeGates(summary, o.gates);
  const cpuPsi = host.map((h) => h.cpuSomeAvg10).filter((v): v is number => v !== null);
  const evidence = trialEvidence({
    summary,
    records,
    gates,
    expectedWorkers: o.expectedWorkers,
    ...(t.readiness.ready === null ? {} : { readyWorkers: t.readiness.ready }),
    series,
    ...(bench ? { selfCheck: bench.selfCheck } : {}),
    hostCpuSomeAvg10: cpuPsi.length > 0 ? Math.max(...cpuPsi) : null,
  });
  let shape: ShapeVerdict;
  if (error !== null) {
    shape = { shape: 'errors', worker: null, evidence: { error }, explanation: `The trial could not run: ${error}.` };
  } else {
    shape = classifyTrial(evidence);
    if (timedOut) {
      shape = { ...shape, evidence: { ...shape.evidence, stoppedAfterMs: o.trialTimeoutMs }, explanation: `${shape.explanation} The trial was stopped after ${formatWait(o.trialTimeoutMs)}.` };
    }
  }
  const interrupted = signal?.aborted === true;
  const pass = error === null && !timedOut && !interrupted && summary.profilingCount > 0 && gates.every((g) => g.pass) && !FAILING_SHAPES.has(shape.shape);
  const gpu = gpuSeries ? gpuTelemetry(gpuSeries, gpuIds, t.readiness.workers.map((w) => w.id), o.gpuMap) : null;
  let locus: LocusVerdict | null = null;
  if (!pass && error === null) {
    const win = summary.profilingCount > 0 ? { fromMs: summary.startMs, toMs: summary.endMs } : null;
    const inWin = <T extends { tMs: number[] }>(x: T, cols: (keyof T)[]): T => {
      if (win === null) return x;
      const keep = x.tMs.map((tm) => tm >= win.fromMs && tm <= win.toMs);
      if (!keep.some(Boolean)) return x;
      const out = { ...x };
      for (const c of ['tMs', ...cols] as (keyof T)[]) (out as Record<keyof T, unknown>)[c] = (x[c] as number[]).filter((_, i) => keep[i]);
      return out;
    };
    const gpuWin: Record<string, GpuSeries> = {};
    for (const [w, g] of Object.entries(gpu?.perWorker ?? {})) gpuWin[w] = inWin(g, ['utilPct', 'powerW', 'smClockMhz', 'clockEventReasons', 'xid']);
    const router = series?.targets[ROUTER_TARGET];
    const queue = router?.values[ROUTER_QUEUE_KEY];
    const psiNote = host.find((h) => h.note !== null)?.note ?? null;
    const notes = gpu?.problems ?? [];
    locus = locateTrial({
      shape,
      workerSeries: evidence.workerSeries ?? {},
      gpuSeries: gpuWin,
      ...(router && queue ? { routerQueue: inWin({ tMs: router.tMs, length: queue.map((v) => (Number.isNaN(v) ? 0 : v)) }, ['length']) } : {}),
      ...(evidence.client ? { client: evidence.client } : {}),
      host: { cpuSomeAvg10: evidence.host?.cpuSomeAvg10 ?? null, note: psiNote },
      notes,
    });
  }
  const workerIds = t.readiness.workers.map((w) => w.id);
  const { figures, evidence: warningEvidence } = workerFigures({
    workers: workerIds,
    records,
    series,
    gpu: gpu?.perWorker ?? null,
    window: summary.profilingCount > 0 ? { fromMs: summary.startMs, toMs: summary.endMs } : { fromMs: 0, toMs: performance.now() - originMs },
  });
  const names = workerNames(figures.map((f) => f.id), workerIds);
  const warnings = error === null ? workerWarnings(t.label, figures, (id) => names.get(id) ?? id) : [];
  return {
    index: t.index,
    label: t.label,
    concurrency,
    concurrencyPerGpu: t.concurrencyPerGpu,
    pass,
    gates,
    shape,
    locus,
    gpu,
    warnings,
    warningEvidence,
    summary,
    bench,
    records,
    series,
    workerSeries: workerSeriesFrom(series, records),
    host,
    timedOut,
    interrupted,
    error,
    wallMs: performance.now() - originMs,
  };
}
