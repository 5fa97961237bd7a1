import type { RequestRecord } from '../core/index.js';
import type { EngineRequest, TokenSink } from '../engine/index.js';
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
 * The tokens after the first of every attempt that one router replica sent to one worker, in bulk:
 * per token one latency sample for the replica's view of the worker and two counters in dense
 * arrays (indexed by the attempt's key), instead of a call on each attempt's own object.
 */
class StatsSink implements TokenSink {
  readonly #stats: WorkerStats;
  tokens = new Int32Array(256);
  lastMs = new Float64Array(256);
  readonly #free: number[] = [];
  #next = 0;

  constructor(stats: WorkerStats) {
    this.#stats = stats;
  }

  /** A key for a new attempt, its counters zeroed. */
  alloc(tokens: number, nowMs: number): number {
    let k = this.#free.pop();
    if (k === undefined) {
      k = this.#next++;
      if (k === this.tokens.length) {
        const t = new Int32Array(k * 2);
        t.set(this.tokens);
        this.tokens = t;
        const l = new Float64Array(k * 2);
        l.set(this.lastMs);
        this.lastMs = l;
      }
    }
    this.tokens[k] = tokens;
    this.lastMs[k] = nowMs;
    return k;
  }

  release(k: number): void {
    this.#free.push(k);
  }

  onStepTokens(nowMs: number, count: number, keys: Int32Array, gapsMs: Float64Array): void {
    const stats = this.#stats;
    const tokens = this.tokens;
    const lastMs = this.lastMs;
    for (let i = 0; i < count; i++) {
      const k = keys[i]!;
      stats.recordItl(gapsMs[i]!);
      tokens[k] = tokens[k]! + 1;
      lastMs[k] = nowMs;
    }
    stats.progress(nowMs);
  }
}

const SINKS = new WeakMap<WorkerStats, StatsSink>();

function sinkFor(stats: WorkerStats): StatsSink {
  let s = SINKS.get(stats);
  if (!s) SINKS.set(stats, (s = new StatsSink(stats)));
  return s;
}

/**
 * One send of a request to one worker, and the engine request itself. Its first token arrives in
 * `onToken`; when only the first and last chunk times are kept (`req.chunks` null), later tokens
 * go in bulk to a sink shared by every attempt on the same replica and worker, and `tokens` /
 * `lastMs` are read from that sink's arrays, so at fleet scale a token touches no per-attempt
 * object (hundreds of thousands are live and every pointer hop is a cache miss).
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
  readonly sink: StatsSink | undefined;
  readonly sinkKey: number;
  readonly #host: AttemptHost;
  readonly #chunks: number[] | null;
  #tokens = 0;
  #lastMs: number;
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
    this.#lastMs = nowMs;
    this.#chunks = req.chunks;
    if (req.chunks === null) {
      this.sink = sinkFor(stats);
      this.sinkKey = this.sink.alloc(0, nowMs);
    } else {
      this.sink = undefined;
      this.sinkKey = -1;
    }
  }

  /** Tokens this attempt has received. */
  get tokens(): number {
    return this.sink && this.live ? this.sink.tokens[this.sinkKey]! : this.#tokens;
  }

  /** When it last received a token (its start before the first). */
  get lastMs(): number {
    return this.sink && this.live ? this.sink.lastMs[this.sinkKey]! : this.#lastMs;
  }

  onToken(count: number, nowMs: number): void {
    if (!this.live) return;
    const stats = this.stats;
    const sink = this.sink;
    const tokens = this.tokens;
    if (tokens === 0) {
      stats.recordTtft(nowMs - this.startMs);
      if (this.req.firstTokenMs === null) this.req.firstTokenMs = nowMs;
    } else {
      stats.recordItl(nowMs - this.lastMs);
    }
    stats.progress(nowMs);
    if (sink) {
      sink.tokens[this.sinkKey] = tokens + count;
      sink.lastMs[this.sinkKey] = nowMs;
    } else {
      this.#tokens = tokens + count;
      this.#lastMs = nowMs;
    }
    this.#chunks?.push(nowMs);
  }

  onFinish(reason: 'length' | 'abort', nowMs: number): void {
    if (this.live) this.#host.attemptEnded(this, reason, nowMs);
  }

  /** Stops listening to the engine and folds this attempt's tokens into the request. */
  end(): void {
    if (!this.live) return;
    const sink = this.sink;
    if (sink) {
      this.#tokens = sink.tokens[this.sinkKey]!;
      this.#lastMs = sink.lastMs[this.sinkKey]!;
      sink.release(this.sinkKey);
    }
    this.live = false;
    const req = this.req;
    req.tokens += this.#tokens;
    if (this.#tokens > 0) req.lastTokenMs = this.#lastMs;
  }
}
