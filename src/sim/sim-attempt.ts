import type { RequestRecord } from '../core/index.js';
import type { EngineRequest, TokenSink } from '../engine/index.js';
import type { WorkerStats } from '../routing/index.js';
import type { TurnCursor } from './sim-workload.js';

/** One client request as the simulator tracks it across attempts. */
export interface SimRequest {
  index: number;
  phase: RequestRecord['phase'];
  promptTokens: number;
  maxTokens: number;
  /** The prompt's token ids (the engine's prefix cache hashes them). */
  promptTokenIds: Uint32Array;
  /** Its place in its session (multi-turn: the next turn follows this one's answer). */
  cursor: TurnCursor;
  startMs: number;
  firstTokenMs: number | null;
  lastTokenMs: number;
  /** Every chunk time (null when only first and last are kept). */
  chunks: number[] | null;
  /** Tokens received from attempts that have ended. */
  tokens: number;
  resent: boolean;
  redispatched: boolean;
  migrated: boolean;
  feIndex: number;
  attempts: number;
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
    for (let i = 0; i < count; i++) stats.recordItl(gapMs);
    stats.progress(nowMs);
  }
}

const SINKS = new WeakMap<WorkerStats, StatsSink>();

function sinkFor(stats: WorkerStats): StatsSink {
  let s = SINKS.get(stats);
  if (!s) SINKS.set(stats, (s = new StatsSink(stats)));
  return s;
}

/** What an attempt asks its worker's engine about its own progress (tokens after the first go to a sink). */
export interface ProgressSource {
  generatedOf(id: string): number;
  lastTokenMsOf(id: string): number;
}

/**
 * One send of a request to one worker, and the engine request itself. Its first token arrives in
 * `onToken`; when only the first and last chunk times are kept (`req.chunks` null), later tokens
 * go as counts to a sink shared by every attempt on the same replica and worker, and `tokens` /
 * `lastMs` are read from the engine, so at fleet scale a token touches no per-attempt object.
 */
export class SimAttempt implements EngineRequest {
  readonly id: string;
  readonly promptTokens: number;
  readonly maxTokens: number;
  readonly promptTokenIds: Uint32Array;
  readonly req: SimRequest;
  readonly worker: number;
  readonly workerId: string;
  readonly stats: WorkerStats;
  readonly startMs: number;
  readonly sink: StatsSink | undefined;
  readonly #engine: ProgressSource;
  readonly #host: AttemptHost;
  readonly #chunks: number[] | null;
  #tokens = 0;
  #lastMs: number;
  #firstMs: number | null = null;
  /** A token time already known (last times only grow), so most silence checks need no engine lookup. */
  #seenMs = 0;
  live = true;

  /** `id` must be unique among the attempts its engine knows (the simulator recycles them). */
  constructor(host: AttemptHost, id: string, req: SimRequest, worker: number, workerId: string, stats: WorkerStats, engine: ProgressSource, nowMs: number) {
    this.#host = host;
    this.id = id;
    this.#engine = engine;
    this.req = req;
    this.worker = worker;
    this.workerId = workerId;
    this.stats = stats;
    req.attempts++;
    this.promptTokens = req.promptTokens + req.tokens;
    this.maxTokens = req.maxTokens - req.tokens;
    // A migrated continuation's prompt also holds the answer so far; its prompt part still hits the cache.
    this.promptTokenIds = req.promptTokenIds;
    this.startMs = nowMs;
    this.#lastMs = nowMs;
    this.#chunks = req.chunks;
    this.sink = req.chunks === null ? sinkFor(stats) : undefined;
  }

  /** When its first token arrived (null before). */
  get firstMs(): number | null {
    return this.#firstMs;
  }

  /** Whether it has had a first token and then no token for at least `limitMs` before `nowMs`. */
  silentFor(nowMs: number, limitMs: number): boolean {
    if (this.#firstMs === null || nowMs - this.#seenMs < limitMs) return false;
    this.#seenMs = this.lastMs;
    return nowMs - this.#seenMs >= limitMs;
  }

  /** Whether the engine, not this object, holds the count (a sink attempt past its first token). */
  #onEngine(): boolean {
    return this.sink !== undefined && this.live && this.#tokens > 0;
  }

  /** Tokens this attempt has received. */
  get tokens(): number {
    return this.#onEngine() ? this.#engine.generatedOf(this.id) : this.#tokens;
  }

  /** When it last received a token (its start before the first). */
  get lastMs(): number {
    return this.#onEngine() ? this.#engine.lastTokenMsOf(this.id) : this.#lastMs;
  }

  onToken(count: number, nowMs: number): void {
    if (!this.live) return;
    const stats = this.stats;
    if (this.#tokens === 0) {
      this.#firstMs = nowMs;
      this.#seenMs = nowMs;
      stats.recordTtft(nowMs - this.startMs);
      if (this.req.firstTokenMs === null) this.req.firstTokenMs = nowMs;
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
    if (reason === 'length') {
      // The engine has forgotten it: every token has arrived, the last one now.
      this.#tokens = this.maxTokens;
      this.#lastMs = nowMs;
    }
    this.#host.attemptEnded(this, reason, nowMs);
  }

  /** Stops listening to the engine and folds this attempt's tokens into the request. */
  end(): void {
    if (!this.live) return;
    if (this.#onEngine()) {
      const g = this.#engine.generatedOf(this.id);
      if (g >= 0) {
        this.#tokens = g;
        this.#lastMs = this.#engine.lastTokenMsOf(this.id);
      }
    }
    this.live = false;
    const req = this.req;
    req.tokens += this.#tokens;
    if (this.#tokens > 0) req.lastTokenMs = this.#lastMs;
  }
}
