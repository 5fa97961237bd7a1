/** A request's priority band, highest first. */
export type Priority = 'critical' | 'standard' | 'sheddable';

/** Every priority, in the order the queue serves them. */
export const PRIORITIES: readonly Priority[] = ['critical', 'standard', 'sheddable'];

/** Why a request was shed: the queue (or its tenant's share of it) was full, or its wait would pass its deadline. */
export type ShedReason = 'queue_full' | 'tenant_full' | 'deadline';

/** Who a waiting request belongs to and how urgent it is. */
export interface FlowTicket {
  tenant: string;
  priority: Priority;
  /** Longest queue wait it accepts (ms); a sheddable request that would wait longer is shed. @default Infinity */
  maxWaitMs?: number;
}

/** Options of a {@link FlowQueue}. */
export interface FlowQueueOptions {
  /** Weight of each tenant: its share of dispatches while others wait. */
  weights?: Readonly<Record<string, number>>;
  /** Weight of a tenant not in `weights`. @default 1 */
  defaultWeight?: number;
  /** Requests that may wait in all. @default 1024 */
  maxQueue?: number;
  /** Requests one tenant may have waiting. @default maxQueue */
  maxPerTenant?: number;
  /**
   * Waiting this long first in its tenant's line counts as one dispatch's worth of a weight-1
   * tenant's credit: a request kept waiting rises in its band, so none starves whatever the
   * weights (its wait behind its own tenant's earlier requests earns nothing: a deep backlog does
   * not outrank a newcomer). @default 1000
   */
  agingMs?: number;
  /**
   * Requests over a worker's cap that a tenant holding fewer than its weighted share of the
   * fleet's slots may be sent, per worker: the next slot to free is lent to it early, instead of
   * the wait for that slot (see {@link FlowQueue.borrowers}); 0 turns lending off. @default 1
   */
  lendSlots?: number;
}

/** Outcome of {@link FlowQueue.push}: the request waits (maybe evicting a sheddable one), or is shed, or refused. */
export type FlowPush<T> =
  | { outcome: 'queued'; evicted?: { value: T; reason: ShedReason } }
  | { outcome: 'shed'; reason: ShedReason }
  | { outcome: 'rejected'; reason: 'queue_full' | 'tenant_full' };

interface Item<T> {
  readonly value: T;
  readonly tenant: TenantState<T>;
  readonly band: number;
  readonly enqueuedMs: number;
  readonly maxWaitMs: number;
  /** Virtual start and finish tags (weighted fair queuing). */
  readonly startTag: number;
  readonly finishTag: number;
  /** Arrival order: breaks ties. */
  readonly seq: number;
}

interface TenantState<T> {
  readonly name: string;
  weight: number;
  /** Waiting items per band, oldest first. */
  readonly items: Item<T>[][];
  /** Finish tag of its last item per band. */
  readonly lastFinish: number[];
  /** Per band, since when its oldest item has been first in its line (the age that earns credit). */
  readonly headSinceMs: number[];
  queued: number;
}

/** Queue lengths of one tenant, per priority. */
export interface FlowQueueStat {
  tenant: string;
  priority: Priority;
  queued: number;
}

/**
 * The router's waiting room with flows: strict priority between bands (critical, standard,
 * sheddable); within a band, weighted fair queuing between tenants (start-time tags advanced by
 * 1/weight per request, so a tenant's share of dispatches follows its weight while others wait,
 * and an idle tenant's share goes to those waiting); an old request's age lowers its tag so
 * nothing starves. Bounded in all and per tenant; when full, a sheddable request is shed to make
 * room for a more urgent one, never the other way round. Pure: time comes in as arguments.
 *
 * @example
 * const q = new FlowQueue<string>({ weights: { a: 3, b: 1 } });
 * q.push('r1', { tenant: 'a', priority: 'standard' }, 0);
 * const next = q.ordered(5).next().value; // 'r1'
 * q.remove(next!, 5);
 */
export class FlowQueue<T> {
  #weights: Readonly<Record<string, number>> = {};
  #defaultWeight = 1;
  #maxQueue = 1024;
  #maxPerTenant = 1024;
  #agingMs = 1000;
  #lendSlots = 1;
  readonly #tenants = new Map<string, TenantState<T>>();
  readonly #items = new Map<T, Item<T>>();
  /** Requests of each tenant on a worker (every band), as the dispatcher reports them. */
  readonly #inflight = new Map<string, number>();
  readonly #bandCount = [0, 0, 0];
  /** Virtual time per band: the start tag of the last request dispatched from it. */
  readonly #virtual = [0, 0, 0];
  #dispatchIntervalMs = Number.NaN;
  #lastDispatchMs = Number.NaN;
  #backloggedSinceMs = Number.NaN;
  #seq = 0;

  constructor(opts: FlowQueueOptions = {}) {
    this.configure(opts);
  }

  /** Applies new options (a reloaded config): waiting requests keep their place, their tenants take the new weights from now on. */
  configure(opts: FlowQueueOptions): void {
    this.#weights = opts.weights ?? {};
    this.#defaultWeight = positive(opts.defaultWeight, 1);
    this.#maxQueue = opts.maxQueue ?? 1024;
    this.#maxPerTenant = opts.maxPerTenant ?? this.#maxQueue;
    this.#agingMs = positive(opts.agingMs, 1000);
    this.#lendSlots = opts.lendSlots !== undefined && opts.lendSlots >= 0 ? Math.floor(opts.lendSlots) : 1;
    for (const t of this.#tenants.values()) t.weight = this.weight(t.name);
  }

  /** Requests waiting. */
  get length(): number {
    return this.#items.size;
  }

  has(value: T): boolean {
    return this.#items.has(value);
  }

  /** Requests over a worker's cap that may be lent to a tenant below its share (see {@link borrowers}). */
  get lendSlots(): number {
    return this.#lendSlots;
  }

  /** A request of `tenant` went to a worker. */
  started(tenant: string): void {
    this.#inflight.set(tenant, (this.#inflight.get(tenant) ?? 0) + 1);
  }

  /** A request of `tenant` left its worker, whatever ended it. */
  finished(tenant: string): void {
    const n = (this.#inflight.get(tenant) ?? 0) - 1;
    if (n > 0) this.#inflight.set(tenant, n);
    else this.#inflight.delete(tenant);
  }

  /** Requests of `tenant` on a worker. */
  inflight(tenant: string): number {
    return this.#inflight.get(tenant) ?? 0;
  }

  /** The weight a tenant gets. */
  weight(tenant: string): number {
    return positive(this.#weights[tenant], this.#defaultWeight);
  }

  /**
   * Adds a request at `nowMs`. A full queue (or tenant) evicts its newest sheddable request for a
   * more urgent one; a sheddable request finding it full, or whose predicted wait passes its
   * `maxWaitMs`, is shed; a more urgent one finding nothing to evict is rejected.
   */
  push(value: T, ticket: FlowTicket, nowMs: number): FlowPush<T> {
    const band = PRIORITIES.indexOf(ticket.priority);
    const maxWaitMs = ticket.maxWaitMs ?? Number.POSITIVE_INFINITY;
    const sheddable = ticket.priority === 'sheddable';
    const tenant = this.#tenants.get(ticket.tenant);
    let evicted: { value: T; reason: ShedReason } | undefined;
    const full = (tenant?.queued ?? 0) >= this.#maxPerTenant ? 'tenant_full' : this.#items.size >= this.#maxQueue ? 'queue_full' : null;
    if (full !== null) {
      if (sheddable) return { outcome: 'shed', reason: full };
      const victim = full === 'tenant_full' ? newestSheddable(tenant) : this.#sheddableVictim();
      if (victim === undefined) return { outcome: 'rejected', reason: full };
      this.remove(victim.value, nowMs, false);
      evicted = { value: victim.value, reason: full };
    }
    if (sheddable && maxWaitMs < Number.POSITIVE_INFINITY && this.predictedWaitMs(ticket.tenant, ticket.priority) > maxWaitMs) {
      return evicted ? { outcome: 'queued', evicted } : { outcome: 'shed', reason: 'deadline' };
    }
    const t = tenant ?? this.#tenant(ticket.tenant);
    const startTag = Math.max(this.#virtual[band]!, t.lastFinish[band]!);
    const finishTag = startTag + 1 / t.weight;
    t.lastFinish[band] = finishTag;
    const item: Item<T> = { value, tenant: t, band, enqueuedMs: nowMs, maxWaitMs, startTag, finishTag, seq: this.#seq++ };
    if (t.items[band]!.length === 0) t.headSinceMs[band] = nowMs;
    t.items[band]!.push(item);
    t.queued++;
    this.#bandCount[band]!++;
    if (this.#items.size === 0) this.#backloggedSinceMs = nowMs;
    this.#items.set(value, item);
    return evicted ? { outcome: 'queued', evicted } : { outcome: 'queued' };
  }

  /**
   * Waiting requests in the order they should be dispatched at `nowMs`: bands in priority order;
   * within a band, tenants interleaved by finish tag less the age credit of the tenant's first in
   * line, each tenant's oldest first.
   * Lazy: the caller takes the first it can place, then calls {@link remove} with `dispatched`.
   */
  *ordered(nowMs: number): Generator<T, void, undefined> {
    for (let band = 0; band < PRIORITIES.length; band++) {
      if (this.#bandCount[band] === 0) continue;
      const lists: Item<T>[][] = [];
      const credits: number[] = [];
      for (const t of this.#tenants.values()) {
        if (t.items[band]!.length === 0) continue;
        lists.push(t.items[band]!);
        credits.push(this.#credit(t, band, nowMs));
      }
      const next = lists.map(() => 0);
      for (;;) {
        let best = -1;
        let bestKey = Number.POSITIVE_INFINITY;
        let bestSeq = 0;
        for (let i = 0; i < lists.length; i++) {
          const item = lists[i]![next[i]!];
          if (item === undefined) continue;
          const key = item.finishTag - credits[i]!;
          if (best < 0 || key < bestKey || (key === bestKey && item.seq < bestSeq)) {
            best = i;
            bestKey = key;
            bestSeq = item.seq;
          }
        }
        if (best < 0) break;
        const item = lists[best]![next[best]!]!;
        next[best]!++;
        yield item.value;
      }
    }
  }

  /**
   * Takes a request out: `dispatched` (the default) when it goes to a worker, which advances its
   * band's virtual time; false when it was cancelled or shed. False if it was not waiting.
   */
  remove(value: T, nowMs: number, dispatched = true): boolean {
    const item = this.#items.get(value);
    if (item === undefined) return false;
    this.#items.delete(value);
    const t = item.tenant;
    const list = t.items[item.band]!;
    const at = list.indexOf(item);
    list.splice(at, 1);
    if (at === 0) t.headSinceMs[item.band] = nowMs;
    t.queued--;
    this.#bandCount[item.band]!--;
    if (t.queued === 0) this.#tenants.delete(t.name);
    if (dispatched) {
      this.#virtual[item.band] = Math.max(this.#virtual[item.band]!, item.startTag);
      const since = Math.max(this.#lastDispatchMs, this.#backloggedSinceMs);
      if (since === since && nowMs >= since) {
        const gap = nowMs - since;
        this.#dispatchIntervalMs = this.#dispatchIntervalMs === this.#dispatchIntervalMs ? this.#dispatchIntervalMs + 0.1 * (gap - this.#dispatchIntervalMs) : gap;
      }
      this.#lastDispatchMs = nowMs;
    }
    if (this.#items.size === 0) this.#backloggedSinceMs = Number.NaN;
    return true;
  }

  /**
   * The waiting requests that may be sent over a worker's cap at `nowMs`, best first: the oldest
   * request of each tenant, in the most urgent band that has any, whose tenant holds fewer requests
   * in flight than its weighted share of `fleetSlots` (the share among tenants with requests
   * waiting or in flight). Weighted fair queuing would give such a tenant the next slot to free
   * anyway; lending it early spares it the wait for that slot, and the tenants over their share,
   * who pay it back with that slot, lose nothing they would have had. Empty with lending off.
   */
  borrowers(nowMs: number, fleetSlots: number): T[] {
    if (this.#lendSlots === 0 || this.#items.size === 0 || !(fleetSlots > 0)) return [];
    const band = this.#bandCount.findIndex((n) => n > 0);
    let weights = 0;
    for (const t of this.#tenants.values()) weights += t.weight;
    for (const name of this.#inflight.keys()) if (!this.#tenants.has(name)) weights += this.weight(name);
    const heads: { item: Item<T>; key: number }[] = [];
    for (const t of this.#tenants.values()) {
      const item = t.items[band]![0];
      if (item !== undefined && this.inflight(t.name) < (fleetSlots * t.weight) / weights) heads.push({ item, key: item.finishTag - this.#credit(t, band, nowMs) });
    }
    return heads.sort((a, b) => a.key - b.key || a.item.seq - b.item.seq).map((h) => h.item.value);
  }

  /** Sheddable requests that have waited past their `maxWaitMs` at `nowMs`, taken out of the queue. */
  expire(nowMs: number): T[] {
    const band = PRIORITIES.indexOf('sheddable');
    if (this.#bandCount[band] === 0) return [];
    const out: T[] = [];
    for (const t of [...this.#tenants.values()]) {
      for (const item of [...t.items[band]!]) if (nowMs - item.enqueuedMs > item.maxWaitMs) out.push(item.value);
    }
    for (const v of out) this.remove(v, nowMs, false);
    return out;
  }

  /**
   * The wait (ms) a request of `tenant` at `priority` would have if it came now: the requests
   * dispatched before it (more urgent bands; in its band, each tenant's weighted share up to its
   * own turn) times the recent interval between dispatches; 0 while that is unknown.
   */
  predictedWaitMs(tenant: string, priority: Priority): number {
    if (!(this.#dispatchIntervalMs > 0)) return 0;
    const band = PRIORITIES.indexOf(priority);
    let ahead = 0;
    for (let b = 0; b < band; b++) ahead += this.#bandCount[b]!;
    const own = this.#tenants.get(tenant)?.items[band]!.length ?? 0;
    const turns = (own + 1) / this.weight(tenant);
    for (const t of this.#tenants.values()) {
      if (t.name !== tenant) ahead += Math.min(t.items[band]!.length, Math.ceil(turns * t.weight));
    }
    return (ahead + own) * this.#dispatchIntervalMs;
  }

  /** Requests waiting per tenant and priority (only non-zero entries). */
  stats(): FlowQueueStat[] {
    const out: FlowQueueStat[] = [];
    for (const t of this.#tenants.values()) {
      for (let b = 0; b < PRIORITIES.length; b++) if (t.items[b]!.length > 0) out.push({ tenant: t.name, priority: PRIORITIES[b]!, queued: t.items[b]!.length });
    }
    return out;
  }

  /** The newest sheddable request of the tenant with the most waiting per unit of weight. */
  #sheddableVictim(): Item<T> | undefined {
    let best: Item<T> | undefined;
    let bestLoad = -1;
    for (const t of this.#tenants.values()) {
      const v = newestSheddable(t);
      if (v === undefined) continue;
      const load = t.queued / t.weight;
      if (load > bestLoad) {
        best = v;
        bestLoad = load;
      }
    }
    return best;
  }

  /** The age credit of `t`'s first in line in `band`. */
  #credit(t: TenantState<T>, band: number, nowMs: number): number {
    return Math.max(0, nowMs - t.headSinceMs[band]!) / this.#agingMs;
  }

  #tenant(name: string): TenantState<T> {
    const t: TenantState<T> = { name, weight: this.weight(name), items: PRIORITIES.map(() => []), lastFinish: PRIORITIES.map(() => 0), headSinceMs: PRIORITIES.map(() => 0), queued: 0 };
    this.#tenants.set(name, t);
    return t;
  }
}

function newestSheddable<T>(t: TenantState<T> | undefined): Item<T> | undefined {
  return t?.items[PRIORITIES.length - 1]!.at(-1);
}

function positive(v: number | undefined, fallback: number): number {
  return v !== undefined && v > 0 && Number.isFinite(v) ? v : fallback;
}
