import { Command, InvalidArgumentError, Option } from 'commander';
import { choiceArg, intArg, numberArg } from './args.js';
import { startAtArg } from './bench-shard.js';
import { LOG_LEVELS } from './log-level.js';
import type { SamplingStrategy } from '../workload/index.js';
import { AIPERF_FLAGS, type AiperfFlag, type UnappliedFlag } from './aiperf-flags.js';
import { MEDIA_FLAGS } from './bench-media-flags.js';

// The compiler checks these against workload's type; importing workload/ here would load it (~50 ms) at every command's start.
const SAMPLING_STRATEGIES = Object.keys({ sequential: 0, shuffle: 0, random: 0 } satisfies Record<SamplingStrategy, 0>) as SamplingStrategy[];

type Parser = (value: string, previous: unknown) => unknown;

/** One flag, declared once: the AIPerf name, its aliases (hidden in help), how to parse it. */
interface FlagSpec {
  key: string;
  flags: string;
  aliases?: string[];
  description: string;
  parse?: Parser;
  variadic?: boolean;
  defaultValue?: unknown;
  /** Also declare `--no-<name>` (sets the key to false). */
  negatable?: boolean;
}

const positiveNumber = (value: string): number => {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a number > 0');
  return n;
};

const countUp = (_value: string, previous: unknown): number => ((previous as number | undefined) ?? 0) + 1;


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

const collectAll = (value: string, previous: unknown): string[] => [...((previous as string[] | undefined) ?? []), value];

/** Every flag of `tailgate bench`, with every alias AIPerf accepts. */
export const BENCH_FLAGS: readonly FlagSpec[] = [
  { key: 'url', flags: '-u, --url <url...>', description: 'base URL of the OpenAI-compatible server; several are used round-robin (default http://localhost:8000)', parse: collectAll, variadic: true },
  { key: 'model', flags: '-m, --model <name>', aliases: ['--model-names'], description: 'model name to request; several, comma-separated: each dataset entry asks for one (--model-selection-strategy)' },
  { key: 'modelSelectionStrategy', flags: '--model-selection-strategy <s>', description: 'with several models: round_robin (entry i gets model i mod n, default) or random (seeded)', parse: choiceArg(['round_robin', 'random'] as const) },
  { key: 'endpointType', flags: '--endpoint-type <type>', description: 'chat, completions or embeddings (no streaming, no output tokens)', parse: choiceArg(['chat', 'completions', 'embeddings'] as const), defaultValue: 'chat' },
  { key: 'urlStrategy', flags: '--url-strategy <s>', description: 'how requests pick one of several URLs: round_robin (the only one, as in AIPerf)', parse: choiceArg(['round_robin'] as const) },
  { key: 'endpoint', flags: '--endpoint <path>', aliases: ['--custom-endpoint'], description: 'endpoint path (default /v1/chat/completions or /v1/completions)' },
  { key: 'streaming', flags: '--streaming', description: 'stream responses (SSE); off unless given, as in AIPerf' },
  { key: 'concurrency', flags: '--concurrency <n>', description: 'closed loop: requests kept in flight (with --request-rate: the ceiling); a comma list (8,16,32) sweeps', parse: listOf(intArg(1)) },
  { key: 'requestRate', flags: '--request-rate <perS>', description: 'open loop: requests started per second; a comma list sweeps', parse: listOf(positiveNumber) },
  { key: 'requestRateSeries', flags: '--request-rate-series <file>', description: 'AIPerf\'s piecewise-linear rate: a JSON file {"points": [{"time_s": 0, "qps": 2}, {"time_s": 60, "qps": 10}]}; the rate is linear between points and holds the last (excludes --request-rate)' },
  { key: 'requestRateMode', flags: '--request-rate-mode <mode>', aliases: ['--arrival-pattern'], description: 'constant, poisson (default), gamma (--arrival-smoothness) or concurrency_burst (a closed loop at --concurrency)', parse: choiceArg(['constant', 'poisson', 'gamma', 'concurrency_burst'] as const) },
  { key: 'arrivalSmoothness', flags: '--arrival-smoothness <k>', aliases: ['--vllm-burstiness'], description: 'gamma arrivals\' shape: 1 Poisson-like, below 1 bursty, above 1 regular (default 1)', parse: positiveNumber },
  { key: 'requestCount', flags: '--request-count <n>', aliases: ['--num-requests'], description: 'profiling requests (default max(10, 2 x concurrency))', parse: intArg(1) },
  { key: 'warmupRequestCount', flags: '--warmup-request-count <n>', aliases: ['--num-warmup-requests'], description: 'warm-up requests, excluded from every metric', parse: intArg(0) },
  { key: 'warmupDuration', flags: '--warmup-duration <s>', description: 'warm up for this many seconds (with --warmup-request-count: whichever ends first)', parse: positiveNumber },
  { key: 'benchmarkDuration', flags: '--benchmark-duration <s>', description: 'profile for this many seconds instead of a request count', parse: positiveNumber },
  { key: 'benchmarkGracePeriod', flags: '--benchmark-grace-period <s>', description: 'seconds to wait for in-flight responses after the duration (default 30)', parse: numberArg(0) },
  { key: 'isl', flags: '--synthetic-input-tokens-mean <n>', aliases: ['--prompt-input-tokens-mean', '--isl'], description: 'mean prompt length in tokens (default 550)', parse: intArg(1) },
  { key: 'islStddev', flags: '--synthetic-input-tokens-stddev <n>', aliases: ['--prompt-input-tokens-stddev', '--isl-stddev'], description: 'prompt length standard deviation', parse: numberArg(0) },
  { key: 'osl', flags: '--output-tokens-mean <n>', aliases: ['--prompt-output-tokens-mean', '--osl'], description: 'requested output tokens (max_tokens)', parse: intArg(1) },
  { key: 'oslStddev', flags: '--output-tokens-stddev <n>', aliases: ['--prompt-output-tokens-stddev', '--osl-stddev'], description: 'output length standard deviation', parse: numberArg(0) },
  { key: 'sequenceDistribution', flags: '--sequence-distribution <dist>', aliases: ['--seq-dist'], description: 'a mix of (ISL, OSL) pairs, each prompt drawn by weight, as AIPerf: "64,32:50;256|16,64:50" (ISL[|STDDEV],OSL[|STDDEV]:PERCENT; or [(ISL,OSL):P,...] or {"pairs": [...]}); replaces --isl/--osl' },
  { key: 'numDatasetEntries', flags: '--num-dataset-entries <n>', aliases: ['--num-prompts'], description: 'distinct prompts (default 100)', parse: intArg(1) },
  { key: 'datasetSamplingStrategy', flags: '--dataset-sampling-strategy <s>', description: `how requests draw dataset entries: ${SAMPLING_STRATEGIES.join(', ')} (default shuffle; sequential for --input-file)`, parse: choiceArg(SAMPLING_STRATEGIES) },
  { key: 'randomSeed', flags: '--random-seed <n>', description: 'seed for prompts and arrivals (default 0)', parse: intArg(0) },
  { key: 'numPrefixPrompts', flags: '--num-prefix-prompts <n>', aliases: ['--prompt-prefix-pool-size', '--prefix-prompt-pool-size'], description: 'shared prefixes: N groups, entry i starts with prefix i mod N (with --prefix-prompt-length)', parse: intArg(0) },
  { key: 'prefixPromptLength', flags: '--prefix-prompt-length <n>', aliases: ['--prompt-prefix-length'], description: 'tokens of each shared prefix', parse: intArg(0) },
  { key: 'sharedSystemPromptLength', flags: '--shared-system-prompt-length <n>', description: 'one system message of N tokens shared by every entry', parse: intArg(1) },
  { key: 'userContextPromptLength', flags: '--user-context-prompt-length <n>', description: 'a context of N tokens unique to each entry, before its prompt', parse: intArg(1) },
  { key: 'conversationNum', flags: '--conversation-num <n>', aliases: ['--num-conversations', '--num-sessions'], description: 'conversations to run, each to its last turn: a stop condition like --request-count (which it excludes); also the dataset size', parse: intArg(1) },
  { key: 'conversationTurnMean', flags: '--conversation-turn-mean <n>', aliases: ['--session-turns-mean'], description: 'turns per conversation; each turn re-sends the history with the answers received (default 1)', parse: numberArg(1) },
  { key: 'conversationTurnStddev', flags: '--conversation-turn-stddev <n>', aliases: ['--session-turns-stddev'], description: 'turns per conversation, standard deviation', parse: numberArg(0) },
  { key: 'conversationTurnDelayMean', flags: '--conversation-turn-delay-mean <ms>', aliases: ['--session-turn-delay-mean'], description: 'think time before each later turn, ms', parse: numberArg(0) },
  { key: 'conversationTurnDelayStddev', flags: '--conversation-turn-delay-stddev <ms>', aliases: ['--session-turn-delay-stddev'], description: 'think time standard deviation, ms', parse: numberArg(0) },
  { key: 'conversationTurnDelayRatio', flags: '--conversation-turn-delay-ratio <x>', aliases: ['--session-delay-ratio'], description: 'scales every think time (default 1)', parse: numberArg(0) },
  { key: 'publicDataset', flags: '--public-dataset <name>', description: 'sharegpt: AIPerf\'s ShareGPT conversations (its cache in .cache/aiperf/datasets, else the Hugging Face cache, else downloaded from HF_ENDPOINT; offline with no copy: an error), filtered and turned into turns as AIPerf does', parse: choiceArg(['sharegpt'] as const) },
  { key: 'inputFile', flags: '--input-file <path>', description: 'a Mooncake-style JSONL trace (timestamp, input_length, output_length, hash_ids) to send instead of synthetic prompts' },
  { key: 'customDatasetType', flags: '--custom-dataset-type <type>', description: 'format of --input-file: mooncake_trace (the only one this release)', parse: choiceArg(['mooncake_trace', 'single_turn', 'multi_turn', 'random_pool'] as const) },
  { key: 'fixedSchedule', flags: '--fixed-schedule', description: 'send each trace line at its timestamp (the default for a trace with timestamps, as in AIPerf; --no-fixed-schedule: never)', negatable: true },
  { key: 'fixedScheduleStartOffset', flags: '--fixed-schedule-start-offset <ms>', description: 'replay the trace from this timestamp: earlier lines are skipped, this one is time 0', parse: intArg(0) },
  { key: 'fixedScheduleEndOffset', flags: '--fixed-schedule-end-offset <ms>', description: 'lines after this timestamp are not sent', parse: intArg(0) },
  { key: 'fixedScheduleAutoOffset', flags: '--fixed-schedule-auto-offset', description: 'shift the trace\'s timestamps so the first is 0' },
  { key: 'blockTokens', flags: '--prompt-input-tokens-block-size <n>', aliases: ['--synthetic-input-tokens-block-size', '--isl-block-size'], description: 'tokens per trace hash id (default 512)', parse: intArg(1) },
  { key: 'useLegacyMaxTokens', flags: '--use-legacy-max-tokens', description: 'chat bodies carry max_tokens instead of max_completion_tokens' },
  { key: 'useServerTokenCount', flags: '--use-server-token-count', description: 'ISL and OSL from the server\'s usage fields instead of the tokenizer' },
  { key: 'extraInputs', flags: '--extra-inputs <kv...>', description: 'extra body fields: "a:1,b:2" (split on commas, values coerced as AIPerf does) or a JSON object; repeatable', parse: collectAll, variadic: true },
  { key: 'sessionHeader', flags: '--session-header <name>', description: 'the header carrying a session\'s correlation id, in place of X-Correlation-ID (AIPerf\'s)' },
  { key: 'header', flags: '-H, --header <h...>', description: 'extra HTTP headers, Name:Value or a JSON object; repeatable', parse: collectAll, variadic: true },
  { key: 'connectionReuseStrategy', flags: '--connection-reuse-strategy <s>', description: 'pooled (AIPerf\'s default and bench\'s: kept-alive connections reused by any request); never and sticky-user-sessions are refused', parse: choiceArg(['pooled', 'never', 'sticky-user-sessions'] as const) },
  { key: 'requestContentType', flags: '--request-content-type <type>', description: 'application/json (AIPerf\'s default, what bench sends); multipart bodies are refused' },
  { key: 'apiKey', flags: '--api-key <key>', description: 'sent as Authorization: Bearer <key>' },
  { key: 'waitForModelTimeout', flags: '--wait-for-model-timeout <s>', description: 'before the run, wait up to this many seconds for every --url to serve the model (0: do not wait, the default); not ready by then: exit 1', parse: numberArg(0) },
  { key: 'waitForModelMode', flags: '--wait-for-model-mode <mode>', description: 'how the wait probes: inference (default: a one-token request to the endpoint), models (/v1/models lists the model) or both', parse: choiceArg(['inference', 'models', 'both'] as const) },
  { key: 'waitForModelInterval', flags: '--wait-for-model-interval <s>', description: 'seconds between readiness probes (default 5)', parse: positiveNumber },
  { key: 'resetKvCache', flags: '--reset-kv-cache', description: 'before each run, POST --reset-kv-cache-path on every --url (vLLM\'s prefix-cache reset); a server that does not confirm gets one warning line' },
  { key: 'resetKvCacheTimeoutSeconds', flags: '--reset-kv-cache-timeout-seconds <s>', description: 'timeout of each reset request (default 10)', parse: positiveNumber },
  { key: 'resetKvCachePath', flags: '--reset-kv-cache-path <path>', description: 'path of the reset request (default /reset_prefix_cache)' },
  { key: 'requestTimeoutSeconds', flags: '--request-timeout-seconds <s>', description: 'bound on each whole request (default 600)', parse: positiveNumber },
  { key: 'artifactDir', flags: '--artifact-dir <dir>', aliases: ['--output-artifact-dir'], description: 'where the exports go', defaultValue: 'artifacts' },
  { key: 'concurrencyRampDuration', flags: '--concurrency-ramp-duration <s>', description: 'open the profiling phase\'s --concurrency slots one by one over this many seconds (from 1 to the target)', parse: positiveNumber },
  { key: 'userCentricRate', flags: '--user-centric-rate <perS>', description: 'AIPerf\'s user-centric load: requests per second over --num-users users, each sending its next turn users/rate seconds after its previous one (multi-turn conversations; the run starts in AIPerf\'s steady state)', parse: positiveNumber },
  { key: 'numUsers', flags: '--num-users <n>', description: 'simulated users of --user-centric-rate', parse: intArg(1) },
  { key: 'prefillConcurrency', flags: '--prefill-concurrency <n>', description: 'at most N requests between being sent and their first token (needs --streaming; <= --concurrency), as AIPerf', parse: intArg(1) },
  { key: 'prefillConcurrencyRampDuration', flags: '--prefill-concurrency-ramp-duration <s>', description: 'raise the prefill limit from 1 to --prefill-concurrency one slot at a time over this many seconds', parse: positiveNumber },
  { key: 'warmupPrefillConcurrency', flags: '--warmup-prefill-concurrency <n>', description: 'prefill limit of the warm-up (default --prefill-concurrency)', parse: intArg(1) },
  { key: 'warmupPrefillConcurrencyRampDuration', flags: '--warmup-prefill-concurrency-ramp-duration <s>', description: 'the same ramp for the warm-up', parse: positiveNumber },
  { key: 'warmupConcurrency', flags: '--warmup-concurrency <n>', description: 'closed-loop concurrency of the warm-up (default --concurrency)', parse: intArg(1) },
  { key: 'warmupRequestRate', flags: '--warmup-request-rate <r>', description: 'arrival rate of the warm-up, rate mode (default --request-rate)', parse: positiveNumber },
  { key: 'warmupArrivalPattern', flags: '--warmup-arrival-pattern <mode>', description: 'arrivals of the warm-up: constant, poisson or gamma (default --request-rate-mode)', parse: choiceArg(['constant', 'poisson', 'gamma'] as const) },
  { key: 'warmupRequestRateRampDuration', flags: '--warmup-request-rate-ramp-duration <s>', description: 'ramp the warm-up\'s rate as --request-rate-ramp-duration ramps the profiling phase\'s (default: that ramp, as AIPerf)', parse: positiveNumber },
  { key: 'warmupGracePeriod', flags: '--warmup-grace-period <s>', description: 'after a timed warm-up, seconds its responses may take to finish (default: no limit, as AIPerf)', parse: numberArg(0) },
  { key: 'warmupConcurrencyRampDuration', flags: '--warmup-concurrency-ramp-duration <s>', description: 'the same for the warm-up phase (default --concurrency-ramp-duration, as AIPerf)', parse: positiveNumber },
  { key: 'requestRateRampDuration', flags: '--request-rate-ramp-duration <s>', description: 'the profiling phase\'s --request-rate climbs linearly over this many seconds, from rate x 0.1 s / duration to the rate (AIPerf\'s start)', parse: positiveNumber },
  { key: 'failedRequestThreshold', flags: '--failed-request-threshold <ratio>', description: 'stop the run once failed / finished profiling requests exceeds this ratio (0-1), checked from max(concurrency, 10) requests on; exit 1 with what was measured', parse: numberArg(0) },
  { key: 'requestCancellationRate', flags: '--request-cancellation-rate <pct>', description: 'percent of profiling requests to cut short (drawn from the seed); counted as AIPerf counts them: errors with code 499', parse: numberArg(0) },
  { key: 'requestCancellationDelay', flags: '--request-cancellation-delay <s>', description: 'seconds after sending before a cancelled request is cut (default 0)', parse: numberArg(0) },
  { key: 'serverMetrics', flags: '--server-metrics [urls...]', description: 'scrape these Prometheus endpoints (host:port or URLs; none given: each --url\'s /metrics) every second during the run into server_metrics_export.json/.csv; off unless given (--no-server-metrics: off)', negatable: true },
  { key: 'serverMetricsFormats', flags: '--server-metrics-formats <formats...>', description: 'json, csv (default both), jsonl; parquet is not written', parse: collectAll, variadic: true },
  { key: 'gpuTelemetry', flags: '--gpu-telemetry [urls...]', description: 'scrape DCGM exporters (host:port or URLs, plus AIPerf\'s defaults localhost:9400 and :9401) during the run into gpu_telemetry_export.jsonl and the telemetry_data of the JSON/CSV exports; off unless given (--no-gpu-telemetry: off)', negatable: true },
  { key: 'sliceDuration', flags: '--slice-duration <s>', description: 'also write the metrics per time slice of this many seconds (profile_export_aiperf_timeslices.json/.csv)', parse: positiveNumber },
  { key: 'parameterSweepCooldownSeconds', flags: '--parameter-sweep-cooldown-seconds <s>', description: 'pause between sweep values (default 0)', parse: numberArg(0) },
  { key: 'parameterSweepMode', flags: '--parameter-sweep-mode <mode>', description: 'with --num-profile-runs: repeated (default: the whole sweep once per trial, profile_runs/trial_NNNN/concurrency_8) or independent (every trial of a value before the next, concurrency_8/profile_runs/trial_NNNN)', parse: choiceArg(['repeated', 'independent'] as const) },
  { key: 'parameterSweepSameSeed', flags: '--parameter-sweep-same-seed', description: 'every sweep value uses the same seed (default, as AIPerf: seed + the value\'s index)', negatable: true },
  { key: 'numProfileRuns', flags: '--num-profile-runs <n>', description: 'repeat the run N times (1-10): profile_runs/run_0001.. and aggregate/ with mean, std, CV, standard error and t-based confidence intervals', parse: intArg(1) },
  { key: 'profileRunCooldownSeconds', flags: '--profile-run-cooldown-seconds <s>', description: 'pause between repeated runs (default 0)', parse: numberArg(0) },
  { key: 'confidenceLevel', flags: '--confidence-level <x>', description: 'level of the confidence intervals over repeated runs, between 0 and 1 (default 0.95)', parse: openUnit },
  { key: 'profileRunDisableWarmupAfterFirst', flags: '--profile-run-disable-warmup-after-first', description: 'warm up only before the first repeated run (default; --no-...: before each)', negatable: true },
  { key: 'setConsistentSeed', flags: '--set-consistent-seed', description: 'repeated runs share one seed, 42 unless --random-seed (default; --no-...: the default seed)', negatable: true },
  { key: 'varySeedPerTrial', flags: '--vary-seed-per-trial', description: 'each repeated run gets its own seed (seed + run index)', negatable: true },
  { key: 'convergenceMetric', flags: '--convergence-metric <tag>', description: 'stop repeating once this metric is stable (--num-profile-runs is the cap; judged from the third run)' },
  { key: 'convergenceStat', flags: '--convergence-stat <stat>', description: 'avg, p50, p90, p95, p99, min or max (default avg)', parse: choiceArg(['avg', 'p50', 'p90', 'p95', 'p99', 'min', 'max'] as const) },
  { key: 'convergenceThreshold', flags: '--convergence-threshold <x>', description: 'ci_width: interval width / mean below this (default 0.1); cv: CV below this (default 0.05)', parse: openUnit },
  { key: 'convergenceMode', flags: '--convergence-mode <mode>', description: 'ci_width (default) or cv; distribution (a KS test) is not done and falls back to ci_width with a warning', parse: choiceArg(['ci_width', 'cv', 'distribution'] as const) },
  { key: 'profileExportPrefix', flags: '--profile-export-prefix <name>', aliases: ['--profile-export-file'], description: 'base name of every export: NAME.json, NAME.csv, NAME.jsonl, NAME_raw.jsonl, ...' },
  { key: 'exportOutputsJson', flags: '--export-outputs-json', description: 'also write outputs.json: each request\'s generated text with its ids, timestamps and token counts (implied by --export-level raw; --no-export-outputs-json: not)', negatable: true },
  { key: 'exportLevel', flags: '--export-level <level>', aliases: ['--profile-export-level'], description: 'summary, records or raw', parse: choiceArg(['summary', 'records', 'raw'] as const), defaultValue: 'records' },
  { key: 'goodput', flags: '--goodput <slo...>', description: 'SLOs as metric:threshold, e.g. "time_to_first_token:2000 inter_token_latency:10"', parse: collectAll, variadic: true },
  { key: 'workerHeader', flags: '--worker-header <name>', description: 'response header naming the worker (default x-tailgate-worker)' },
  { key: 'tokenizer', flags: '--tokenizer <name>', description: 'tokenizer for exact prompt lengths and client token counts: a Hugging Face repo id (local HF cache first, then downloaded into it), a tokenizer.json or its folder, or builtin (one token per word) (default: the model name)' },
  { key: 'tokenizerRevision', flags: '--tokenizer-revision <rev>', description: 'branch, tag or commit of a hub tokenizer (default main)' },
  { key: 'transport', flags: '--transport <client>', aliases: ['--transport-type'], description: 'HTTP client: socket (raw HTTP/1.1, default for http://) or undici (default for https://); AIPerf\'s http means the default', parse: choiceArg(['socket', 'undici', 'http'] as const) },
  { key: 'threads', flags: '--threads <n>', description: 'worker threads sharing the load (concurrency, requests and warm-up split evenly; default 1)', parse: intArg(1) },
  { key: 'startAt', flags: '--start-at <time>', description: 'distributed run: start at this common time (ISO 8601 with zone, or epoch seconds); a pod that arrives later starts at once and is reported late', parse: startAtArg },
  { key: 'shardCount', flags: '--shard-count <n>', description: 'distributed run: shards (pods); concurrency, request counts and rate are the whole run\'s and split evenly', parse: intArg(1) },
  { key: 'shardIndex', flags: '--shard-index <i>', description: 'distributed run: this shard (default $JOB_COMPLETION_INDEX); offsets the seed', parse: intArg(0) },
  { key: 'allowIgnoredFlags', flags: '--allow-ignored-flags', description: 'run even with AIPerf flags bench refuses (see docs/bench.md): each is then ignored, named on the console at every log level and listed in the exports\' ignored_flags' },
  { key: 'logLevel', flags: '--log-level <level>', description: 'TRACE, DEBUG, INFO (default), NOTICE, WARNING, SUCCESS, ERROR or CRITICAL: DEBUG and TRACE print the resolved run; ERROR and above hide warnings', parse: upperChoice(LOG_LEVELS) },
  { key: 'verbose', flags: '-v, --verbose', description: 'log level DEBUG (-vv: TRACE)', parse: countUp },
  { key: 'extraVerbose', flags: '--extra-verbose', description: 'log level TRACE (as -vv)' },
  ...MEDIA_FLAGS,
];

function attr(flag: string): string {
  return `__alias_${flag.replace(/^-+/, '').replace(/-/g, '_')}`;
}

function ignoredAttr(name: string): string {
  return `__aiperf_${name.replace(/^-+/, '').replace(/-/g, '_')}`;
}

/** Every name BENCH_FLAGS declares (primary, short, aliases, negations). */
function declaredNames(): Set<string> {
  const names = new Set<string>();
  for (const f of BENCH_FLAGS) {
    for (const m of f.flags.matchAll(/-{1,2}[a-zA-Z][\w-]*/g)) names.add(m[0]);
    for (const a of f.aliases ?? []) names.add(a);
    if (f.negatable) names.add(`--no-${optionLong(f)}`);
  }
  return names;
}

/**
 * The AIPerf flags `tailgate bench` parses without declaring them itself (see AIPERF_FLAGS), hidden
 * from help: when given, a refused one stops the run (exit 2) and an output-only one is recorded.
 */
export function undeclaredAiperfFlags(): Array<{ flag: AiperfFlag; name: string }> {
  const declared = declaredNames();
  const out: Array<{ flag: AiperfFlag; name: string }> = [];
  for (const flag of AIPERF_FLAGS) {
    // `-vv` is `-v` given twice, which commander splits by itself.
    for (const name of flag.names) if (!declared.has(name) && name !== '-vv') out.push({ flag, name });
  }
  return out;
}

/** Adds the flags (primary visible, aliases hidden) to a command. */
function declare(cmd: Command): void {
  for (const f of BENCH_FLAGS) {
    const o = new Option(f.flags, f.aliases ? `${f.description} (alias: ${f.aliases.join(', ')})` : f.description);
    if (f.parse) o.argParser(f.parse);
    if (f.defaultValue !== undefined) o.default(f.defaultValue);
    cmd.addOption(o);
    if (f.negatable) cmd.addOption(new Option(`--no-${optionLong(f)}`).hideHelp());
    for (const a of f.aliases ?? []) {
      const ao = new Option(`${a} ${f.flags.slice(f.flags.indexOf('<')) || ''}`.trim(), f.description).hideHelp();
      if (f.parse) ao.argParser(f.parse);
      ao.attributeName = () => attr(a);
      cmd.addOption(ao);
    }
  }
  for (const { flag, name } of undeclaredAiperfFlags()) {
    const o = new Option(flag.arg === 'switch' ? name : `${name} ${flag.arg === 'list' ? '<values...>' : '<value>'}`).hideHelp();
    o.attributeName = () => ignoredAttr(name);
    cmd.addOption(o);
  }
}

/** The AIPerf flags given on the command line that bench does not apply: refused ones, and output-only ones. */
function unappliedFlags(raw: Record<string, unknown>, cmd?: Command): { refused: UnappliedFlag[]; outputOnly: UnappliedFlag[] } {
  const refused: UnappliedFlag[] = [];
  const outputOnly: UnappliedFlag[] = [];
  for (const { flag, name } of undeclaredAiperfFlags()) {
    const key = ignoredAttr(name);
    const given = cmd ? cmd.getOptionValueSource(key) === 'cli' : raw[key] !== undefined;
    if (!given) continue;
    const v = raw[key];
    const entry: UnappliedFlag = { flag: name, value: typeof v === 'string' || Array.isArray(v) ? (v as string | string[]) : null, aiperf: flag.does };
    (flag.status === 'output-only' ? outputOnly : refused).push(entry);
  }
  return { refused, outputOnly };
}

/** Merges alias values into their primary key (the alias wins only where the primary is unset or default). */
export function mergeAliases(raw: Record<string, unknown>, cmd?: Command): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) if (!k.startsWith('__aiperf_')) out[k] = v;
  const { refused, outputOnly } = unappliedFlags(raw, cmd);
  if (refused.length > 0) out['aiperfRefused'] = refused;
  if (outputOnly.length > 0) out['aiperfOutputOnly'] = outputOnly;
  for (const f of BENCH_FLAGS) {
    const primary = optionKey(f);
    let value = out[primary];
    const fromDefault = cmd ? cmd.getOptionValueSource(primary) === 'default' : false;
    for (const a of f.aliases ?? []) {
      const v = out[attr(a)];
      delete out[attr(a)];
      if (v === undefined) continue;
      if (f.variadic) value = [...((value as unknown[] | undefined) ?? []), ...(v as unknown[])];
      else if (value === undefined || fromDefault) value = v;
    }
    delete out[primary];
    if (value !== undefined) out[f.key] = value;
  }
  return out;
}

function optionLong(f: FlagSpec): string {
  return /--([a-z0-9-]+)/.exec(f.flags)![1]!;
}

function optionKey(f: FlagSpec): string {
  const long = optionLong(f);
  return long.replace(/-([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

/**
 * `tailgate bench`: an AIPerf-compatible load generator. An AIPerf command line runs unchanged with
 * `tailgate bench` in place of `aiperf profile`.
 */
export function registerBench(program: Command): void {
  const cmd = program
    .command('bench')
    .description('benchmark an OpenAI-compatible endpoint (AIPerf flags in, AIPerf files out)');
  declare(cmd);
  cmd.action(async (raw: Record<string, unknown>, command: Command) => {
    const flags = mergeAliases(raw, command);
    const { runBenchCommand } = await import('./bench-run.js');
    process.exitCode = await runBenchCommand(flags, process.argv.slice(process.argv.indexOf('bench') + 1));
  });
}

/**
 * Parses `tailgate bench` arguments (after the command name) into merged flags without running
 * anything: what the command's action sees. Throws CommanderError on unknown flags or bad values.
 */
export function parseBenchFlags(argv: readonly string[]): Record<string, unknown> {
  const cmd = new Command('bench').exitOverride().configureOutput({ writeErr: () => {}, writeOut: () => {} });
  declare(cmd);
  cmd.parse([...argv], { from: 'user' });
  return mergeAliases(cmd.opts(), cmd);
}
