import type { RequestRecord, VirtualClock } from '../core/index.js';
import { QUEUE_FULL, TOO_LONG, cachedBlockHashes, type Engine } from '../engine/index.js';
import { sloRefusal, type DeadlineVerdict, type FlowTicket, type RequestSlo, type RouteRequest, type WorkerView } from '../routing/index.js';
import { DeadlineSweep } from './deadline-sweep.js';
import type { Frontend } from './frontend.js';
import { AttemptRoute, SimAttempts, type AttemptHost, type SimRequests } from './sim-attempt.js';
import type { SimClients } from './sim-clients.js';
import type { SimRecords } from './sim-records.js';

const NO_TENANT: FlowTicket = { tenant: '', priority: 'standard' };
const NO_OPTIONS = {};

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
 * The simulated request path: replica -> dispatcher -> engine, and back (an attempt's end, its
 * deadlines through the replicas' sweeps, a re-send elsewhere), with the counts the result reports.
 */
export class SimRequestPath implements AttemptHost {
  redispatched = 0;
  migrated = 0;
  rejected = 0;
  /** Requests the router shed (sheddable ones past their wait). */
  shed = 0;
  /** Answer tokens that migrated continuations prefill again (for `explain`). */
  redoneTokens = 0;
  /** The clients the ended requests go back to (set once made: they send through this path). */
  clients!: SimClients;
  // The engines' caller for every attempt (an engine calls back with the attempt's number).
  readonly attempts: SimAttempts;
  /** The routers' deadline sweeps (see deadline-sweep.ts). */
  readonly sweeper: DeadlineSweep;
  // Per replica, by worker index (read from the worker's id: a lookup in a map of the fleet's
  // workers, by id or by the dispatcher's view, was a cache miss per attempt): made at the first
  // attempt on that pair.
  private readonly routesOf: (AttemptRoute | undefined)[][];
  // Per replica: how long after its start an attempt can first be due (its deadlines' fixed bounds).
  private readonly firstLookMs: number[];

  /** `tickets`: by tenant, its flow ticket, with flows on (else null); `slos`: by tenant, its latency targets (none: Infinity). */
  constructor(
    private readonly clock: VirtualClock,
    private readonly model: string,
    private readonly engines: readonly Engine[],
    private readonly frontends: readonly Frontend[],
    private readonly requests: SimRequests,
    private readonly sink: SimRecords,
    private readonly keepChunks: boolean,
    private readonly tickets: readonly FlowTicket[] | null,
    private readonly slos: readonly RequestSlo[] = [],
  ) {
    this.attempts = new SimAttempts(requests, this);
    this.routesOf = frontends.map(() => []);
    this.firstLookMs = frontends.map((fe) => Math.min(fe.dispatcher.minDeadlineMs('ttft'), fe.dispatcher.minDeadlineMs('stall')));
    this.sweeper = new DeadlineSweep(clock, frontends, this.attempts, requests, model, (a, feIndex, v) => this.resend(a, feIndex, v), (q) => this.sloOf(q));
  }

  /** Request `q`'s first-token target (its tenant's; Infinity when none). */
  private sloOf(q: number): number {
    return this.slos.length === 0 ? Number.POSITIVE_INFINITY : this.slos[this.requests.tenant(q)]?.ttftMs ?? Number.POSITIVE_INFINITY;
  }

  private get flowsOn(): boolean {
    return this.tickets !== null;
  }

  private ticketOf(q: number): FlowTicket | undefined {
    return this.tickets === null ? undefined : this.tickets[this.requests.tenant(q)] ?? NO_TENANT;
  }

  /** `worker`: the index of the worker that answered, or -1. */
  private finishRequest(q: number, nowMs: number, worker: number, outcome: RequestRecord['outcome'], status: number | null, error: string | null): void {
    const { requests, sink, clients } = this;
    sink.add(q, nowMs, worker, outcome, status, error);
    const tokens = requests.tokens(q);
    const phase = requests.phase(q);
    const tenant = requests.tenant(q);
    // (A last turn has no follow-up: its plan is not read, a cold read at fleet scale.)
    const followUp = requests.lastTurn(q) ? null : clients.workloadOf(tenant).followUp(requests.plans[q]!.cursor, outcome === 'ok', tokens);
    requests.free(q);
    clients.phaseDone(phase, followUp, tenant);
  }

  /** An attempt's engine ended it (`reason` 'length': answered whole). */
  attemptEnded(a: number, reason: 'length' | 'abort', nowMs: number): void {
    const { attempts, requests, frontends } = this;
    attempts.end(a);
    const q = attempts.req(a);
    const route = attempts.route(a);
    const workerId = route.workerId;
    const fe = frontends[requests.replica(q)]!;
    this.release(fe, workerId, q, a);
    if (reason === 'length') {
      fe.success(route.worker);
      this.finishRequest(q, nowMs, route.worker, 'ok', 200, null);
    } else {
      this.finishRequest(q, nowMs, route.worker, 'aborted', null, 'aborted by the engine');
    }
  }

  /** Its first token: its replica's token counts of its worker move it from prefill to decode (its answer left). */
  attemptFirstToken(a: number): void {
    const { attempts, requests } = this;
    const q = attempts.req(a);
    this.frontends[requests.replica(q)]!.dispatcher.firstToken(attempts.workerId(a), this.promptTokens(q), attempts.maxTokens(a));
  }

  /** Releases attempt `a` of request `q` on `workerId` with what it holds of the worker's token counts. */
  private release(fe: Frontend, workerId: string, q: number, a: number): void {
    const first = this.attempts.hasFirstToken(a);
    fe.dispatcher.release(workerId, this.ticketOf(q), first ? 0 : this.promptTokens(q), first ? this.attempts.maxTokens(a) : 0);
  }

  /** The prompt request `q` is sent with: its own, and a migrated continuation's answer so far. */
  private promptTokens(q: number): number {
    // (from its row, not its plan: read at its first token and its end, a plan is a cold read at fleet scale)
    return this.requests.promptTokens(q) + this.requests.tokens(q);
  }

  private startAttempt(q: number, feIndex: number, w: WorkerView): void {
    const { frontends, routesOf, attempts, engines, clock, requests, keepChunks, sweeper, firstLookMs } = this;
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
      this.release(fe, w.id, q, a);
      this.finishRequest(q, clock.now(), wi, 'http_error', t === QUEUE_FULL ? 429 : 400, t === QUEUE_FULL ? 'worker queue full' : 'prompt too long');
      return;
    }
    attempts.setTicket(a, t);
    const slo = this.sloOf(q);
    if ((fe.deadlinesOn || slo !== Number.POSITIVE_INFINITY) && !requests.resent(q)) {
      sweeper.fileStarted(a, feIndex, clock.now() + Math.min(firstLookMs[feIndex]!, slo));
    }
  }

  // Prompts are hashed only for a policy that reads the hashes (prefix affinity), once per id array.
  private routeRequest(q: number, hashSize: number | undefined): RouteRequest {
    const promptTokens = this.promptTokens(q);
    if (hashSize === undefined) return { model: this.model, promptTokens };
    return { model: this.model, promptTokens, blockHashes: cachedBlockHashes(this.requests.plans[q]!.promptTokenIds, hashSize) };
  }

  /** Sends request `q` through router replica `feIndex` (`exclude`: a re-send, not to these workers). */
  dispatch(q: number, feIndex: number, exclude?: ReadonlySet<string>): void {
    const { frontends, clock, flowsOn } = this;
    const fe = frontends[feIndex]!;
    const ticket = flowsOn ? this.ticketOf(q)! : undefined;
    // A sheddable request whose tenant's targets no worker can meet is refused now, as the router does.
    if (ticket?.priority === 'sheddable' && !exclude && this.slos.length > 0) {
      const slo = this.slos[this.requests.tenant(q)];
      if (slo !== undefined && sloRefusal(fe.dispatcher, this.model, slo) !== undefined) {
        this.shed++;
        this.finishRequest(q, clock.now(), -1, 'http_error', 429, 'SLO unmeetable');
        return;
      }
    }
    const flow = ticket ? { flow: ticket, onShed: () => {
      this.shed++;
      this.finishRequest(q, clock.now(), -1, 'http_error', 429, 'shed');
    } } : undefined;
    // (The route request and this callback are garbage by the time the next scavenge comes, unless
    // the request waits in the queue.)
    const r = fe.dispatcher.submit(
      this.routeRequest(q, fe.dispatcher.policy.hashBlockSize),
      (w) => this.startAttempt(q, feIndex, w),
      exclude ? { exclude, resend: true, ...flow } : (flow ?? NO_OPTIONS),
    );
    if (r === 'rejected') {
      this.rejected++;
      this.finishRequest(q, clock.now(), -1, 'http_error', 429, 'router queue full');
    }
  }

  /** Cancels an attempt that hit a deadline and sends the request elsewhere (once per request), as the verdict says. */
  private resend(a: number, feIndex: number, v: DeadlineVerdict): void {
    const { frontends, attempts, requests, engines } = this;
    const fe = frontends[feIndex]!;
    const q = attempts.req(a);
    const workerId = attempts.workerId(a);
    const kind = v.action === 'migrate' ? 'migrate' : 'redispatch';
    if (v.spendBudget) fe.dispatcher.tryResend();
    attempts.end(a);
    requests.markResent(q, kind);
    if (kind === 'redispatch') this.redispatched++;
    else {
      this.migrated++;
      this.redoneTokens += requests.tokens(q);
    }
    if (v.blame) fe.failure(attempts.route(a).worker);
    else if (v.queueing) fe.dispatcher.noteQueueing(workerId, attempts.position(a));
    engines[attempts.route(a).worker]!.abort(attempts.ticket(a));
    this.release(fe, workerId, q, a);
    this.dispatch(q, feIndex, new Set([workerId]));
  }
}
