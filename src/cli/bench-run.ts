import { TailgateError } from '../core/index.js';
import {
  formatBenchReport,
  formatProgress,
  parseExtraInputs,
  parseGoodput,
  parseHeaders,
  resolveBenchOptions,
  runBench,
  writeBenchArtifacts,
  type BenchOptions,
} from '../bench/index.js';
import { LOG_LEVELS } from './bench.js';
import { chooseTokenizer, resolveTokenizer, type TokenizerChoice } from '../workload/index.js';
import { redactCommand } from '../report/index.js';
import { applyShard, shardOf, waitForStart, type ShardSpec } from './bench-shard.js';
import { VERSION } from './program.js';

/** AIPerf's log levels. */
export type LogLevel = (typeof LOG_LEVELS)[number];

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
}

/** AIPerf's `--log-level`, `-v` (DEBUG) and `-vv`/`--extra-verbose` (TRACE), last one named wins over none. */
export function logLevelOf(flags: Record<string, unknown>): LogLevel {
  const verbose = (flags['verbose'] as number | undefined) ?? 0;
  if (flags['extraVerbose'] === true || verbose >= 2) return 'TRACE';
  if (verbose === 1) return 'DEBUG';
  return (flags['logLevel'] as LogLevel | undefined) ?? 'INFO';
}

/** Whether a line at `line` level prints under the chosen `level`. */
export function logs(level: LogLevel, line: LogLevel): boolean {
  return LOG_LEVELS.indexOf(line) >= LOG_LEVELS.indexOf(level);
}

/** Turns merged flags into library options (pure; bad values throw CONFIG_INVALID / CLI_USAGE). */
export function benchInvocation(flags: Record<string, unknown>): BenchInvocation {
  const model = flags['model'] as string | undefined;
  if (!model) throw new TailgateError('CLI_USAGE', "required option '-m, --model <name>' not specified");
  const notes: string[] = [...((flags['ignoredFlagWarnings'] as string[] | undefined) ?? [])];
  const tokenizer = chooseTokenizer({ tokenizer: flags['tokenizer'] as string | undefined, model: model.split(',')[0]!.trim(), revision: flags['tokenizerRevision'] as string | undefined });
  if (flags['tokenizerTrustRemoteCode'] === true) notes.push('warning: --tokenizer-trust-remote-code: accepted for AIPerf compatibility and has no effect (tailgate runs no tokenizer code, it reads tokenizer.json)');
  const opts: BenchOptions = {
    url: (flags['url'] as string[] | undefined) ?? ['http://localhost:8000'],
    model: model.split(',')[0]!.trim(),
    endpointType: flags['endpointType'] as 'chat' | 'completions',
    streaming: flags['streaming'] === true,
    extraInputs: parseExtraInputs((flags['extraInputs'] as string[] | undefined) ?? []),
    headers: parseHeaders((flags['header'] as string[] | undefined) ?? []),
    goodput: parseGoodput((flags['goodput'] as string[] | undefined) ?? []),
  };
  const set = <K extends keyof BenchOptions>(k: K, v: unknown, map: (x: never) => BenchOptions[K] = (x) => x): void => {
    if (v !== undefined) opts[k] = map(v as never);
  };
  set('endpointPath', flags['endpoint']);
  set('concurrency', flags['concurrency']);
  set('requestRate', flags['requestRate']);
  set('requestRateMode', flags['requestRateMode']);
  set('datasetSamplingStrategy', flags['datasetSamplingStrategy']);
  set('requestCount', flags['requestCount']);
  set('warmupRequestCount', flags['warmupRequestCount']);
  set('benchmarkDurationMs', flags['benchmarkDuration'], (s: number) => s * 1000);
  set('benchmarkGracePeriodMs', flags['benchmarkGracePeriod'], (s: number) => s * 1000);
  set('inputTokensMean', flags['isl']);
  set('inputTokensStddev', flags['islStddev']);
  set('outputTokensMean', flags['osl']);
  set('outputTokensStddev', flags['oslStddev']);
  set('numDatasetEntries', flags['numDatasetEntries']);
  set('randomSeed', flags['randomSeed']);
  set('numPrefixPrompts', flags['numPrefixPrompts']);
  set('prefixPromptLength', flags['prefixPromptLength']);
  set('sharedSystemPromptLength', flags['sharedSystemPromptLength']);
  set('userContextPromptLength', flags['userContextPromptLength']);
  set('conversationNum', flags['conversationNum']);
  set('conversationTurnMean', flags['conversationTurnMean']);
  set('conversationTurnStddev', flags['conversationTurnStddev']);
  set('conversationTurnDelayMeanMs', flags['conversationTurnDelayMean']);
  set('conversationTurnDelayStddevMs', flags['conversationTurnDelayStddev']);
  set('conversationTurnDelayRatio', flags['conversationTurnDelayRatio']);
  set('inputFile', flags['inputFile']);
  set('fixedSchedule', flags['fixedSchedule']);
  set('fixedScheduleAutoOffset', flags['fixedScheduleAutoOffset']);
  set('blockTokens', flags['blockTokens']);
  const datasetType = flags['customDatasetType'] as string | undefined;
  if (datasetType !== undefined && datasetType !== 'mooncake_trace') {
    throw new TailgateError('CLI_USAGE', `--custom-dataset-type ${datasetType} is not supported yet: only mooncake_trace (a JSONL trace with --input-file)`);
  }
  if (datasetType !== undefined && flags['inputFile'] === undefined) throw new TailgateError('CLI_USAGE', '--custom-dataset-type mooncake_trace needs --input-file');
  set('apiKey', flags['apiKey']);
  set('useLegacyMaxTokens', flags['useLegacyMaxTokens']);
  set('useServerTokenCount', flags['useServerTokenCount']);
  set('requestTimeoutMs', flags['requestTimeoutSeconds'], (s: number) => s * 1000);
  set('workerHeader', flags['workerHeader']);
  if (flags['transport'] !== 'http') set('transport', flags['transport']);
  set('threads', flags['threads']);
  const shard = shardOf(flags);
  if (shard) applyShard(opts, shard);
  const startAtMs = flags['startAt'] as number | undefined;
  return {
    options: opts, artifactDir: flags['artifactDir'] as string, exportLevel: flags['exportLevel'] as BenchInvocation['exportLevel'], notes,
    tokenizer,
    logLevel: logLevelOf(flags),
    ...(flags['profileExportPrefix'] !== undefined && { filePrefix: flags['profileExportPrefix'] as string }),
    ...(shard !== undefined && { shard }),
    ...(startAtMs !== undefined && { startAtMs }),
  };
}

/** Runs `tailgate bench` from merged flags; returns the exit code (errors for bad input are thrown). */
export async function runBenchCommand(flags: Record<string, unknown>, argv: readonly string[] = []): Promise<number> {
  const { options: opts, artifactDir: dir, exportLevel, notes, shard, startAtMs, tokenizer, logLevel, filePrefix } = benchInvocation(flags);
  const resolved = resolveBenchOptions(opts);
  opts.tokenizer = await resolveTokenizer(tokenizer);
  if (opts.tokenizer.fallback) notes.push(`warning: ${opts.tokenizer.fallback}; counting tokens with the word rule (one token per word)`);
  if (logs(logLevel, 'WARNING')) for (const n of notes) process.stderr.write(`tailgate: ${n}\n`);
  if (logs(logLevel, 'DEBUG')) process.stderr.write(`tailgate: debug: resolved run ${JSON.stringify(resolved, (k, v: unknown) => (k === 'tokenizer' || typeof v === 'function' ? undefined : v))}\n`);
  const showProgress = process.stderr.isTTY === true && !process.env['CI'];
  if (showProgress) opts.onProgress = (p) => process.stderr.write(`\r\x1b[2K${formatProgress(p)}`);

  const ctl = new AbortController();
  const onSignal = (): void => {
    if (!ctl.signal.aborted) process.stderr.write('\ntailgate: interrupted; writing what was measured\n');
    ctl.abort();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const label = shard ? `shard ${shard.index + 1} of ${shard.count}: ` : '';
    let startLagMs: number | null = null;
    if (startAtMs !== undefined) {
      startLagMs = await waitForStart(startAtMs, ctl.signal, (line) => process.stderr.write(`tailgate: ${line}\n`), label);
      if (startLagMs === null) return 1;
    }
    const result = await runBench(opts, ctl.signal);
    if (showProgress) process.stderr.write('\n');
    const distributed = {
      ...(shard !== undefined && { shard }),
      ...(startAtMs !== undefined && { start_at: new Date(startAtMs).toISOString(), start_lag_ms: startLagMs }),
    };
    await writeBenchArtifacts(dir, result, {
      exportLevel, version: VERSION, runInfo: { cli_command: redactCommand(['tailgate', 'bench', ...argv]) },
      ...(filePrefix !== undefined && { filePrefix }),
      ...(Object.keys(distributed).length > 0 && { extra: distributed }),
    });
    await (await import('../validate/index.js')).writeBenchReport(dir, result);
    process.stdout.write(formatBenchReport(result));
    process.stdout.write(`artifacts: ${dir}\n`);
    const s = result.summary;
    if (s.profilingCount > 0 && s.okCount === 0 && !result.cancelled) {
      const top = s.errorSummary[0];
      process.stderr.write(`tailgate: every request failed (${s.errorCount}): ${top ? `${top.kind}: ${top.message}` : 'no response'}\n`);
      return 1;
    }
    return result.cancelled ? 1 : 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
