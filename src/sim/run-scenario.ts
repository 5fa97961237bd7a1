import { VirtualClock, createRng, type RequestRecord, type Timer } from '../core/index.js';
import { Engine, FaultSchedule, cachedBlockHashes, burstyStalls, getProfile, type FaultSpec } from '../engine/index.js';
import { classifyTrial, judgeGates, type GateResult, type ShapeVerdict, type WorkerSeries } from '../gate/index.js';
import type { FlowTicket, PolicyName, Priority, RouteRequest, WorkerView } from '../routing/index.js';
import { SummaryBuilder, percentile, summarize, type Summary } from '../stats/index.js';
import { arrivals } from '../workload/index.js';
import { Frontend, routerDefaults } from './frontend.js';
import type { Scenario } from './scenario.js';
import { AttemptRoute, SimAttempt, SimRequest, TimeRows, type AttemptHost, type ProgressSource } from './sim-attempt.js';
import { ExplainSamples, explain, type Explanation } from './explain.js';
import { StreamingSummary } from './streaming-summary.js';
import { SimWorkload, type TurnPlan } from './sim-workload.js';

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

/** The attempts one deadline sweep looks at: a list whose room is kept when it is emptied. */
class SweepSlot {
  readonly items: SimAttempt[] = [];
  length = 0;

  add(a: SimAttempt): void {
    if (this.length < this.items.length) this.items[this.length] = a;
    else this.items.push(a);
    this.length++;
  }
}

const ANY = (): boolean => true;

/**
 * The attempts past their first token that one router replica sent to one worker, watched for
 * silence as one: none can be silent for the stall deadline before its engine's oldest last token
 * time plus the deadline's floor, so the sweep looks at the group then, and at its attempts only
 * when that time is old enough. `filings[k]` is `items[k]`'s listing (a reused attempt's old
 * entries are stale); the list is compacted when it has doubled.
 */
class StreamWatch {
  readonly items: SimAttempt[] = [];
  readonly filings: number[] = [];
  length = 0;
  /** The length after the last compaction. */
  compacted = 0;
  /** The sweep it is filed under (-1: none). */
  key = -1;

  constructor(readonly engine: ProgressSource) {}

  add(a: SimAttempt, filing: number): void {
    if (this.length === this.items.length) {
      this.items.push(a);
      this.filings.push(filing);
    } else {
      this.items[this.length] = a;
      this.filings[this.length] = filing;
    }
    this.length++;
    if (this.length >= 2 * this.compacted + 64) this.keep(ANY);
  }

  /** Keeps the live, current entries `stay` says to keep, in order. */
  keep(stay: (a: SimAttempt) => boolean): void {
    const items = this.items;
    const filings = this.filings;
    let kept = 0;
    for (let k = 0; k < this.length; k++) {
      const a = items[k]!;
      if (a.watchFiling !== filings[k] || !a.live || !stay(a)) continue;
      items[kept] = a;
      filings[kept++] = filings[k]!;
    }
    this.length = this.compacted = kept;
  }
}

/** A record to fill in (the simulator's server counts are its client counts). */
function blankRecord(): RequestRecord {
  return {
    id: '', phase: 'profiling', worker: null, startMs: 0, firstTokenMs: null, chunkMs: [], endMs: 0,
    inputTokens: { client: 0, server: 0 }, outputTokens: { client: 0, server: 0 },
    outcome: 'ok', status: null, error: null, redispatched: false, migrated: false,
  };
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
  const profile = getProfile(scenario.profile);
  const n = scenario.workers;
  const ids = Array.from({ length: n }, (_, i) => simWorkerId(i));
  const engines = ids.map((id) => new Engine({ clock, profile, id, ...(scenario.maxNumSeqs !== undefined ? { maxNumSeqs: scenario.maxNumSeqs } : {}) }));
  const workerIndex = new Map(ids.map((id, i) => [id, i]));

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
  if (flowsOn) settings.flows = { weights: Object.fromEntries(tenants.map((t) => [t.name, t.weight])), ...(scenario.router.lendSlots !== undefined && { lendSlots: scenario.router.lendSlots }) };
  const maxWaitMs = scenario.router.sheddableMaxWaitMs;
  const frontends = Array.from({ length: scenario.router.replicas }, () => new Frontend(clock, policy, rng.fork(), ids, settings));
  const replicaRng = rng.fork();
  let replicaCursor = 0;
  // drawn only with tenants, so a scenario without them keeps its random streams
  const tenantRng = tenants.length > 0 ? rng.fork() : null;
  const shareTotal = tenants.reduce((a, t) => a + t.share, 0);
  const tickets = tenants.map((t): FlowTicket => ({ tenant: t.name, priority: t.priority, ...(t.priority === 'sheddable' && maxWaitMs !== undefined && { maxWaitMs }) }));
  const tenantStats = tenants.map(() => ({ requests: 0, errors: 0, ttftMs: [] as number[] }));
  const pickTenant = (): number => {
    if (tenantRng === null || scenario.load.kind === 'tenants') return 0;
    let x = tenantRng.next() * shareTotal;
    for (let i = 0; i < tenants.length - 1; i++) if ((x -= tenants[i]!.share) < 0) return i;
    return tenants.length - 1;
  };
  let shed = 0;
  const ticketOf = (req: SimRequest): FlowTicket | undefined => (flowsOn ? tickets[req.tenant] ?? NO_TENANT : undefined);

  // Sessions (and their token ids) are built once; requests draw them as bench does.
  const workload = new SimWorkload(scenario);
  // a tenant with its own prompt or answer lengths draws from its own dataset
  const workloads = tenants.map((t) => (t.inputTokens || t.outputTokens ? new SimWorkload({ ...scenario, inputTokens: t.inputTokens ?? scenario.inputTokens, outputTokens: t.outputTokens ?? scenario.outputTokens }) : workload));
  const workloadOf = (tenant: number): SimWorkload => workloads[tenant] ?? workload;

  const records: RequestRecord[] = [];
  const streaming = opts.recordMode === 'histogram' ? new StreamingSummary() : null;
  // Inter-chunk gaps (~2M a trial at seed scale) go through the 0.1% histogram: sorting them
  // exactly was a tenth of a trial's time, and no gate or shape reads them.
  const summaryOpts = { exactChunkGapLimit: 0 };
  const builder = opts.recordMode === 'summary' ? new SummaryBuilder(summaryOpts) : null;
  let redispatched = 0;
  let migrated = 0;
  let rejected = 0;
  /** Answer tokens that migrated continuations prefill again (for `explain`). */
  let redoneTokens = 0;
  let profilingStartMs = Number.NaN;
  let seq = 0;
  let lastEndMs = 0;

  // ---- the request path: replica -> dispatcher -> engine, and back ----

  // Finished requests and ended attempts, reused: at fleet scale, new objects for each were
  // promoted to the old generation (they live for the whole answer) and collected there.
  const spareRequests: SimRequest[] = [];
  const spareAttempts: SimAttempt[] = [];
  // A closed loop holds `concurrency` requests (and about as many attempts) at once from its start.
  const inFlight = scenario.load.kind === 'closed' ? scenario.load.concurrency : 0;
  const requestTimes = new TimeRows(3, inFlight);
  const attemptTimes = new TimeRows(4, inFlight);

  // Summary and histogram modes fold each record in as it ends and keep nothing of it, so one
  // record (and one first-and-last chunk list) serves every request: at fleet scale, a record and
  // its parts per request were most of what a run allocated.
  const reused: RequestRecord | null = streaming || builder ? blankRecord() : null;
  // By chunk count (none, first, first and last), written in place (emptying one array and
  // pushing again reallocated it for every request).
  const firstLast: number[][] = [[], [0], [0, 0]];

  const finishRequest = (req: SimRequest, nowMs: number, worker: string | null, outcome: RequestRecord['outcome'], status: number | null, error: string | null): void => {
    if (nowMs > lastEndMs) lastEndMs = nowMs;
    let chunkMs = req.chunks;
    if (chunkMs === null) {
      const n = Number.isNaN(req.firstTokenMs) ? 0 : req.tokens > 1 ? 2 : 1;
      chunkMs = reused ? firstLast[n]! : new Array<number>(n);
      if (n > 0) chunkMs[0] = req.firstTokenMs;
      if (n > 1) chunkMs[1] = req.lastTokenMs;
    }
    if (tenantRng !== null && req.phase === 'profiling') {
      const ts = tenantStats[req.tenant]!;
      ts.requests++;
      if (outcome !== 'ok') ts.errors++;
      else if (!Number.isNaN(req.firstTokenMs)) ts.ttftMs.push(req.firstTokenMs - req.startMs);
    }
    const rec = reused ?? blankRecord();
    rec.id = reused ? '' : `${req.phase}-${req.index}`;
    rec.phase = req.phase;
    rec.worker = worker;
    rec.startMs = req.startMs;
    rec.firstTokenMs = Number.isNaN(req.firstTokenMs) ? null : req.firstTokenMs;
    rec.chunkMs = chunkMs;
    rec.endMs = nowMs;
    rec.inputTokens.client = rec.inputTokens.server = req.plan.promptTokens;
    rec.outputTokens.client = rec.outputTokens.server = req.tokens;
    rec.outcome = outcome;
    rec.status = status;
    rec.error = error;
    rec.redispatched = req.redispatched;
    rec.migrated = req.migrated;
    if (streaming) streaming.add(rec);
    else if (builder) builder.add(rec);
    else records.push(rec);
    const followUp = workloadOf(req.tenant).followUp(req.plan.cursor, outcome === 'ok', req.tokens);
    const phase = req.phase;
    const tenant = req.tenant;
    spareRequests.push(req);
    phaseDone(phase, followUp, tenant);
  };

  // Per replica, per worker index: made at the first attempt on that pair.
  const routesOf: (AttemptRoute | undefined)[][] = frontends.map(() => []);

  const host: AttemptHost = {
    attemptEnded(a, reason, nowMs) {
      a.end();
      const fe = frontends[a.req.feIndex]!;
      fe.dispatcher.release(a.workerId, ticketOf(a.req));
      if (reason === 'length') {
        fe.success(a.workerId);
        finishRequest(a.req, nowMs, a.workerId, 'ok', 200, null);
      } else {
        finishRequest(a.req, nowMs, a.workerId, 'aborted', null, 'aborted by the engine');
      }
      spareAttempts.push(a);
    },
  };

  const startAttempt = (req: SimRequest, feIndex: number, w: WorkerView): void => {
    const fe = frontends[feIndex]!;
    const wi = workerIndex.get(w.id)!;
    const routes = routesOf[feIndex]!;
    const route = (routes[wi] ??= new AttemptRoute(host, wi, w.id, fe.dispatcher.stats(w.id)!, engines[wi]!));
    const a = spareAttempts.pop()?.restart(route, req, clock.now()) ?? new SimAttempt(attemptTimes, route, req, clock.now());
    a.position = w.inflight;
    const r = engines[wi]!.submit(a);
    if (!r.ok) {
      a.end();
      fe.dispatcher.release(w.id, ticketOf(req));
      finishRequest(req, clock.now(), w.id, 'http_error', r.reason === 'queue_full' ? 429 : 400, r.reason === 'queue_full' ? 'worker queue full' : 'prompt too long');
      spareAttempts.push(a);
      return;
    }
    a.ticket = r.ticket;
    if (fe.deadlinesOn && !req.resent) {
      // Its place in the order the router's sweep walks attempts in (the order they started).
      a.startSeq = startSeq++;
      fileForSweep(a, feIndex, clock.now() + Math.min(fe.dispatcher.minDeadlineMs('ttft'), fe.dispatcher.minDeadlineMs('stall')));
    }
  };

  // Prompts are hashed only for a policy that reads the hashes (prefix affinity), once per id array.
  const routeRequest = (req: SimRequest, hashSize: number | undefined): RouteRequest => {
    const promptTokens = req.plan.promptTokens + req.tokens;
    if (hashSize === undefined) return { model: scenario.model, promptTokens };
    return { model: scenario.model, promptTokens, blockHashes: cachedBlockHashes(req.plan.promptTokenIds, hashSize) };
  };
  const NO_OPTIONS = {};

  const dispatch = (req: SimRequest, feIndex: number, exclude?: ReadonlySet<string>): void => {
    const fe = frontends[feIndex]!;
    const flow = flowsOn ? { flow: ticketOf(req)!, onShed: () => {
      shed++;
      finishRequest(req, clock.now(), null, 'http_error', 429, 'shed');
    } } : undefined;
    // (The route request and this callback are garbage by the time the next scavenge comes, unless
    // the request waits in the queue: kept on the request object, 262144 of each were promoted.)
    const r = fe.dispatcher.submit(
      routeRequest(req, fe.dispatcher.policy.hashBlockSize),
      (w) => startAttempt(req, feIndex, w),
      exclude ? { exclude, resend: true, ...flow } : (flow ?? NO_OPTIONS),
    );
    if (r === 'rejected') {
      rejected++;
      finishRequest(req, clock.now(), null, 'http_error', 429, 'router queue full');
    }
  };

  /** Cancels an attempt that hit a deadline and sends the request elsewhere (once per request). */
  const resend = (a: SimAttempt, feIndex: number, kind: 'redispatch' | 'migrate'): void => {
    const fe = frontends[feIndex]!;
    const req = a.req;
    a.end();
    req.resent = true;
    if (kind === 'redispatch') {
      req.redispatched = true;
      redispatched++;
    } else {
      req.migrated = true;
      migrated++;
      redoneTokens += req.tokens;
    }
    if (kind === 'migrate' || fe.dispatcher.missedFirstToken(a.workerId, a.startMs, a.position)) fe.failure(a.workerId);
    engines[a.route.worker]!.abort(a.ticket);
    fe.dispatcher.release(a.workerId, ticketOf(req));
    dispatch(req, feIndex, new Set([a.workerId]));
    spareAttempts.push(a);
  };

  // The router's periodic deadline sweep (src/router/router.ts: every 50 ms). No deadline is
  // shorter than the dispatcher's bound, so each attempt is filed under the first sweep at which it
  // could be due and looked at from then on, not at every sweep (at fleet scale, looking at every
  // attempt 20 times a second was a third of the run); past its first token, an attempt is watched
  // with its route's others (StreamWatch), looked at only when its engine's oldest last token is
  // old enough (each stream once a second was most of what adaptive cost over p2c). What is due is
  // taken in the order the attempts started, as the router's sweep takes it, so the outcome is the same.
  const SWEEP_MS = 50;
  let startSeq = 0;
  // Per replica: attempts by the sweep (time / SWEEP_MS) that looks at them, and the last sweep done.
  const wheels = frontends.map(() => ({ slots: new Map<number, SweepSlot>(), watchSlots: new Map<number, StreamWatch[]>(), done: 0 }));
  // Per replica, per worker index: its attempts past their first token (see StreamWatch), made at the first.
  const watchesOf: (StreamWatch | undefined)[][] = frontends.map(() => []);
  let watchFilings = 0;
  const spareWatchLists: StreamWatch[][] = [];
  // Slots a sweep has emptied, reused (an array per slot, tens of thousands of entries long at
  // fleet scale, lived a second and was collected in the old generation).
  const spareSlots: SweepSlot[] = [];
  function fileForSweep(a: SimAttempt, feIndex: number, atMs: number): void {
    a.sweepKey = -1;
    a.watchFiling = -1;
    // Never due (that deadline is off): not filed at all.
    if (atMs === Number.POSITIVE_INFINITY) return;
    const wheel = wheels[feIndex]!;
    const key = Math.max(wheel.done + 1, Math.ceil(atMs / SWEEP_MS));
    a.sweepKey = key;
    a.sweepReplica = feIndex;
    let slot = wheel.slots.get(key);
    if (slot === undefined) {
      slot = spareSlots.pop() ?? new SweepSlot();
      wheel.slots.set(key, slot);
    }
    slot.add(a);
  }
  /**
   * Files `w` under the first sweep at or after `atMs` (unless it is filed under an earlier one):
   * no attempt it lists can be silent for the stall deadline before then.
   */
  function fileWatch(w: StreamWatch, feIndex: number, atMs: number): void {
    const wheel = wheels[feIndex]!;
    const key = Math.max(wheel.done + 1, Math.ceil(atMs / SWEEP_MS));
    if (w.key >= 0 && w.key <= key) return;
    w.key = key;
    let list = wheel.watchSlots.get(key);
    if (list === undefined) {
      list = spareWatchLists.pop() ?? [];
      wheel.watchSlots.set(key, list);
    }
    list.push(w);
  }
  /** Lists an attempt past its first token with its route's streams, watched from then on. */
  function watchStream(a: SimAttempt, feIndex: number, minStallMs: number): void {
    a.sweepKey = -1;
    // Never due (the stall deadline is off): not watched at all.
    if (minStallMs === Number.POSITIVE_INFINITY) return;
    const watches = watchesOf[feIndex]!;
    const w = (watches[a.route.worker] ??= new StreamWatch(a.route.engine));
    a.watchFiling = watchFilings++;
    w.add(a, a.watchFiling);
    // Its first token came at or before `seenMs` (perhaps before the watch was last filed).
    fileWatch(w, feIndex, a.seenMs + minStallMs);
  }
  const sweep = (feIndex: number): void => {
    const fe = frontends[feIndex]!;
    const d = fe.dispatcher;
    const now = clock.now();
    const wheel = wheels[feIndex]!;
    const stallMs = d.stallDeadlineMs();
    const minStallMs = d.minDeadlineMs('stall');
    const ttftByPrompt = new Map<number, number>();
    const due: [SimAttempt, 'redispatch' | 'migrate'][] = [];
    const last = Math.floor(now / SWEEP_MS + 1e-9);
    const first = wheel.done + 1;
    wheel.done = last;
    for (let key = first; key <= last; key++) {
      const slot = wheel.slots.get(key);
      if (slot === undefined) continue;
      wheel.slots.delete(key);
      const items = slot.items;
      for (let k = 0; k < slot.length; k++) {
        const a = items[k]!;
        // Ended, or filed again since (a reused attempt may be listed twice, or by another replica).
        // (A re-sent request's attempt is never filed, and a request is re-sent once its attempt
        // ended: checking these on the attempt alone spares a cold read of its request.)
        if (a.sweepKey !== key || a.sweepReplica !== feIndex || !a.live) continue;
        a.sweepKey = -1;
        if (!a.hasFirstToken) {
          const promptTokens = a.req.plan.promptTokens;
          let t = ttftByPrompt.get(promptTokens);
          if (t === undefined) ttftByPrompt.set(promptTokens, (t = d.ttftDeadlineMs(promptTokens)));
          if (now - a.startMs >= t) due.push([a, 'redispatch']);
          // Its deadline follows the fleet (looked at every sweep); its first token may come any time.
          else fileForSweep(a, feIndex, Number.isFinite(t) ? now + SWEEP_MS : now + minStallMs);
        } else if (a.silentFor(now, stallMs)) due.push([a, 'migrate']);
        else watchStream(a, feIndex, minStallMs);
      }
      slot.length = 0;
      spareSlots.push(slot);
    }
    for (let key = first; key <= last; key++) {
      const list = wheel.watchSlots.get(key);
      if (list === undefined) continue;
      wheel.watchSlots.delete(key);
      for (let k = 0; k < list.length; k++) {
        const w = list[k]!;
        // Filed again since (under a later sweep).
        if (w.key !== key) continue;
        w.key = -1;
        // Its attempts, only when one of them can have been silent that long.
        const oldest = w.engine.oldestTokenMs();
        let seen = oldest;
        if (now - oldest >= stallMs) {
          // (The oldest may be another replica's, or an attempt not watched: then the next look is
          // when one of these can be due, not at every sweep.)
          seen = Number.POSITIVE_INFINITY;
          w.keep((a) => {
            if (!a.silentFor(now, stallMs)) {
              if (a.seenMs < seen) seen = a.seenMs;
              return true;
            }
            a.watchFiling = -1;
            due.push([a, 'migrate']);
            return false;
          });
        }
        // Both bound every attempt listed (the engine's oldest bounds all its requests; `seen`, those kept).
        if (w.length > 0) fileWatch(w, feIndex, Math.max(oldest, seen) + minStallMs);
      }
      list.length = 0;
      spareWatchLists.push(list);
    }
    due.sort((x, y) => x[0].startSeq - y[0].startSeq);
    for (let k = 0; k < due.length; k++) {
      const a = due[k]![0];
      const kind = due[k]![1];
      if (!a.live) continue;
      // No other worker, or a spent re-send budget: due again at the next sweep.
      if (!d.canServe(scenario.model, new Set([a.workerId])) || !d.tryResend(kind === 'migrate' ? a.workerId : undefined)) fileForSweep(a, feIndex, now + SWEEP_MS);
      else resend(a, feIndex, kind);
    }
  };

  // ---- clients: warm-up, then profiling, as bench/ does ----

  const phaseCounts = { warmup: { issued: 0, done: 0, total: scenario.warmupRequestCount }, profiling: { issued: 0, done: 0, total: scenario.requestCount } };
  let currentPhase: RequestRecord['phase'] = scenario.warmupRequestCount > 0 ? 'warmup' : 'profiling';
  let finished = false;

  const issue = (phase: RequestRecord['phase'], tenant = pickTenant(), plan: TurnPlan = workloadOf(tenant).next()): void => {
    phaseCounts[phase].issued++;
    send(phase, plan, tenant);
  };

  const send = (phase: RequestRecord['phase'], plan: TurnPlan, tenant: number): void => {
    const i = seq++;
    const feIndex = scenario.router.replicaPick === 'random' ? replicaRng.int(0, frontends.length - 1) : replicaCursor++ % frontends.length;
    const req = (spareRequests.pop() ?? new SimRequest(requestTimes)).restart(i, phase, plan, clock.now(), keepChunks, feIndex);
    req.tenant = tenant;
    dispatch(req, feIndex);
  };

  /** Open loop: `tenant`'s requests (a drawn one each without tenant loads) at `ratePerS`, until the phase has sent its count. */
  const openLoop = (phase: RequestRecord['phase'], load: { ratePerS: number; mode: 'constant' | 'poisson' }, tenant?: number): void => {
    const pc = phaseCounts[phase];
    const times = arrivals({ ratePerS: load.ratePerS, mode: load.mode, seed: rng.int(0, 0x7fffffff), startMs: clock.now(), count: pc.total });
    const next = (): void => {
      const t = times.next();
      if (t.done) return;
      clock.setTimer(t.value, () => {
        if (pc.issued >= pc.total) return;
        issue(phase, tenant);
        next();
      });
    };
    next();
  };

  const closedLoop = (tenant: number): boolean => scenario.load.kind === 'closed' || (scenario.load.kind === 'tenants' && tenants[tenant]!.load!.kind === 'closed');
  const startPhase = (phase: RequestRecord['phase']): void => {
    currentPhase = phase;
    if (phase === 'profiling') profilingStartMs = clock.now();
    const pc = phaseCounts[phase];
    if (pc.total === 0) {
      phaseDone(phase);
      return;
    }
    if (scenario.load.kind === 'closed') {
      const burst = Math.min(scenario.load.concurrency, pc.total);
      for (let k = 0; k < burst; k++) issue(phase);
      return;
    }
    if (scenario.load.kind === 'tenants') {
      tenants.forEach((t, i) => {
        const load = t.load!;
        if (load.kind === 'rate') openLoop(phase, load, i);
        else for (let k = 0; k < load.concurrency && pc.issued < pc.total; k++) issue(phase, i);
      });
      return;
    }
    if (scenario.load.kind === 'schedule') {
      const due = workload.schedule(pc.total);
      const startMs = clock.now();
      let at = 0;
      const nextDue = (): void => {
        const session = due[at++];
        if (!session) return;
        clock.setTimer(startMs + session.timestampMs!, () => {
          issue(phase, pickTenant(), workload.first(session));
          nextDue();
        });
      };
      nextDue();
      return;
    }
    openLoop(phase, scenario.load);
  };

  function phaseDone(phase: RequestRecord['phase'], followUp: { delayMs: number; plan: TurnPlan } | null = null, tenant = 0): void {
    const pc = phaseCounts[phase];
    if (pc.total > 0) pc.done++;
    if (closedLoop(tenant) && pc.issued < pc.total) {
      // The slot goes on with its conversation's next turn after the think time, else a new session;
      // a slot of a tenant with its own load stays that tenant's.
      const own = scenario.load.kind === 'tenants' ? tenant : undefined;
      if (followUp === null) issue(phase, own);
      else if (followUp.delayMs <= 0) issue(phase, tenant, followUp.plan);
      else {
        pc.issued++;
        clock.setTimer(clock.now() + followUp.delayMs, () => send(phase, followUp.plan, tenant));
      }
    }
    if (pc.done < pc.total) return;
    if (phase === 'warmup' && currentPhase === 'warmup') startPhase('profiling');
    else if (phase === 'profiling') finished = true;
  }

  // ---- periodic work: deadline sweeps and in-flight samples ----

  const timers: Timer[] = [];
  const every = (periodMs: number, fn: () => void): void => {
    const tick = (): void => {
      if (finished) return;
      fn();
      timers[slot] = clock.setTimer(clock.now() + periodMs, tick);
    };
    const slot = timers.length;
    timers.push(clock.setTimer(clock.now() + periodMs, tick));
  };
  frontends.forEach((fe, i) => {
    if (fe.deadlinesOn) every(SWEEP_MS, () => sweep(i));
  });
  // the router's sweep also sheds the sheddable requests that waited past their deadline
  if (flowsOn && maxWaitMs !== undefined) for (const fe of frontends) every(SWEEP_MS, () => fe.dispatcher.shedExpired());
  const tMs: number[] = [];
  const inflight = ids.map(() => [] as number[]);
  const running = ids.map(() => [] as number[]);
  const waiting = ids.map(() => [] as number[]);
  const explained = opts.explain ? new ExplainSamples(n) : null;
  const sample = (): void => {
    tMs.push(clock.now());
    for (let w = 0; w < n; w++) {
      let c = 0;
      for (const fe of frontends) c += fe.dispatcher.inflight(ids[w]!);
      inflight[w]!.push(c);
      running[w]!.push(engines[w]!.running);
      waiting[w]!.push(engines[w]!.waiting);
    }
    explainSample();
  };
  function explainSample(): void {
    if (!explained) return;
    let queued = 0;
    for (const fe of frontends) queued += fe.dispatcher.queueLength;
    explained.add(clock.now(), queued, redoneTokens, (w) => {
      const e = engines[w]!;
      return { inflight: inflight[w]!.at(-1)!, running: e.running, slowFactor: e.stalled ? 0 : e.slowFactor, generated: e.stats().generationTokensTotal };
    });
  }
  sample();
  every(sampleMs, sample);

  startPhase(currentPhase);
  // Slices of virtual time, so a bounded run stops close to its bound.
  while (!finished && clock.now() < maxSimulatedMs && clock.pending > 0) clock.runUntil(Math.min(clock.now() + 250, maxSimulatedMs));
  if (!finished) {
    lastEndMs = Math.max(lastEndMs, Math.min(clock.now(), maxSimulatedMs));
    sample();
  } else if (explained && explained.tMs.at(-1)! < clock.now()) {
    // The last tokens came after the last periodic sample.
    inflight.forEach((s) => s.push(0));
    explainSample();
    inflight.forEach((s) => s.pop());
  }
  let generatedTokens = 0;
  let prefixCacheHits = 0;
  let prefixCacheQueries = 0;
  let prefillTokens = 0;
  for (const e of engines) {
    const st = e.stats();
    generatedTokens += st.generationTokensTotal;
    prefixCacheHits += st.prefixCacheHitsTotal;
    prefixCacheQueries += st.prefixCacheQueriesTotal;
    prefillTokens += st.prefillTokensTotal;
  }
  for (const t of timers) t.cancel();
  schedule.close();
  for (const e of engines) e.close();

  const perWorkerInflight: Record<string, WorkerSeries> = {};
  ids.forEach((id, w) => {
    perWorkerInflight[id] = { tMs, inflight: inflight[w]!, running: running[w]!, waiting: waiting[w]! };
  });
  let summary: Summary;
  if (streaming) summary = streaming.summary(perWorkerInflight);
  else if (builder) summary = builder.build();
  else summary = summarize(records, summaryOpts);
  const gates = judgeGates(summary, scenario.gates);
  const shape = classifyTrial({ summary, gates, expectedWorkers: n, workerSeries: perWorkerInflight });
  return {
    scenario: scenario.name,
    policy,
    seed,
    records,
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
    generatedTokens,
    prefixCacheHits,
    prefixCacheQueries,
    completed: finished,
    ...(tenantRng !== null && {
      tenants: tenants.map((t, i) => {
        const s = tenantStats[i]!;
        const sorted = Float64Array.from(s.ttftMs).sort();
        return { name: t.name, priority: t.priority, requests: s.requests, errors: s.errors, ttftP50Ms: percentile(sorted, 50), ttftP99Ms: percentile(sorted, 99) };
      }),
      shed,
    }),
    ...(explained
      ? { explanation: explain(explained, profile, engines[0]!.maxNumSeqs, generatedTokens > 0 ? prefillTokens / generatedTokens : 0, Number.isNaN(profilingStartMs) ? 0 : profilingStartMs, lastEndMs) }
      : {}),
  };
}
