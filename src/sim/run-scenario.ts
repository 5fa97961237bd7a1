import { VirtualClock, createRng, type RequestRecord, type Timer } from '../core/index.js';
import { Engine, FaultSchedule, QUEUE_FULL, TOO_LONG, cachedBlockHashes, burstyStalls, getProfile, type FaultSpec } from '../engine/index.js';
import { classifyTrial, judgeGates, type GateResult, type ShapeVerdict, type WorkerSeries } from '../gate/index.js';
import { type DeadlineVerdict, type FlowTicket, type PolicyName, type Priority, type RouteRequest, type WorkerView } from '../routing/index.js';
import type { Summary } from '../stats/index.js';
import { DeadlineSweep, SWEEP_MS } from './deadline-sweep.js';
import { Frontend, routerDefaults } from './frontend.js';
import { eventsReport, oracleReport, type PrefixSource } from './kv-report.js';
import type { Scenario } from './scenario.js';
import { AttemptRoute, SimAttempts, SimRequests, type AttemptHost } from './sim-attempt.js';
import { explain, type Explanation } from './explain.js';
import { FleetSampler } from './fleet-sampler.js';
import { SimClients } from './sim-clients.js';
import { SimRecords } from './sim-records.js';

const NO_TENANT: FlowTicket = { tenant: '', priority: 'standard' };


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
  /** Requests shed by flow control (429). */
  shed?: number;
}

/** One tenant's figures in a {@link SimResult}. */
export interface TenantResult {
  name: string;
  priority: Priority;
  requests: number;
  errors: number;
  ttftP50Ms: number;
  ttftP99Ms: number;
}

/** The id of simulated worker `i`, shaped like every worker id in the project (`host:port`). */
export function simWorkerId(i: number): string {
  return `sim-${i}:8000`;
}

/** The index `i` of the simulated worker with id `simWorkerId(i)`, read from its digits. */
function simWorkerIndex(id: string): number {
  let i = 0;
  for (let k = 4; ; k++) {
    const d = id.charCodeAt(k) - 48;
    if (d < 0 || d > 9) return i;
    i = 10 * i + d;
  }
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
  let shed = 0;
  const ticketOf = (q: number): FlowTicket | undefined => (flowsOn ? tickets[requests.tenant(q)] ?? NO_TENANT : undefined);

  let redispatched = 0;
  let migrated = 0;
  let rejected = 0;
  /** Answer tokens that migrated continuations prefill again (for `explain`). */
  let redoneTokens = 0;

  // ---- the request path: replica -> dispatcher -> engine, and back ----

  // Requests are rows named by number (see sim-attempt.ts), reused once ended; a request's attempt
  // shares its row and number. A closed loop holds `concurrency` requests at once from its start.
  const inFlight = scenario.load.kind === 'closed' ? scenario.load.concurrency : 0;
  const requests = new SimRequests(keepChunks, inFlight);

  // What the clients record of each request as it ends.
  const sink = new SimRecords(requests, ids, opts.recordMode, tenantRng !== null, tenants.length);

  /** `worker`: the index of the worker that answered, or -1. */
  const finishRequest = (q: number, nowMs: number, worker: number, outcome: RequestRecord['outcome'], status: number | null, error: string | null): void => {
    sink.add(q, nowMs, worker, outcome, status, error);
    const tokens = requests.tokens(q);
    const phase = requests.phase(q);
    const tenant = requests.tenant(q);
    // (A last turn has no follow-up: its plan is not read, a cold read at fleet scale.)
    const followUp = requests.lastTurn(q) ? null : clients.workloadOf(tenant).followUp(requests.plans[q]!.cursor, outcome === 'ok', tokens);
    requests.free(q);
    clients.phaseDone(phase, followUp, tenant);
  };

  // Per replica, by worker index (read from the worker's id: a lookup in a map of the fleet's
  // workers, by id or by the dispatcher's view, was a cache miss per attempt): made at the first
  // attempt on that pair.
  const routesOf: (AttemptRoute | undefined)[][] = frontends.map(() => []);

  const host: AttemptHost = {
    attemptEnded(a, reason, nowMs) {
      attempts.end(a);
      const q = attempts.req(a);
      const route = attempts.route(a);
      const workerId = route.workerId;
      const fe = frontends[requests.replica(q)]!;
      fe.dispatcher.release(workerId, ticketOf(q));
      if (reason === 'length') {
        fe.success(route.worker);
        finishRequest(q, nowMs, route.worker, 'ok', 200, null);
      } else {
        finishRequest(q, nowMs, route.worker, 'aborted', null, 'aborted by the engine');
      }
    },
  };
  // The engines' caller for every attempt (an engine calls back with the attempt's number).
  const attempts = new SimAttempts(requests, host);

  // Per replica: how long after its start an attempt can first be due (its deadlines' fixed bounds).
  const firstLookMs = frontends.map((fe) => Math.min(fe.dispatcher.minDeadlineMs('ttft'), fe.dispatcher.minDeadlineMs('stall')));
  const startAttempt = (q: number, feIndex: number, w: WorkerView): void => {
    const fe = frontends[feIndex]!;
    const wi = simWorkerIndex(w.id);
    const routes = routesOf[feIndex]!;
    const route = (routes[wi] ??= attempts.addRoute(new AttemptRoute(wi, w.id, fe.dispatcher.stats(w.id)!, engines[wi]!)));
    const a = attempts.start(route, q, w.inflight, clock.now());
    const plan = requests.plans[q]!;
    // A migrated continuation's prompt also holds the answer so far (its prompt part still hits the
    // cache). Unless every chunk time is kept, tokens after the first go to the route's sink.
    const t = engines[wi]!.submitTo(attempts, a, plan.promptTokens + requests.tokens(q), attempts.maxTokens(a), plan.promptTokenIds, keepChunks ? undefined : route.sink);
    if (t === QUEUE_FULL || t === TOO_LONG) {
      attempts.end(a);
      fe.dispatcher.release(w.id, ticketOf(q));
      finishRequest(q, clock.now(), wi, 'http_error', t === QUEUE_FULL ? 429 : 400, t === QUEUE_FULL ? 'worker queue full' : 'prompt too long');
      return;
    }
    attempts.setTicket(a, t);
    if (fe.deadlinesOn && !requests.resent(q)) {
      sweeper.fileStarted(a, feIndex, clock.now() + firstLookMs[feIndex]!);
    }
  };

  // Prompts are hashed only for a policy that reads the hashes (prefix affinity), once per id array.
  const routeRequest = (q: number, hashSize: number | undefined): RouteRequest => {
    const plan = requests.plans[q]!;
    const promptTokens = plan.promptTokens + requests.tokens(q);
    if (hashSize === undefined) return { model: scenario.model, promptTokens };
    return { model: scenario.model, promptTokens, blockHashes: cachedBlockHashes(plan.promptTokenIds, hashSize) };
  };
  const NO_OPTIONS = {};

  const dispatch = (q: number, feIndex: number, exclude?: ReadonlySet<string>): void => {
    const fe = frontends[feIndex]!;
    const flow = flowsOn ? { flow: ticketOf(q)!, onShed: () => {
      shed++;
      finishRequest(q, clock.now(), -1, 'http_error', 429, 'shed');
    } } : undefined;
    // (The route request and this callback are garbage by the time the next scavenge comes, unless
    // the request waits in the queue.)
    const r = fe.dispatcher.submit(
      routeRequest(q, fe.dispatcher.policy.hashBlockSize),
      (w) => startAttempt(q, feIndex, w),
      exclude ? { exclude, resend: true, ...flow } : (flow ?? NO_OPTIONS),
    );
    if (r === 'rejected') {
      rejected++;
      finishRequest(q, clock.now(), -1, 'http_error', 429, 'router queue full');
    }
  };

  /** Cancels an attempt that hit a deadline and sends the request elsewhere (once per request), as the verdict says. */
  const resend = (a: number, feIndex: number, v: DeadlineVerdict): void => {
    const fe = frontends[feIndex]!;
    const q = attempts.req(a);
    const workerId = attempts.workerId(a);
    const kind = v.action === 'migrate' ? 'migrate' : 'redispatch';
    if (v.spendBudget) fe.dispatcher.tryResend();
    attempts.end(a);
    requests.markResent(q, kind);
    if (kind === 'redispatch') redispatched++;
    else {
      migrated++;
      redoneTokens += requests.tokens(q);
    }
    if (v.blame) fe.failure(attempts.route(a).worker);
    else if (kind === 'redispatch') fe.dispatcher.noteQueueing(workerId, attempts.position(a));
    engines[attempts.route(a).worker]!.abort(attempts.ticket(a));
    fe.dispatcher.release(workerId, ticketOf(q));
    dispatch(q, feIndex, new Set([workerId]));
  };
  // The routers' deadline sweeps (see deadline-sweep.ts).
  const sweeper = new DeadlineSweep(clock, frontends, attempts, requests, scenario.model, resend);


  // ---- clients: warm-up, then profiling, as bench/ does ----

  const clients = new SimClients(scenario, clock, rng, replicaRng, tenantRng, frontends.length, requests, dispatch);

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
    if (fe.deadlinesOn) every(SWEEP_MS, () => sweeper.sweep(i));
  });
  // the router's sweep also sheds the sheddable requests that waited past their deadline
  if (flowsOn && maxWaitMs !== undefined) for (const fe of frontends) every(SWEEP_MS, () => fe.dispatcher.shedExpired());
  const sampler = new FleetSampler(clock, ids, engines, frontends, opts.explain === true, () => redoneTokens);
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
    redispatched,
    migrated,
    rejected,
    ejections: frontends.reduce((sum, fe) => sum + fe.ejections, 0),
    preemptions,
    generatedTokens,
    prefixCacheHits,
    prefixCacheQueries,
    completed: clients.finished,
    ...(tenantRng !== null && {
      tenants: sink.tenants(tenants),
      shed,
    }),
    ...(explained
      ? { explanation: explain(explained, profile, engines[0]!.maxNumSeqs, generatedTokens > 0 ? prefillTokens / generatedTokens : 0, Number.isNaN(clients.profilingStartMs) ? 0 : clients.profilingStartMs, lastEndMs) }
      : {}),
  };
}
