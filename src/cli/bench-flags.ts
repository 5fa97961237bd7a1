// The flag table of `tailgate bench`: a file of its own so bench.ts (wiring) and bench-run.ts (the run) both read it without importing each other.
import { InvalidArgumentError } from 'commander';
import { choiceArg, collect, intArg, numberArg, positiveArg as positiveNumber } from './args.js';
import { startAtArg } from './bench-shard.js';
import { LOG_LEVELS } from './log-level.js';
import { rowsFor, type FlagsOf } from './option-table.js';
import { SAMPLING_STRATEGIES, type SamplingStrategy } from '../workload/index.js';
import { BENCH_DEFAULTS, CACHE_BUST_TARGETS as CACHE_BUST, type BenchDefaults, type BenchOptions, type CacheBustTarget } from '../bench/index.js';
import type { UnappliedFlag } from './aiperf-flags.js';
import { mediaFlags } from './bench-media-flags.js';
import { SYNTHESIS_FLAGS } from './bench-synthesis-flags.js';
import { adaptiveFlags } from './bench-adaptive-flags.js';

const countUp = (_value: string, previous: number | undefined): number => (previous ?? 0) + 1;

function upperChoice<T extends string>(choices: readonly T[]) {
  const parse = choiceArg(choices);
  return (value: string): T => parse(value.toUpperCase());
}

/** One value, or a comma list of them (AIPerf's sweep syntax). */
function listOf(parse: (v: string) => number) {
  return (value: string): number | number[] => (value.includes(',') ? value.split(',').map((x) => parse(x.trim())) : parse(value));
}

const openUnit = (value: string): number => {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || n >= 1) throw new InvalidArgumentError('expected a number between 0 and 1');
  return n;
};

const row = rowsFor<BenchOptions>();

/** What `tailgate bench` itself does when not told otherwise; the run's own defaults are the library's (BENCH_DEFAULTS). */
export const BENCH_CLI_DEFAULTS = {
  url: 'http://localhost:8000',
  artifactDir: 'artifacts',
  exportLevel: 'records',
  logLevel: 'INFO',
  parameterSweepMode: 'repeated',
  waitForModelTimeoutS: 0,
  waitForModelMode: 'inference',
  waitForModelIntervalS: 5,
  resetKvCachePath: '/reset_prefix_cache',
  resetKvCacheTimeoutS: 10,
  serverMetricsFormats: ['json', 'csv'],
  parameterSweepCooldownS: 0,
  numProfileRuns: 1,
  profileRunCooldownS: 0,
  confidenceLevel: 0.95,
  convergenceStat: 'avg',
  convergenceMode: 'ci_width',
  convergenceThreshold: { ci_width: 0.1, cv: 0.05 },
  /** AIPerf's seed of repeated runs under --set-consistent-seed without --random-seed. */
  consistentSeed: 42,
} as const;
const C = BENCH_CLI_DEFAULTS;

/**
 * Every flag of `tailgate bench`, declared once with every alias AIPerf accepts: commander's option,
 * its help with the default it shows (from BENCH_DEFAULTS, the defaults the run applies), and the
 * bench option it sets (`lib`, seconds flags times `scale`). The AIPerf flags it does not declare
 * are AIPERF_FLAGS' refused and output-only ones (see undeclaredAiperfFlags).
 */
export function benchFlags(D: BenchDefaults) {
  return {
    url: row({ short: '-u', arg: '<url...>', help: 'base URL of the OpenAI-compatible server; several are used round-robin', parse: collect, defaultNote: C.url }),
    model: row<string>({ short: '-m', arg: '<name>', aliases: ['--model-names'], help: 'model name to request; several, comma-separated: each dataset entry asks for one (--model-selection-strategy)' }),
    modelSelectionStrategy: row<'round_robin' | 'random'>({ arg: '<s>', help: 'with several models: round_robin (entry i gets model i mod n) or random (seeded)', parse: choiceArg(['round_robin', 'random'] as const), lib: 'modelSelectionStrategy', defaultNote: D.modelSelectionStrategy }),
    endpointType: row<'chat' | 'completions' | 'embeddings'>({ arg: '<type>', help: 'chat, completions or embeddings (no streaming, no output tokens)', parse: choiceArg(['chat', 'completions', 'embeddings'] as const), default: D.endpointType, lib: 'endpointType' }),
    urlStrategy: row({ arg: '<s>', help: 'how requests pick one of several URLs: round_robin (the only one, as in AIPerf)', parse: choiceArg(['round_robin'] as const) }),
    endpoint: row<string>({ arg: '<path>', aliases: ['--custom-endpoint'], help: 'endpoint path', lib: 'endpointPath', defaultNote: `${D.endpointPaths.chat} or ${D.endpointPaths.completions}` }),
    streaming: row<boolean>({ help: 'stream responses (SSE); off unless given, as in AIPerf' }),
    concurrency: row({ arg: '<n>', help: 'closed loop: requests kept in flight (with --request-rate: the ceiling); a comma list (8,16,32) sweeps', parse: listOf(intArg(1)) }),
    requestRate: row({ arg: '<perS>', help: 'open loop: requests started per second; a comma list sweeps', parse: listOf(positiveNumber) }),
    requestRateSeries: row<string>({ arg: '<file>', help: 'AIPerf\'s piecewise-linear rate: a JSON file {"points": [{"time_s": 0, "qps": 2}, {"time_s": 60, "qps": 10}]}; the rate is linear between points and holds the last (excludes --request-rate)' }),
    requestRateMode: row({ arg: '<mode>', aliases: ['--arrival-pattern'], help: 'constant, poisson, gamma (--arrival-smoothness) or concurrency_burst (a closed loop at --concurrency)', parse: choiceArg(['constant', 'poisson', 'gamma', 'concurrency_burst'] as const), defaultNote: D.requestRateMode }),
    arrivalSmoothness: row({ arg: '<k>', aliases: ['--vllm-burstiness'], help: 'gamma arrivals\' shape: 1 Poisson-like, below 1 bursty, above 1 regular', parse: positiveNumber, lib: 'arrivalSmoothness', defaultNote: String(D.arrivalSmoothness) }),
    requestCount: row({ arg: '<n>', aliases: ['--num-requests'], help: 'profiling requests', parse: intArg(1), lib: 'requestCount', defaultNote: `max(${D.requestCount.min}, ${D.requestCount.perConcurrency} x concurrency)` }),
    warmupRequestCount: row({ arg: '<n>', aliases: ['--num-warmup-requests'], help: 'warm-up requests, excluded from every metric', parse: intArg(0), lib: 'warmupRequestCount' }),
    warmupDuration: row({ arg: '<s>', help: 'warm up for this many seconds (with --warmup-request-count: whichever ends first)', parse: positiveNumber, lib: 'warmupDurationMs', scale: 1000 }),
    benchmarkDuration: row({ arg: '<s>', help: 'profile for this many seconds instead of a request count', parse: positiveNumber, lib: 'benchmarkDurationMs', scale: 1000 }),
    benchmarkGracePeriod: row({ arg: '<s>', help: 'seconds to wait for in-flight responses after the duration', parse: numberArg(0), lib: 'benchmarkGracePeriodMs', scale: 1000, defaultNote: String(D.benchmarkGracePeriodMs / 1000) }),
    isl: row({ long: 'synthetic-input-tokens-mean', arg: '<n>', aliases: ['--prompt-input-tokens-mean', '--isl'], help: 'mean prompt length in tokens', parse: intArg(1), lib: 'inputTokensMean', defaultNote: String(D.inputTokensMean) }),
    islStddev: row({ long: 'synthetic-input-tokens-stddev', arg: '<n>', aliases: ['--prompt-input-tokens-stddev', '--isl-stddev'], help: 'prompt length standard deviation', parse: numberArg(0), lib: 'inputTokensStddev' }),
    osl: row({ long: 'output-tokens-mean', arg: '<n>', aliases: ['--prompt-output-tokens-mean', '--osl'], help: 'requested output tokens (max_tokens)', parse: intArg(1), lib: 'outputTokensMean' }),
    oslStddev: row({ long: 'output-tokens-stddev', arg: '<n>', aliases: ['--prompt-output-tokens-stddev', '--osl-stddev'], help: 'output length standard deviation', parse: numberArg(0), lib: 'outputTokensStddev' }),
    sequenceDistribution: row<string>({ arg: '<dist>', aliases: ['--seq-dist'], help: 'a mix of (ISL, OSL) pairs, each prompt drawn by weight, as AIPerf: "64,32:50;256|16,64:50" (ISL[|STDDEV],OSL[|STDDEV]:PERCENT; or [(ISL,OSL):P,...] or {"pairs": [...]}); replaces --isl/--osl' }),
    numDatasetEntries: row({ arg: '<n>', aliases: ['--num-prompts'], help: 'distinct prompts', parse: intArg(1), lib: 'numDatasetEntries', defaultNote: String(D.numDatasetEntries) }),
    datasetSamplingStrategy: row<SamplingStrategy>({ arg: '<s>', help: `how requests draw dataset entries: ${SAMPLING_STRATEGIES.join(', ')}`, parse: choiceArg(SAMPLING_STRATEGIES), lib: 'datasetSamplingStrategy', defaultNote: `${D.datasetSampling.synthetic}; ${D.datasetSampling.trace} for --input-file` }),
    randomSeed: row({ arg: '<n>', help: 'seed for prompts and arrivals', parse: intArg(0), lib: 'randomSeed', defaultNote: String(D.randomSeed) }),
    cacheBust: row<CacheBustTarget>({ arg: '<where>', help: 'AIPerf\'s per-conversation marker "[rid:<12 hex>]" that defeats prefix caches: none, system_prefix, system_suffix (on the system message, else the first user message), first_turn_prefix or first_turn_suffix', parse: choiceArg(CACHE_BUST), lib: 'cacheBust', defaultNote: D.cacheBust }),
    numPrefixPrompts: row({ arg: '<n>', aliases: ['--prompt-prefix-pool-size', '--prefix-prompt-pool-size'], help: 'shared prefixes: N groups, entry i starts with prefix i mod N (with --prefix-prompt-length)', parse: intArg(0), lib: 'numPrefixPrompts' }),
    prefixPromptLength: row({ arg: '<n>', aliases: ['--prompt-prefix-length'], help: 'tokens of each shared prefix', parse: intArg(0), lib: 'prefixPromptLength' }),
    sharedSystemPromptLength: row({ arg: '<n>', help: 'one system message of N tokens shared by every entry', parse: intArg(1), lib: 'sharedSystemPromptLength' }),
    userContextPromptLength: row({ arg: '<n>', help: 'a context of N tokens unique to each entry, before its prompt', parse: intArg(1), lib: 'userContextPromptLength' }),
    conversationNum: row({ arg: '<n>', aliases: ['--num-conversations', '--num-sessions'], help: 'conversations to run, each to its last turn: a stop condition like --request-count (which it excludes); also the dataset size', parse: intArg(1), lib: 'conversationNum' }),
    conversationTurnMean: row({ arg: '<n>', aliases: ['--session-turns-mean'], help: 'turns per conversation; each turn re-sends the history with the answers received', parse: numberArg(1), lib: 'conversationTurnMean', defaultNote: String(D.conversationTurnMean) }),
    conversationTurnStddev: row({ arg: '<n>', aliases: ['--session-turns-stddev'], help: 'turns per conversation, standard deviation', parse: numberArg(0), lib: 'conversationTurnStddev' }),
    conversationTurnDelayMean: row({ arg: '<ms>', aliases: ['--session-turn-delay-mean'], help: 'think time before each later turn, ms', parse: numberArg(0), lib: 'conversationTurnDelayMeanMs' }),
    conversationTurnDelayStddev: row({ arg: '<ms>', aliases: ['--session-turn-delay-stddev'], help: 'think time standard deviation, ms', parse: numberArg(0), lib: 'conversationTurnDelayStddevMs' }),
    conversationTurnDelayRatio: row({ arg: '<x>', aliases: ['--session-delay-ratio'], help: 'scales every think time', parse: numberArg(0), lib: 'conversationTurnDelayRatio', defaultNote: String(D.conversationTurnDelayRatio) }),
    publicDataset: row<'sharegpt'>({ arg: '<name>', help: 'sharegpt: AIPerf\'s ShareGPT conversations (its cache in .cache/aiperf/datasets, else the Hugging Face cache, else downloaded from HF_ENDPOINT; offline with no copy: an error), filtered and turned into turns as AIPerf does', parse: choiceArg(['sharegpt'] as const), lib: 'publicDataset' }),
    inputFile: row<string>({ arg: '<path>', help: 'a Mooncake-style JSONL trace (timestamp, input_length, output_length, hash_ids) to send instead of synthetic prompts', lib: 'inputFile' }),
    customDatasetType: row({ arg: '<type>', help: 'format of --input-file: mooncake_trace (the only one this release)', parse: choiceArg(['mooncake_trace', 'single_turn', 'multi_turn', 'random_pool'] as const) }),
    fixedSchedule: row<boolean>({ help: 'send each trace line at its timestamp (the default for a trace with timestamps, as in AIPerf; --no-fixed-schedule: never)', negatable: true, lib: 'fixedSchedule' }),
    fixedScheduleStartOffset: row({ arg: '<ms>', help: 'replay the trace from this timestamp: earlier lines are skipped, this one is time 0', parse: intArg(0), lib: 'fixedScheduleStartOffsetMs' }),
    fixedScheduleEndOffset: row({ arg: '<ms>', help: 'lines after this timestamp are not sent', parse: intArg(0), lib: 'fixedScheduleEndOffsetMs' }),
    fixedScheduleAutoOffset: row<boolean>({ help: 'shift the trace\'s timestamps so the first is 0', lib: 'fixedScheduleAutoOffset' }),
    blockTokens: row({ long: 'prompt-input-tokens-block-size', arg: '<n>', aliases: ['--synthetic-input-tokens-block-size', '--isl-block-size'], help: 'tokens per trace hash id', parse: intArg(1), lib: 'blockTokens', defaultNote: String(D.blockTokens) }),
    useLegacyMaxTokens: row<boolean>({ help: 'chat bodies carry max_tokens instead of max_completion_tokens', lib: 'useLegacyMaxTokens' }),
    applyChatTemplate: row<boolean>({ help: 'chat ISL counted on the tokenizer\'s chat template (tokenizer_config.json) with the generation prompt, synthetic prompts shortened by its cost, as AIPerf', lib: 'applyChatTemplate' }),
    useServerTokenCount: row<boolean>({ help: 'ISL and OSL from the server\'s usage fields instead of the tokenizer', lib: 'useServerTokenCount' }),
    extraInputs: row({ arg: '<kv...>', help: 'extra body fields: "a:1,b:2" (split on commas, values coerced as AIPerf does) or a JSON object; repeatable', parse: collect }),
    sessionHeader: row<string>({ arg: '<name>', help: 'the header carrying a session\'s correlation id, in place of X-Correlation-ID (AIPerf\'s)', lib: 'sessionHeader' }),
    header: row({ short: '-H', arg: '<h...>', help: 'extra HTTP headers, Name:Value or a JSON object; repeatable', parse: collect }),
    connectionReuseStrategy: row({ arg: '<s>', help: 'pooled (AIPerf\'s default and bench\'s: kept-alive connections reused by any request); never and sticky-user-sessions are refused', parse: choiceArg(['pooled', 'never', 'sticky-user-sessions'] as const) }),
    requestContentType: row<string>({ arg: '<type>', help: 'application/json (AIPerf\'s default, what bench sends); multipart bodies are refused' }),
    apiKey: row<string>({ arg: '<key>', help: 'sent as Authorization: Bearer <key>', lib: 'apiKey' }),
    waitForModelTimeout: row({ arg: '<s>', help: 'before the run, wait up to this many seconds for every --url to serve the model (0: do not wait); not ready by then: exit 1', parse: numberArg(0), default: C.waitForModelTimeoutS }),
    waitForModelMode: row({ arg: '<mode>', help: 'how the wait probes: inference (a one-token request to the endpoint), models (/v1/models lists the model) or both', default: C.waitForModelMode, parse: choiceArg(['inference', 'models', 'both'] as const) }),
    waitForModelInterval: row({ arg: '<s>', help: 'seconds between readiness probes', parse: positiveNumber, default: C.waitForModelIntervalS }),
    resetKvCache: row<boolean>({ help: 'before each run, POST --reset-kv-cache-path on every --url (vLLM\'s prefix-cache reset); a server that does not confirm gets one warning line' }),
    resetKvCacheTimeoutSeconds: row({ arg: '<s>', help: 'timeout of each reset request', parse: positiveNumber, default: C.resetKvCacheTimeoutS }),
    resetKvCachePath: row<string>({ arg: '<path>', help: 'path of the reset request', default: C.resetKvCachePath }),
    requestTimeoutSeconds: row({ arg: '<s>', help: 'bound on each whole request', parse: positiveNumber, lib: 'requestTimeoutMs', scale: 1000, defaultNote: `${D.requestTimeoutMs / 1000}, AIPerf's` }),
    artifactDir: row<string>({ arg: '<dir>', aliases: ['--output-artifact-dir'], help: 'where the exports go', default: C.artifactDir }),
    concurrencyRampDuration: row({ arg: '<s>', help: 'open the profiling phase\'s --concurrency slots one by one over this many seconds (from 1 to the target)', parse: positiveNumber, lib: 'concurrencyRampMs', scale: 1000 }),
    userCentricRate: row({ arg: '<perS>', help: 'AIPerf\'s user-centric load: requests per second over --num-users users, each sending its next turn users/rate seconds after its previous one (multi-turn conversations; the run starts in AIPerf\'s steady state)', parse: positiveNumber, lib: 'userCentricRate' }),
    numUsers: row({ arg: '<n>', help: 'simulated users of --user-centric-rate', parse: intArg(1), lib: 'numUsers' }),
    prefillConcurrency: row({ arg: '<n>', help: 'at most N requests between being sent and their first token (needs --streaming; <= --concurrency), as AIPerf', parse: intArg(1), lib: 'prefillConcurrency' }),
    prefillConcurrencyRampDuration: row({ arg: '<s>', help: 'raise the prefill limit from 1 to --prefill-concurrency one slot at a time over this many seconds', parse: positiveNumber, lib: 'prefillConcurrencyRampMs', scale: 1000 }),
    warmupPrefillConcurrency: row({ arg: '<n>', help: 'prefill limit of the warm-up', parse: intArg(1), lib: 'warmupPrefillConcurrency', defaultNote: '--prefill-concurrency' }),
    warmupPrefillConcurrencyRampDuration: row({ arg: '<s>', help: 'the same ramp for the warm-up', parse: positiveNumber, lib: 'warmupPrefillConcurrencyRampMs', scale: 1000 }),
    warmupConcurrency: row({ arg: '<n>', help: 'closed-loop concurrency of the warm-up', parse: intArg(1), lib: 'warmupConcurrency', defaultNote: '--concurrency' }),
    warmupRequestRate: row({ arg: '<r>', help: 'arrival rate of the warm-up, rate mode', parse: positiveNumber, lib: 'warmupRequestRate', defaultNote: '--request-rate' }),
    warmupArrivalPattern: row<'constant' | 'poisson' | 'gamma'>({ arg: '<mode>', help: 'arrivals of the warm-up: constant, poisson or gamma', parse: choiceArg(['constant', 'poisson', 'gamma'] as const), lib: 'warmupRequestRateMode', defaultNote: '--request-rate-mode' }),
    warmupRequestRateRampDuration: row({ arg: '<s>', help: 'ramp the warm-up\'s rate as --request-rate-ramp-duration ramps the profiling phase\'s', parse: positiveNumber, lib: 'warmupRequestRateRampMs', scale: 1000, defaultNote: 'that ramp, as AIPerf' }),
    warmupGracePeriod: row({ arg: '<s>', help: 'after a timed warm-up, seconds its responses may take to finish', parse: numberArg(0), lib: 'warmupGracePeriodMs', scale: 1000, defaultNote: 'no limit, as AIPerf' }),
    warmupConcurrencyRampDuration: row({ arg: '<s>', help: 'the same for the warm-up phase', parse: positiveNumber, lib: 'warmupConcurrencyRampMs', scale: 1000, defaultNote: '--concurrency-ramp-duration, as AIPerf' }),
    requestRateRampDuration: row({ arg: '<s>', help: 'the profiling phase\'s --request-rate climbs linearly over this many seconds, from rate x 0.1 s / duration to the rate (AIPerf\'s start)', parse: positiveNumber, lib: 'requestRateRampMs', scale: 1000 }),
    failedRequestThreshold: row({ arg: '<ratio>', help: 'stop the run once failed / finished profiling requests exceeds this ratio (0-1), checked from max(concurrency, 10) requests on; exit 1 with what was measured', parse: numberArg(0), lib: 'failedRequestThreshold' }),
    requestCancellationRate: row({ arg: '<pct>', help: 'percent of profiling requests to cut short (drawn from the seed); counted as AIPerf counts them: errors with code 499', parse: numberArg(0), lib: 'requestCancellationRate' }),
    requestCancellationDelay: row({ arg: '<s>', help: 'seconds after sending before a cancelled request is cut', parse: numberArg(0), lib: 'requestCancellationDelayMs', scale: 1000, defaultNote: String(D.requestCancellationDelayMs / 1000) }),
    serverMetrics: row<string[] | boolean>({ arg: '[urls...]', help: 'scrape these Prometheus endpoints (host:port or URLs; none given: each --url\'s /metrics) every second during the run into server_metrics_export.json/.csv; off unless given (--no-server-metrics: off; AIPerf scrapes by default, see docs/bench.md)', negatable: true }),
    serverMetricsFormats: row({ arg: '<formats...>', help: 'json, csv, jsonl; parquet is not written', parse: collect, defaultNote: C.serverMetricsFormats.join(',') }),
    gpuTelemetry: row<string[] | boolean>({ arg: '[urls...]', help: 'scrape DCGM exporters (host:port or URLs, plus AIPerf\'s defaults localhost:9400 and :9401) during the run into gpu_telemetry_export.jsonl and the telemetry_data of the JSON/CSV exports; off unless given (--no-gpu-telemetry: off)', negatable: true }),
    sliceDuration: row({ arg: '<s>', help: 'also write the metrics per time slice of this many seconds (profile_export_aiperf_timeslices.json/.csv)', parse: positiveNumber }),
    parameterSweepCooldownSeconds: row({ arg: '<s>', help: 'pause between sweep values', parse: numberArg(0), default: C.parameterSweepCooldownS }),
    parameterSweepMode: row({ arg: '<mode>', help: 'with --num-profile-runs: repeated (the whole sweep once per trial, profile_runs/trial_NNNN/concurrency_8) or independent (every trial of a value before the next, concurrency_8/profile_runs/trial_NNNN)', parse: choiceArg(['repeated', 'independent'] as const), defaultNote: C.parameterSweepMode }),
    parameterSweepSameSeed: row<boolean>({ help: 'every sweep value uses the same seed', negatable: true, defaultNote: 'off, as AIPerf: seed + the value\'s index' }),
    numProfileRuns: row({ arg: '<n>', help: 'repeat the run N times (1-10): profile_runs/run_0001.. and aggregate/ with mean, std, CV, standard error and t-based confidence intervals', parse: intArg(1), default: C.numProfileRuns }),
    profileRunCooldownSeconds: row({ arg: '<s>', help: 'pause between repeated runs', parse: numberArg(0), default: C.profileRunCooldownS }),
    confidenceLevel: row({ arg: '<x>', help: 'level of the confidence intervals over repeated runs, between 0 and 1', parse: openUnit, default: C.confidenceLevel }),
    profileRunDisableWarmupAfterFirst: row<boolean>({ help: 'warm up only before the first repeated run (--no-...: before each)', negatable: true, defaultNote: 'on' }),
    setConsistentSeed: row<boolean>({ help: `repeated runs share one seed, ${C.consistentSeed} unless --random-seed (--no-...: the default seed)`, negatable: true, defaultNote: 'on' }),
    varySeedPerTrial: row<boolean>({ help: 'each repeated run gets its own seed (seed + run index)', negatable: true }),
    convergenceMetric: row<string>({ arg: '<tag>', help: 'stop repeating once this metric is stable (--num-profile-runs is the cap; judged from the third run)' }),
    convergenceStat: row({ arg: '<stat>', help: 'avg, p50, p90, p95, p99, min or max', default: C.convergenceStat, parse: choiceArg(['avg', 'p50', 'p90', 'p95', 'p99', 'min', 'max'] as const) }),
    convergenceThreshold: row({ arg: '<x>', help: 'ci_width: interval width / mean below this; cv: CV below this', parse: openUnit, defaultNote: `${C.convergenceThreshold.ci_width} for ci_width, ${C.convergenceThreshold.cv} for cv` }),
    convergenceMode: row({ arg: '<mode>', help: 'ci_width or cv; distribution (AIPerf\'s KS test between runs) is refused (exit 2)', default: C.convergenceMode, parse: choiceArg(['ci_width', 'cv', 'distribution'] as const) }),
    profileExportPrefix: row<string>({ arg: '<name>', aliases: ['--profile-export-file'], help: 'base name of every export: NAME.json, NAME.csv, NAME.jsonl, NAME_raw.jsonl, ...' }),
    exportOutputsJson: row<boolean>({ help: 'also write outputs.json: each request\'s generated text with its ids, timestamps and token counts (implied by --export-level raw; --no-export-outputs-json: not)', negatable: true }),
    exportLevel: row<'summary' | 'records' | 'raw'>({ arg: '<level>', aliases: ['--profile-export-level'], help: 'summary, records or raw', parse: choiceArg(['summary', 'records', 'raw'] as const), default: C.exportLevel }),
    goodput: row({ arg: '<slo...>', help: 'SLOs as metric:threshold, e.g. "time_to_first_token:2000 inter_token_latency:10"', parse: collect }),
    workerHeader: row<string>({ arg: '<name>', help: 'response header naming the worker', lib: 'workerHeader', defaultNote: D.workerHeader }),
    tokenizer: row<string>({ arg: '<name>', help: 'tokenizer for exact prompt lengths and client token counts: a Hugging Face repo id (local HF cache first, then downloaded into it), a tokenizer.json or its folder, or builtin (one token per word)', defaultNote: 'the model name' }),
    tokenizerRevision: row<string>({ arg: '<rev>', help: 'branch, tag or commit of a hub tokenizer', defaultNote: D.tokenizerRevision }),
    transport: row({ arg: '<client>', aliases: ['--transport-type'], help: 'HTTP client: socket (raw HTTP/1.1) or undici; AIPerf\'s http means the default', parse: choiceArg(['socket', 'undici', 'http'] as const), defaultNote: 'socket for http://, undici for https://' }),
    threads: row({ arg: '<n>', help: 'worker threads sharing the load (concurrency, requests and warm-up split evenly)', parse: intArg(1), lib: 'threads', defaultNote: String(D.threads) }),
    startAt: row({ arg: '<time>', help: 'distributed run: start at this common time (ISO 8601 with zone, or epoch seconds); a pod that arrives later starts at once and is reported late', parse: startAtArg }),
    shardCount: row({ arg: '<n>', help: 'distributed run: shards (pods); concurrency, request counts and rate are the whole run\'s and split evenly', parse: intArg(1) }),
    shardIndex: row({ arg: '<i>', help: 'distributed run: this shard; offsets the seed', parse: intArg(0), defaultNote: '$JOB_COMPLETION_INDEX' }),
    config: row<string>({ short: '-f', arg: '<file>', help: 'AIPerf\'s YAML config (schema 2.0: benchmark.model, endpoint, dataset, phases, artifacts, slos, ...): read into the flags it stands for, the command line\'s own flags winning; a key bench does not read stops the run with one line naming it' }),
    allowIgnoredFlags: row<boolean>({ help: 'run even with AIPerf flags bench refuses (see docs/bench.md): each is then ignored, named on the console at every log level and listed in the exports\' ignored_flags' }),
    logLevel: row({ arg: '<level>', help: 'TRACE, DEBUG, INFO, NOTICE, WARNING, SUCCESS, ERROR or CRITICAL: DEBUG and TRACE print the resolved run; ERROR and above hide warnings', parse: upperChoice(LOG_LEVELS), defaultNote: C.logLevel }),
    verbose: row({ short: '-v', help: 'log level DEBUG (-vv: TRACE)', parse: countUp }),
    extraVerbose: row<boolean>({ help: 'log level TRACE (as -vv)' }),
    ...mediaFlags(D.media),
    ...SYNTHESIS_FLAGS,
    ...adaptiveFlags(D.adaptive),
  };
}

/** bench's flag table with the defaults the run applies; modules that load it load bench/ (so `tailgate bench` loads them lazily). */
export const BENCH_FLAGS = benchFlags(BENCH_DEFAULTS);

/** The flags of `tailgate bench` as parsed, with the AIPerf flags given that bench does not apply. */
export type BenchFlags = FlagsOf<ReturnType<typeof benchFlags>> & {
  /** Refused AIPerf flags given (exit 2 unless --allow-ignored-flags). */
  aiperfRefused?: UnappliedFlag[];
  /** Output-only AIPerf flags given, listed in the exports. */
  aiperfOutputOnly?: UnappliedFlag[];
};
