import type { EngineStats } from '../engine/index.js';
import { BucketHistogram } from '../stats/index.js';

/** vLLM V1's bucket lists (vllm/v1/metrics/loggers.py), as src/scrape/testdata/vllm-metrics.txt prints them. */
const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0];
const ITL_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0];
const REQUEST_BUCKETS = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0];

/** prometheus_client's `floatToGoString`: `1529.0`, `1.843207e+06`, `+Inf`. */
export function formatPromFloat(v: number): string {
  if (v === Number.POSITIVE_INFINITY) return '+Inf';
  if (v === Number.NEGATIVE_INFINITY) return '-Inf';
  if (Number.isNaN(v)) return 'NaN';
  let s = String(v);
  if (!s.includes('.') && !s.includes('e')) s += '.0';
  const dot = s.indexOf('.');
  if (v > 0 && dot > 6 && !s.includes('e')) {
    const mantissa = `${s[0]}.${s.slice(1, dot)}${s.slice(dot + 1)}`.replace(/[0.]+$/, '');
    return `${mantissa}e+0${dot - 1}`;
  }
  return s;
}

const FINISH_REASONS = ['stop', 'length', 'abort', 'error', 'repetition'] as const;
/** A finish reason vLLM's `vllm:request_success_total` is labelled with. */
export type MetricsFinishReason = (typeof FINISH_REASONS)[number];

/**
 * One worker's vLLM V1 metrics (docs/reference.md#the-vllm-worker), rendered by hand in prometheus_client's text format
 * (labels sorted, `_created` series, Go-style floats): it is scraped every 250 ms, so rendering
 * must cost little. Gauges and token counters come from the engine's own stats at render time.
 */
export class WorkerMetrics {
  readonly ttft = new BucketHistogram(TTFT_BUCKETS);
  readonly itl = new BucketHistogram(ITL_BUCKETS);
  readonly e2e = new BucketHistogram(REQUEST_BUCKETS);
  readonly queue = new BucketHistogram(REQUEST_BUCKETS);
  readonly prefill = new BucketHistogram(REQUEST_BUCKETS);
  readonly decode = new BucketHistogram(REQUEST_BUCKETS);
  readonly finished: Record<MetricsFinishReason, number> = { stop: 0, length: 0, abort: 0, error: 0, repetition: 0 };
  /** prometheus-fastapi-instrumentator's `http_requests_total` (vLLM's API server has it): `handler method status` -> count, status grouped as `2xx`. */
  readonly #http = new Map<string, number>();
  /** Generation requests handed to the engine, and their summed real time from arrival at the worker to the submit (ms). */
  #frontendCount = 0;
  #frontendMs = 0;
  readonly #labels: string;
  readonly #createdS: string;

  /** `engine` is vLLM's engine index label ("0" for a single-engine server), `model` the served name. */
  constructor(model: string, engine = '0', createdS = Date.now() / 1000) {
    this.#labels = `engine="${escapeLabel(engine)}",model_name="${escapeLabel(model)}"`;
    this.#createdS = formatPromFloat(createdS);
  }

  /** Counts one answered request, as the instrumentator vLLM's API server runs does. */
  countHttp(handler: string, method: string, status: number): void {
    const k = `handler="${escapeLabel(handler)}",method="${method}",status="${Math.floor(status / 100)}xx"`;
    this.#http.set(k, (this.#http.get(k) ?? 0) + 1);
  }

  /** Counts one generation request's real handling time before its engine submit (HTTP body, JSON, validation, tokenizing). */
  countFrontend(ms: number): void {
    this.#frontendCount++;
    this.#frontendMs += ms;
  }

  render(s: EngineStats): string {
    const L = this.#labels;
    const out: string[] = [];
    const gauge = (name: string, help: string, v: number) => {
      out.push(`# HELP ${name} ${help}\n# TYPE ${name} gauge\n${name}{${L}} ${formatPromFloat(v)}\n`);
    };
    const counter = (base: string, help: string, v: number) => {
      out.push(`# HELP ${base}_total ${help}\n# TYPE ${base}_total counter\n${base}_total{${L}} ${formatPromFloat(v)}\n`);
      out.push(`# HELP ${base}_created ${help}\n# TYPE ${base}_created gauge\n${base}_created{${L}} ${this.#createdS}\n`);
    };
    gauge('vllm:num_requests_running', 'Number of requests in model execution batches.', s.running);
    gauge('vllm:num_requests_waiting', 'Number of requests waiting to be processed.', s.waiting);
    gauge('vllm:kv_cache_usage_perc', 'KV-cache usage. 1 means 100 percent usage.', s.kvUsage);
    counter('vllm:prefix_cache_queries', 'Prefix cache queries, in terms of number of queried tokens.', s.prefixCacheQueriesTotal);
    counter('vllm:prefix_cache_hits', 'Prefix cache hits, in terms of number of cached tokens.', s.prefixCacheHitsTotal);
    counter('vllm:num_preemptions', 'Cumulative number of preemption from the engine.', s.preemptionsTotal);
    counter('vllm:prompt_tokens', 'Number of prefill tokens processed.', s.promptTokensTotal);
    counter('vllm:generation_tokens', 'Number of generation tokens processed.', s.generationTokensTotal);
    const rsHelp = 'Count of successfully processed requests.';
    let rs = `# HELP vllm:request_success_total ${rsHelp}\n# TYPE vllm:request_success_total counter\n`;
    let rc = `# HELP vllm:request_success_created ${rsHelp}\n# TYPE vllm:request_success_created gauge\n`;
    for (const r of FINISH_REASONS) {
      const labels = this.#withLabel('finished_reason', r);
      rs += `vllm:request_success_total{${labels}} ${formatPromFloat(this.finished[r])}\n`;
      rc += `vllm:request_success_created{${labels}} ${this.#createdS}\n`;
    }
    out.push(rs, rc);
    this.#histogram(out, 'vllm:time_to_first_token_seconds', 'Histogram of time to first token in seconds.', this.ttft);
    this.#histogram(out, 'vllm:inter_token_latency_seconds', 'Histogram of inter-token latency in seconds.', this.itl);
    this.#histogram(out, 'vllm:e2e_request_latency_seconds', 'Histogram of e2e request latency in seconds.', this.e2e);
    this.#histogram(out, 'vllm:request_queue_time_seconds', 'Histogram of time spent in WAITING phase for request.', this.queue);
    this.#histogram(out, 'vllm:request_prefill_time_seconds', 'Histogram of time spent in PREFILL phase for request.', this.prefill);
    this.#histogram(out, 'vllm:request_decode_time_seconds', 'Histogram of time spent in DECODE phase for request.', this.decode);
    // Not vLLM families: time the engine spent in steps (the simulator's stand-in for GPU busy time),
    // their count, and the time they fell behind the profile on the real clock (late timers not caught up).
    const own = (name: string, help: string, v: number): string => `# HELP ${name} ${help}\n# TYPE ${name} counter\n${name}{${L}} ${formatPromFloat(v)}\n`;
    out.push(
      own('tailgate_engine_busy_seconds_total', 'Time the simulated engine spent executing steps.', s.busyMsTotal / 1000),
      own('tailgate_engine_late_seconds_total', 'Time the steps fell behind the engine profile on the real clock (a late timer not caught up by the next step).', s.lateMsTotal / 1000),
      own('tailgate_engine_steps_total', 'Steps the simulated engine executed.', s.stepsTotal),
      own('tailgate_frontend_seconds_total', 'Real time generation requests spent in the worker between arrival and engine submit (body, JSON, validation, tokenizing): part of the profile\'s frontend time, which counts from arrival.', this.#frontendMs / 1000),
      own('tailgate_frontend_requests_total', 'Generation requests the worker handed to the engine.', this.#frontendCount),
    );
    if (this.#http.size > 0) {
      const help = 'Total number of requests by method, status and handler.';
      let h = `# HELP http_requests_total ${help}\n# TYPE http_requests_total counter\n`;
      let c = `# HELP http_requests_created ${help}\n# TYPE http_requests_created gauge\n`;
      for (const [k, v] of this.#http) {
        h += `http_requests_total{${k}} ${formatPromFloat(v)}\n`;
        c += `http_requests_created{${k}} ${this.#createdS}\n`;
      }
      out.push(h, c);
    }
    return out.join('');
  }

  #withLabel(name: string, value: string): string {
    // prometheus_client sorts label names: engine < finished_reason < le < model_name.
    const [engine, model] = this.#labels.split(',') as [string, string];
    return `${engine},${name}="${value}",${model}`;
  }

  #histogram(out: string[], name: string, help: string, h: BucketHistogram): void {
    let s = `# HELP ${name} ${help}\n# TYPE ${name} histogram\n`;
    let cum = 0;
    for (let i = 0; i < h.bounds.length; i++) {
      cum += h.counts[i]!;
      s += `${name}_bucket{${this.#withLabel('le', formatPromFloat(h.bounds[i]!))}} ${formatPromFloat(cum)}\n`;
    }
    s += `${name}_bucket{${this.#withLabel('le', '+Inf')}} ${formatPromFloat(h.count)}\n`;
    s += `${name}_count{${this.#labels}} ${formatPromFloat(h.count)}\n`;
    s += `${name}_sum{${this.#labels}} ${formatPromFloat(h.sum)}\n`;
    s += `# HELP ${name}_created ${help}\n# TYPE ${name}_created gauge\n${name}_created{${this.#labels}} ${this.#createdS}\n`;
    out.push(s);
  }
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}
