import type { Rng } from '../core/index.js';
import type { RouteRequest, RoutingPolicy, WorkerView } from './policy.js';
import { ResendBudget } from './resend-budget.js';
import { WorkerStats, fleetLatency } from './worker-stats.js';

/** A deadline setting: derived from recent latency, a fixed number of ms, or disabled. */
export type DeadlineSetting = 'auto' | number | 'off';

/** Options of a {@link Dispatcher}; every default is the documented router default. */
export interface DispatcherOptions {
  policy: RoutingPolicy;
  rng: Rng;
  /** Requests a worker may hold at once; more wait in the dispatcher's FIFO queue. @default Infinity */
  maxInflightPerWorker?: number;
  /**
   * The runtime's clock reading; when given, a worker's silence (for the adaptive policy and
   * stall checks) is counted from the later of its last token and its last idle-to-busy change.
   * @default the adaptive policy's `now`, if it has one
   */
  now?: () => number;
  /** Requests that may wait for room; one more is rejected. @default 1024 */
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
}

/** Per-submit options. */
export interface SubmitOptions {
  /** Workers this request must not go to (the one that failed or stalled it). */
  exclude?: ReadonlySet<string>;
  /** A re-send of an earlier request: it does not earn re-send budget. */
  resend?: boolean;
}

/** Outcome of {@link Dispatcher.submit}. */
export type SubmitResult = 'assigned' | 'queued' | 'rejected';

interface WorkerEntry {
  readonly id: string;
  models: ReadonlySet<string> | '*';
  healthy: boolean;
  inflight: number;
  readonly stats: WorkerStats;
}

interface QueueEntry {
  readonly req: RouteRequest;
  readonly onAssign: (worker: WorkerView) => void;
  readonly exclude: ReadonlySet<string> | undefined;
}

const NO_EXCLUDE: ReadonlySet<string> = new Set();

/**
 * Late binding in front of a fleet: counts in-flight per worker at pick time, caps it, and parks
 * requests that find no worker with room in a bounded FIFO queue until one has room. Pure: the
 * router drives it with the real clock, the simulator with a virtual one; it never sets timers.
 *
 * @example
 * const d = new Dispatcher({ policy: createPolicy('adaptive'), rng: createRng(1), maxInflightPerWorker: 64 });
 * d.addWorker('10.0.0.1:8000', { models: ['Qwen/Qwen3-8B'] });
 * d.submit({ model: 'Qwen/Qwen3-8B', promptTokens: 128 }, (w) => send(w.id)); // 'assigned'
 * d.release('10.0.0.1:8000'); // when that request ends, whatever ended it
 */
export class Dispatcher {
  readonly policy: RoutingPolicy;
  readonly #rng: Rng;
  readonly #cap: number;
  readonly #maxQueue: number;
  readonly #workers = new Map<string, WorkerEntry>();
  readonly #queue: QueueEntry[] = [];
  readonly #queuedByModel = new Map<string, number>();
  readonly #opts: DispatcherOptions;
  readonly #budget: ResendBudget;
  readonly #now: (() => number) | undefined;
  #promptTokensEwma = Number.NaN;
  #draining = false;
  #drainAgain = false;

  constructor(opts: DispatcherOptions) {
    this.policy = opts.policy;
    this.#rng = opts.rng;
    this.#cap = opts.maxInflightPerWorker ?? Number.POSITIVE_INFINITY;
    this.#maxQueue = opts.maxQueue ?? 1024;
    this.#opts = opts;
    this.#now = opts.now ?? (opts.policy as { now?: () => number }).now;
    this.#budget = new ResendBudget(opts.maxResendShare ?? 0.1, opts.resendBurst ?? 64);
  }

  /** Adds (or replaces the models of) a worker; `models` omitted means it serves any model. */
  addWorker(id: string, opts: { models?: readonly string[]; healthy?: boolean } = {}): void {
    const existing = this.#workers.get(id);
    const models = opts.models === undefined ? '*' : new Set(opts.models);
    if (existing) {
      existing.models = models;
      if (opts.healthy !== undefined) existing.healthy = opts.healthy;
    } else {
      this.#workers.set(id, { id, models, healthy: opts.healthy ?? true, inflight: 0, stats: new WorkerStats() });
    }
    this.#drain();
  }

  /** Sets the models a worker serves (`undefined`: any). */
  setModels(id: string, models: readonly string[] | undefined): void {
    const w = this.#workers.get(id);
    if (!w) return;
    w.models = models === undefined ? '*' : new Set(models);
    this.#drain();
  }

  /** Marks a worker routable or not (probe result, ejection); becoming routable drains the queue. */
  setHealthy(id: string, healthy: boolean): void {
    const w = this.#workers.get(id);
    if (!w || w.healthy === healthy) return;
    w.healthy = healthy;
    if (healthy) this.#drain();
  }

  /** Worker ids in the order they were added. */
  workerIds(): string[] {
    return [...this.#workers.keys()];
  }

  /** The latency statistics of a worker (feed them with `recordTtft`, `recordItl`, `progress`). */
  stats(id: string): WorkerStats | undefined {
    return this.#workers.get(id)?.stats;
  }

  inflight(id: string): number {
    return this.#workers.get(id)?.inflight ?? 0;
  }

  isHealthy(id: string): boolean {
    return this.#workers.get(id)?.healthy ?? false;
  }

  get totalInflight(): number {
    let n = 0;
    for (const w of this.#workers.values()) n += w.inflight;
    return n;
  }

  get queueLength(): number {
    return this.#queue.length;
  }

  /** True when a routable worker (other than the excluded ones) serves `model`, room or not. */
  canServe(model: string, exclude: ReadonlySet<string> = NO_EXCLUDE): boolean {
    for (const w of this.#workers.values()) if (w.healthy && !exclude.has(w.id) && serves(w, model)) return true;
    return false;
  }

  /** Every model some worker announces (workers that serve any model are not listed). */
  models(): string[] {
    const out = new Set<string>();
    for (const w of this.#workers.values()) if (w.models !== '*') for (const m of w.models) out.add(m);
    return [...out];
  }

  /** Snapshots of every worker as a policy sees them, for `model` (default: its first model). */
  views(model?: string): WorkerView[] {
    const out: WorkerView[] = [];
    for (const w of this.#workers.values()) out.push(view(w, model ?? firstModel(w), w.healthy));
    return out;
  }

  /**
   * Places a request: on a worker with room now (`onAssign` is called before this returns),
   * in the queue (`onAssign` is called later, from `release` or `setHealthy`), or nowhere when
   * the queue is full. The assigned worker's in-flight is already counted when `onAssign` runs.
   */
  submit(req: RouteRequest, onAssign: (worker: WorkerView) => void, opts: SubmitOptions = {}): SubmitResult {
    if (!opts.resend) {
      this.#budget.earn();
      if (req.promptTokens > 0) {
        this.#promptTokensEwma = Number.isNaN(this.#promptTokensEwma) ? req.promptTokens : this.#promptTokensEwma + 0.05 * (req.promptTokens - this.#promptTokensEwma);
      }
    }
    const entry: QueueEntry = { req, onAssign, exclude: opts.exclude };
    if ((this.#queuedByModel.get(req.model) ?? 0) === 0) {
      const w = this.#place(entry);
      if (w) {
        this.#assign(w, entry);
        return 'assigned';
      }
    }
    if (this.#queue.length >= this.#maxQueue) return 'rejected';
    this.#queue.push(entry);
    this.#queuedByModel.set(req.model, (this.#queuedByModel.get(req.model) ?? 0) + 1);
    return 'queued';
  }

  /**
   * Releases one in-flight request of `workerId`, then gives the room to the oldest queued
   * request that can use it. Returns false (and changes nothing) if nothing was in flight there:
   * the caller released twice, which callers must prevent.
   */
  release(workerId: string): boolean {
    const w = this.#workers.get(workerId);
    if (!w || w.inflight <= 0) return false;
    w.inflight--;
    this.#drain();
    return true;
  }

  /** Removes a queued request (client gone, queue timeout); false if it was not queued. */
  cancel(req: RouteRequest): boolean {
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

  progress(workerId: string, nowMs: number): void {
    this.#workers.get(workerId)?.stats.progress(nowMs);
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
    const fleet = fleetLatency(this.#healthyStats());
    if (!(fleet.ttftMs >= 0)) return this.#opts.noDataDeadlineMs ?? 10_000;
    const lengthFactor = this.#promptTokensEwma > 0 ? Math.max(1, promptTokens / this.#promptTokensEwma) : 1;
    return Math.max(this.#opts.ttftDeadlineFloorMs ?? 1000, (this.#opts.ttftDeadlineFactor ?? 3) * fleet.ttftMs * lengthFactor);
  }

  /**
   * How long a stream may go without a token before it is migrated: `auto` = max(floor,
   * factor x fleet median per-token latency). Infinity when off.
   */
  stallDeadlineMs(): number {
    const s = this.#opts.stallDeadline ?? 'auto';
    if (s === 'off') return Number.POSITIVE_INFINITY;
    if (typeof s === 'number') return s;
    const fleet = fleetLatency(this.#healthyStats());
    if (!(fleet.itlMs >= 0)) return this.#opts.noDataDeadlineMs ?? 10_000;
    return Math.max(this.#opts.stallDeadlineFloorMs ?? 1000, (this.#opts.stallDeadlineFactor ?? 20) * fleet.itlMs);
  }

  /** Spends one re-send from the capped budget; false when the cap is reached. */
  tryResend(): boolean {
    return this.#budget.trySpend();
  }

  #healthyStats(): WorkerStats[] {
    const out: WorkerStats[] = [];
    for (const w of this.#workers.values()) if (w.healthy) out.push(w.stats);
    return out;
  }

  #place(entry: QueueEntry): WorkerView | undefined {
    const model = entry.req.model;
    const exclude = entry.exclude ?? NO_EXCLUDE;
    const views: WorkerView[] = [];
    for (const w of this.#workers.values()) {
      if (w.inflight < this.#cap && !exclude.has(w.id) && serves(w, model)) views.push(view(w, model, w.healthy));
    }
    if (views.length === 0) return undefined;
    return this.policy.pick(views, entry.req, this.#rng);
  }

  #assign(v: WorkerView, entry: QueueEntry): void {
    const w = this.#workers.get(v.id)!;
    if (w.inflight === 0 && this.#now) w.stats.busySinceMs = this.#now();
    w.inflight++;
    entry.onAssign(view(w, v.model, w.healthy));
  }

  #dequeued(model: string): void {
    const n = (this.#queuedByModel.get(model) ?? 1) - 1;
    if (n <= 0) this.#queuedByModel.delete(model);
    else this.#queuedByModel.set(model, n);
  }

  #anyRoom(): boolean {
    for (const w of this.#workers.values()) if (w.healthy && w.inflight < this.#cap) return true;
    return false;
  }

  #drain(): void {
    if (this.#draining) {
      this.#drainAgain = true;
      return;
    }
    this.#draining = true;
    try {
      do {
        this.#drainAgain = false;
        let i = 0;
        while (i < this.#queue.length && this.#anyRoom()) {
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
    healthy,
    ttftMsEwma: w.stats.ttftMsEwma,
    itlMsEwma: w.stats.itlMsEwma,
    model,
    lastProgressMs: w.stats.silentSinceMs,
  };
}
