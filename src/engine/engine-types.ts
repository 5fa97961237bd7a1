// The engine's contract with its callers: the requests it takes, the tickets and stats it gives back.
import type { Clock } from '../core/index.js';
import type { EngineProfile } from './profile.js';

/**
 * Receives, as counts, the tokens after the first of every request that named it as its `sink`
 * (at fleet scale this replaces hundreds of thousands of `onToken` calls per simulated second).
 * A request's own count and last token time are read from the engine (`generatedOf`,
 * `lastTokenMsOf`) when needed.
 */
export interface TokenSink {
  /**
   * `count` requests each got one token at `nowMs`, `gapMs` after their previous one. Called
   * before that step's `onToken`/`onFinish` calls; must not call back into the engine.
   */
  onStepTokens(nowMs: number, count: number, gapMs: number): void;
}

/** One generation request as the engine sees it. The model never stops early: exactly `maxTokens`. */
export interface EngineRequest {
  promptTokens: number;
  maxTokens: number;
  /**
   * Called once per step in which this request got tokens (usually 1), at the step's end. With a
   * `sink`, only for the request's first token; later ones go to the sink.
   */
  onToken: (count: number, nowMs: number) => void;
  onFinish: (reason: 'length' | 'abort', nowMs: number) => void;
  /** Called when the scheduler first moves the request from waiting to running (queue time ends). */
  onAdmit?: (nowMs: number) => void;
  /**
   * Prompt token ids, if known: each full block of them gets a chained hash, and the prefix cache
   * serves and keeps those blocks. Without them the request neither hits nor fills the cache.
   * Hashes are remembered per array (see `cachedBlockHashes`): do not change one once submitted.
   */
  promptTokenIds?: ArrayLike<number>;
  /** Bulk receiver of this request's tokens after the first (read once, at submit). */
  sink?: TokenSink | undefined;
  /**
   * When the request reached the server (clock time, at most now; default now): its frontend time
   * counts from then, so a live server's own handling before the submit is part of that time.
   */
  arrivalMs?: number;
}

/**
 * Receives the callbacks of many requests, each named by a number of the caller's (`Engine.submitTo`),
 * as `EngineRequest`'s are: one object per caller, not one per request (at fleet scale, an object per
 * request in flight was memory first touched, and copied by the collector, in the start-up burst).
 */
export interface EngineCaller {
  onToken(id: number, count: number, nowMs: number): void;
  onFinish(id: number, reason: 'length' | 'abort', nowMs: number): void;
  onAdmit?(id: number, nowMs: number): void;
}

/** What `Engine.submitTo` returns instead of a ticket: the `SubmitResult` reasons as numbers. */
export const QUEUE_FULL = -1;
export const TOO_LONG = -2;

/**
 * A request the engine accepted, as `abort`, `generatedOf` and `lastTokenMsOf` of the engine that
 * issued it take it (another engine's ticket may name one of its own requests): a number naming the
 * engine's record of it and that record's use, so a ticket kept after its request ended is stale,
 * never another request's. (The engine reuses its records and keeps no table of ids: at fleet
 * scale, a record per request and an id lookup were a third of a simulation's time.)
 */
export type Ticket = number & { readonly __ticket: never };

export type SubmitResult = { ok: true; ticket: Ticket } | { ok: false; reason: 'queue_full' | 'too_long' };

export interface EngineStats {
  running: number;
  /** Waiting for a slot, including requests still in the frontend (see `frontendOverheadMs`). */
  waiting: number;
  /** Fraction of KV blocks in use, 0..1 (cached blocks no request holds count as free, as in vLLM). */
  kvUsage: number;
  /** Prompt tokens of the requests scheduled so far, cached or computed (vLLM's `prompt_tokens`). */
  promptTokensTotal: number;
  /** Prompt tokens looked up in the prefix cache: whole prompts of requests with token ids, at their first scheduling. */
  prefixCacheQueriesTotal: number;
  /** Of those, tokens found in the cache (their prefill was skipped). */
  prefixCacheHitsTotal: number;
  /** Tokens actually prefilled: prompts less cache hits, plus recomputation after preemptions. */
  prefillTokensTotal: number;
  generationTokensTotal: number;
  /** Requests that generated all their tokens. */
  requestSuccessTotal: number;
  requestAbortTotal: number;
  preemptionsTotal: number;
  stepsTotal: number;
  /** Time spent inside steps (a stand-in for GPU utilisation). */
  busyMsTotal: number;
  /** Time steps fell behind the profile on a real clock: a late timer (after a step, or an idle engine's) is caught up by the step it starts, up to one step; what is not, is counted here. */
  lateMsTotal: number;
}

export interface EngineFault {
  /** No step starts while set (the one in flight, if any, still completes). */
  stalled?: boolean;
  /** Steps take this many times longer (1 = healthy). */
  slowFactor?: number;
}

/**
 * Receives an engine's prefix-cache changes as vLLM's KV events name them (BlockStored,
 * BlockRemoved), and the end of each step, where vLLM publishes the step's events as one batch.
 * Hashes are the engine's block hashes (`blockHashes`), unsigned. Must not call back into the engine.
 */
export interface KvEventSink {
  /**
   * Blocks `from` .. `from + count - 1` of a prompt (hashes in `hashes`) became cache entries; the
   * block before them (`hashes[from - 1]`) is their parent. `tokenIds`: the prompt's ids.
   */
  stored(hashes: readonly number[], from: number, count: number, tokenIds: ArrayLike<number>, blockSize: number): void;
  /** The entry under `hash` was evicted. */
  removed(hash: number): void;
  /** A step ended at `nowMs` (after its tokens were delivered). */
  stepEnd(nowMs: number): void;
}

export interface EngineOptions {
  clock: Clock;
  profile: EngineProfile;
  id?: string;
  /** Overrides the profile's `maxNumSeqs`. */
  maxNumSeqs?: number;
  /** Overrides the profile's `maxWaiting`. */
  maxWaiting?: number;
  /** Called after each step's tokens are delivered (e.g. to sample busy time or flush writes). */
  onStepEnd?: (nowMs: number) => void;
  /** vLLM V1's automatic prefix caching (on by default there too; `--no-enable-prefix-caching`). @default true */
  prefixCaching?: boolean;
  /**
   * Requests the engine is expected to hold at once (running, waiting or in the frontend): sizes
   * its request records up front (they grow past it when needed; without it, room for 2 x maxNumSeqs
   * up to 512). A simulator of thousands of engines gives it: memory reserved and never used was
   * most of their construction time.
   */
  expectedRequests?: number;
  /** Told of every block the prefix cache stores and evicts (KV events). @default none */
  kvEvents?: KvEventSink;
}
