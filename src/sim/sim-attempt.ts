import type { RequestRecord } from '../core/index.js';
import type { EngineRequest } from '../engine/index.js';
import type { WorkerStats } from '../routing/index.js';

/** One client request as the simulator tracks it across attempts. */
export interface SimRequest {
  index: number;
  phase: RequestRecord['phase'];
  promptTokens: number;
  maxTokens: number;
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
 * One send of a request to one worker, and the engine request itself: the engine calls
 * `onToken` on this object for every token, so the hot path touches no closure (at fleet scale
 * hundreds of thousands of these are live and every pointer hop is a cache miss).
 */
export class SimAttempt implements EngineRequest {
  readonly id: string;
  readonly promptTokens: number;
  readonly maxTokens: number;
  readonly req: SimRequest;
  readonly worker: number;
  readonly workerId: string;
  readonly stats: WorkerStats;
  readonly startMs: number;
  readonly #host: AttemptHost;
  readonly #chunks: number[] | null;
  tokens = 0;
  lastMs: number;
  live = true;

  constructor(host: AttemptHost, req: SimRequest, worker: number, workerId: string, stats: WorkerStats, nowMs: number) {
    this.#host = host;
    this.req = req;
    this.worker = worker;
    this.workerId = workerId;
    this.stats = stats;
    this.id = `${req.phase}-${req.index}#${req.attempts++}`;
    this.promptTokens = req.promptTokens + req.tokens;
    this.maxTokens = req.maxTokens - req.tokens;
    this.startMs = nowMs;
    this.lastMs = nowMs;
    this.#chunks = req.chunks;
  }

  onToken(count: number, nowMs: number): void {
    if (!this.live) return;
    const stats = this.stats;
    if (this.tokens === 0) {
      stats.recordTtft(nowMs - this.startMs);
      if (this.req.firstTokenMs === null) this.req.firstTokenMs = nowMs;
    } else {
      stats.recordItl(nowMs - this.lastMs);
    }
    stats.progress(nowMs);
    this.tokens += count;
    this.lastMs = nowMs;
    this.#chunks?.push(nowMs);
  }

  onFinish(reason: 'length' | 'abort', nowMs: number): void {
    if (this.live) this.#host.attemptEnded(this, reason, nowMs);
  }

  /** Stops listening to the engine and folds this attempt's tokens into the request. */
  end(): void {
    this.live = false;
    const req = this.req;
    req.tokens += this.tokens;
    if (this.tokens > 0) req.lastTokenMs = this.lastMs;
  }
}
