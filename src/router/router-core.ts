import { Gauge } from 'prom-client';
import { RealClock, createRng } from '../core/index.js';
import { Dispatcher, ROUTER_DEFAULTS, createPolicy, usesAdaptiveDefaults, type DeadlineLimits, type DeadlineSetting } from '../routing/index.js';
import { Backend, type BackendPoolOptions } from './backend.js';
import { BackendSet, forgetWorkerGauges } from './dynamic-backends.js';
import { clusterMetricsSource } from './cluster.js';
import { FlowControl, type FlowConfig } from './flows.js';
import { HealthTracker } from './health.js';
import { KvEventSources } from './kv-sources.js';
import { SessionTable } from './sessions.js';
import { RouterMetrics } from './metrics.js';
import type { RouterOptions, WorkerStatus } from './options.js';
import type { CallContext, ProxyCall } from './proxy-call.js';

/** What every part of a running router shares: the workers, the dispatcher, the counts. */
export interface RouterCore {
  readonly clock: RealClock;
  readonly dispatcher: Dispatcher;
  readonly backends: Backend[];
  readonly metrics: RouterMetrics;
  readonly health: HealthTracker;
  readonly backendSet: BackendSet;
  readonly ctx: CallContext;
  readonly active: Set<ProxyCall>;
  readonly flowControl: FlowControl | undefined;
  /** The workers' KV events, when `kvEvents` is set. */
  readonly kvEvents: KvEventSources | undefined;
  /** The Prometheus text of `/metrics` (summed over `--procs` in a cluster). */
  readonly metricsText: () => Promise<string>;
  workers(): WorkerStatus[];
}

/** Builds the dispatcher, the workers, their health and the metrics from the options (nothing listens yet). */
export function buildCore(opts: RouterOptions, flowConfig: FlowConfig | undefined): RouterCore {
  const policyName = opts.policy ?? ROUTER_DEFAULTS.policy;
  const adaptive = usesAdaptiveDefaults(policyName);
  const clock = new RealClock();
  const pool: BackendPoolOptions = {
    ...(opts.ca !== undefined && { ca: opts.ca }),
    ...(opts.connectionsPerBackend !== undefined && { connections: opts.connectionsPerBackend }),
    ...(opts.backendApiKey !== undefined && { apiKey: opts.backendApiKey }),
  };
  const backends = dedupe(opts.backends).map((u) => new Backend(u, pool));
  const byId = new Map(backends.map((b) => [b.id, b]));
  const off: DeadlineSetting = 'off';
  const kv = opts.kvEvents ? new KvEventSources({ ...opts.kvEvents, ...(opts.prefix?.blockSize !== undefined && { blockSize: opts.prefix.blockSize }) }, () => clock.now()) : undefined;
  const floor = opts.deadlineFloorMs ?? ROUTER_DEFAULTS.deadlineFloorMs;
  const dispatcher = new Dispatcher({
    policy: createPolicy(policyName, { now: () => clock.now(), ...(opts.prefix !== undefined && { prefix: opts.prefix }), ...(kv !== undefined && { cacheReport: kv }) }),
    rng: createRng(opts.seed ?? ROUTER_DEFAULTS.seed),
    now: () => clock.now(),
    maxInflightPerWorker: opts.maxInflightPerWorker ?? (adaptive ? 'auto' : Number.POSITIVE_INFINITY),
    maxQueue: opts.maxQueue ?? ROUTER_DEFAULTS.maxQueue,
    ttftDeadline: opts.ttftDeadline ?? (adaptive ? 'auto' : off),
    stallDeadline: opts.stallDeadline ?? (adaptive ? 'auto' : off),
    ttftDeadlineFloorMs: floor,
    stallDeadlineFloorMs: floor,
    maxResendShare: opts.maxResendShare ?? ROUTER_DEFAULTS.maxResendShare,
    failureRescue: opts.failureRescue ?? ROUTER_DEFAULTS.failureRescue,
    ...(flowConfig && { flows: FlowControl.queueOptions(flowConfig) }),
  });
  for (const b of backends) dispatcher.addWorker(b.id, { healthy: false });
  const metrics = new RouterMetrics(dispatcher, backends);
  const tokenGauge = (name: string, help: string, read: (id: string) => number): void => {
    new Gauge({
      name,
      help,
      labelNames: ['worker'] as const,
      registers: [metrics.registry],
      collect() {
        for (const b of backends) this.set({ worker: b.id }, read(b.id));
      },
    });
  };
  tokenGauge('tailgate_router_worker_prefill_tokens_inflight', 'Prompt tokens of the requests assigned to the worker that have had no first token yet, counted by this router.', (id) => dispatcher.inflightPrefillTokens(id));
  tokenGauge('tailgate_router_worker_decode_tokens_inflight', 'Output tokens the requests on the worker past their first token may still generate (their max_tokens, times n; 0 when not given), counted by this router.', (id) => dispatcher.inflightDecodeTokens(id));
  const sessions = opts.sessions ? new SessionTable(opts.sessions) : undefined;
  sessions?.registerMetrics(metrics.registry);
  if (kv !== undefined) {
    kv.registerMetrics(metrics.registry);
    backends.forEach((b, i) => kv.add(b.id, hostOf(b.id), i));
  }
  const flowControl = opts.flows && flowConfig && new FlowControl(opts.flows, flowConfig, dispatcher, metrics.registry);
  const metricsText = opts.clusterMetrics ? clusterMetricsSource(metrics.registry) : () => metrics.registry.metrics();
  const syncWorker = (b: Backend) => {
    dispatcher.setModels(b.id, b.models);
    dispatcher.setHealthy(b.id, b.routable);
  };
  const health = new HealthTracker(backends, clock, opts.health ?? {}, syncWorker, (b) => metrics.ejected.inc({ worker: b.id }), dispatcher);
  const backendSet = new BackendSet({
    backends,
    byId,
    dispatcher,
    health,
    pool,
    forget: (id) => {
      forgetWorkerGauges(metrics.registry, id);
      kv?.remove(id);
    },
    // A discovered worker has its own host: its endpoints are the template's, not offset.
    ...(kv !== undefined && { added: (b: Backend) => kv.add(b.id, hostOf(b.id), 0) }),
  });
  const active = new Set<ProxyCall>();
  const ctx: CallContext = {
    dispatcher,
    clock,
    metrics,
    health,
    backends: byId,
    active,
    maxRetries: opts.maxRetries ?? ROUTER_DEFAULTS.maxRetries,
    queueTimeoutMs: opts.queueTimeoutMs ?? ROUTER_DEFAULTS.queueTimeoutMs,
    upstreamHeaderTimeoutMs: opts.upstreamHeaderTimeoutMs ?? ROUTER_DEFAULTS.upstreamHeaderTimeoutMs,
    upstreamIdleTimeoutMs: opts.upstreamIdleTimeoutMs ?? ROUTER_DEFAULTS.upstreamIdleTimeoutMs,
    sendTimeoutMs: opts.sendTimeoutMs ?? ROUTER_DEFAULTS.sendTimeoutMs,
    migrate: opts.migrate ?? adaptive,
    migrateMaxBytes: opts.migrateMaxBytes ?? ROUTER_DEFAULTS.migrateMaxBytes,
    accessLog: opts.accessLog,
    sessions,
    warn: opts.warn,
  };
  const workers = (): WorkerStatus[] =>
    backends.map((b) => ({ id: b.id, url: b.url, healthy: b.routable, ejected: b.ejected, inflight: dispatcher.inflight(b.id), prefillTokens: dispatcher.inflightPrefillTokens(b.id), decodeTokens: dispatcher.inflightDecodeTokens(b.id), slots: dispatcher.slots(b.id) }));
  return { clock, dispatcher, backends, metrics, health, backendSet, ctx, active, flowControl: flowControl || undefined, kvEvents: kv, metricsText, workers };
}

/**
 * Checks every open call's deadlines each `ROUTER_DEFAULTS.sweepMs`; returns the stop function. The
 * first-token deadline by prompt length is worked out once per sweep and only for calls still
 * waiting for a first token (it follows the fleet's TTFT, so each sweep starts afresh).
 */
export function startSweep(core: RouterCore): () => void {
  const { active, clock, dispatcher, flowControl, ctx } = core;
  const ttftByPrompt = new Map<number, number>();
  const ttft = (p: number): number => {
    let ms = ttftByPrompt.get(p);
    if (ms === undefined) ttftByPrompt.set(p, (ms = dispatcher.ttftDeadlineMs(p)));
    return ms;
  };
  const sweep = setInterval(() => {
    if (active.size === 0) return;
    const now = clock.now();
    if (flowControl) dispatcher.shedExpired();
    const stall = dispatcher.stallDeadlineMs();
    const limits: DeadlineLimits = {
      queueTimeoutMs: ctx.queueTimeoutMs,
      upstreamHeaderTimeoutMs: ctx.upstreamHeaderTimeoutMs,
      upstreamIdleTimeoutMs: ctx.upstreamIdleTimeoutMs,
      sendTimeoutMs: ctx.sendTimeoutMs,
      stallDeadlineMs: stall,
      busyStallDeadlineMs: ROUTER_DEFAULTS.busyStallFactor * stall,
      noTargetGiveUpMs: ctx.upstreamIdleTimeoutMs,
    };
    ttftByPrompt.clear();
    for (const call of active) call.checkDeadlines(now, ttft, limits);
  }, ROUTER_DEFAULTS.sweepMs);
  sweep.unref();
  return () => clearInterval(sweep);
}

function dedupe(urls: readonly string[]): string[] {
  return [...new Set(urls.map((u) => u.trim()).filter((u) => u.length > 0))];
}

/** `host:port` -> host (brackets of an IPv6 host dropped, as the id has none). */
function hostOf(id: string): string {
  return id.slice(0, id.lastIndexOf(':'));
}
