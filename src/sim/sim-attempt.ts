import type { RequestRecord } from '../core/index.js';
import type { EngineRequest, Ticket, TokenSink } from '../engine/index.js';
import type { WorkerStats } from '../routing/index.js';
import type { TurnPlan } from './sim-workload.js';

/**
 * The times of one run's requests (or attempts), `stride` to a row, in one growing Float64Array:
 * a number in an object field is a heap object of its own once it has held a fraction, so at fleet
 * scale seven per request in flight were made, and promoted, in the start-up burst. A row is
 * taken once per (reused) object, for good.
 */
export class TimeRows {
  data: Float64Array;
  readonly #stride: number;
  #rows = 0;

  /** `rows`: room made up front (the rows a run will hold at once, if known: growing by doubling touched twice the memory). */
  constructor(stride: number, rows = 0) {
    this.#stride = stride;
    this.data = new Float64Array(rows * stride);
  }

  /** A new row's offset in `data`, its times NaN. */
  add(): number {
    const at = this.#rows++ * this.#stride;
    if (at + this.#stride > this.data.length) {
      const grown = new Float64Array(Math.max(64 * this.#stride, this.data.length * 2));
      grown.set(this.data);
      this.data = grown;
    }
    const data = this.data;
    for (let k = at; k < at + this.#stride; k++) data[k] = Number.NaN;
    return at;
  }
}

/**
 * One client request as the simulator tracks it across attempts. At fleet scale hundreds of
 * thousands are in flight at once, so it holds its (shared) plan rather than copies of it, and the
 * simulator reuses finished ones (`restart`).
 */
export class SimRequest {
  index = 0;
  phase: RequestRecord['phase'] = 'profiling';
  /** What it sends: prompt length and token ids, answer length, its place in its session. */
  plan!: TurnPlan;
  // Its times live in a row of the run's table (see TimeRows): start, first token, last token.
  readonly #times: TimeRows;
  readonly #at: number;
  /** Every chunk time (null when only first and last are kept). */
  chunks: number[] | null = null;
  /** Tokens received from attempts that have ended. */
  tokens = 0;
  resent = false;
  redispatched = false;
  migrated = false;
  feIndex = 0;
  /** Its tenant's index in the scenario's `tenants` (0 without tenants). */
  tenant = 0;

  constructor(times: TimeRows) {
    this.#times = times;
    this.#at = times.add();
  }

  get startMs(): number {
    return this.#times.data[this.#at]!;
  }

  set startMs(v: number) {
    this.#times.data[this.#at] = v;
  }

  /** NaN before the first token (set when the attempt that got it ends). */
  get firstTokenMs(): number {
    return this.#times.data[this.#at + 1]!;
  }

  set firstTokenMs(v: number) {
    this.#times.data[this.#at + 1] = v;
  }

  get lastTokenMs(): number {
    return this.#times.data[this.#at + 2]!;
  }

  set lastTokenMs(v: number) {
    this.#times.data[this.#at + 2] = v;
  }

  /** Makes this (new or finished) request the `index`th, sent now through replica `feIndex`. */
  restart(index: number, phase: RequestRecord['phase'], plan: TurnPlan, nowMs: number, keepChunks: boolean, feIndex: number): this {
    this.index = index;
    this.phase = phase;
    this.plan = plan;
    this.startMs = nowMs;
    this.firstTokenMs = Number.NaN;
    this.lastTokenMs = 0;
    this.chunks = keepChunks ? [] : null;
    this.tokens = 0;
    this.resent = false;
    this.redispatched = false;
    this.migrated = false;
    this.feIndex = feIndex;
    return this;
  }
}

/** Where an attempt reports its end (the simulation loop). */
export interface AttemptHost {
  attemptEnded(a: SimAttempt, reason: 'length' | 'abort', nowMs: number): void;
}

/**
 * The tokens after the first of every attempt that one router replica sent to one worker, as
 * counts: the replica's view of the worker gets one latency sample per token, in one call per step.
 */
class StatsSink implements TokenSink {
  readonly #stats: WorkerStats;

  constructor(stats: WorkerStats) {
    this.#stats = stats;
  }

  onStepTokens(nowMs: number, count: number, gapMs: number): void {
    const stats = this.#stats;
    stats.recordItl(gapMs, count);
    stats.progress(nowMs);
  }
}

/** What an attempt asks its worker's engine about its own progress (tokens after the first go to a sink). */
export interface ProgressSource {
  generatedOf(ticket: Ticket): number;
  lastTokenMsOf(ticket: Ticket): number;
  /** A time no request there that has had a token had its last one before (see `Engine.oldestTokenMs`). */
  oldestTokenMs(): number;
}

/**
 * What every attempt from one router replica to one worker shares (made once per pair, so an
 * attempt carries one reference instead of six).
 */
export class AttemptRoute {
  readonly sink: StatsSink;

  constructor(
    readonly host: AttemptHost,
    readonly worker: number,
    readonly workerId: string,
    readonly stats: WorkerStats,
    readonly engine: ProgressSource,
  ) {
    this.sink = new StatsSink(stats);
  }
}

/**
 * One send of a request to one worker, and the engine request itself. Its first token arrives in
 * `onToken`; when only the first and last chunk times are kept (`req.chunks` null), later tokens
 * go as counts to a sink shared by every attempt on the same replica and worker, and `tokens` /
 * `lastMs` are read from the engine, so at fleet scale a token touches no per-attempt object.
 */
export class SimAttempt implements EngineRequest {
  // Set by `restart` (the constructor's too). Numbers start as numbers (a field declared without a
  // value starts undefined, and V8 then boxes every number stored in it), times as NaN (see SimRequest).
  promptTokens = 0;
  maxTokens = 0;
  req!: SimRequest;
  route!: AttemptRoute;
  /** Its worker's in-flight count with it, when it was sent (set by the runner, as the router's attempt keeps it). */
  position = 0;
  #tokens = 0;
  // Its times live in a row of the run's table (see TimeRows): start; last token (its start before
  // the first); first token (NaN before it); a token time already known (last times only grow), so
  // most silence checks need no engine lookup.
  readonly #times: TimeRows;
  readonly #at: number;
  /** The engine has finished or aborted it (and forgotten it: nothing left to read there). */
  #ended = false;
  /** The request's chunk times (null: only first and last are kept, later tokens go to the route's sink). */
  #chunks: number[] | null = null;
  live = true;
  /** What its engine returned when it accepted it (-1 before). */
  ticket = -1 as Ticket;
  /** The simulator's deadline sweep: the sweep it is filed under (-1: none), by which replica, and its place in the sweep's order. */
  sweepKey = -1;
  sweepReplica = -1;
  startSeq = 0;
  /** Past its first token: its listing among its route's streams watched for silence (-1: none). */
  watchFiling = -1;

  constructor(times: TimeRows, route: AttemptRoute, req: SimRequest, nowMs: number) {
    this.#times = times;
    this.#at = times.add();
    this.restart(route, req, nowMs);
  }

  /** When it was sent. */
  get startMs(): number {
    return this.#times.data[this.#at]!;
  }

  get #lastMs(): number {
    return this.#times.data[this.#at + 1]!;
  }

  set #lastMs(v: number) {
    this.#times.data[this.#at + 1] = v;
  }

  get #firstMs(): number {
    return this.#times.data[this.#at + 2]!;
  }

  set #firstMs(v: number) {
    this.#times.data[this.#at + 2] = v;
  }

  get #seenMs(): number {
    return this.#times.data[this.#at + 3]!;
  }

  set #seenMs(v: number) {
    this.#times.data[this.#at + 3] = v;
  }

  /**
   * Makes this (ended) attempt a new one of `req` on `route`: the simulator reuses them, since at
   * fleet scale an object per attempt was promoted to the old generation and collected there.
   */
  restart(route: AttemptRoute, req: SimRequest, nowMs: number): this {
    this.route = route;
    this.req = req;
    // A migrated continuation's prompt also holds the answer so far.
    this.promptTokens = req.plan.promptTokens + req.tokens;
    this.maxTokens = req.plan.maxTokens - req.tokens;
    this.#times.data[this.#at] = nowMs;
    this.#lastMs = nowMs;
    this.#tokens = 0;
    this.#firstMs = Number.NaN;
    this.#seenMs = 0;
    this.#ended = false;
    this.#chunks = req.chunks;
    this.live = true;
    this.ticket = -1 as Ticket;
    // Any entry the sweep still holds for its last use is stale now.
    this.sweepKey = -1;
    this.watchFiling = -1;
    return this;
  }

  /** The prompt's token ids, read by the engine at submit (a continuation's prompt part still hits the cache). */
  get promptTokenIds(): Uint32Array {
    return this.req.plan.promptTokenIds;
  }

  /** The route's sink when only first and last chunk times are kept (read by the engine once, at submit). */
  get sink(): StatsSink | undefined {
    return this.#chunks === null ? this.route.sink : undefined;
  }

  /** The worker it was sent to. */
  get workerId(): string {
    return this.route.workerId;
  }

  /** Whether its first token has arrived. */
  get hasFirstToken(): boolean {
    return !Number.isNaN(this.#firstMs);
  }

  /** A time it is known to have had a token at (0 before the first): it cannot be silent for longer than since then. */
  get seenMs(): number {
    return this.#seenMs;
  }

  /** Whether it has had a first token and then no token for at least `limitMs` before `nowMs`. */
  silentFor(nowMs: number, limitMs: number): boolean {
    if (Number.isNaN(this.#firstMs) || nowMs - this.#seenMs < limitMs) return false;
    this.#seenMs = this.lastMs;
    return nowMs - this.#seenMs >= limitMs;
  }

  /** Whether the engine, not this object, holds the count (a sink attempt past its first token). */
  #onEngine(): boolean {
    return this.#chunks === null && this.live && !this.#ended && this.#tokens > 0;
  }

  /** Tokens this attempt has received. */
  get tokens(): number {
    return this.#onEngine() ? this.route.engine.generatedOf(this.ticket) : this.#tokens;
  }

  /** When it last received a token (its start before the first). */
  get lastMs(): number {
    return this.#onEngine() ? this.route.engine.lastTokenMsOf(this.ticket) : this.#lastMs;
  }

  onToken(count: number, nowMs: number): void {
    if (!this.live) return;
    const stats = this.route.stats;
    if (this.#tokens === 0) {
      this.#firstMs = nowMs;
      this.#seenMs = nowMs;
      stats.recordTtft(nowMs - this.startMs);
    } else {
      stats.recordItl(nowMs - this.#lastMs);
    }
    stats.progress(nowMs);
    this.#tokens += count;
    this.#lastMs = nowMs;
    this.#chunks?.push(nowMs);
  }

  onFinish(reason: 'length' | 'abort', nowMs: number): void {
    if (!this.live) return;
    this.#ended = true;
    if (reason === 'length') {
      // The engine has forgotten it: every token has arrived, the last one now.
      this.#tokens = this.maxTokens;
      this.#lastMs = nowMs;
    }
    this.route.host.attemptEnded(this, reason, nowMs);
  }

  /** Stops listening to the engine and folds this attempt's tokens into the request. */
  end(): void {
    if (!this.live) return;
    if (this.#onEngine()) {
      const g = this.route.engine.generatedOf(this.ticket);
      if (g >= 0) {
        this.#tokens = g;
        this.#lastMs = this.route.engine.lastTokenMsOf(this.ticket);
      }
    }
    this.live = false;
    // The request's first token is its first attempt's (a later attempt starts after this one ended).
    const req = this.req;
    if (Number.isNaN(req.firstTokenMs)) req.firstTokenMs = this.#firstMs;
    req.tokens += this.#tokens;
    if (this.#tokens > 0) req.lastTokenMs = this.#lastMs;
  }
}
