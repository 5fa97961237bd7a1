/**
 * Every flag of `aiperf profile`, as AIPerf's command-line reference lists it (docs/cli-options.md
 * on AIPerf's main branch, 2026, which holds the 0.13 and 0.14 sections), with what tailgate does
 * with it. Each flag is in one of three states, never silently ignored:
 * - `implemented`: declared by the bench command with AIPerf's meaning;
 * - `refused`: it changes the requests, the load, the dataset or the metrics and bench does not do
 *   it, so the run stops with exit 2 and one line per flag (`--allow-ignored-flags` runs anyway and
 *   lists the flag in the exports' `ignored_flags` and on the console at every log level);
 * - `output-only`: plots, trackers, UI and AIPerf's own internals; accepted and listed in the
 *   exports' `output_only_flags`.
 */

/** How a flag takes its value: one value, one or more values, or none (a switch). */
export type AiperfFlagArg = 'value' | 'list' | 'switch';

/** What `tailgate bench` does with an AIPerf flag. */
export type AiperfFlagStatus = 'implemented' | 'refused' | 'output-only';

/** One row of the reference: a flag with its aliases. */
export interface AiperfFlag {
  /** Section of AIPerf's reference (Endpoint, Tokenizer, ...). */
  section: string;
  /** Every name AIPerf accepts, long names and short ones (`-m`), as the reference lists them. */
  names: readonly string[];
  arg: AiperfFlagArg;
  status: AiperfFlagStatus;
  /** What the flag does in AIPerf, in a few words. */
  does: string;
  /** A valid value, for the conformance test and the docs (`value`/`list` flags). */
  example?: string;
}

/** An AIPerf flag given on the command line that bench does not apply, as the exports list it. */
export interface UnappliedFlag {
  /** The name as given (`--public-dataset`). */
  flag: string;
  /** The value(s) given; null for a switch. */
  value: string | string[] | null;
  /** What AIPerf does with it. */
  aiperf: string;
}

const rows: AiperfFlag[] = [];
let section = '';
function s(name: string): void {
  section = name;
}
function f(names: string, arg: AiperfFlagArg, status: AiperfFlagStatus, does: string, example?: string): void {
  rows.push({ section, names: names.split(' '), arg, status, does, ...(example !== undefined && { example }) });
}
const I = 'implemented';
const R = 'refused';
const O = 'output-only';

s('Endpoint');
f('-m --model-names --model', 'list', I, 'model name(s) to request, one per dataset entry by --model-selection-strategy', 'm');
f('--model-selection-strategy', 'value', I, 'how to assign one of several models to each request', 'round_robin');
f('--custom-endpoint --endpoint', 'value', I, 'custom endpoint path', '/v1/chat/completions');
f('--endpoint-type', 'value', I, 'API type: chat, completions, embeddings, ...', 'chat');
f('--streaming', 'switch', I, 'stream responses (SSE), giving TTFT and ITL');
f('-u --url', 'list', I, 'base URL(s) of the server, round-robin over several', 'http://127.0.0.1:8000');
f('--url-strategy', 'value', I, 'how requests pick one of several URLs (round_robin only)', 'round_robin');
f('--request-timeout-seconds', 'value', I, 'bound on each whole request', '600');
f('--wait-for-model-timeout', 'value', I, 'wait until the model answers an inference before the run', '0');
f('--wait-for-model-mode', 'value', I, 'how the readiness wait probes (models, inference, both)', 'inference');
f('--wait-for-model-interval', 'value', I, 'seconds between readiness probes', '5');
f('--reset-kv-cache', 'switch', I, 'POST a KV-cache reset to the server before each run');
f('--reset-kv-cache-timeout-seconds', 'value', I, 'timeout of the KV-cache reset request', '10');
f('--reset-kv-cache-path', 'value', I, 'path of the KV-cache reset request', '/reset_prefix_cache');
f('--server-profiler', 'switch', R, 'start and stop the server\'s profiler around the run');
f('--server-profiler-timeout-seconds', 'value', R, 'timeout of the profiler control requests', '10');
f('--server-profiler-start-path', 'value', R, 'path that starts the server profiler', '/start_profile');
f('--server-profiler-stop-path', 'value', R, 'path that stops the server profiler', '/stop_profile');
f('--api-key', 'value', I, 'sent as Authorization: Bearer', 'k');
f('--transport --transport-type', 'value', I, 'transport protocol (http); tailgate also takes socket or undici', 'http');
f('--use-legacy-max-tokens', 'switch', I, 'send max_tokens instead of max_completion_tokens');
f('--use-server-token-count', 'switch', I, 'count tokens from the server\'s usage fields, not the tokenizer');
f('--connection-reuse-strategy', 'value', I, 'pooled, never or sticky-user-sessions connections (bench: pooled; the others refused)', 'pooled');
f('--download-video-content', 'switch', R, 'download generated video before the request ends');
f('--request-content-type', 'value', I, 'JSON or multipart request bodies (bench: application/json; others refused)', 'application/json');
f('--session-header', 'value', I, 'header carrying the per-session correlation id, in place of X-Correlation-ID', 'X-Session-ID');
f('--uuid-and-strip', 'switch', R, 'strip repeated images for vLLM\'s multimodal cache');

s('Tokenizer');
f('--tokenizer', 'value', I, 'Hugging Face tokenizer id or path used to count tokens', 'builtin');
f('--tokenizer-revision', 'value', I, 'hub revision (branch, tag, commit) of the tokenizer', 'main');
f('--tokenizer-trust-remote-code', 'switch', O, 'allow a hub tokenizer\'s custom code (tailgate runs none: it reads tokenizer.json)');
f('--apply-chat-template', 'switch', I, 'count chat input tokens through the tokenizer\'s chat template; synthetic prompts shortened by its cost');

s('Input');
f('--extra-inputs', 'list', I, 'extra body fields: comma-separated key:value pairs (values coerced) or JSON', 'temperature:0');
f('-H --header', 'list', I, 'extra HTTP headers, Name:Value or JSON; one named like bench\'s own (any case) replaces it everywhere, probes and --reset-kv-cache included', 'X-A:1');
f('--input-file', 'value', I, 'dataset file (tailgate: a Mooncake trace)');
f('--public-dataset', 'value', I, 'download a public dataset (sharegpt, ...) and send its prompts', 'sharegpt');
f('--hf-subset', 'value', R, 'subset of a Hugging Face dataset', 'x');
f('--hf-weka-dataset', 'value', R, 'Hugging Face repo of a Weka trace', 'x/y');
f('--dataset-filter', 'list', R, 'key=value filters of a public dataset', 'k=v');
f('--custom-dataset-type', 'value', I, 'format of --input-file (tailgate: mooncake_trace)');
f('--ignore-trace-delays', 'switch', R, 'drop a trace\'s timestamps and inter-turn delays');
f('--use-think-time-only', 'switch', R, 'Weka traces: delay by recorded think time only');
f('--max-context-length', 'value', R, 'Weka traces: drop traces above this context', '8192');
f('--dataset-sampling-strategy', 'value', I, 'sequential, random or shuffle draws of entries', 'shuffle');
f('--allow-dataset-wrap --no-allow-dataset-wrap', 'switch', R, 'let agentic replay reuse traces across lanes');
f('--random-seed', 'value', I, 'seed of prompts, lengths and arrivals', '7');
f('--trace-session-sample-ratio', 'value', R, 'keep this fraction of a Baseten trace\'s sessions', '0.5');
f('-f --config', 'value', I, 'read options from a YAML file; flags on the command line override it', 'aiperf.yaml');

s('Fixed Schedule');
f('--fixed-schedule', 'switch', I, 'send each trace line at its timestamp');
f('--no-fixed-schedule', 'switch', I, 'do not switch a timestamped trace to fixed schedule');
f('--fixed-schedule-auto-offset', 'switch', I, 'shift the trace so its first timestamp is 0');
f('--fixed-schedule-start-offset', 'value', I, 'skip trace lines before this ms offset', '0');
f('--fixed-schedule-end-offset', 'value', I, 'stop at this ms offset of the trace', '1000');

s('Goodput');
f('--goodput', 'list', I, 'SLOs as metric:threshold for goodput', 'time_to_first_token:2000');

s('Conversation Input');
f('--conversation-num --num-conversations --num-sessions', 'value', I, 'conversations run, each to its last turn (10 x 3 turns = 30 requests); a stop condition', '4');
f('--num-dataset-entries --num-prompts', 'value', I, 'distinct dataset entries', '10');
f('--conversation-turn-mean --session-turns-mean', 'value', I, 'turns per conversation', '1');
f('--conversation-turn-stddev --session-turns-stddev', 'value', I, 'turns per conversation, standard deviation', '0');
f('--conversation-turn-delay-mean --session-turn-delay-mean', 'value', I, 'think time between turns, ms', '0');
f('--conversation-turn-delay-stddev --session-turn-delay-stddev', 'value', I, 'think time standard deviation, ms', '0');
f('--conversation-turn-delay-ratio --session-delay-ratio', 'value', I, 'scales every think time', '1');
f('--inter-turn-delay-cap-seconds', 'value', R, 'cap each replayed turn delay', '5');
f('--max-idle-gap-cap-seconds', 'value', R, 'collapse idle gaps of a Baseten trace', '5');
f('--replay-speedup', 'value', R, 'replay a Baseten trace this many times faster', '2');
f('--open-loop-replay --no-open-loop-replay', 'switch', R, 'open- or closed-loop Baseten replay');
f('--open-loop-strict', 'switch', R, 'fire every Baseten row at its timestamp as its own session');
f('--omit-kv-hints', 'switch', R, 'drop hash_ids/block_size from replayed Baseten bodies');
f('--force-min-tokens --no-force-min-tokens', 'switch', R, 'pin min_tokens to the recorded output length');

s('Prompt');
f('-b --prompt-batch-size --batch-size-text --batch-size', 'value', R, 'texts per embeddings or rankings request', '1');
f('--prompt-corpus', 'value', R, 'source text of synthetic prompts (sonnet, coding)', 'sonnet');

s('Cache Bust');
f('--cache-bust', 'value', I, 'insert a per-conversation marker to defeat prefix caches', 'first_turn_prefix');

s('Prefix Prompt');
f('--prompt-prefix-pool-size --prefix-prompt-pool-size --num-prefix-prompts', 'value', I, 'distinct shared prefixes', '2');
f('--prompt-prefix-length --prefix-prompt-length', 'value', I, 'tokens of each prefix', '16');
f('--shared-system-prompt-length', 'value', I, 'one system prompt shared by every session, tokens', '16');
f('--user-context-prompt-length', 'value', I, 'a context unique to each entry, tokens', '16');

s('Input Sequence Length (ISL)');
f('--prompt-input-tokens-mean --synthetic-input-tokens-mean --isl', 'value', I, 'mean prompt length, tokens', '64');
f('--prompt-input-tokens-stddev --synthetic-input-tokens-stddev --isl-stddev', 'value', I, 'prompt length standard deviation', '0');
f('--prompt-input-tokens-block-size --synthetic-input-tokens-block-size --isl-block-size', 'value', I, 'tokens per trace hash id', '512');
f('--seq-dist --sequence-distribution', 'value', I, 'a mix of (ISL, OSL) pairs with probabilities', '128,64:100');

s('Output Sequence Length (OSL)');
f('--prompt-output-tokens-mean --output-tokens-mean --osl', 'value', I, 'requested output tokens (max_completion_tokens)', '16');
f('--prompt-output-tokens-stddev --output-tokens-stddev --osl-stddev', 'value', I, 'output length standard deviation', '0');

s('Audio Input');
f('--audio-batch-size --batch-size-audio', 'value', I, 'audio inputs per request', '0');
f('--audio-length-mean', 'value', I, 'synthetic audio length, s', '1');
f('--audio-length-stddev', 'value', I, 'audio length standard deviation, s', '0');
f('--audio-format', 'value', I, 'wav or mp3 (bench: wav; mp3 refused)', 'wav');
f('--audio-depths', 'list', I, 'bit depths to draw from', '16');
f('--audio-sample-rates', 'list', I, 'sample rates to draw from, kHz', '16');
f('--audio-num-channels', 'value', I, 'mono or stereo', '1');

s('Image Input');
f('--image-width-mean', 'value', I, 'synthetic image width, px', '64');
f('--image-width-stddev', 'value', I, 'image width standard deviation', '0');
f('--image-height-mean', 'value', I, 'synthetic image height, px', '0');
f('--image-height-stddev', 'value', I, 'image height standard deviation', '0');
f('--image-batch-size --batch-size-image', 'value', I, 'images per request', '0');
f('--image-format', 'value', I, 'png, jpeg or random', 'png');
f('--image-source', 'value', I, 'noise, bundled assets or a folder of images (bench: noise; the others refused)', 'noise');
f('--image-source-sampling', 'value', I, 'how source images are drawn (with noise only random-with-replacement)', 'random-with-replacement');

s('Video Input');
f('--video-batch-size --batch-size-video', 'value', R, 'videos per request', '0');
f('--video-duration', 'value', R, 'synthetic video length, s', '5');
f('--video-fps', 'value', R, 'frames per second', '4');
f('--video-width', 'value', R, 'frame width, px', '640');
f('--video-height', 'value', R, 'frame height, px', '480');
f('--video-synth-type', 'value', R, 'moving_shapes, grid_clock or noise', 'noise');
f('--video-format', 'value', R, 'webm or mp4', 'webm');
f('--video-codec', 'value', R, 'FFmpeg video codec', 'libvpx-vp9');
f('--video-audio-sample-rate', 'value', R, 'sample rate of the embedded audio', '44100');
f('--video-audio-num-channels', 'value', R, 'channels of the embedded audio', '0');
f('--video-audio-codec', 'value', R, 'codec of the embedded audio', 'libopus');
f('--video-audio-depth', 'value', R, 'bit depth of the embedded audio', '16');

s('Rankings');
f('--rankings-passages-mean', 'value', R, 'passages per ranking request', '1');
f('--rankings-passages-stddev', 'value', R, 'passages standard deviation', '0');
f('--rankings-passages-prompt-token-mean', 'value', R, 'tokens per passage', '64');
f('--rankings-passages-prompt-token-stddev', 'value', R, 'passage length standard deviation', '0');
f('--rankings-query-prompt-token-mean', 'value', R, 'tokens per query', '64');
f('--rankings-query-prompt-token-stddev', 'value', R, 'query length standard deviation', '0');

s('Synthesis');
f('--synthesis-speedup-ratio', 'value', I, 'timestamp scaling of synthesized traces', '1');
f('--synthesis-prefix-len-multiplier', 'value', I, 'prefix branch length multiplier', '1');
f('--synthesis-prefix-root-multiplier', 'value', I, 'independent radix trees', '1');
f('--synthesis-prompt-len-multiplier', 'value', I, 'unique prompt length multiplier', '1');
f('--synthesis-output-len-multiplier', 'value', R, 'output length multiplier (bench: refused; AIPerf\'s synthesizer code was not found applying it)', '1');
f('--synthesis-max-isl', 'value', I, 'skip synthesized lines above this input length', '4096');
f('--synthesis-max-osl', 'value', I, 'cap synthesized output lengths', '1024');

s('Load Generator');
f('--benchmark-duration', 'value', I, 'profile for this many seconds', '1');
f('--benchmark-grace-period', 'value', I, 'wait this long for in-flight responses after the duration', '5');
f('--concurrency', 'value', I, 'requests kept in flight (a comma list sweeps)', '2,4');
f('--prefill-concurrency', 'value', I, 'cap requests waiting for their first token', '1');
f('--request-rate', 'value', I, 'requests per second (a comma list sweeps)', '5');
f('--arrival-pattern --request-rate-mode', 'value', I, 'constant, poisson, gamma or concurrency_burst arrivals', 'poisson');
f('--arrival-smoothness --vllm-burstiness', 'value', I, 'shape of gamma arrivals (1 = poisson)', '1');
f('--request-count --num-requests', 'value', I, 'profiling requests', '4');
f('--concurrency-ramp-duration', 'value', I, 'ramp concurrency from 1 over this many seconds', '1');
f('--prefill-concurrency-ramp-duration', 'value', I, 'ramp prefill concurrency', '1');
f('--request-rate-ramp-duration', 'value', I, 'ramp the request rate', '1');
f('--request-rate-series', 'value', I, 'a JSON file of {time_s, qps} points: the rate is linear between them, the last held', 'series.json');
f('--failed-request-threshold', 'value', I, 'abort once this fraction of requests failed', '0.5');
f('--trajectory-start-min-ratio', 'value', R, 'agentic replay: earliest start within a trajectory', '0.25');
f('--trajectory-start-max-ratio', 'value', R, 'agentic replay: latest start within a trajectory', '0.75');
f('--burst-phase-starts', 'switch', R, 'agentic replay: fire each phase\'s first requests together');
f('--trace-idle-gap-cap-seconds', 'value', R, 'cap idle gaps within one Weka trace', '5');
f('--system-idle-gap-cap-seconds', 'value', R, 'agentic replay: cap global idle time', '5');

s('Adaptive Scale');
f('--adaptive-scale', 'switch', I, 'ramp the load to the SLA boundary in one run and hold it there (adaptive_scale_events.jsonl, adaptive_scale_summary.json)');
f('--adaptive-scale-control', 'value', I, 'compact control of the adaptive scale: variable:min,max:type', 'concurrency:1,8:int');
f('--adaptive-control-variable', 'value', I, 'the load dimension the adaptive scale moves', 'concurrency');
f('--adaptive-control-min', 'value', I, 'lowest value of the adaptive control', '1');
f('--adaptive-control-max', 'value', I, 'highest value of the adaptive control', '8');
f('--adaptive-scale-assessment-period --adaptive-assessment-period', 'value', I, 'seconds between adaptive-scale assessments', '60');
f('--adaptive-sustain-duration', 'value', I, 'seconds to hold the found boundary', '60');
f('--adaptive-scale-sla', 'list', I, 'SLA of the adaptive scale, metric:stat:op:threshold', 'request_latency:p95:le:30000');

s('Scenario');
f('--scenario', 'value', R, 'lock the run to a named scenario\'s invariants', 'x');
f('--unsafe-override', 'switch', O, 'turn scenario lock errors into warnings');

s('Warmup');
f('--warmup-request-count --num-warmup-requests', 'value', I, 'warm-up requests, excluded from metrics', '1');
f('--warmup-duration', 'value', I, 'warm up for this many seconds', '0.5');
f('--agentic-cache-warmup-duration', 'value', R, 'extra agentic-replay warm-up', '1');
f('--agentic-warmup-grace-period', 'value', R, 'agentic warm-up grace period', '1');
f('--num-warmup-sessions', 'value', R, 'sessions used for warm-up', '1');
f('--warmup-concurrency', 'value', I, 'concurrency of the warm-up', '1');
f('--warmup-prefill-concurrency', 'value', I, 'prefill concurrency of the warm-up', '1');
f('--warmup-request-rate', 'value', I, 'request rate of the warm-up', '1');
f('--warmup-arrival-pattern', 'value', I, 'arrival pattern of the warm-up', 'constant');
f('--warmup-grace-period', 'value', I, 'wait for warm-up responses this long', '1');
f('--warmup-concurrency-ramp-duration', 'value', I, 'ramp warm-up concurrency', '1');
f('--warmup-prefill-concurrency-ramp-duration', 'value', I, 'ramp warm-up prefill concurrency', '1');
f('--warmup-request-rate-ramp-duration', 'value', I, 'ramp warm-up request rate', '1');

s('User-Centric Rate');
f('--user-centric-rate', 'value', I, 'per-user pacing at this total rate (KV-cache tests)', '1');
f('--num-users', 'value', I, 'initial users of --user-centric-rate', '4');

s('Request Cancellation');
f('--request-cancellation-rate', 'value', I, 'percent of requests to cancel', '10');
f('--request-cancellation-delay', 'value', I, 'seconds after sending before cancelling', '0');

s('Output');
f('--output-artifact-dir --artifact-dir', 'value', I, 'where the exports go', 'artifacts');
f('--profile-export-prefix --profile-export-file', 'value', I, 'base name of every export file', 'run');
f('--export-level --profile-export-level', 'value', I, 'summary, records or raw', 'records');
f('--slice-duration', 'value', I, 'also write metrics per time slice of this many seconds', '1');
f('--auto-plot --no-auto-plot', 'switch', O, 'run `aiperf plot` after the run');
f('--plot-required', 'switch', O, 'fail when auto-plot fails');
f('--export-outputs-json', 'switch', I, 'write the generated texts to outputs.json');
f('--otel-url', 'value', O, 'OTLP/HTTP metrics endpoint', 'http://127.0.0.1:4318');
f('--stream', 'list', O, 'OTel domains to stream (metrics, timing)', 'metrics');
f('--otel-resource-attributes', 'list', O, 'OTel resource attributes key=value', 'k=v');
f('--gen-ai-provider', 'value', O, 'GenAI semantic-convention provider', 'x');
f('--mlflow-tracking-uri', 'value', O, 'MLflow tracking URI', 'http://127.0.0.1:5000');
f('--mlflow-experiment', 'value', O, 'MLflow experiment', 'x');
f('--mlflow-run-name', 'value', O, 'MLflow run name', 'x');
f('--mlflow-tag', 'list', O, 'MLflow tags key:value', 'k:v');
f('--mlflow-parent-run-id', 'value', O, 'MLflow parent run', 'x');
f('--mlflow-artifact-glob', 'list', O, 'artifacts uploaded to MLflow', '*.json');
f('--wandb-project', 'value', O, 'Weights & Biases project (enables its export)', 'x');
f('--wandb-entity', 'value', O, 'Weights & Biases entity', 'x');
f('--wandb-run-name', 'value', O, 'Weights & Biases run name', 'x');
f('--wandb-tag', 'list', O, 'Weights & Biases tags', 'x');

s('HTTP Trace');
f('--export-http-trace', 'switch', O, 'per-request HTTP timing and headers in the records');
f('--show-trace-timing', 'switch', O, 'print the HTTP timing breakdown');

s('Server Metrics');
f('--server-metrics', 'list', I, 'scrape these Prometheus endpoints during the run', 'http://127.0.0.1:8000/metrics');
f('--no-server-metrics', 'switch', I, 'scrape no server metrics');
f('--server-metrics-formats', 'list', I, 'json, csv, jsonl (parquet: refused)', 'json');

s('Network Latency');
f('--network-latency-automatic', 'switch', R, 'probe TCP RTT and subtract it from latencies');
f('--network-latency-mean', 'value', R, 'a fixed RTT to subtract, ms', '0');
f('--network-latency-ping-interval', 'value', R, 'seconds between RTT probes', '1');

s('GPU Telemetry');
f('--gpu-telemetry', 'list', I, 'DCGM exporter URLs to scrape during the run', 'http://127.0.0.1:9401/metrics');
f('--no-gpu-telemetry', 'switch', I, 'collect no GPU telemetry');

s('UI');
f('--ui-type --ui', 'value', O, 'dashboard, simple or none progress display', 'none');

s('Multi-Run');
f('--num-profile-runs', 'value', I, 'repeat the run and report confidence intervals', '1');
f('--profile-run-cooldown-seconds', 'value', I, 'pause between repeated runs', '0');
f('--confidence-level', 'value', I, 'level of the confidence intervals', '0.95');
f('--profile-run-disable-warmup-after-first --no-profile-run-disable-warmup-after-first', 'switch', I, 'warm up only before the first run');
f('--set-consistent-seed --no-set-consistent-seed', 'switch', I, 'one seed (42 unless given) for every run');
f('--vary-seed-per-trial --no-vary-seed-per-trial', 'switch', I, 'a different seed for each run');
f('--convergence-metric', 'value', I, 'stop repeating once this metric is stable', 'request_latency');
f('--convergence-stat', 'value', I, 'statistic of the metric (avg, p50, ...)', 'avg');
f('--convergence-threshold', 'value', I, 'stability threshold', '0.1');
f('--convergence-mode', 'value', I, 'ci_width or cv (distribution: refused)', 'ci_width');
f('--parameter-sweep-cooldown-seconds', 'value', I, 'pause between sweep values', '0');
f('--parameter-sweep-same-seed --no-parameter-sweep-same-seed', 'switch', I, 'same seed for every sweep value');
f('--parameter-sweep-mode', 'value', I, 'repeated or independent sweep-and-trial order', 'repeated');
f('--sweep-type', 'value', R, 'grid or zip of several sweep lists', 'grid');
f('--no-sweep-table', 'switch', O, 'no per-cell sweep table');
f('--search-space', 'list', R, 'adaptive-search dimensions', 'phases.profiling.concurrency:1,8:int');
f('--search-metric', 'value', R, 'metric the adaptive search optimizes', 'output_token_throughput');
f('--search-stat', 'value', R, 'statistic the search optimizes', 'avg');
f('--search-direction', 'value', R, 'maximize or minimize', 'maximize');
f('--search-max-iterations', 'value', R, 'search iterations', '2');
f('--search-initial-points', 'value', R, 'random points before the model', '1');
f('--search-random-seed', 'value', R, 'seed of the search', '0');
f('--search-planner', 'value', R, 'search planner plugin', 'bayesian');
f('--optuna-sampler', 'value', R, 'Optuna sampler', 'tpe');
f('--optuna-acquisition', 'value', R, 'Optuna acquisition function', 'logei');
f('--optuna-terminator', 'value', R, 'Optuna stopping rule', 'none');
f('--search-percentile-pooling', 'value', R, 'mean or pooled percentiles across trials', 'mean');
f('--bo-constraint-mode', 'value', O, 'deprecated and ignored by AIPerf too', 'x');
f('--variant --sweep-variant', 'list', R, 'one named sweep variation', 'a: concurrency=1');
f('--search-sla', 'list', R, 'SLA filter of the search', 'time_to_first_token:p95:lt:200');
f('--search-sla-tier', 'list', R, 'one tier of SLA filters', 'fast:time_to_first_token:p95:lt:200');
f('--search-recipe', 'value', R, 'named search recipe', 'max-throughput-ttft-sla');
f('--ttft-sla-ms', 'value', R, 'TTFT SLA of a recipe', '200');
f('--isl-osl-pairs', 'value', R, 'ISL/OSL pairs of the pareto-sweep recipe', '128/128');
f('--itl-sla-ms', 'value', R, 'ITL SLA of a recipe', '10');
f('--tpot-sla-ms', 'value', R, 'TPOT SLA of a recipe', '10');
f('--e2e-sla-ms', 'value', R, 'end-to-end latency SLA of a recipe', '1000');
f('--error-rate-sla', 'value', R, 'error-rate SLA of a recipe', '0.05');
f('--slo-attainment-fraction', 'value', R, 'fraction of requests meeting every SLO', '0.95');
f('--search-style', 'value', R, 'search style of max-concurrency-under-sla', 'monotonic');
f('--degradation-threshold', 'value', R, 'latency degradation of the concurrency-ramp recipe', '0.2');
f('--degradation-metric-tag', 'value', R, 'metric of the knee detection', 'request_latency');
f('--degradation-stat', 'value', R, 'statistic of the knee detection', 'p99');
f('--isl-min', 'value', R, 'smallest ISL of the prefill-ttft-curve recipe', '256');
f('--isl-max', 'value', R, 'largest ISL of the prefill-ttft-curve recipe', '4096');
f('--isl-steps', 'value', R, 'ISL steps of the prefill-ttft-curve recipe', '2');
f('--concurrency-min', 'value', R, 'lowest concurrency of ramp recipes', '1');
f('--concurrency-max', 'value', R, 'highest concurrency of ramp recipes', '8');
f('--concurrency-steps', 'value', R, 'concurrency steps of ramp recipes', '2');
f('--osl-min', 'value', R, 'smallest OSL of the decode-itl-curve recipe', '64');
f('--osl-max', 'value', R, 'largest OSL of the decode-itl-curve recipe', '1024');
f('--osl-steps', 'value', R, 'OSL steps of the decode-itl-curve recipe', '2');

s('Accuracy');
f('--accuracy-benchmark', 'value', R, 'run an accuracy benchmark (mmlu, aime, ...)', 'mmlu');
f('--accuracy-tasks', 'list', R, 'tasks of the accuracy benchmark', 'anatomy');
f('--accuracy-n-shots', 'value', R, 'few-shot examples', '0');
f('--accuracy-enable-cot --accuracy-no-enable-cot', 'switch', R, 'chain-of-thought prompting');
f('--accuracy-grader', 'value', R, 'grader of the accuracy benchmark', 'exact_match');
f('--accuracy-system-prompt', 'value', R, 'system prompt of the accuracy benchmark', 'x');
f('--accuracy-verbose', 'switch', O, 'per-problem grading details');

s('Service');
f('--log-level', 'value', I, 'logging level (TRACE, DEBUG, INFO, WARNING, ERROR, ...)', 'INFO');
f('-v --verbose', 'switch', I, 'log level DEBUG');
f('-vv --extra-verbose', 'switch', I, 'log level TRACE');
f('--record-processor-service-count --record-processors', 'value', O, 'record-processor services for metric computation', '1');
f('--api-port', 'value', O, 'AIPerf\'s HTTP and WebSocket API port', '9999');
f('--api-host', 'value', O, 'AIPerf\'s API host', '127.0.0.1');
f('--stats-interval', 'value', O, 'seconds between realtime stats publishes', '5');

s('Workers');
f('--workers-max --max-workers', 'value', O, 'worker processes (tailgate: see --threads)', '1');

s('ZMQ Communication');
f('--zmq-host', 'value', O, 'host of AIPerf\'s internal ZMQ bus (tailgate is one process)', '127.0.0.1');
f('--zmq-ipc-path', 'value', O, 'folder of ZMQ IPC sockets', '/tmp');
f('--zmq-dual-bind', 'switch', O, 'ZMQ IPC + TCP backend');

/** Every flag of `aiperf profile`, in the order of AIPerf's reference. */
export const AIPERF_FLAGS: readonly AiperfFlag[] = rows;

/** Where the flag list was read: printed in the docs table. */
export const AIPERF_FLAGS_SOURCE = "AIPerf's command-line reference (docs/cli-options.md, main branch, 2026: the 0.13 and 0.14 sections and later), and its adaptive-scale page for the --adaptive-scale flags";

/** The opt-in that runs a command line with refused flags anyway. */
export const ALLOW_IGNORED_FLAG = '--allow-ignored-flags';

/** The one line refusing a flag (exit 2). */
export function refusedFlagLine(flag: UnappliedFlag): string {
  return `${flag.flag}: in AIPerf: ${flag.aiperf}; tailgate bench does not do this, so it refuses the run (${ALLOW_IGNORED_FLAG} runs without it and lists it in the exports)`;
}

/** The console line for a refused flag run anyway under {@link ALLOW_IGNORED_FLAG} (printed at every log level). */
export function ignoredFlagLine(flag: UnappliedFlag): string {
  return `warning: ${flag.flag} ignored (${ALLOW_IGNORED_FLAG}): in AIPerf: ${flag.aiperf}; these results were measured without it`;
}

const STATUS_LABEL: Record<AiperfFlagStatus, string> = {
  implemented: 'implemented',
  refused: `refused (exit 2; ${ALLOW_IGNORED_FLAG}: ignored, listed in the exports)`,
  'output-only': 'output-only (accepted, listed in the exports)',
};

/** The docs table (Markdown): every flag, its state and what it does. */
export function aiperfFlagsMarkdown(): string {
  const lines = ['| Section | Flag (aliases) | tailgate | What it does in AIPerf |', '|---|---|---|---|'];
  for (const r of AIPERF_FLAGS) lines.push(`| ${r.section} | ${r.names.map((n) => `\`${n}\``).join(', ')} | ${STATUS_LABEL[r.status]} | ${r.does.replace(/\|/g, '\\|')} |`);
  const count = (st: AiperfFlagStatus): number => AIPERF_FLAGS.filter((r) => r.status === st).length;
  lines.push('', `${AIPERF_FLAGS.length} flags: ${count('implemented')} implemented, ${count('refused')} refused, ${count('output-only')} output-only.`);
  return `${lines.join('\n')}\n`;
}
