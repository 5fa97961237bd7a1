/** How AIPerf names, measures and files one metric. */
export interface MetricInfo {
  /** AIPerf's tag, the key in `profile_export_aiperf.json`. */
  tag: string;
  /** AIPerf's human name, as in its CSV and console table (without the unit). */
  header: string;
  unit: string;
  /** `record`: a distribution over requests; `scalar`: one run-level value (`{unit, avg}`). */
  kind: 'record' | 'scalar';
  /** For goodput SLOs: whether a larger value is better. */
  higherIsBetter?: boolean;
}

/**
 * Every metric tailgate writes, in the order of AIPerf's CSV (distributions first: request latency,
 * TTFT, ITL, OSL, ... then run-level values: duration, request throughput, request count, output
 * token throughput, ...), as AIPerf's profile-export guide shows them.
 */
export const METRIC_CATALOG: readonly MetricInfo[] = [
  { tag: 'request_latency', header: 'Request Latency', unit: 'ms', kind: 'record' },
  { tag: 'time_to_first_token', header: 'Time to First Token', unit: 'ms', kind: 'record' },
  { tag: 'time_to_second_token', header: 'Time to Second Token', unit: 'ms', kind: 'record' },
  { tag: 'time_to_first_output_token', header: 'Time to First Output Token', unit: 'ms', kind: 'record' },
  { tag: 'inter_token_latency', header: 'Inter Token Latency', unit: 'ms', kind: 'record' },
  { tag: 'inter_chunk_latency', header: 'Inter Chunk Latency', unit: 'ms', kind: 'record' },
  {
    tag: 'output_token_throughput_per_user',
    header: 'Output Token Throughput Per User',
    unit: 'tokens/sec/user',
    kind: 'record',
    higherIsBetter: true,
  },
  { tag: 'prefill_throughput_per_user', header: 'Prefill Throughput Per User', unit: 'tokens/sec/user', kind: 'record' },
  { tag: 'output_sequence_length', header: 'Output Sequence Length', unit: 'tokens', kind: 'record' },
  { tag: 'input_sequence_length', header: 'Input Sequence Length', unit: 'tokens', kind: 'record' },
  { tag: 'output_token_count', header: 'Output Token Count', unit: 'tokens', kind: 'record' },
  { tag: 'reasoning_token_count', header: 'Reasoning Token Count', unit: 'tokens', kind: 'record' },
  { tag: 'usage_prompt_tokens', header: 'Usage Prompt Tokens', unit: 'tokens', kind: 'record' },
  { tag: 'usage_completion_tokens', header: 'Usage Completion Tokens', unit: 'tokens', kind: 'record' },
  { tag: 'usage_total_tokens', header: 'Usage Total Tokens', unit: 'tokens', kind: 'record' },
  { tag: 'usage_reasoning_tokens', header: 'Usage Reasoning Tokens', unit: 'tokens', kind: 'record' },
  { tag: 'error_isl', header: 'Error Input Sequence Length', unit: 'tokens', kind: 'record' },
  { tag: 'benchmark_duration', header: 'Benchmark Duration', unit: 'sec', kind: 'scalar' },
  { tag: 'request_throughput', header: 'Request Throughput', unit: 'requests/sec', kind: 'scalar' },
  { tag: 'request_count', header: 'Request Count', unit: 'requests', kind: 'scalar' },
  { tag: 'output_token_throughput', header: 'Output Token Throughput', unit: 'tokens/sec', kind: 'scalar' },
  { tag: 'total_token_throughput', header: 'Total Token Throughput', unit: 'tokens/sec', kind: 'scalar' },
  { tag: 'total_output_tokens', header: 'Total Output Tokens', unit: 'tokens', kind: 'scalar' },
  { tag: 'total_reasoning_tokens', header: 'Total Reasoning Tokens', unit: 'tokens', kind: 'scalar' },
  { tag: 'total_osl', header: 'Total Output Sequence Length', unit: 'tokens', kind: 'scalar' },
  { tag: 'total_isl', header: 'Total Input Sequence Length', unit: 'tokens', kind: 'scalar' },
  { tag: 'goodput', header: 'Goodput', unit: 'requests/sec', kind: 'scalar' },
  { tag: 'good_request_count', header: 'Good Request Count', unit: 'requests', kind: 'scalar' },
  { tag: 'good_request_fraction', header: 'Good Request Fraction', unit: 'ratio', kind: 'scalar' },
  { tag: 'error_request_count', header: 'Error Request Count', unit: 'requests', kind: 'scalar' },
  { tag: 'request_error_rate', header: 'Request Error Rate', unit: '%', kind: 'scalar' },
  { tag: 'total_error_isl', header: 'Total Error Input Sequence Length', unit: 'tokens', kind: 'scalar' },
  { tag: 'min_request_timestamp', header: 'Minimum Request Timestamp', unit: 'ns', kind: 'scalar' },
  { tag: 'max_response_timestamp', header: 'Maximum Response Timestamp', unit: 'ns', kind: 'scalar' },
];

const BY_TAG = new Map(METRIC_CATALOG.map((m) => [m.tag, m]));

/** The catalog entry for an AIPerf tag, or undefined for a tag we do not compute. */
export function metricInfo(tag: string): MetricInfo | undefined {
  return BY_TAG.get(tag);
}

/** Tags usable as `--goodput` SLOs (per-request metrics). */
export const GOODPUT_TAGS: readonly string[] = [
  'time_to_first_token',
  'time_to_second_token',
  'inter_token_latency',
  'request_latency',
  'output_token_throughput_per_user',
];
