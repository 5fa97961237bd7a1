import type { Rng } from '../core/index.js';
import { ROUTER_DEFAULTS } from './defaults.js';
import { FlowQueue, type FlowQueueOptions, type FlowQueueStat, type FlowTicket, type ShedReason } from './flow-queue.js';
import type { FleetLatency, RouteRequest, RoutingPolicy, WorkerPool, WorkerView } from './policy.js';
import { ResendBudget } from './resend-budget.js';
import { WorkerStats, fleetLatency } from './worker-stats.js';

/** A deadline setting: derived from recent latency, a fixed number of ms, or disabled. */
export type DeadlineSetting = 'auto' | number | 'off';

/** Options of a {@link Dispatcher}; every default is the documented router default. */
export interface DispatcherOptions {
  policy: RoutingPolicy;
  rng: Rng;
  /**
   * Requests a worker may hold at once; more wait in the dispatcher's FIFO queue. `auto`: a
   * multiple of the fair share over the workers that take a full share, so the cap bounds how much
   * one worker can hold without ever starving the fleet when a worker is out (see `capFactor`).
   * @default Infinity
   */
  maxInflightPerWorker?: number | 'auto';
  /**
   * `auto` cap = max(`capFloor`, ceil(capFactor x (in flight + queued) / full-share workers)).
   * Above 1 so the last requests still have a choice; full-share workers are routable and not
   * half-open. @default 1.25
   */
  capFactor?: number;
  /** @default 8 */
  capFloor?: number;
  /**
   * With the `auto` cap, how long a worker's learned slot count holds (see
   * {@link Dispatcher.missedFirstToken}); then it is forgotten and learned again if still true. @default 60000
   */
  slotsMemoryMs?: number;
  /**
   * Requests a half-open worker (suspected of stalling, or re-admitted after an ejection) may hold
   * until it produces a token or completes a request again. @default 1
   */
  halfOpenMaxInflight?: number;
  /** How long the fleet's typical latency is reused before it is recomputed (ms; needs `now`). @default 100 */
  fleetRefreshMs?: number;
  /**
   * The runtime's clock reading; when given, a worker's silence (for the adaptive policy and
   * stall checks) is counted from the later of its last token and its last idle-to-busy change.
   * @default the adaptive policy's `now`, if it has one
   */
  now?: () => number;
  /** Requests that may wait for room; one more is rejected. @default 4096 (ROUTER_DEFAULTS.maxQueue) */
  maxQueue?: number;
  /** Time to first content token before a request is re-dispatched. @default 'auto' */
  ttftDeadline?: DeadlineSetting;
  /** Silence mid-stream before a stream is migrated. @default 'auto' */
  stallDeadline?: DeadlineSetting;
  /** `auto` TTFT deadline = max(floor, factor x fleet TTFT x prompt-length factor). @default 3 */
  ttftDeadlineFactor?: number;
  /** @default 1000 */
  ttftDeadlineFloorMs?: number;
  /** `auto` stall deadline = max(floor, factor x fleet per-token latency). @default 20 */
  stallDeadlineFactor?: number;
  /** @default 1000 */
  stallDeadlineFloorMs?: number;
  /** `auto` deadline while the fleet has no latency data yet. @default 10000 */
  noDataDeadlineMs?: number;
  /** Long-run share of requests that may be sent twice. @default 0.1 */
  maxResendShare?: number;
  /** Re-sends allowed in a burst (e.g. when one worker with many streams stalls). @default 64 */
  resendBurst?: number;
  /**
   * A failed worker's streams (crashed, reset, stalled as a whole) move outside the re-send budget
   * while another worker has room for them ({@link Dispatcher.failureRescue}): the rescue is sized
   * to the failure, not to the budget's burst. Off: they spend the budget like any re-send. @default true
   */
  failureRescue?: boolean;
  /**
   * Flow control: waiting requests are ordered by priority band, then fairly between tenants (see
   * {@link FlowQueue}) instead of first come, first served, and a tenant below its weighted share of
   * the slots is lent one over a worker's cap (`lendSlots`); `maxQueue` bounds it unless it sets its own.
   * @default off (one FIFO queue)
   */
  flows?: FlowQueueOptions;
}

/** Per-submit options. */
export interface SubmitOptions {
  /** Workers this request must not go to (the one that failed or stalled it). */
  exclude?: ReadonlySet<string>;
  /** A re-send of an earlier request: it does not earn re-send budget. */
  resend?: boolean;
  /** Its tenant and priority, with flow control on. @default tenant '', priority 'standard' */
  flow?: FlowTicket;
  /**
   * Called when the request is shed (on arrival, before `submit` returns `shed`; or later, to make
   * room for a more urgent one, or past its deadline).
   */
  onShed?: (reason: ShedReason) => void;
}

/** Outcome of {@link Dispatcher.submit}: `shed` only with flow control on, for a sheddable request. */
export type SubmitResult = 'assigned' | 'queued' | 'rejected' | 'shed';

/**
 * A worker as the dispatcher keeps it: also the persistent view the policy reads at pick time
 * (updated in place, never copied per pick).
 */
class WorkerEntry implements WorkerView {
  readonly id: string;
  /** Its position in the dispatcher's list (shifts down when an earlier worker is removed). */
  index: number;
  models: ReadonlySet<string> | '*';
  healthy: boolean;
  inflight = 0;
  inflightPrefillTokens = 0;
  inflightDecodeTokens = 0;
  readonly stats = new WorkerStats();
  /** Half-open since this time (ms); NaN when it takes a full share. */
  halfOpenSinceMs = Number.NaN;
  /** Requests it was seen to run at once (Infinity: not learned), until when that holds. */
  slots = Number.POSITIVE_INFINITY;
  slotsUntilMs = Number.POSITIVE_INFINITY;

  constructor(id: string, index: number, models: ReadonlySet<string> | '*', healthy: boolean) {
    this.id = id;
    this.index = index;
    this.models = models;
    this.healthy = healthy;
  }

  get ttftMsEwma(): number {
    return this.stats.ttftMsEwma;
  }

  get itlMsEwma(): number {
    return this.stats.itlMsEwma;
  }

  get lastProgressMs(): number {
    return this.stats.silentSinceMs;
  }

  get model(): string {
    return firstModel(this);
  }

  get halfOpen(): boolean {
    return this.halfOpenSinceMs === this.halfOpenSinceMs;
  }

  /** Takes a full share: routable and not half-open. */
  get fullShare(): boolean {
    return this.healthy && !this.halfOpen;
  }
}

interface QueueEntry {
  req: RouteRequest;
  onAssign: (worker: WorkerView, lent: boolean) => void;
  exclude: ReadonlySet<string> | undefined;
  onShed: ((reason: ShedReason) => void) | undefined;
  ticket: FlowTicket;
}

const DEFAULT_TICKET: FlowTicket = { tenant: '', priority: 'standard' };
const NO_EXCLUDE: ReadonlySet<string> = new Set();
/** A worker silent for this many of its own token intervals longer than the fleet's latest token may be stalling: no slot is lent on it. */
const LEND_SILENCE_ITLS = 4;
const NO_REQUEST: RouteRequest = { model: '', promptTokens: 0 };
const NO_ASSIGN = (): void => {};

/**
 * Late binding in front of a fleet: counts in-flight per worker at pick time, caps it (a fixed
 * cap, or `auto`: a multiple of the fair share), keeps suspected workers half-open (one request
 * until they produce a token), and parks requests that find no worker with room in a bounded FIFO
 * queue until one has room. The policy reads persistent per-worker views through a
 * {@link WorkerPool}; nothing is copied per pick. Pure: the router drives it with the real clock,
 * the simulator with a virtual one; it never sets timers.
 *
 * @example
 * const d = new Dispatcher({ policy: createPolicy('adaptive'), rng: createRng(1), maxInflightPerWorker: 'auto' });
 * d.addWorker('10.0.0.1:8000', { models: ['Qwen/Qwen3-8B'] });
 * d.submit({ model: 'Qwen/Qwen3-8B', promptTokens: 128 }, (w) => send(w.id)); // 'assigned'
 * d.release('10.0.0.1:8000'); // when that request ends, whatever ended it
 */
export class Dispatcher {
  readonly policy: RoutingPolicy;
  readonly #rng: Rng;
  readonly #cap: number | 'auto';
  readonly #capFactor: number;
  readonly #capFloor: number;
  readonly #slotsMemoryMs: number;
  readonly #halfOpenMax: number;
  readonly #refreshMs: number;
  readonly #maxQueue: number;
  readonly #workers = new Map<string, WorkerEntry>();
  readonly #list: WorkerEntry[] = [];
  /** {@link models}, or null after a change (the router asks it once a request). */
  #models: readonly string[] | null = null;
  readonly #queue: QueueEntry[] = [];
  readonly #flows: FlowQueue<QueueEntry> | undefined;
  /** With flows: each queued request's entry, by request (for `cancel`). */
  readonly #flowEntries = new Map<RouteRequest, QueueEntry>();
  readonly #queuedByModel = new Map<string, number>();
  readonly #opts: DispatcherOptions;
  readonly #budget: ResendBudget;
  readonly #failureRescue: boolean;
  readonly #now: (() => number) | undefined;
  readonly #pool: PickPool;
  readonly #fleetCache = new Map<string, { atMs: number; fleet: FleetLatency }>();
  /**
   * The entry a submit first tries to place, filled in afresh each time; a request that must wait
   * gets one of its own (most are placed at once, and the simulator submits ~100k a simulated second).
   */
  readonly #probe: QueueEntry = { req: NO_REQUEST, onAssign: NO_ASSIGN, exclude: undefined, onShed: undefined, ticket: DEFAULT_TICKET };
  #totalInflight = 0;
  #fullShareWorkers = 0;
  #halfOpenWorkers = 0;
  /** Workers with learned slots (forgotten by #recheckAll). */
  #slotWorkers = 0;
  #recheckedAtMs = Number.NEGATIVE_INFINITY;
  /** The fleet's latest token, as of this round of lending. */
  #lendLatestMs = Number.NEGATIVE_INFINITY;
  #promptTokensEwma = Number.NaN;
  #draining = false;
  #drainAgain = false;

  constructor(opts: DispatcherOptions) {
    this.policy = opts.policy;
    this.#rng = opts.rng;
    this.#cap = opts.maxInflightPerWorker ?? Number.POSITIVE_INFINITY;
    this.#capFactor = opts.capFactor ?? ROUTER_DEFAULTS.capFactor;
    this.#capFloor = opts.capFloor ?? ROUTER_DEFAULTS.capFloor;
    this.#slotsMemoryMs = opts.slotsMemoryMs ?? 60_000;
    this.#halfOpenMax = opts.halfOpenMaxInflight ?? 1;
    this.#refreshMs = opts.fleetRefreshMs ?? 100;
    this.#maxQueue = opts.maxQueue ?? ROUTER_DEFAULTS.maxQueue;
    this.#flows = opts.flows && new FlowQueue({ maxQueue: this.#maxQueue, ...opts.flows });
    this.#opts = opts;
    this.#now = opts.now ?? (opts.policy as { now?: () => number }).now;
    this.#failureRescue = opts.failureRescue ?? true;
    this.#budget = new ResendBudget(opts.maxResendShare ?? ROUTER_DEFAULTS.maxResendShare, opts.resendBurst ?? ROUTER_DEFAULTS.resendBurst);
    // The policy's window on the persistent entries: no view is built or copied per pick.
    const list = this.#list;
    const eligible = (w: WorkerEntry, entry: QueueEntry, cap: number, lend: boolean): boolean => this.#eligible(w, entry, cap, lend);
    const fleet = (model: string): FleetLatency => this.#fleet(model);
    const workers = this.#workers;
    const mean = (): number => this.#totalInflight / Math.max(1, this.#fullShareWorkers);
    this.#pool = {
      entry: undefined,
      cap: Number.POSITIVE_INFINITY,
      lend: false,
      get size() {
        return list.length;
      },
      at: (i) => list[i]!,
      eligible(i) {
        return this.entry !== undefined && eligible(list[i]!, this.entry, this.cap, this.lend);
      },
      fleetLatency() {
        return fleet(this.entry?.req.model ?? ANY_MODEL);
      },
      indexOf: (id) => workers.get(id)?.index ?? -1,
      meanInflight: mean,
    };
  }

  /** Adds (or replaces the models of) a worker; `models` omitted means it serves any model. */
  addWorker(id: string, opts: { models?: readonly string[]; healthy?: boolean } = {}): void {
    const existing = this.#workers.get(id);
    const models = opts.models === undefined ? '*' : new Set(opts.models);
    if (existing) {
      existing.models = models;
      if (opts.healthy !== undefined) this.#setHealthyFlag(existing, opts.healthy);
    } else {
      const w = new WorkerEntry(id, this.#list.length, models, opts.healthy ?? true);
      this.#workers.set(id, w);
      this.#list.push(w);
      if (w.fullShare) this.#fullShareWorkers++;
    }
    this.#models = null;
    this.#fleetCache.clear();
    this.#drain();
  }

  /**
   * Removes a worker and everything kept about it: its counts, its latency record, the policy's
   * memory of it (so Kubernetes churn does not leak per-worker state). Refused (false) while
   * requests are in flight on it: release them first (a draining backend waits for that), or
   * while it is unknown. A worker added again later under the same id starts afresh.
   */
  removeWorker(id: string): boolean {
    const w = this.#workers.get(id);
    if (!w || w.inflight > 0) return false;
    if (w.halfOpen) this.#halfOpenWorkers--;
    else if (w.healthy) this.#fullShareWorkers--;
    if (w.slots !== Number.POSITIVE_INFINITY) this.#slotWorkers--;
    this.#workers.delete(id);
    this.#list.splice(w.index, 1);
    for (let i = w.index; i < this.#list.length; i++) this.#list[i]!.index = i;
    this.#models = null;
    this.#fleetCache.clear();
    this.policy.forget?.(id);
    return true;
  }

  /** Sets the models a worker serves (`undefined`: any). */
  setModels(id: string, models: readonly string[] | undefined): void {
    const w = this.#workers.get(id);
    if (!w) return;
    w.models = models === undefined ? '*' : new Set(models);
    this.#models = null;
    this.#fleetCache.clear();
    this.#drain();
  }

  /** Marks a worker routable or not (probe result, ejection); becoming routable drains the queue. */
  setHealthy(id: string, healthy: boolean): void {
    const w = this.#workers.get(id);
    if (!w || w.healthy === healthy) return;
    this.#setHealthyFlag(w, healthy);
    this.#fleetCache.clear();
    if (healthy) this.#drain();
  }

  /**
   * Admits a worker half-open (a circuit breaker's half-open state): it may hold at most
   * `halfOpenMaxInflight` requests until it produces a token or completes a request, then it
   * takes a full share again. For a worker suspected of stalling (a missed deadline, a failure)
   * and one re-admitted after an ejection, so an empty stalled worker cannot swallow a burst.
   */
  halfOpen(id: string): void {
    const w = this.#workers.get(id);
    if (!w) return;
    const since = this.#now ? this.#now() : w.stats.lastProgressMs;
    if (!w.halfOpen) {
      if (w.healthy) this.#fullShareWorkers--;
      this.#halfOpenWorkers++;
    }
    w.halfOpenSinceMs = Number.isFinite(since) ? since : -Number.MAX_VALUE;
  }

  /** A request on `id` completed: a half-open worker takes a full share again. */
  succeeded(id: string): void {
    const w = this.#workers.get(id);
    if (w?.halfOpen) this.#close(w);
  }

  /** True while `id` is half-open (it has produced no token since it was suspected or re-admitted). */
  isHalfOpen(id: string): boolean {
    const w = this.#workers.get(id);
    if (!w) return false;
    this.#recheck(w);
    return w.halfOpen;
  }

  /** The per-worker in-flight cap right now (the `auto` one follows the load). */
  get capacity(): number {
    const cap = this.#cap;
    if (cap !== 'auto') return cap;
    const demand = this.#totalInflight + this.queueLength;
    return Math.max(this.#capFloor, Math.ceil((this.#capFactor * demand) / Math.max(1, this.#fullShareWorkers)));
  }

  /** Worker ids in the order they were added. */
  workerIds(): string[] {
    return [...this.#workers.keys()];
  }

  /** The latency statistics of a worker (feed them with `recordTtft`, `recordItl`, `progress`). */
  stats(id: string): WorkerStats | undefined {
    return this.#workers.get(id)?.stats;
  }

  /**
   * A request sent to `id` at `sentMs` as its `position`-th in flight had no first token by its
   * deadline. Returns true when that counts against the worker: it sent no token to any stream
   * meanwhile (stalled, or worse). Otherwise the worker is queueing, not failing: it runs fewer than
   * `position` requests at once (vLLM's `max_num_seqs`, or what its KV cache holds), and with the
   * `auto` cap it then takes at most `position - 1` (not below `capFloor`) while the rest wait in
   * this queue for the first worker with a free slot, for `slotsMemoryMs`. Without that, two random
   * choices at a fleet's slot capacity leave requests a whole answer long in one worker's queue
   * while another has a slot free.
   */
  missedFirstToken(id: string, sentMs: number, position: number): boolean {
    if (!this.producedSince(id, sentMs)) return true;
    this.noteQueueing(id, position);
    return false;
  }

  /**
   * A request sent to a producing worker `id` as its `position`-th in flight had no first token by
   * its deadline: with the `auto` cap, the worker takes at most `position - 1` for a while (see
   * {@link Dispatcher.missedFirstToken}).
   */
  noteQueueing(id: string, position: number): void {
    const w = this.#workers.get(id);
    if (!w || this.#cap !== 'auto') return;
    const nowMs = this.#now ? this.#now() : Number.NaN;
    const slots = Math.max(this.#capFloor, position - 1);
    if (w.slots === Number.POSITIVE_INFINITY) this.#slotWorkers++;
    if (slots < w.slots || nowMs > w.slotsUntilMs) w.slots = slots;
    w.slotsUntilMs = Number.isNaN(nowMs) ? Number.POSITIVE_INFINITY : nowMs + this.#slotsMemoryMs;
  }

  /**
   * When `id` last sent a token to any of its requests, or, if later, last went from idle to busy:
   * where its silence starts (-Infinity for an unknown worker).
   */
  silentSinceMs(id: string): number {
    return this.#workers.get(id)?.stats.silentSinceMs ?? Number.NEGATIVE_INFINITY;
  }

  /** Whether `id` sent a token to any of its requests after `sinceMs` (false for an unknown worker). */
  producedSince(id: string, sinceMs: number): boolean {
    const w = this.#workers.get(id);
    return w !== undefined && w.stats.lastProgressMs > sinceMs;
  }

  /** The requests `id` was seen to run at once (null: none learned, or forgotten). */
  slots(id: string): number | null {
    const w = this.#workers.get(id);
    if (!w || w.slots === Number.POSITIVE_INFINITY || (this.#now && this.#now() > w.slotsUntilMs)) return null;
    return w.slots;
  }

  #forgetSlots(w: WorkerEntry): void {
    w.slots = w.slotsUntilMs = Number.POSITIVE_INFINITY;
    this.#slotWorkers--;
  }

  inflight(id: string): number {
    return this.#workers.get(id)?.inflight ?? 0;
  }

  /** Prompt tokens of the requests in flight on `id` before their first token (see `WorkerView.inflightPrefillTokens`). */
  inflightPrefillTokens(id: string): number {
    return this.#workers.get(id)?.inflightPrefillTokens ?? 0;
  }

  /** Output tokens of the requests in flight on `id` past their first token (see `WorkerView.inflightDecodeTokens`). */
  inflightDecodeTokens(id: string): number {
    return this.#workers.get(id)?.inflightDecodeTokens ?? 0;
  }

  /**
   * A request on `workerId` had its first token: its `prefillTokens` (the prompt tokens it was
   * submitted with) leave the worker's prefill count and its `decodeTokens` (the output it may still
   * generate: its `max_tokens` left, 0 when unknown) join its decode count, until it is released.
   */
  firstToken(workerId: string, prefillTokens: number, decodeTokens: number): void {
    const w = this.#workers.get(workerId);
    if (!w || w.inflight <= 0) return;
    w.inflightPrefillTokens = Math.max(0, w.inflightPrefillTokens - prefillTokens);
    w.inflightDecodeTokens += decodeTokens;
  }

  isHealthy(id: string): boolean {
    return this.#workers.get(id)?.healthy ?? false;
  }

  get totalInflight(): number {
    return this.#totalInflight;
  }

  get queueLength(): number {
    return this.#flows ? this.#flows.length : this.#queue.length;
  }

  /** With flow control on: requests waiting per tenant and priority; otherwise empty. */
  flowStats(): FlowQueueStat[] {
    return this.#flows?.stats() ?? [];
  }

  /** With flow control on: requests of `tenant` on a worker (what its share of the slots is weighed against); otherwise 0. */
  flowInflight(tenant: string): number {
    return this.#flows?.inflight(tenant) ?? 0;
  }

  /** With flow control on: applies new flow options (weights, bounds, aging), as from a reloaded config; `maxQueue` stays. */
  configureFlows(opts: FlowQueueOptions): void {
    this.#flows?.configure({ maxQueue: this.#maxQueue, ...opts });
  }

  /** With flow control on: sheds the sheddable requests that have waited past their deadline (their `onShed` is called). */
  shedExpired(): void {
    const flows = this.#flows;
    if (!flows || flows.length === 0) return;
    for (const entry of flows.expire(this.#nowMs())) this.#shed(entry, 'deadline');
  }

  /** True when a routable worker (other than the excluded ones) serves `model`, room or not. */
  canServe(model: string, exclude: ReadonlySet<string> = NO_EXCLUDE): boolean {
    for (const w of this.#list) if (w.healthy && !exclude.has(w.id) && serves(w, model)) return true;
    return false;
  }

  /** The routable worker (other than the excluded ones) serving `model` with the fewest requests in flight; undefined when none. */
  leastLoadedServer(model: string, exclude: ReadonlySet<string> = NO_EXCLUDE): string | undefined {
    let best: WorkerEntry | undefined;
    for (const w of this.#list) if (w.healthy && !exclude.has(w.id) && serves(w, model) && (best === undefined || w.inflight < best.inflight)) best = w;
    return best?.id;
  }

  /** Every model some worker announces (workers that serve any model are not listed); kept until a worker or its models change. */
  models(): readonly string[] {
    if (this.#models !== null) return this.#models;
    const out = new Set<string>();
    for (const w of this.#list) if (w.models !== '*') for (const m of w.models) out.add(m);
    return (this.#models = [...out]);
  }

  /** Snapshots of every worker as a policy sees them, for `model` (default: its first model). */
  views(model?: string): WorkerView[] {
    const out: WorkerView[] = [];
    for (const w of this.#list) out.push(view(w, model ?? firstModel(w), w.healthy));
    return out;
  }

  /**
   * Places a request: on a worker with room now (`onAssign` is called before this returns),
   * in the queue (`onAssign` is called later, from `release` or `setHealthy`), or nowhere when
   * the queue is full. The assigned worker's in-flight is already counted when `onAssign` runs;
   * it gets the worker itself, a live read-only view (not a copy: the simulator assigns ~100k
   * requests a simulated second), whose `model` is the worker's first, and `lent`: true when the
   * request went on a slot lent over the worker's cap (flow control).
   */
  submit(req: RouteRequest, onAssign: (worker: WorkerView, lent: boolean) => void, opts: SubmitOptions = {}): SubmitResult {
    if (!opts.resend) {
      this.#budget.earn();
      if (req.promptTokens > 0) {
        this.#promptTokensEwma = Number.isNaN(this.#promptTokensEwma) ? req.promptTokens : this.#promptTokensEwma + 0.05 * (req.promptTokens - this.#promptTokensEwma);
      }
    }
    const ticket = opts.flow ?? DEFAULT_TICKET;
    if ((this.#queuedByModel.get(req.model) ?? 0) === 0) {
      const probe = this.#probe;
      probe.req = req;
      probe.onAssign = onAssign;
      probe.exclude = opts.exclude;
      probe.onShed = opts.onShed;
      probe.ticket = ticket;
      const w = this.#place(probe);
      // (`onAssign` may submit again, which refills the probe: nothing reads it after this.)
      if (w) this.#assign(w, probe);
      // Let the request go: the probe would otherwise hold it until the next submit.
      probe.req = NO_REQUEST;
      probe.onAssign = NO_ASSIGN;
      probe.exclude = undefined;
      probe.onShed = undefined;
      probe.ticket = DEFAULT_TICKET;
      if (w) return 'assigned';
    }
    const entry: QueueEntry = { req, onAssign, exclude: opts.exclude, onShed: opts.onShed, ticket };
    if (this.#flows) return this.#submitFlow(this.#flows, entry);
    if (this.#queue.length >= this.#maxQueue) return 'rejected';
    this.#queue.push(entry);
    this.#queuedByModel.set(req.model, (this.#queuedByModel.get(req.model) ?? 0) + 1);
    return 'queued';
  }

  #submitFlow(flows: FlowQueue<QueueEntry>, entry: QueueEntry): SubmitResult {
    const r = flows.push(entry, entry.ticket, this.#nowMs());
    if (r.outcome === 'shed') entry.onShed?.(r.reason);
    if (r.outcome !== 'queued') return r.outcome;
    this.#flowEntries.set(entry.req, entry);
    this.#queuedByModel.set(entry.req.model, (this.#queuedByModel.get(entry.req.model) ?? 0) + 1);
    if (r.evicted) this.#shed(r.evicted.value, r.evicted.reason);
    // it may come before requests that wait for lack of a worker they may use
    this.#drain();
    return this.#flowEntries.has(entry.req) ? 'queued' : 'assigned';
  }

  /** Forgets an entry the flow queue shed and tells its owner. */
  #shed(entry: QueueEntry, reason: ShedReason): void {
    this.#flowEntries.delete(entry.req);
    this.#dequeued(entry.req.model);
    entry.onShed?.(reason);
  }

  #nowMs(): number {
    return this.#now ? this.#now() : 0;
  }

  /**
   * Releases one in-flight request of `workerId`, then gives the room to the oldest queued
   * request that can use it. With flow control on, `flow` is the ticket it was submitted with
   * (its tenant's in-flight count goes down). `prefillTokens` and `decodeTokens` are what it holds
   * of the worker's token counts (before its first token: its prompt tokens and 0; after: 0 and its
   * decode tokens, see {@link firstToken}). Returns false (and changes nothing) if nothing was in
   * flight there: the caller released twice, which callers must prevent.
   */
  release(workerId: string, flow?: FlowTicket, prefillTokens?: number, decodeTokens?: number): boolean {
    const w = this.#workers.get(workerId);
    if (!w || w.inflight <= 0) return false;
    // Without the request's own counts, its share of the worker's: the counts never drift, and are 0 when idle.
    const prefill = prefillTokens ?? w.inflightPrefillTokens / w.inflight;
    const decode = decodeTokens ?? w.inflightDecodeTokens / w.inflight;
    w.inflight--;
    w.inflightPrefillTokens = w.inflight === 0 ? 0 : Math.max(0, w.inflightPrefillTokens - prefill);
    w.inflightDecodeTokens = w.inflight === 0 ? 0 : Math.max(0, w.inflightDecodeTokens - decode);
    this.#totalInflight--;
    this.#flows?.finished((flow ?? DEFAULT_TICKET).tenant);
    if (this.queueLength > 0) this.#drain(w);
    return true;
  }

  /** Removes a queued request (client gone, queue timeout); false if it was not queued. */
  cancel(req: RouteRequest): boolean {
    if (this.#flows) {
      const entry = this.#flowEntries.get(req);
      if (entry === undefined || !this.#flows.remove(entry, this.#nowMs(), false)) return false;
      this.#flowEntries.delete(req);
      this.#dequeued(req.model);
      return true;
    }
    const i = this.#queue.findIndex((e) => e.req === req);
    if (i < 0) return false;
    this.#queue.splice(i, 1);
    this.#dequeued(req.model);
    return true;
  }

  recordTtft(workerId: string, ms: number): void {
    this.#workers.get(workerId)?.stats.recordTtft(ms);
  }

  recordItl(workerId: string, ms: number): void {
    this.#workers.get(workerId)?.stats.recordItl(ms);
  }

  /** A token arrived from `workerId` at `nowMs` (a half-open worker takes a full share again). */
  progress(workerId: string, nowMs: number): void {
    const w = this.#workers.get(workerId);
    if (!w) return;
    w.stats.progress(nowMs);
    if (w.halfOpen) this.#recheck(w);
  }

  /**
   * How long a request of `promptTokens` may wait for its first content token before it is
   * re-dispatched: `auto` = max(floor, factor x fleet median TTFT x max(1, prompt / mean prompt)).
   * Infinity when off.
   */
  ttftDeadlineMs(promptTokens: number): number {
    const s = this.#opts.ttftDeadline ?? 'auto';
    if (s === 'off') return Number.POSITIVE_INFINITY;
    if (typeof s === 'number') return s;
    const fleet = this.#fleet(ANY_MODEL);
    if (!(fleet.ttftMs >= 0)) return this.#opts.noDataDeadlineMs ?? 10_000;
    const lengthFactor = this.#promptTokensEwma > 0 ? Math.max(1, promptTokens / this.#promptTokensEwma) : 1;
    return Math.max(this.#opts.ttftDeadlineFloorMs ?? ROUTER_DEFAULTS.deadlineFloorMs, (this.#opts.ttftDeadlineFactor ?? 3) * fleet.ttftMs * lengthFactor);
  }

  /**
   * How long a stream may go without a token before it is migrated: `auto` = max(floor,
   * factor x fleet median per-token latency). Infinity when off.
   */
  stallDeadlineMs(): number {
    const s = this.#opts.stallDeadline ?? 'auto';
    if (s === 'off') return Number.POSITIVE_INFINITY;
    if (typeof s === 'number') return s;
    const fleet = this.#fleet(ANY_MODEL);
    if (!(fleet.itlMs >= 0)) return this.#opts.noDataDeadlineMs ?? 10_000;
    return Math.max(this.#opts.stallDeadlineFloorMs ?? ROUTER_DEFAULTS.deadlineFloorMs, (this.#opts.stallDeadlineFactor ?? 20) * fleet.itlMs);
  }

  /**
   * A time no deadline of this kind ever falls below, whatever the fleet does (Infinity when
   * off): a request younger or more recently heard from than this cannot be due yet.
   */
  minDeadlineMs(kind: 'ttft' | 'stall'): number {
    const s = (kind === 'ttft' ? this.#opts.ttftDeadline : this.#opts.stallDeadline) ?? 'auto';
    if (s === 'off') return Number.POSITIVE_INFINITY;
    if (typeof s === 'number') return s;
    const floor = (kind === 'ttft' ? this.#opts.ttftDeadlineFloorMs : this.#opts.stallDeadlineFloorMs) ?? ROUTER_DEFAULTS.deadlineFloorMs;
    return Math.min(this.#opts.noDataDeadlineMs ?? 10_000, floor);
  }

  /** Whether a failed worker's streams move outside the re-send budget (see {@link DispatcherOptions.failureRescue}). */
  get failureRescueOn(): boolean {
    return this.#failureRescue;
  }

  /**
   * Whether a stream of `fromWorkerId`, which failed under it (crashed, reset, stalled as a whole),
   * may move outside the re-send budget: failure rescue is on and another worker serving `model` has
   * room for it now. Each stream moved takes that room, so every stream of a failed worker moves
   * while the others have room, and none beyond it.
   */
  failureRescue(fromWorkerId: string, model: string): boolean {
    if (!this.#failureRescue) return false;
    const cap = this.capacity;
    for (const w of this.#list) if (w.id !== fromWorkerId && serves(w, model) && this.#hasRoom(w, cap)) return true;
    return false;
  }

  /** Whether the capped re-send budget has a re-send left (spends nothing). */
  resendBudgetLeft(): boolean {
    return this.#budget.available;
  }

  /**
   * Spends one re-send from the capped budget; false when the cap is reached. A stream migrating
   * from `fromWorkerId` while that worker is stalled as a whole (requests in flight, no token to any
   * of them for the stall deadline) goes without spending, with failure rescue on: its streams all move at once rather than
   * trickle out at the budget's rate (the seed's stall: about 3 s of 256 streams stuck, seen with
   * `simulate --explain`), and the budget still caps re-sends from workers that are merely slow.
   */
  tryResend(fromWorkerId?: string): boolean {
    if (fromWorkerId !== undefined && this.#failureRescue && this.stalledWhole(fromWorkerId)) return true;
    return this.#budget.trySpend();
  }

  /**
   * True when `id` has requests in flight and has sent no token to any of them for the stall
   * deadline, while another worker did send one within it: when every worker looks silent, the
   * router itself is likely stalled (a long pause of its event loop) and nothing moves in a burst.
   */
  stalledWhole(id: string): boolean {
    const w = this.#workers.get(id);
    if (!w || w.inflight === 0 || !this.#now) return false;
    const sinceMs = this.#now() - this.stallDeadlineMs();
    if (w.stats.silentSinceMs > sinceMs) return false;
    for (const o of this.#list) if (o !== w && o.stats.lastProgressMs > sinceMs) return true;
    return false;
  }

  /** Whether `w` may take `entry` now, with `cap` the full-share cap of this pick; `lend`: over its cap too (see {@link FlowQueue.borrowers}). */
  #eligible(w: WorkerEntry, entry: QueueEntry, cap: number, lend: boolean): boolean {
    if (!w.healthy || !serves(w, entry.req.model)) return false;
    if (entry.exclude !== undefined && entry.exclude.has(w.id)) return false;
    return lend ? this.#canLend(w, cap) : this.#hasRoom(w, cap);
  }

  /**
   * Whether `w` may take a request lent a slot: up to `lendSlots` over its cap (the fixed or `auto`
   * one, or its learned slots), only while it takes a full share and its last token is no more than
   * a few of its token intervals older than the fleet's latest, so a suspected, half-open or silent
   * (maybe stalling) worker is never lent one. Silence is measured against the fleet, not the clock:
   * after a pause of the router's own event loop every worker looks silent, and none is to blame.
   */
  #canLend(w: WorkerEntry, cap: number): boolean {
    const lend = this.#flows?.lendSlots ?? 0;
    if (!w.fullShare || w.inflight >= Math.min(cap, w.slots) + lend) return false;
    return w.inflight === 0 || this.#lendLatestMs - w.stats.lastProgressMs <= LEND_SILENCE_ITLS * w.stats.itlMsEwma;
  }

  /**
   * Starts a round of lending: notes the fleet's latest token and returns its slots (the caps of
   * the full-share workers), or 0 when no worker may be lent one (then no borrower is tried: at
   * fleet scale, a pick per waiting tenant on every release would be the cost).
   */
  #lendRound(cap: number): number {
    let slots = 0;
    let latest = Number.NEGATIVE_INFINITY;
    for (const w of this.#list) {
      if (w.fullShare) slots += Math.min(cap, w.slots);
      if (w.stats.lastProgressMs > latest) latest = w.stats.lastProgressMs;
    }
    this.#lendLatestMs = latest;
    for (const w of this.#list) if (this.#canLend(w, cap)) return slots;
    return 0;
  }

  #fleet(model: string): FleetLatency {
    const nowMs = this.#now?.();
    const hit = this.#fleetCache.get(model);
    if (hit && nowMs !== undefined && nowMs - hit.atMs < this.#refreshMs) return hit.fleet;
    const c: WorkerEntry[] = [];
    for (const w of this.#list) if (w.healthy && (model === ANY_MODEL || serves(w, model))) c.push(w);
    const fleet = fleetLatency(c);
    if (nowMs !== undefined) this.#fleetCache.set(model, { atMs: nowMs, fleet });
    return fleet;
  }

  #setHealthyFlag(w: WorkerEntry, healthy: boolean): void {
    if (w.healthy === healthy) return;
    if (w.fullShare) this.#fullShareWorkers--;
    w.healthy = healthy;
    if (w.fullShare) this.#fullShareWorkers++;
  }

  /** Closes a half-open worker that produced a token since it was opened. */
  #recheck(w: WorkerEntry): void {
    if (w.stats.lastProgressMs > w.halfOpenSinceMs) this.#close(w);
  }

  #close(w: WorkerEntry): void {
    w.halfOpenSinceMs = Number.NaN;
    this.#halfOpenWorkers--;
    if (w.healthy) this.#fullShareWorkers++;
  }

  /**
   * Now and then, closes every half-open worker that produced a token since and forgets slots
   * learned too long ago (picks and the queue see both lazily).
   */
  #recheckAll(): void {
    if ((this.#halfOpenWorkers === 0 && this.#slotWorkers === 0) || !this.#now) return;
    const nowMs = this.#now();
    if (nowMs - this.#recheckedAtMs < this.#refreshMs) return;
    this.#recheckedAtMs = nowMs;
    for (const w of this.#list) {
      if (w.halfOpen) this.#recheck(w);
      if (nowMs > w.slotsUntilMs) this.#forgetSlots(w);
    }
  }

  #place(entry: QueueEntry, lend = false): WorkerEntry | undefined {
    if (this.#list.length === 0) return undefined;
    this.#recheckAll();
    const want = entry.req.preferWorker;
    if (want !== undefined) {
      const w = this.#workers.get(want);
      if (w !== undefined && !w.halfOpen && this.#eligible(w, entry, this.capacity, lend) && !this.stalledWhole(want)) return w;
    }
    const pool = this.#pool;
    pool.entry = entry;
    pool.cap = this.capacity;
    pool.lend = lend;
    const v = this.policy.pickFrom(pool, entry.req, this.#rng);
    pool.entry = undefined;
    if (v === undefined) return undefined;
    // Policies pick from the pool's own entries: no lookup by id needed for those.
    return v instanceof WorkerEntry && this.#list[v.index] === v ? v : this.#workers.get(v.id);
  }

  #assign(w: WorkerEntry, entry: QueueEntry, lent = false): void {
    if (w.inflight === 0 && this.#now) w.stats.busySinceMs = this.#now();
    w.inflight++;
    w.inflightPrefillTokens += entry.req.promptTokens;
    this.#totalInflight++;
    this.#flows?.started(entry.ticket.tenant);
    this.policy.assigned?.(w.id, entry.req);
    entry.onAssign(w, lent);
  }

  #dequeued(model: string): void {
    const n = (this.#queuedByModel.get(model) ?? 1) - 1;
    if (n <= 0) this.#queuedByModel.delete(model);
    else this.#queuedByModel.set(model, n);
  }

  #hasRoom(w: WorkerEntry, cap: number): boolean {
    if (!w.healthy || w.inflight >= cap || w.inflight >= w.slots) return false;
    if (w.halfOpen && w.inflight >= this.#halfOpenMax) {
      this.#recheck(w);
      return !w.halfOpen;
    }
    return true;
  }

  #anyRoom(hint: WorkerEntry | undefined): boolean {
    const cap = this.capacity;
    if (hint && this.#hasRoom(hint, cap)) return true;
    for (const w of this.#list) if (this.#hasRoom(w, cap)) return true;
    return false;
  }

  #drain(hint?: WorkerEntry): void {
    if (this.#draining) {
      this.#drainAgain = true;
      return;
    }
    this.#draining = true;
    // Slots forgotten by now may make room for the waiters.
    if (this.#slotWorkers > 0) this.#recheckAll();
    try {
      do {
        this.#drainAgain = false;
        if (this.#flows) {
          this.#drainFlows(this.#flows, hint);
          continue;
        }
        let i = 0;
        while (i < this.#queue.length && this.#anyRoom(hint)) {
          const entry = this.#queue[i]!;
          const w = this.#place(entry);
          if (!w) {
            i++;
            continue;
          }
          this.#queue.splice(i, 1);
          this.#dequeued(entry.req.model);
          this.#assign(w, entry);
        }
      } while (this.#drainAgain);
    } finally {
      this.#draining = false;
    }
  }

  /**
   * Places waiting requests in flow order while some worker has room: the first placeable goes,
   * then the order is read afresh. When none has room, a tenant below its weighted share is lent
   * the next slot to free (see {@link FlowQueue.borrowers}).
   */
  #drainFlows(flows: FlowQueue<QueueEntry>, hint: WorkerEntry | undefined): void {
    while (flows.length > 0) {
      const nowMs = this.#nowMs();
      if (this.#anyRoom(hint) && this.#placeFirst(flows, flows.ordered(nowMs), nowMs, false)) continue;
      if (flows.lendSlots === 0) return;
      if (!this.#placeFirst(flows, flows.borrowers(nowMs, this.#lendRound(this.capacity)), nowMs, true)) return;
    }
  }

  /** Assigns the first of `entries` a worker takes (`lend`: over its cap); false if none. */
  #placeFirst(flows: FlowQueue<QueueEntry>, entries: Iterable<QueueEntry>, nowMs: number, lend: boolean): boolean {
    for (const entry of entries) {
      const w = this.#place(entry, lend);
      if (!w) continue;
      flows.remove(entry, nowMs);
      this.#flowEntries.delete(entry.req);
      this.#dequeued(entry.req.model);
      this.#assign(w, entry, lend);
      return true;
    }
    return false;
  }
}

const ANY_MODEL = '\u0000any';

/** The pool a policy picks from: the dispatcher's persistent entries, eligibility for one request. */
interface PickPool extends WorkerPool {
  entry: QueueEntry | undefined;
  cap: number;
  lend: boolean;
}

function serves(w: WorkerEntry, model: string): boolean {
  return w.models === '*' || w.models.has(model);
}

function firstModel(w: WorkerEntry): string {
  if (w.models === '*') return '*';
  for (const m of w.models) return m;
  return '';
}

function view(w: WorkerEntry, model: string, healthy: boolean): WorkerView {
  return {
    id: w.id,
    inflight: w.inflight,
    inflightPrefillTokens: w.inflightPrefillTokens,
    inflightDecodeTokens: w.inflightDecodeTokens,
    healthy,
    ttftMsEwma: w.stats.ttftMsEwma,
    itlMsEwma: w.stats.itlMsEwma,
    model,
    lastProgressMs: w.stats.silentSinceMs,
  };
}
