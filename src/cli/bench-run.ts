import { basename } from 'node:path';
import { TailgateError } from '../core/index.js';
import {
  BENCH_DEFAULTS,
  formatBenchReport,
  formatProgress,
  parseExtraInputs,
  parseGoodput,
  parseHeaders,
  resolveBenchOptions,
  runBench,
  writeBenchArtifacts,
  runRepeated,
  MULTI_RUN_LAYOUT,
  type BenchArtifactOptions,
  type BenchOptions,
  type BenchResult,
  type MultiRunPlan,
  type RunOne,
  type SweepSpec,
} from '../bench/index.js';
import { logs, type LogLevel } from './log-level.js';
import { chooseTokenizer, parseSequenceDistribution, readRateSeries, resolveTokenizer, type TokenizerChoice } from '../workload/index.js';
import { exportFileNames, redactCommand } from '../report/index.js';
import { serverMetricsUrl, startServerMetrics, writeServerMetrics, waitForModel, resetKvCache } from '../bench/index.js';
import { formatTelemetryTable, gpuTelemetryPlan, startGpuTelemetry, telemetryCsv, telemetryData, writeGpuTelemetryJsonl } from '../bench/index.js';
import { applyShard, shardOf, waitForStart, type ShardSpec } from './bench-shard.js';
import { VERSION } from './program.js';
import { ignoredFlagLine, refusedFlagLine, type UnappliedFlag } from './aiperf-flags.js';
import { BENCH_CLI_DEFAULTS, BENCH_FLAGS, type BenchFlags } from './bench-flags.js';
import { libraryOptions } from './option-table.js';
import { mediaOptionsOf } from './bench-media-flags.js';
import { synthesisOptionsOf } from './bench-synthesis-flags.js';
import { adaptiveScaleOf } from './bench-adaptive-flags.js';

/** What the CLI flags ask for: the library options plus where and how much to export. */
export interface BenchInvocation {
  options: BenchOptions;
  artifactDir: string;
  exportLevel: 'summary' | 'records' | 'raw';
  /** One-line notes to print before the run. */
  notes: string[];
  /** Distributed run: this pod's shard (options already narrowed to it). */
  shard?: ShardSpec;
  /** Distributed run: the common start, epoch ms. */
  startAtMs?: number;
  /** Where the tokenizer comes from (`--tokenizer`, else the model name), loaded by {@link runBenchCommand}. */
  tokenizer: TokenizerChoice;
  /** AIPerf `--log-level` (`-v` DEBUG, `-vv` TRACE). @default 'INFO' */
  logLevel: LogLevel;
  /** `--profile-export-prefix`. */
  filePrefix?: string;
  /** `--slice-duration`, ms. */
  sliceDurationMs?: number;
  /** `--gpu-telemetry`: the DCGM exporters to scrape (empty: none). */
  gpuTelemetryUrls: string[];
  /** `--export-outputs-json` (implied by `--export-level raw`). */
  exportOutputsJson: boolean;
  /** Refused AIPerf flags run anyway under `--allow-ignored-flags`: printed at every log level, listed in the exports. */
  ignoredFlags: UnappliedFlag[];
  /** Output-only AIPerf flags given (plots, trackers, UI, AIPerf internals): listed in the exports. */
  outputOnlyFlags: UnappliedFlag[];
}

/** AIPerf's `--log-level`, `-v` (DEBUG) and `-vv`/`--extra-verbose` (TRACE), last one named wins over none. */
export function logLevelOf(flags: Pick<BenchFlags, 'verbose' | 'extraVerbose' | 'logLevel'>): LogLevel {
  const verbose = flags.verbose ?? 0;
  if (flags.extraVerbose === true || verbose >= 2) return 'TRACE';
  if (verbose === 1) return 'DEBUG';
  return flags.logLevel ?? BENCH_CLI_DEFAULTS.logLevel;
}

/** Turns parsed flags into library options (pure; bad values throw CONFIG_INVALID / CLI_USAGE). */
export function benchInvocation(flags: BenchFlags): BenchInvocation {
  // AIPerf's -m takes a comma-separated list; the first names the tokenizer and the run
  const models = (flags.model ?? '').split(',').map((m) => m.trim()).filter((m) => m !== '');
  const model = models[0];
  if (model === undefined) throw new TailgateError('CLI_USAGE', "required option '-m, --model <name>' not specified");
  const ignoredFlags = flags.aiperfRefused ?? [];
  if (ignoredFlags.length > 0 && flags.allowIgnoredFlags !== true) throw new TailgateError('CLI_USAGE', ignoredFlags.map(refusedFlagLine).join('\ntailgate: '));
  const notes: string[] = [];
  if (flags.streaming === true && flags.endpointType === 'embeddings') notes.push('warning: --streaming: the embeddings endpoint does not stream (as in AIPerf); sending non-streaming requests');
  const tokenizer = chooseTokenizer({ tokenizer: flags.tokenizer, model, revision: flags.tokenizerRevision });
  const opts: BenchOptions = {
    ...libraryOptions<BenchOptions>(BENCH_FLAGS, flags),
    url: flags.url ?? [BENCH_CLI_DEFAULTS.url],
    model,
    streaming: flags.streaming === true && flags.endpointType !== 'embeddings',
    extraInputs: parseExtraInputs(flags.extraInputs ?? []),
    headers: parseHeaders(flags.header ?? []),
    goodput: parseGoodput(flags.goodput ?? []),
  };
  // A comma list sweeps (see sweepOf); the run options take its first value.
  const first = (v: number | number[] | undefined): number | undefined => (Array.isArray(v) ? v[0] : v);
  const concurrency = first(flags.concurrency);
  if (concurrency !== undefined) opts.concurrency = concurrency;
  const requestRate = first(flags.requestRate);
  if (requestRate !== undefined) opts.requestRate = requestRate;
  // AIPerf's concurrency_burst: every slot starts at once and is refilled, a closed loop.
  if (flags.requestRateMode === 'concurrency_burst') {
    if (flags.requestRate !== undefined) throw new TailgateError('CLI_USAGE', '--arrival-pattern concurrency_burst is a closed loop at --concurrency: drop --request-rate (AIPerf refuses the pair too)');
    delete opts.requestRate;
  } else if (flags.requestRateMode !== undefined) opts.requestRateMode = flags.requestRateMode;
  if (flags.requestRateSeries !== undefined) opts.requestRateSeries = readRateSeries(flags.requestRateSeries);
  if (flags.sequenceDistribution !== undefined) opts.sequenceDistribution = parseSequenceDistribution(flags.sequenceDistribution);
  const media = mediaOptionsOf(flags, BENCH_DEFAULTS.media);
  if (media !== undefined) opts.media = media;
  const synthesis = synthesisOptionsOf(flags);
  if (synthesis !== undefined) opts.synthesis = synthesis;
  const adaptive = adaptiveScaleOf(flags);
  if (adaptive !== undefined) opts.adaptiveScale = adaptive;
  const reuse = flags.connectionReuseStrategy;
  if (reuse !== undefined && reuse !== 'pooled') throw new TailgateError('CLI_USAGE', `--connection-reuse-strategy ${reuse}: AIPerf then opens connections per request or per user session; tailgate bench keeps one kept-alive pool (pooled, AIPerf's default)`);
  const contentType = flags.requestContentType;
  if (contentType !== undefined && contentType.split(';')[0]!.trim().toLowerCase() !== 'application/json') {
    throw new TailgateError('CLI_USAGE', `--request-content-type ${contentType}: AIPerf then sends that body encoding; tailgate bench sends application/json only`);
  }
  const formats = (flags.serverMetricsFormats ?? []).flatMap((f) => f.split(','));
  if (formats.includes('parquet')) throw new TailgateError('CLI_USAGE', '--server-metrics-formats parquet: AIPerf writes a Parquet file; tailgate bench does not (use json, csv or jsonl)');
  const datasetType = flags.customDatasetType;
  if (datasetType !== undefined && datasetType !== 'mooncake_trace') {
    throw new TailgateError('CLI_USAGE', `--custom-dataset-type ${datasetType} is not supported yet: only mooncake_trace (a JSONL trace with --input-file)`);
  }
  if (datasetType !== undefined && flags.inputFile === undefined) throw new TailgateError('CLI_USAGE', '--custom-dataset-type mooncake_trace needs --input-file');
  const exportOutputsJson = flags.exportOutputsJson ?? flags.exportLevel === 'raw';
  if (flags.exportLevel === 'raw' || exportOutputsJson) opts.keepRaw = true;
  if (models.length > 1) opts.models = models;
  if (flags.transport !== undefined && flags.transport !== 'http') opts.transport = flags.transport;
  const shard = shardOf(flags);
  if (shard) applyShard(opts, shard);
  const startAtMs = flags.startAt;
  const gpu = flags.gpuTelemetry;
  const gpuPlan = gpu === undefined || gpu === false ? { urls: [], notes: [] } : gpuTelemetryPlan(Array.isArray(gpu) ? gpu : []);
  notes.push(...gpuPlan.notes);
  return {
    options: opts, artifactDir: flags.artifactDir, exportLevel: flags.exportLevel, notes,
    tokenizer, gpuTelemetryUrls: gpuPlan.urls, exportOutputsJson,
    ignoredFlags, outputOnlyFlags: flags.aiperfOutputOnly ?? [],
    logLevel: logLevelOf(flags),
    ...(flags.profileExportPrefix !== undefined && { filePrefix: flags.profileExportPrefix }),
    ...(flags.sliceDuration !== undefined && { sliceDurationMs: flags.sliceDuration * 1000 }),
    ...(shard !== undefined && { shard }),
    ...(startAtMs !== undefined && { startAtMs }),
  };
}

/** Runs `tailgate bench` from merged flags; returns the exit code (errors for bad input are thrown). */
export async function runBenchCommand(flags: BenchFlags, argv: readonly string[] = []): Promise<number> {
  const { options: opts, artifactDir: dir, exportLevel, notes, shard, startAtMs, tokenizer, logLevel, filePrefix, sliceDurationMs, gpuTelemetryUrls, exportOutputsJson, ignoredFlags, outputOnlyFlags } = benchInvocation(flags);
  const resolved = resolveBenchOptions(opts);
  opts.tokenizer = await resolveTokenizer(tokenizer);
  if (opts.tokenizer.fallback) notes.push(`warning: ${opts.tokenizer.fallback}; counting tokens with the word rule (one token per word)`);
  if (logs(logLevel, 'WARNING')) for (const n of notes) process.stderr.write(`tailgate: ${n}\n`);
  // A run without a flag the user asked for says so whatever the log level.
  for (const f of ignoredFlags) process.stderr.write(`tailgate: ${ignoredFlagLine(f)}\n`);
  const aiperfFlags = { ignored: ignoredFlags, outputOnly: outputOnlyFlags };
  if (logs(logLevel, 'DEBUG')) process.stderr.write(`tailgate: debug: resolved run ${JSON.stringify(resolved, (k, v: unknown) => (k === 'tokenizer' || typeof v === 'function' ? undefined : v))}\n`);
  const showProgress = process.stderr.isTTY === true && !process.env['CI'];
  if (showProgress) opts.onProgress = (p) => process.stderr.write(`\r\x1b[2K${formatProgress(p)}`);

  const ctl = new AbortController();
  let signalled: NodeJS.Signals | null = null;
  const onSignal = (sig: NodeJS.Signals): void => {
    if (!ctl.signal.aborted) process.stderr.write('\ntailgate: interrupted; writing what was measured\n');
    signalled ??= sig;
    ctl.abort();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  // 128 + the signal number, as a shell reports a process ended by it.
  const interruptedCode = (): number => (signalled === 'SIGTERM' ? 143 : 130);
  try {
    const label = shard ? `shard ${shard.index + 1} of ${shard.count}: ` : '';
    let startLagMs: number | null = null;
    if (startAtMs !== undefined) {
      startLagMs = await waitForStart(startAtMs, ctl.signal, (line) => process.stderr.write(`tailgate: ${line}\n`), label);
      if (startLagMs === null) return interruptedCode();
    }
    const distributed = {
      ...(shard !== undefined && { shard }),
      ...(startAtMs !== undefined && { start_at: new Date(startAtMs).toISOString(), start_lag_ms: startLagMs }),
    };
    const waitS = flags.waitForModelTimeout;
    if (waitS > 0) {
      if (logs(logLevel, 'INFO')) process.stderr.write(`tailgate: waiting up to ${waitS} s for ${opts.model} to be served\n`);
      await waitForModel(resolved, {
        timeoutMs: waitS * 1000, mode: flags.waitForModelMode,
        intervalMs: flags.waitForModelInterval * 1000, signal: ctl.signal,
      });
      if (ctl.signal.aborted) return interruptedCode();
    }
    const cliCommand = redactCommand(['tailgate', 'bench', ...argv]);
    const plan = multiRunPlan(flags, opts);
    const sweep = sweepOf(flags);
    const scrapeUrls = serverMetricsUrls(flags, opts);
    const formats = (flags.serverMetricsFormats ?? BENCH_CLI_DEFAULTS.serverMetricsFormats).flatMap((f) => f.split(','));
    /**
     * One run, with the server metrics (AIPerf `--server-metrics`) and GPU telemetry (`--gpu-telemetry`)
     * scraped around it into `runDir`; `telemetry` goes into the run's JSON and CSV exports.
     */
    const benchOnce = async (runOpts: BenchOptions, runDir: string): Promise<{ result: BenchResult; telemetry: Pick<BenchArtifactOptions, 'telemetryData' | 'csvAppendix'>; telemetryText: string }> => {
      if (flags.resetKvCache === true) {
        const warnings = await resetKvCache(resolved, flags.resetKvCachePath, flags.resetKvCacheTimeoutSeconds * 1000);
        if (logs(logLevel, 'WARNING')) for (const w of warnings) process.stderr.write(`tailgate: ${w}\n`);
      }
      const scrape = scrapeUrls.length > 0 ? startServerMetrics(scrapeUrls) : null;
      const gpu = gpuTelemetryUrls.length > 0 ? startGpuTelemetry(gpuTelemetryUrls) : null;
      const result = await runBench(runOpts.adaptiveScale ? { ...runOpts, adaptiveScale: { ...runOpts.adaptiveScale, artifactDir: runDir } } : runOpts, ctl.signal);
      if (scrape) await writeServerMetrics(runDir, exportFileNames(filePrefix).serverMetrics, await scrape.stop(), formats);
      if (!gpu) return { result, telemetry: {}, telemetryText: '' };
      const endpoints = await gpu.stop();
      await writeGpuTelemetryJsonl(runDir, exportFileNames(filePrefix).gpuTelemetry, endpoints);
      const data = telemetryData(endpoints, result.startTime.getTime(), result.endTime);
      return { result, telemetry: { telemetryData: data, csvAppendix: telemetryCsv(data) }, telemetryText: formatTelemetryTable(data) };
    };
    /**
     * One run into `runDir` with its exports and console report (`title` above it; the single run also
     * writes report.html); whether it failed: stopped early, or every request failed.
     */
    const runAndReport = async (runOpts: BenchOptions, runDir: string, runInfo: Record<string, unknown>, title: string | null): Promise<{ result: BenchResult; failed: boolean }> => {
      const { result, telemetry, telemetryText } = await benchOnce(runOpts, runDir);
      if (showProgress) process.stderr.write('\n');
      await writeBenchArtifacts(runDir, result, {
        exportLevel, exportOutputsJson, version: VERSION, aiperfFlags, runInfo, ...telemetry,
        ...(filePrefix !== undefined && { filePrefix }),
        ...(sliceDurationMs !== undefined && { sliceDurationMs }),
        ...(Object.keys(distributed).length > 0 && { extra: distributed }),
      });
      if (title === null) await (await import('../validate/index.js')).writeBenchReport(runDir, result);
      process.stdout.write(`${title === null ? '' : `${title}:\n`}${formatBenchReport(result)}${telemetryText}`);
      if (result.stoppedEarly === undefined) return { result, failed: everyRequestFailed(result) };
      process.stderr.write(`tailgate: stopped early: ${result.stoppedEarly}\n`);
      return { result, failed: true };
    };
    if (plan.runs === 1 && sweep === null) {
      const { result, failed } = await runAndReport(opts, dir, { cli_command: cliCommand }, null);
      process.stdout.write(`artifacts: ${dir}\n`);
      // A run that stopped itself (--failed-request-threshold) is cancelled too, but a failure, not an interrupt.
      if (result.cancelled && result.stoppedEarly === undefined) return interruptedCode();
      return failed ? 1 : 0;
    }
    for (const n of plan.notes) if (logs(logLevel, 'WARNING')) process.stderr.write(`tailgate: ${n}\n`);
    let failed = false;
    /** One run of the plan; its summary, or null when it was cut short. */
    const runInto: RunOne = async (runDir, runOpts, trial, variation, title) => {
      const runInfo = { cli_command: cliCommand, trial, run_label: basename(MULTI_RUN_LAYOUT.runDir(trial)), ...(variation && { variation_label: variation.label, variation_index: variation.index, variation_values: variation.values }) };
      const run = await runAndReport(runOpts, runDir, runInfo, title);
      failed ||= run.failed;
      return run.result.cancelled ? null : run.result.summary;
    };
    await runRepeated({
      dir, opts, plan, sweep, signal: ctl.signal, runOne: runInto, version: VERSION,
      sweepMode: flags.parameterSweepMode ?? BENCH_CLI_DEFAULTS.parameterSweepMode,
      sameSeed: flags.parameterSweepSameSeed === true,
      sweepCooldownMs: flags.parameterSweepCooldownSeconds * 1000,
      out: (line) => process.stdout.write(`${line}\n`),
      warn: (line) => {
        if (logs(logLevel, 'WARNING')) process.stderr.write(`tailgate: ${line}\n`);
      },
    });
    process.stdout.write(`artifacts: ${dir}\n`);
    if (ctl.signal.aborted) return interruptedCode();
    return failed ? 1 : 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** `--server-metrics` endpoints: the URLs given, or each `--url`'s `/metrics` when the flag is bare. */
export function serverMetricsUrls(flags: Pick<BenchFlags, 'serverMetrics'>, opts: BenchOptions): string[] {
  const v = flags.serverMetrics;
  if (v === undefined || v === false) return [];
  const given = Array.isArray(v) ? v.flatMap((s) => s.split(',')).filter((s) => s !== '') : [];
  const urls = given.length > 0 ? given : (typeof opts.url === 'string' ? [opts.url] : [...opts.url]);
  return urls.map(serverMetricsUrl);
}

/** A comma list given to `--concurrency` or `--request-rate`: AIPerf sweeps its values, one run (or trial set) each. */
export function sweepOf(flags: Pick<BenchFlags, 'concurrency' | 'requestRate'>): SweepSpec | null {
  const list = (v: number | number[] | undefined): number[] | null => (Array.isArray(v) && v.length > 1 ? v : null);
  const c = list(flags.concurrency);
  const r = list(flags.requestRate);
  if (c && r) throw new TailgateError('CLI_USAGE', 'sweep one of --concurrency or --request-rate at a time (a grid of both is not done)');
  if (c) return { key: 'concurrency', path: 'concurrency', values: c };
  if (r) return { key: 'requestRate', path: 'request_rate', values: r };
  return null;
}

function everyRequestFailed(result: BenchResult): boolean {
  const s = result.summary;
  if (s.profilingCount === 0 || s.okCount > 0 || result.cancelled) return false;
  const top = s.errorSummary[0];
  process.stderr.write(`tailgate: every request failed (${s.errorCount}): ${top ? `${top.kind}: ${top.message}` : 'no response'}\n`);
  return true;
}

/** Reads the multi-run flags (AIPerf's defaults: one seed, BENCH_CLI_DEFAULTS.consistentSeed unless given; warm-up only before the first run). */
export function multiRunPlan(flags: BenchFlags, opts: BenchOptions): MultiRunPlan {
  const runs = flags.numProfileRuns;
  if (runs > 10) throw new TailgateError('CLI_USAGE', `--num-profile-runs must be between 1 and 10 (got ${runs}), as in AIPerf`);
  const notes: string[] = [];
  const consistent = flags.setConsistentSeed !== false;
  const base = opts.randomSeed ?? (consistent && runs > 1 ? BENCH_CLI_DEFAULTS.consistentSeed : undefined);
  const vary = flags.varySeedPerTrial === true;
  const metric = flags.convergenceMetric;
  const mode = flags.convergenceMode;
  if (mode === 'distribution') throw new TailgateError('CLI_USAGE', '--convergence-mode distribution: in AIPerf a KS test between runs; tailgate bench does not do it (use ci_width or cv)');
  return {
    runs,
    level: flags.confidenceLevel,
    cooldownMs: flags.profileRunCooldownSeconds * 1000,
    warmupOnlyFirst: flags.profileRunDisableWarmupAfterFirst !== false,
    seedOf: (run) => (base === undefined ? undefined : vary ? base + run : base),
    convergence: metric === undefined ? null : {
      metric,
      stat: flags.convergenceStat,
      mode,
      threshold: flags.convergenceThreshold ?? BENCH_CLI_DEFAULTS.convergenceThreshold[mode],
    },
    notes,
  };
}
