import { createRequire } from 'node:module';
import { describeGate } from '../gate/index.js';
import type { ResolvedValidateOptions } from './options.js';
import { requestCountFor, warmupCountFor } from './options.js';
import type { SummaryInput } from './outcome.js';
import type { TrialOutcome } from './trial.js';
import { mergeEvidence } from './worker-figures.js';

/** Version of the `verdict.json` layout; bumped on any incompatible change. */
export const VERDICT_SCHEMA_VERSION = 1;

/** tailgate's version, from package.json. */
export const TAILGATE_VERSION: string = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;

const r2 = (v: number): number => Math.round(v * 100) / 100;

/** The inputs as run, with defaults applied; the API key is never written. */
export function inputsJson(o: ResolvedValidateOptions): Record<string, unknown> {
  return {
    url: o.url,
    model: o.model,
    gpus: o.gpus,
    concurrencyPerGpu: o.concurrencyPerGpu,
    concurrency: o.concurrency,
    trials: o.trialsAuto ? 'auto' : o.trials,
    maxTrials: o.trialsAuto ? o.trials : null,
    targetCiWidth: o.trialsAuto ? o.targetCiWidth : null,
    confidenceLevel: o.confidenceLevel,
    search: o.search,
    passRule: o.passRule,
    expectedWorkers: o.expectedWorkers,
    workerUrls: o.workerUrls,
    readyTimeoutMs: o.readyTimeoutMs,
    probeTimeoutMs: o.probeTimeoutMs,
    trialTimeoutMs: o.trialTimeoutMs,
    scrapeIntervalMs: o.scrapeIntervalMs,
    sweep: o.sweep,
    endpointType: o.endpointType,
    streaming: o.streaming,
    syntheticInputTokensMean: o.inputTokensMean,
    syntheticInputTokensStddev: o.inputTokensStddev,
    outputTokensMean: o.outputTokensMean,
    outputTokensStddev: o.outputTokensStddev,
    requestCount: requestCountFor(o, o.concurrency),
    requestCountRule: o.requestCount === null ? 'max(1000, 8 x C)' : 'fixed',
    warmupRequestCount: warmupCountFor(o, o.concurrency),
    warmupRequestCountRule: o.warmupRequestCount === null ? 'C' : 'fixed',
    randomSeed: o.randomSeed,
    numDatasetEntries: o.numDatasetEntries,
    requestTimeoutSeconds: o.requestTimeoutMs / 1000,
    extraInputs: o.extraInputs,
    headers: Object.keys(o.headers),
    apiKey: o.apiKey === null ? null : 'redacted',
    gates: o.gates.map((g) => ({ ...g, limit: g.threshold * g.tolerance, text: describeGate(g) })),
    failOnWarning: o.failOnWarning,
  };
}

/** One trial as `verdict.json` writes it: verdict, shape, worker, evidence, AIPerf-named metrics. */
export function trialJson(t: TrialOutcome): Record<string, unknown> {
  const self = t.bench?.selfCheck;
  const psi = t.host.map((h) => h.cpuSomeAvg10).filter((v): v is number => v !== null);
  return {
    index: t.index,
    label: t.label,
    concurrency: t.concurrency,
    concurrencyPerGpu: t.concurrencyPerGpu,
    verdict: t.pass ? 'pass' : 'fail',
    shape: t.shape.shape,
    worker: t.shape.worker,
    explanation: t.shape.explanation,
    evidence: t.shape.evidence,
    locus: t.locus,
    warnings: t.warnings,
    warningEvidence: t.warningEvidence,
    gpuTelemetry: t.gpu === null ? null : { mapped: t.gpu.mapped, unmapped: t.gpu.unmapped, workersWithoutGpu: t.gpu.workersWithoutGpu, problems: t.gpu.problems },
    gates: t.gates.map((g) => ({ metric: g.gate.metric, stat: g.gate.stat, op: g.gate.op, threshold: g.gate.threshold, tolerance: g.gate.tolerance, limit: g.limit, value: g.value, pass: g.pass })),
    metrics: t.summary.metrics,
    perWorker: t.summary.perWorker,
    requests: { profiling: t.summary.profilingCount, ok: t.summary.okCount, errors: t.summary.errorCount, errorSummary: t.summary.errorSummary },
    selfCheck: self ?? null,
    hostPressure: {
      samples: t.host.length,
      cpuSomeAvg10Max: psi.length > 0 ? Math.max(...psi) : null,
      loadAvg1Max: t.host.length > 0 ? Math.max(...t.host.map((h) => h.loadAvg1)) : null,
      cpus: t.host[0]?.cpus ?? null,
      note: t.host[0]?.note ?? null,
    },
    scrape: t.series
      ? Object.fromEntries(Object.entries(t.series.targets).map(([id, s]) => [id, { samples: s.tMs.length, errors: s.errors, lastError: s.lastError }]))
      : null,
    timedOut: t.timedOut,
    interrupted: t.interrupted,
    error: t.error,
    wallSeconds: r2(t.wallMs / 1000),
    startTime: t.bench?.startTime.toISOString() ?? null,
    endTime: t.bench?.endTime.toISOString() ?? null,
    artifacts: `${t.label}/`,
  };
}

/** Input of {@link verdictJson}: what the summaries read, plus when it started and whether it was cut short. */
export interface VerdictDocInput extends Omit<SummaryInput, 'outDir'> {
  interrupted: boolean;
  startedAt: Date;
}

/**
 * The `verdict.json` document (schema version {@link VERDICT_SCHEMA_VERSION}): inputs, seed,
 * versions, readiness, top-level `verdict`, `trials[]`, the spread across trials, the sweep.
 */
export function verdictJson(d: VerdictDocInput): Record<string, unknown> {
  const gated = new Set(d.o.gates.map((g) => `${g.metric}.${g.stat}`));
  const keys = new Set(['output_token_throughput.avg', 'time_to_first_token.p99', 'time_to_first_token.p50', 'request_latency.p99', 'inter_token_latency.avg', ...gated]);
  const stats = d.aggregate ? Object.fromEntries(Object.entries(d.aggregate.stats).filter(([k]) => keys.has(k))) : null;
  return {
    schemaVersion: VERDICT_SCHEMA_VERSION,
    tool: 'tailgate validate',
    versions: { tailgate: TAILGATE_VERSION, node: process.version },
    startedAt: d.startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    seed: d.o.randomSeed,
    inputs: inputsJson(d.o),
    verdict: d.verdict,
    reason: d.reason,
    passRule: d.o.passRule,
    trialsPassed: d.trials.filter((t) => t.pass).length,
    trialsRun: d.trials.length,
    interrupted: d.interrupted,
    readiness: {
      mode: d.readiness.mode,
      ok: d.readiness.ok,
      expected: d.readiness.expected,
      ready: d.readiness.ready,
      waitedSeconds: r2(d.readiness.waitedMs / 1000),
      notReady: d.readiness.notReady,
      workers: d.readiness.workers,
      message: d.readiness.message,
      probe: d.readiness.probe,
    },
    aggregate: d.aggregate
      ? {
        verdict: d.aggregate.verdict,
        passed: d.aggregate.passed,
        trials: d.aggregate.trials,
        confidenceLevel: d.o.confidenceLevel,
        autoStop: d.autoStop ?? null,
        gates: d.aggregate.gates.map((g) => ({ gate: describeGate(g.gate), limit: g.limit, pass: g.pass, passedTrials: g.passedTrials, values: g.values, median: g.median, stat: g.stat, straddles: g.straddles })),
        stats,
      }
      : null,
    sweep: d.sweep,
    search: d.search ?? null,
    failOnWarning: d.o.failOnWarning,
    warnings: d.trials.flatMap((t) => t.warnings),
    warningEvidence: mergeEvidence(d.trials.map((t) => t.warningEvidence)),
    trials: d.trials.map(trialJson),
  };
}
