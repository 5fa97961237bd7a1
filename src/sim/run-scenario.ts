import { VirtualClock, createRng, type RequestRecord, type Timer } from '../core/index.js';
import { Engine, FaultSchedule, burstyStalls, getProfile, type FaultSpec } from '../engine/index.js';
import { classifyTrial, judgeGates, type GateResult, type ShapeVerdict, type WorkerSeries } from '../gate/index.js';
import type { FlowTicket, PolicyName, RequestSlo } from '../routing/index.js';
import type { Summary } from '../stats/index.js';
import { SWEEP_MS } from './deadline-sweep.js';
import { Frontend, routerDefaults } from './frontend.js';
import { eventsReport, oracleReport, type PrefixSource } from './kv-report.js';
import type { Scenario } from './scenario.js';
import { SimRequests } from './sim-attempt.js';
import { explain, type Explanation } from './explain.js';
import { FleetSampler } from './fleet-sampler.js';
import { SimClients } from './sim-clients.js';
import { SimRecords, type TenantResult } from './sim-records.js';
import { SimRequestPath } from './sim-request-path.js';

/** Options of {@link runScenario}. */
export interface SimOptions {
  /**
   * Keep every chunk time of every record. Off: `chunkMs` holds only the first and last chunk
   * (TTFT, request latency and ITL stay exact; inter-chunk gaps do not). @default true
   */
  keepChunks?: boolean;
  /**
   * `records`: every RequestRecord is kept and summarised by stats/. `summary`: the same summary,
   * to the last bit, built as records end without keeping them (Monte Carlo trials).
   * `histogram`: records are folded into histograms as they end (fleet scale: hundreds of
   * thousands of streams). @default 'records'
   */
  recordMode?: 'records' | 'summary' | 'histogram';
  /** Period of the per-worker in-flight samples (ms). @default 100 */
  sampleMs?: number;
  /** Stop simulating after this much virtual time (ms), whatever is left. @default 3_600_000 */
  maxSimulatedMs?: number;
  /** Work out where the lost tokens went (`SimResult.explanation`), from the in-flight samples. @default false */
  explain?: boolean;
  /** Where `prefix` learns the workers' caches (see `PrefixSource`). @default 'estimate' */
  prefixSource?: PrefixSource;
  /** With `prefixSource` 'events': how long after a step ends its KV events reach the router (ms). @default 0 */
  kvEventDelayMs?: number;
}

/** One simulated trial: the same records, summary, gates and shape as a live run. */
export interface SimResult {
  scenario: string;
  policy: PolicyName;
  seed: number;
  /** Every request (warm-up and profiling); empty in `summary` and `histogram` modes. */
  records: RequestRecord[];
  summary: Summary;
  gates: GateResult[];
  pass: boolean;
  shape: ShapeVerdict;
  /** Virtual time from the first request to the last response. */
  simulatedMs: number;
  /** Per worker, sampled every `sampleMs`: router in-flight (all replicas), engine running and waiting. */
  perWorkerInflight: Record<string, WorkerSeries>;
  /** The fault windows this trial applied (fixed ones plus the bursty draw). */
  faults: FaultSpec[];
  redispatched: number;
  migrated: number;
  /** Requests the router queue refused (429). */
  rejected: number;
  /** Workers ejected by the router replicas (summed over replicas; a worker ejected twice counts twice). */
  ejections: number;
  /** Requests the engines preempted (KV cache full; vLLM's `num_preemptions`). */
  preemptions: number;
  /** Output tokens the engines generated (all phases, including attempts later abandoned). */
  generatedTokens: number;
  /** Prompt tokens the engines' prefix caches served / were asked for (all phases; vLLM's counters). */
  prefixCacheHits: number;
  prefixCacheQueries: number;
  /** False when `maxSimulatedMs` stopped the run before every request ended. */
  completed: boolean;
  /** Where the profiling window's tokens went (with `explain`). */
  explanation?: Explanation;
  /** Per tenant, with `tenants` in the scenario: profiling requests, errors (shed included), TTFT p50 and p99 of the answered ones. */
  tenants?: TenantResult[];
  /** Requests shed by flow control (429): past their wait, or refused on arrival for a target no worker could meet. */
  shed?: number;
}

/** The id of simulated worker `i`, shaped like every worker id in the project (`host:port`). */
export function simWorkerId(i: number): string {
  return `sim-${i}:8000`;
}

/**
 * Runs one scenario under one policy with one seed, in virtual time: `workers` engines from
 * engine/ (with the profile and the faults), router replicas each with their own Dispatcher from
 * routing/ (cap, queue, deadlines, re-dispatch, migration, as the live router), and AIPerf-like
 * clients (warm-up, then profiling). Deterministic: the same arguments give the same result.
 *
 * @example
 * const r = runScenario(PRESETS['aicr-h100-stall']!, 'round-robin', 1);
 * r.summary.metrics['time_to_first_token']; r.shape.shape; // 'single-worker-backup'
 */
export function runScenario(scenario: Scenario, policy: PolicyName, seed: number, opts: SimOptions = {}): SimResult {
  const keepChunks = opts.keepChunks ?? true;
  const sampleMs = opts.sampleMs ?? 100;
  const maxSimulatedMs = opts.maxSimulatedMs ?? 3_600_000;
  const clock = new VirtualClock();
  const rng = createRng(seed);
  const profile = scenario.engineProfile ?? getProfile(scenario.profile);
  const n = scenario.workers;
  const ids = Array.from({ length: n }, (_, i) => simWorkerId(i));
  const source = opts.prefixSource ?? 'estimate';
  const events = source === 'events' ? eventsReport(clock, ids, opts.kvEventDelayMs ?? 0) : null;
  const engines = ids.map((id, i) => new Engine({ clock, profile, id, ...(events !== null && { kvEvents: events.sinks[i]! }), ...(scenario.maxNumSeqs !== undefined ? { maxNumSeqs: scenario.maxNumSeqs } : {}), ...(scenario.load.kind === 'closed' ? { expectedRequests: (1.125 * scenario.load.concurrency) / n } : {}) }));

  const faults = [...scenario.faults];
  const burstySeed = rng.int(0, 0x7fffffff);
  if (scenario.bursty) {
    faults.push(...burstyStalls({ seed: burstySeed, workers: n, durationMs: maxSimulatedMs, ...scenario.bursty }));
  }
  const schedule = new FaultSchedule(clock, faults, 0);
  schedule.bindEngines(engines);

  const tenants = scenario.tenants ?? [];
  const flowsOn = scenario.router.flows === true;
  const settings = routerDefaults(policy, scenario.router);
  if (source !== 'estimate') settings.cacheReport = events?.report ?? oracleReport(engines, ids);
  if (flowsOn) settings.flows = { weights: Object.fromEntries(tenants.map((t) => [t.name, t.weight])), ...(scenario.router.lendSlots !== undefined && { lendSlots: scenario.router.lendSlots }) };
  const maxWaitMs = scenario.router.sheddableMaxWaitMs;
  const frontends = Array.from({ length: scenario.router.replicas }, () => new Frontend(clock, policy, rng.fork(), ids, settings));
  const replicaRng = rng.fork();
  // drawn only with tenants, so a scenario without them keeps its random streams
  const tenantRng = tenants.length > 0 ? rng.fork() : null;
  const tickets = tenants.map((t): FlowTicket => ({ tenant: t.name, priority: t.priority, ...(t.priority === 'sheddable' && maxWaitMs !== undefined && { maxWaitMs }) }));

  // ---- the request path: replica -> dispatcher -> engine, and back ----

  // Requests are rows named by number (see sim-attempt.ts), reused once ended; a request's attempt
  // shares its row and number. A closed loop holds `concurrency` requests at once from its start.
  const inFlight = scenario.load.kind === 'closed' ? scenario.load.concurrency : 0;
  const requests = new SimRequests(keepChunks, inFlight);

  // What the clients record of each request as it ends.
  const sink = new SimRecords(requests, ids, opts.recordMode, tenantRng !== null, tenants.length);

  // Each tenant's latency targets (Infinity: none), read by the deadline sweep and SLO admission.
  const slos = tenants.map((t): RequestSlo => ({ ttftMs: t.sloTtftMs ?? Number.POSITIVE_INFINITY, tpotMs: t.sloTpotMs ?? Number.POSITIVE_INFINITY }));
  const path = new SimRequestPath(clock, scenario.model, engines, frontends, requests, sink, keepChunks, flowsOn ? tickets : null, slos);

  // ---- clients: warm-up, then profiling, as bench/ does ----

  const clients = new SimClients(scenario, clock, rng, replicaRng, tenantRng, frontends.length, requests, (q, feIndex) => path.dispatch(q, feIndex));
  path.clients = clients;

  // ---- periodic work: deadline sweeps and in-flight samples ----

  const timers: Timer[] = [];
  const every = (periodMs: number, fn: () => void): void => {
    const tick = (): void => {
      if (clients.finished) return;
      fn();
      timers[slot] = clock.setTimer(clock.now() + periodMs, tick);
    };
    const slot = timers.length;
    timers.push(clock.setTimer(clock.now() + periodMs, tick));
  };
  frontends.forEach((fe, i) => {
    // (a tenant's first-token target is watched by the sweep even where the router's deadlines are off)
    if (fe.deadlinesOn || slos.some((s) => Number.isFinite(s.ttftMs))) every(SWEEP_MS, () => path.sweeper.sweep(i));
  });
  // the router's sweep also sheds the sheddable requests that waited past their deadline
  if (flowsOn && maxWaitMs !== undefined) for (const fe of frontends) every(SWEEP_MS, () => fe.dispatcher.shedExpired());
  const sampler = new FleetSampler(clock, ids, engines, frontends, opts.explain === true, () => path.redoneTokens);
  const sample = (): void => sampler.sample();
  sample();
  every(sampleMs, sample);

  clients.start();
  // Slices of virtual time, so a bounded run stops close to its bound.
  while (!clients.finished && clock.now() < maxSimulatedMs && clock.pending > 0) clock.runUntil(Math.min(clock.now() + 250, maxSimulatedMs));
  if (!clients.finished) {
    sink.lastEndMs = Math.max(sink.lastEndMs, Math.min(clock.now(), maxSimulatedMs));
    sample();
  } else sampler.explainLast();
  let generatedTokens = 0;
  let prefixCacheHits = 0;
  let prefixCacheQueries = 0;
  let prefillTokens = 0;
  let preemptions = 0;
  for (const e of engines) {
    const st = e.stats();
    preemptions += st.preemptionsTotal;
    generatedTokens += st.generationTokensTotal;
    prefixCacheHits += st.prefixCacheHitsTotal;
    prefixCacheQueries += st.prefixCacheQueriesTotal;
    prefillTokens += st.prefillTokensTotal;
  }
  for (const t of timers) t.cancel();
  schedule.close();
  for (const e of engines) e.close();

  const perWorkerInflight = sampler.series();
  const explained = sampler.explained;
  const summary = sink.summary(perWorkerInflight);
  const lastEndMs = sink.lastEndMs;
  const gates = judgeGates(summary, scenario.gates);
  const shape = classifyTrial({ summary, gates, expectedWorkers: n, workerSeries: perWorkerInflight });
  return {
    scenario: scenario.name,
    policy,
    seed,
    records: sink.records,
    summary,
    gates,
    pass: gates.every((g) => g.pass),
    shape,
    simulatedMs: lastEndMs,
    perWorkerInflight,
    faults: schedule.faults.filter((f) => f.atMs < lastEndMs),
    redispatched: path.redispatched,
    migrated: path.migrated,
    rejected: path.rejected,
    ejections: frontends.reduce((sum, fe) => sum + fe.ejections, 0),
    preemptions,
    generatedTokens,
    prefixCacheHits,
    prefixCacheQueries,
    completed: clients.finished,
    ...(tenantRng !== null && {
      tenants: sink.tenants(tenants),
      shed: path.shed,
    }),
    ...(explained
      ? { explanation: explain(explained, profile, engines[0]!.maxNumSeqs, generatedTokens > 0 ? prefillTokens / generatedTokens : 0, Number.isNaN(clients.profilingStartMs) ? 0 : clients.profilingStartMs, lastEndMs) }
      : {}),
  };
}
