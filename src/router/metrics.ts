import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type Metric } from 'prom-client';
import type { Dispatcher } from '../routing/index.js';
import { BucketHistogram } from '../stats/index.js';
import type { Backend } from './backend.js';

const LATENCY_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const ITL_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12];
const OVERHEAD_BUCKETS_S = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1];

/** The router's Prometheus families, in a registry of its own (several routers may share a process). */
export class RouterMetrics {
  readonly registry = new Registry();
  readonly dispatched: Counter<'worker'>;
  readonly completed: Counter<'worker'>;
  readonly failed: Counter<'worker'>;
  readonly clientAborted: Counter<'worker'>;
  readonly redispatched: Counter<'worker'>;
  readonly migrated: Counter<'worker'>;
  readonly rescued: Counter<'worker'>;
  readonly unmigratable: Counter<'reason'>;
  readonly migrationsByMessages: Counter;
  readonly retried: Counter<'worker'>;
  readonly drained: Counter<'worker'>;
  readonly ejected: Counter<'worker'>;
  readonly rejected: Counter<'reason'>;
  readonly ttft: WorkerHistogram;
  readonly itl: WorkerHistogram;
  readonly overhead: Histogram;

  constructor(dispatcher: Dispatcher, backends: readonly Backend[]) {
    const registers = [this.registry];
    // process CPU, memory, handles, GC and event-loop lag (prom-client's own aggregators merge them over --procs)
    collectDefaultMetrics({ register: this.registry });
    const counter = (name: string, help: string) => new Counter({ name, help, labelNames: ['worker'] as const, registers });
    new Gauge({
      name: 'tailgate_router_worker_inflight',
      help: 'Requests assigned to the worker and not yet finished, counted by this router at pick time.',
      labelNames: ['worker'] as const,
      registers,
      collect() {
        for (const b of backends) this.set({ worker: b.id }, dispatcher.inflight(b.id));
      },
    });
    new Gauge({
      name: 'tailgate_router_worker_healthy',
      help: '1 when the worker is routable (last probe passed, not ejected), else 0.',
      labelNames: ['worker'] as const,
      aggregator: 'min',
      registers,
      collect() {
        for (const b of backends) this.set({ worker: b.id }, b.routable ? 1 : 0);
      },
    });
    new Gauge({
      name: 'tailgate_router_queue_length',
      help: 'Requests waiting in the router for a worker with room.',
      registers,
      collect() {
        this.set(dispatcher.queueLength);
      },
    });
    this.dispatched = counter('tailgate_router_requests_dispatched_total', 'Attempts sent to the worker (first sends, retries, re-dispatches, migrations).');
    this.completed = counter('tailgate_router_requests_completed_total', 'Requests the worker finished for the client.');
    this.failed = counter('tailgate_router_requests_failed_total', 'Attempts on the worker that failed (refused, reset, 5xx, truncated, stalled).');
    this.clientAborted = counter('tailgate_router_requests_client_aborted_total', 'Requests the client abandoned while on the worker.');
    this.redispatched = counter('tailgate_router_requests_redispatched_total', 'Requests taken from the worker for lack of a first token by the deadline.');
    this.migrated = counter('tailgate_router_requests_migrated_total', 'Streams moved off the worker after it stopped producing tokens.');
    this.rescued = counter('tailgate_router_failure_rescues_total', "Streams moved off the failed worker (crash, reset, whole-worker stall) outside the re-send budget, while another worker had room.");
    this.unmigratable = new Counter({
      name: 'tailgate_router_streams_unmigratable_total',
      help: "Streams that needed a move and could not: 'budget' (re-send budget spent, no room for a rescue), 'bound' (its text passed --migrate-max-bytes).",
      labelNames: ['reason'] as const,
      registers,
    });
    this.migrationsByMessages = new Counter({
      name: 'tailgate_router_migrations_counted_by_messages_total',
      help: "Migrated streams whose tokens already sent were counted as their content messages (no running usage, no /tokenize answer): the continuation's max_tokens and the usage are off when the engine sent several tokens a message.",
      registers,
    });
    this.retried = counter('tailgate_router_requests_retried_total', 'Requests retried elsewhere after the worker failed before any byte reached the client.');
    this.drained = counter('tailgate_router_requests_drained_total', "Requests the router ended itself at its drain timeout while stopping (a stream gets an error frame and [DONE]); worker 'none' when still queued.");
    this.ejected = counter('tailgate_router_worker_ejections_total', 'Times the worker was ejected by passive failures.');
    this.rejected = new Counter({ name: 'tailgate_router_requests_rejected_total', help: 'Requests answered by the router itself with an error.', labelNames: ['reason'] as const, registers });
    this.ttft = new WorkerHistogram('tailgate_router_ttft_seconds', 'Time from sending to the worker to its first content token.', LATENCY_BUCKETS_S);
    this.itl = new WorkerHistogram('tailgate_router_itl_seconds', 'Time between content messages of a stream (per-token latency).', ITL_BUCKETS_S);
    // the registry reads a metric through get() alone (as it does for its cluster aggregates)
    this.registry.registerMetric(this.ttft as unknown as Metric);
    this.registry.registerMetric(this.itl as unknown as Metric);
    this.overhead = new Histogram({ name: 'tailgate_router_overhead_seconds', help: "Router's own time from a complete request to the upstream send (excludes queue wait).", buckets: OVERHEAD_BUCKETS_S, registers });
    for (const b of backends) {
      for (const c of [this.dispatched, this.completed, this.failed, this.clientAborted, this.redispatched, this.migrated, this.rescued, this.retried, this.drained, this.ejected]) c.inc({ worker: b.id }, 0);
    }
  }
}

/** One line of a metric, as prom-client's registry reads it. */
interface MetricLine {
  labels: Record<string, string | number>;
  value: number;
  metricName: string;
}

/**
 * A histogram labelled by `worker` with the exposition of prom-client's, for a hot path:
 * prom-client's `observe` (even on a labelled child) builds and hashes a label object per sample,
 * 0.7-0.8 us; this one finds a bucket and adds, under 0.15 us.
 */
export class WorkerHistogram {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram' as const;
  readonly aggregator = 'sum' as const;
  readonly #buckets: readonly number[];
  readonly #series = new Map<string, BucketHistogram>();

  constructor(name: string, help: string, buckets: readonly number[]) {
    this.name = name;
    this.help = help;
    this.#buckets = buckets;
  }

  observe(worker: string, value: number): void {
    if (Number.isFinite(value)) this.seriesOf(worker).observe(value);
  }

  /** The series of `worker`, made on first use: a hot path keeps it and observes into it directly (finite values only). */
  seriesOf(worker: string): BucketHistogram {
    let s = this.#series.get(worker);
    if (s === undefined) this.#series.set(worker, (s = new BucketHistogram(this.#buckets)));
    return s;
  }

  /** The samples of `worker`, for tests: count and sum. */
  series(worker: string): { count: number; sum: number } | undefined {
    const s = this.#series.get(worker);
    return s && { count: s.count, sum: s.sum };
  }

  reset(): void {
    this.#series.clear();
  }

  get(): Promise<{ name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: MetricLine[] }> {
    const values: MetricLine[] = [];
    const bucket = `${this.name}_bucket`;
    for (const [worker, s] of this.#series) {
      let acc = 0;
      for (let i = 0; i < this.#buckets.length; i++) {
        acc += s.counts[i]!;
        values.push({ labels: { le: this.#buckets[i]!, worker }, value: acc, metricName: bucket });
      }
      values.push({ labels: { le: '+Inf', worker }, value: s.count, metricName: bucket });
      values.push({ labels: { worker }, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { worker }, value: s.count, metricName: `${this.name}_count` });
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values });
  }
}
