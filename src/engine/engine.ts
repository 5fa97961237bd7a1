import type { Clock, Timer } from '../core/index.js';
import { cachedBlockHashes } from './block-hash.js';
import { DecodeCohort } from './decode-cohort.js';
import { EngineCounters } from './engine-counters.js';
import { QUEUE_FULL, TOO_LONG, type EngineCaller, type EngineFault, type EngineOptions, type EngineRequest, type EngineStats, type SubmitResult, type Ticket, type TokenSink } from './engine-types.js';
import { KvBlocks } from './kv-blocks.js';
import type { EngineProfile } from './profile.js';
import { FrontendQueue, WaitingQueue } from './request-queues.js';
import { FREE, HOLE, RunningSet } from './running-set.js';
import { ADMITTED, BLOCKS, COMPUTED, DONE, FIN, FLAGS, GENERATED, ID, LAST_MS, MAX, ON_ADMIT, PREEMPTIONS, PROMPT, RUNNING, SINK, SLOT, STATE, STEP, STRIDE, TARGET, TIME_STRIDE, WAITING, SeqTable } from './seq.js';
import { StepScratch } from './step-scratch.js';

export type { EngineCaller, EngineFault, EngineOptions, KvEventSink, EngineRequest, EngineStats, SubmitResult, Ticket, TokenSink } from './engine-types.js';

/**
 * A vLLM-like continuous-batching worker driven only by a Clock (docs/reference.md#the-vllm-worker): a running set
 * capped by maxNumSeqs, a bounded FIFO waiting queue, a per-step token budget spent on one decode
 * token per running sequence then on chunked prefill, KV blocks allocated as sequences grow
 * (admission stops when the cache is full; a sequence that cannot grow preempts the newest),
 * and vLLM V1's prefix cache over them (see `BlockPool`): a request with token ids shares the
 * cached blocks its prompt starts with and skips their prefill.
 * A step's duration is decided at its start; its tokens are delivered at its end.
 *
 * This file is the scheduler: a step's start (budget, admission, preemption) and end (delivery).
 * Its parts: the requests' records as typed-array rows (`seq.ts`), the frontend and waiting queues
 * (`request-queues.ts`), the running set as parallel typed arrays (`running-set.ts`), the decode
 * cohort that advances lockstep decoders as one count (`decode-cohort.ts`), the KV blocks and
 * prefix cache as sequences see them (`kv-blocks.ts`) and the counters (`engine-counters.ts`).
 * A step visits the running entries outside the cohort and the cohort members that finish.
 *
 * @example
 * const clock = new VirtualClock();
 * const engine = new Engine({ clock, profile: getProfile('small') });
 * engine.submit({ promptTokens: 128, maxTokens: 4, onToken() {}, onFinish() {} });
 * clock.run();
 */
export class Engine {
  readonly id: string;
  readonly profile: EngineProfile;
  readonly #clock: Clock;
  readonly #maxNumSeqs: number;
  readonly #maxWaiting: number;
  readonly #blockSize: number;
  readonly #onStepEnd: ((nowMs: number) => void) | undefined;
  // What a submit reads and writes, side by side (a submit finds its engine cold in memory).
  #closed = false;
  /** Requests in the frontend or the waiting queue (what `waiting` reports and maxWaiting caps). */
  #queued = 0;
  #inStep = false;
  #timer: Timer | null = null;
  #pendingTimer: Timer | null = null;
  // The sink of the last submit (requests come in runs with one sink: a map lookup each was cold).
  #lastSink: TokenSink | undefined = undefined;
  #lastSinkIndex = -1;
  readonly #seqs = new SeqTable();
  readonly #frontend: FrontendQueue;
  readonly #waiting: WaitingQueue;
  readonly #run: RunningSet;
  readonly #cohort: DecodeCohort;
  #runningCount = 0;
  readonly #kv: KvBlocks;
  #stalled = false;
  #slowFactor = 1;
  #stepPrefill = 0;
  #stepPlannedMs = 0;
  /** When the last step was planned to end. */
  #stepEndPlannedMs = 0;
  /** When a step started from idle is planned to start (the kick's time), and when the pending timer is due. */
  #idlePlannedMs = 0;
  #pendingPlannedMs = 0;
  #stepStartMs = 0;
  // Preempted requests waiting to run again that have had tokens, and a time none of them had its
  // last token before (a bound, kept until there are none): see `oldestTokenMs`.
  #waitingWithTokens = 0;
  #waitingTokenMs = Number.POSITIVE_INFINITY;
  readonly #n = new EngineCounters();
  readonly #sinks: TokenSink[] = [];
  readonly #sinkIndex = new Map<TokenSink, number>();
  // `submit`'s requests by record index, and the caller that hands them their callbacks.
  readonly #objects: (EngineRequest | undefined)[] = [];
  readonly #own: EngineCaller = {
    onToken: (r, count, nowMs) => this.#objects[r]!.onToken(count, nowMs),
    onFinish: (r, reason, nowMs) => {
      // Its last callback: the object is let go.
      const req = this.#objects[r]!;
      this.#objects[r] = undefined;
      req.onFinish(reason, nowMs);
    },
    onAdmit: (r, nowMs) => this.#objects[r]!.onAdmit!(nowMs),
  };

  constructor(opts: EngineOptions) {
    this.#clock = opts.clock;
    this.profile = opts.profile;
    this.id = opts.id ?? opts.profile.name;
    this.#maxNumSeqs = opts.maxNumSeqs ?? opts.profile.maxNumSeqs;
    this.#maxWaiting = opts.maxWaiting ?? opts.profile.maxWaiting;
    this.#blockSize = opts.profile.blockSize;
    this.#kv = new KvBlocks(opts.profile.kvBlocks, opts.profile.blockSize, opts.prefixCaching ?? true, this.#seqs, opts.kvEvents ?? null);
    this.#onStepEnd = opts.onStepEnd;
    // Room that grows with use (doubling; holes are compacted once they are half the entries):
    // sized for maxNumSeqs up front, a 1024-worker fleet's engines allocated and faulted in
    // 136 MB they never used.
    const room = Math.min(512, Math.max(16, 2 * this.#maxNumSeqs));
    this.#run = new RunningSet(room, this.#seqs);
    const expected = opts.expectedRequests;
    const requests = expected !== undefined && Number.isFinite(expected) && expected > 0 ? Math.max(16, Math.ceil(expected)) : room;
    this.#seqs.reserve(requests);
    this.#frontend = new FrontendQueue(this.#seqs, requests);
    this.#waiting = new WaitingQueue(this.#seqs, requests);
    this.#cohort = new DecodeCohort(this.#run, this.#seqs, this.#blockSize);
  }

  get running(): number {
    return this.#runningCount;
  }

  get waiting(): number {
    return this.#queued;
  }

  get kvUsage(): number {
    return 1 - this.#kv.pool.free / this.profile.kvBlocks;
  }

  /** Whether this engine caches prompt prefixes. */
  get prefixCaching(): boolean {
    return this.#kv.caching;
  }

  /** KV blocks held by the prefix cache, referenced or idle. */
  get cachedBlocks(): number {
    return this.#kv.pool.cached;
  }

  /** Whether the prefix cache holds the block hashed `hash` now. */
  holdsBlock(hash: number): boolean {
    return this.#kv.pool.has(hash);
  }

  /** The block hashes the prefix cache holds now (its true content: what KV events describe). */
  cachedHashList(): number[] {
    return this.#kv.pool.hashes();
  }

  get maxNumSeqs(): number {
    return this.#maxNumSeqs;
  }

  /** Accepts a request or says why not; never throws on load. */
  submit(req: EngineRequest): SubmitResult {
    const t = this.#accept(this.#own, -1, req.promptTokens, req.maxTokens, req.promptTokenIds, req.sink, req.onAdmit !== undefined, req.arrivalMs);
    if (t === TOO_LONG) return { ok: false, reason: 'too_long' };
    if (t === QUEUE_FULL) return { ok: false, reason: 'queue_full' };
    this.#objects[SeqTable.recordOf(t)] = req;
    return { ok: true, ticket: t };
  }

  /**
   * `submit` for a caller that names its requests by number (a non-negative int32): the request's
   * callbacks go to `caller` with `id`, so it needs no object of its own (the simulator's requests
   * are rows of typed arrays). Returns its ticket, or QUEUE_FULL or TOO_LONG. The engine keeps
   * every caller it is given for its lifetime (a record names its caller by number), as it keeps
   * sinks: give it one long-lived caller per client, not one per request.
   */
  submitTo(caller: EngineCaller, id: number, promptTokens: number, maxTokens: number, promptTokenIds?: ArrayLike<number>, sink?: TokenSink): Ticket | typeof QUEUE_FULL | typeof TOO_LONG {
    return this.#accept(caller, id, promptTokens, maxTokens, promptTokenIds, sink, caller.onAdmit !== undefined);
  }

  /**
   * Both submits: `id` -1 names the request by its record (`submit`'s own caller); `onAdmit`: the
   * request wants its admission told (only then is the caller's `onAdmit` called).
   */
  #accept(caller: EngineCaller, id: number, promptTokens: number, maxTokens: number, promptTokenIds: ArrayLike<number> | undefined, reqSink: TokenSink | undefined, onAdmit: boolean, arrivalMs?: number): Ticket | typeof QUEUE_FULL | typeof TOO_LONG {
    if (promptTokens + maxTokens > this.profile.maxModelLen) return TOO_LONG;
    if (this.#closed || this.#queued >= this.#maxWaiting) return QUEUE_FULL;
    let sink = -1;
    if (reqSink === this.#lastSink) sink = this.#lastSinkIndex;
    else if (reqSink) {
      sink = this.#sinkIndex.get(reqSink) ?? -1;
      if (sink < 0) {
        sink = this.#sinks.length;
        this.#sinkIndex.set(reqSink, sink);
        this.#sinks.push(reqSink);
        this.#cohort.fitSink(sink);
      }
      this.#lastSink = reqSink;
      this.#lastSinkIndex = sink;
    }
    const hashes = promptTokenIds ? cachedBlockHashes(promptTokenIds, this.#blockSize) : null;
    const r = this.#seqs.take();
    if (r < 0) return QUEUE_FULL;
    const ticket = this.#seqs.start(r, caller, id < 0 ? r : id, promptTokens, maxTokens, sink, hashes, onAdmit);
    if (this.#kv.sink !== null) this.#kv.tokenIds[r] = promptTokenIds ?? null;
    // A busy engine takes the due ones at its next step's start, an idle one sets one timer for the oldest.
    const now = this.#clock.now();
    this.#frontend.push(r, arrivalMs !== undefined && arrivalMs < now ? arrivalMs : now, this.profile.frontendOverheadMs);
    this.#queued++;
    this.#armPending();
    return ticket;
  }

  /** Aborts a request wherever it is; its slot and KV blocks are free at once. False if it already ended. */
  abort(ticket: Ticket): boolean {
    const seqs = this.#seqs;
    const r = seqs.of(ticket);
    if (r < 0) return false;
    const rows = seqs.rows;
    const o = r * STRIDE;
    const state = rows[o + STATE]!;
    if (state === DONE) return false;
    const running = state === RUNNING;
    if (!running) {
      if (state === WAITING) {
        this.#waiting.count--;
        this.#queued--;
        this.#kv.forget(r);
        if (rows[o + GENERATED]! > 0) this.#leftWaiting();
      } else this.#queued--;
    } else {
      this.#runningCount--;
      const slot = rows[o + SLOT]!;
      if (this.#run.rec[slot] === r) this.#dropRunning(slot);
    }
    rows[o + STATE] = DONE;
    this.#n.abortTotal++;
    seqs.callerOf(r).onFinish(rows[o + ID]!, 'abort', this.#clock.now());
    // A queued one is still listed in its queue, which recycles it when it gets there.
    if (running) seqs.recycle(r);
    this.#kick();
    return true;
  }

  /** Applies a fault state (replacing the previous one). */
  setFault(f: EngineFault): void {
    this.#stalled = f.stalled ?? false;
    this.#slowFactor = f.slowFactor !== undefined && f.slowFactor > 0 ? f.slowFactor : 1;
    this.#kick();
  }

  get stalled(): boolean {
    return this.#stalled;
  }

  get slowFactor(): number {
    return this.#slowFactor;
  }

  stats(): EngineStats {
    return this.#n.stats(this.running, this.waiting, this.kvUsage);
  }

  /** Stops stepping; later submits are refused. Requests in flight are left as they are. */
  close(): void {
    this.#closed = true;
    this.#timer?.cancel();
    this.#timer = null;
    this.#pendingTimer?.cancel();
    this.#pendingTimer = null;
  }

  /** Tokens a request has generated so far (-1 once it ended). */
  generatedOf(ticket: Ticket): number {
    const seqs = this.#seqs;
    const r = seqs.of(ticket);
    if (r < 0) return -1;
    const o = r * STRIDE;
    const state = seqs.rows[o + STATE]!;
    if (state === DONE) return -1;
    return state === RUNNING ? this.#cohort.generatedOf(r) : seqs.rows[o + GENERATED]!;
  }

  /**
   * Times a request was preempted so far: readable until its record is reused, so at the latest in
   * its `onFinish` (-1 after, or for a ticket this engine never gave).
   */
  preemptionsOf(ticket: Ticket): number {
    const r = this.#seqs.of(ticket);
    return r < 0 ? -1 : this.#seqs.rows[r * STRIDE + PREEMPTIONS]!;
  }

  /** When a request last got a token (0 before its first; NaN once it ended). */
  lastTokenMsOf(ticket: Ticket): number {
    const seqs = this.#seqs;
    const r = seqs.of(ticket);
    if (r < 0) return Number.NaN;
    const o = r * STRIDE;
    const state = seqs.rows[o + STATE]!;
    if (state === DONE) return Number.NaN;
    return state === RUNNING ? this.#cohort.lastTokenMsOf(r) : seqs.lastMs(r);
  }

  /**
   * A time before which no request here that has had a token (and not ended) had its last one
   * (now when there is none). It never goes down, so whoever watches these requests for silence
   * need not look at any of them before this time plus the silence allowed. O(running entries
   * outside the decode cohort): the cohort's members all had their last token at once.
   */
  oldestTokenMs(): number {
    let t = this.#clock.now();
    const cohort = this.#cohort;
    if (cohort.count > 0 && cohort.lastMs < t) t = cohort.lastMs;
    if (this.#waitingWithTokens > 0 && this.#waitingTokenMs < t) t = this.#waitingTokenMs;
    const run = this.#run;
    const loose = run.loose;
    const rec = run.rec;
    const rows = this.#seqs.rows;
    const times = this.#seqs.times;
    for (let k = 0; k < run.looseLen; k++) {
      const r = rec[loose[k]!]!;
      if (r === HOLE) continue;
      const o = r * STRIDE;
      if (rows[o + FIN] === FREE && rows[o + GENERATED]! > 0 && times[r * TIME_STRIDE + LAST_MS]! < t) t = times[r * TIME_STRIDE + LAST_MS]!;
    }
    return t;
  }

  /** A preempted request that had tokens left the waiting queue. */
  #leftWaiting(): void {
    if (--this.#waitingWithTokens === 0) this.#waitingTokenMs = Number.POSITIVE_INFINITY;
  }

  /** Removes running entry `i`, giving back its blocks (see `KvBlocks.release`); the slot is compacted later. */
  #dropRunning(i: number): void {
    this.#cohort.unlock(i);
    const run = this.#run;
    const r = run.rec[i]!;
    this.#kv.release(r, this.#seqs.rows[r * STRIDE + BLOCKS]!);
    run.drop(i);
  }

  /** Grows running entry `i` to hold `tokens` KV tokens, preempting the newest entries if needed. */
  #grow(i: number, tokens: number): boolean {
    const rows = this.#seqs.rows;
    const o = this.#run.rec[i]! * STRIDE + BLOCKS;
    const need = this.#kv.blocksFor(tokens) - rows[o]!;
    if (need <= 0) return true;
    const pool = this.#kv.pool;
    while (pool.free < need) {
      const victim = this.#run.newest();
      if (victim < 0 || victim === i) return false;
      this.#preempt(victim);
    }
    pool.allocate(need);
    rows[o] = rows[o]! + need;
    return true;
  }

  /** vLLM's recompute preemption: drop the KV, go back to the front of the queue. */
  #preempt(i: number): void {
    this.#cohort.unlock(i);
    const run = this.#run;
    const r = run.rec[i]!;
    const rows = this.#seqs.rows;
    const o = r * STRIDE;
    this.#n.preemptionsTotal++;
    rows[o + PREEMPTIONS]!++;
    this.#runningCount--;
    rows[o + TARGET] = Math.max(rows[o + TARGET]!, rows[o + COMPUTED]!);
    rows[o + COMPUTED] = 0;
    if (rows[o + GENERATED]! > 0) {
      this.#waitingWithTokens++;
      const lastMs = this.#seqs.times[r * TIME_STRIDE + LAST_MS]!;
      if (lastMs < this.#waitingTokenMs) this.#waitingTokenMs = lastMs;
    }
    rows[o + STATE] = WAITING;
    this.#dropRunning(i);
    this.#waiting.pushFront(r);
    this.#queued++;
  }

  /** While no step is in flight or due, wakes the engine when the oldest pending request is ready. */
  #armPending(): void {
    if (this.#pendingTimer || this.#inStep || this.#timer || this.#closed) return;
    if (this.#frontend.empty) return;
    const due = this.#frontend.nextReadyMs;
    // (When a virtual clock fires it: a time already past fires now.)
    this.#pendingPlannedMs = Math.max(due, this.#clock.now());
    this.#pendingTimer = this.#clock.setTimer(due, this.#onPendingDue);
  }

  // A real clock's timer fires late: what is ready is what the plan had ready when it was due.
  readonly #onPendingDue = (): void => {
    this.#pendingTimer = null;
    this.#frontend.drainInto(this.#pendingPlannedMs, this.#waiting);
    this.#kick(this.#pendingPlannedMs);
    this.#armPending();
  };

  /** Starts a step soon if idle and there is work (deferred so same-instant arrivals batch); `plannedMs`: when the plan starts it. */
  #kick(plannedMs = this.#clock.now()): void {
    if (this.#timer || this.#inStep || this.#closed || this.#stalled) return;
    if (this.#runningCount === 0 && this.#waiting.count === 0) return;
    this.#idlePlannedMs = plannedMs;
    this.#timer = this.#clock.setTimer(this.#clock.now(), this.#onKickDue);
  }

  // Timer callbacks made once per engine, not once per step.
  readonly #onKickDue = (): void => {
    this.#timer = null;
    this.#startStep();
  };

  readonly #onStepDue = (): void => this.#endStep();

  /** `backToBack`: the step follows the last one at once (from its end), not a kick from idle. */
  #startStep(backToBack = false): void {
    if (this.#closed) return;
    if (this.#stalled) {
      this.#armPending();
      return;
    }
    // A step starts where the plan has it: after the last one at once, or when an idle engine's kick
    // was due. A real clock's late timer is caught up by this step (up to a step: the last one's, or
    // a step base from idle), so a live engine keeps its profile's cadence; what is not caught up is
    // counted. On the virtual clock timers are never late and this is `now`.
    const now = this.#clock.now();
    const plannedMs = backToBack ? this.#stepEndPlannedMs : this.#idlePlannedMs;
    const late = now - plannedMs;
    const caughtUp = late > 0 && late <= (backToBack ? this.#stepPlannedMs : this.profile.stepBaseMs * this.#slowFactor);
    const startMs = caughtUp ? plannedMs : now;
    this.#frontend.drainInto(startMs, this.#waiting);
    const run = this.#run;
    run.tidy();
    const kv = this.#kv;
    const pool = kv.pool;
    const cohort = this.#cohort;
    let budget = this.profile.maxNumBatchedTokens;
    let prefill = 0;
    let decode = 0;
    const rec = run.rec;
    const bs = this.#blockSize;
    let prefilling = 0;
    // The cohort decodes as one when every running sequence has budget and every decoder could
    // grow a block (so no decode preempts, and the outcome is the one per-sequence order gives);
    // otherwise it dissolves and this step runs sequence by sequence.
    if (cohort.count > 0) {
      const need = cohort.blocksDue;
      if (budget >= this.#runningCount && pool.free >= need + this.#runningCount - cohort.count) {
        pool.allocate(need);
        budget -= cohort.count;
        decode += cohort.count;
        cohort.stepping = true;
      } else cohort.unlockAll();
    }
    const loose = run.loose;
    const nLoose = run.looseLen;
    const seqTable = this.#seqs;
    // (No callback runs before the admissions: the rows stay where they are.)
    const rows = seqTable.rows;
    // Decodes first, then chunks of prompts already running, as vLLM V1 spends its budget (the
    // cohort's decodes are counted above; the rest are loose, visited in admission order).
    for (let k = 0; k < nLoose && budget > 0; k++) {
      const i = loose[k]!;
      const r = rec[i]!;
      if (r === HOLE) continue;
      const o = r * STRIDE;
      if (rows[o + FIN] !== FREE) continue;
      const c = rows[o + COMPUTED]!;
      if (c < rows[o + TARGET]!) {
        prefilling++;
        continue;
      }
      if (c + 1 > rows[o + BLOCKS]! * bs && !this.#grow(i, c + 1)) {
        this.#preempt(i);
        continue;
      }
      rows[o + STEP] = 1;
      budget--;
      decode++;
    }
    for (let k = 0; k < nLoose && budget > 0 && prefilling > 0; k++) {
      const i = loose[k]!;
      const r = rec[i]!;
      if (r === HOLE) continue;
      const o = r * STRIDE;
      if (rows[o + FIN] !== FREE) continue;
      const c = rows[o + COMPUTED]!;
      const t = rows[o + TARGET]!;
      if (c >= t) continue;
      prefilling--;
      const n = Math.min(t - c, budget);
      if (!this.#grow(i, c + n)) {
        this.#preempt(i);
        continue;
      }
      kv.register(r, c + n);
      rows[o + STEP] = n;
      budget -= n;
      prefill += n;
    }
    while (budget > 0 && this.#runningCount < this.#maxNumSeqs) {
      const r = this.#waiting.peek();
      if (r < 0) break;
      // (Read again each time: an `onAdmit` callback may submit, which may grow the rows.)
      const rows = seqTable.rows;
      const o = r * STRIDE;
      // Cached leading blocks are shared, not allocated, and their tokens skip prefill; taking an
      // idle one uses a free block, so the check counts those too.
      const hit = kv.lookup(r);
      const cached = hit * bs;
      const n = Math.min(rows[o + TARGET]! - cached, budget);
      const fresh = kv.blocksFor(cached + n) - hit;
      if (fresh + (hit > 0 ? pool.matchedIdle : 0) > pool.free) break;
      this.#waiting.shift();
      this.#queued--;
      if (rows[o + GENERATED]! > 0) this.#leftWaiting();
      if (hit > 0) kv.acquire(r, hit);
      pool.allocate(fresh);
      rows[o + COMPUTED] = cached;
      rows[o + BLOCKS] = hit + fresh;
      rows[o + STEP] = n;
      run.push(r);
      kv.register(r, cached + n);
      rows[o + STATE] = RUNNING;
      this.#runningCount++;
      budget -= n;
      prefill += n;
      const flags = rows[o + FLAGS]!;
      if ((flags & ADMITTED) === 0) {
        rows[o + FLAGS] = flags | ADMITTED;
        const promptTokens = rows[o + PROMPT]!;
        this.#n.promptTokensTotal += promptTokens;
        if (kv.caching && seqTable.hashes[r] !== null) {
          this.#n.cacheQueriesTotal += promptTokens;
          this.#n.cacheHitsTotal += cached;
        }
        if ((flags & ON_ADMIT) !== 0) seqTable.callerOf(r).onAdmit?.(rows[o + ID]!, this.#clock.now());
      }
    }
    if (prefill + decode === 0) {
      this.#armPending();
      return;
    }
    const p = this.profile;
    const durationMs = (p.stepBaseMs + p.prefillMsPerToken * prefill + p.decodeMsPerToken * decode) * this.#slowFactor;
    this.#stepPrefill = prefill;
    if (late > 0 && !caughtUp) this.#n.lateMsTotal += late;
    this.#stepStartMs = startMs;
    this.#stepPlannedMs = durationMs;
    this.#stepEndPlannedMs = this.#stepStartMs + durationMs;
    this.#inStep = true;
    this.#clock.setTimer(this.#stepEndPlannedMs, this.#onStepDue);
  }

  /** Hands one step's sink tokens to their sinks: the cohort's as one count per sink, then the others. */
  #flushSinks(now: number, lockGapMs: number, bSink: Int32Array, bGapMs: Float64Array, nb: number): void {
    const sinks = this.#sinks;
    this.#cohort.flushTo(sinks, now, lockGapMs);
    for (let i = 0; i < nb; i++) sinks[bSink[i]!]!.onStepTokens(now, 1, bGapMs[i]!);
  }

  #endStep(): void {
    const now = this.#clock.now();
    const n = this.#n;
    this.#inStep = false;
    n.stepsTotal++;
    n.busyMsTotal += now - this.#stepStartMs;
    n.prefillTokensTotal += this.#stepPrefill;
    const run = this.#run;
    const cohort = this.#cohort;
    const seqTable = this.#seqs;
    const rows = seqTable.rows;
    const times = seqTable.times;
    const rec = run.rec;
    // At most one delivery, sink token or finishing member per running entry.
    const scratch = StepScratch.take(run.len);
    const deliver = scratch.deliver;
    let nd = 0;
    let nb = 0;
    const kinds = scratch.kind;
    const bSink = scratch.bSink;
    const bGap = scratch.bGapMs;
    let tokens = 0;
    let lockGapMs = 0;
    let hasLock = false;
    if (cohort.stepping) {
      // Every cohort member got one token, all with the same gap.
      cohort.stepping = false;
      hasLock = true;
      tokens = cohort.count;
      lockGapMs = now - cohort.lastMs;
      cohort.lastMs = now;
      cohort.steps++;
      cohort.countFlush();
    }
    // First the bookkeeping over the rows (no callbacks, so nothing moves under it): the
    // cohort members this step finished and the loose entries, merged in index order.
    // Delivery kinds: 0 onToken, 1 onToken + onFinish, 2 onFinish (its last token went to a sink).
    const finSlots = scratch.finSlots;
    const nf = hasLock ? cohort.collectFinishing(cohort.steps, rows, finSlots) : 0;
    const loose = run.loose;
    const nLoose = run.looseLen;
    let kept = 0;
    for (let k = 0, f = 0; k < nLoose || f < nf; ) {
      if (f < nf && (k === nLoose || finSlots[f]! <= loose[k]!)) {
        // A cohort member's last token: it leaves with its counters brought up to date.
        const i = finSlots[f++]!;
        const r = rec[i]!;
        this.#runningCount--;
        n.successTotal++;
        rows[r * STRIDE + STATE] = DONE;
        this.#dropRunning(i);
        deliver[nd] = r;
        kinds[nd++] = 2;
        continue;
      }
      const i = loose[k++]!;
      const r = rec[i]!;
      if (r === HOLE) continue;
      const o = r * STRIDE;
      if (rows[o + FIN] !== FREE) continue;
      const t = rows[o + STEP]!;
      if (t === 0) {
        loose[kept++] = i;
        continue;
      }
      rows[o + STEP] = 0;
      const c = rows[o + COMPUTED]! + t;
      rows[o + COMPUTED] = c;
      if (c < rows[o + TARGET]!) {
        loose[kept++] = i;
        continue;
      }
      tokens++;
      const g = rows[o + GENERATED]! + 1;
      rows[o + GENERATED] = g;
      const done = g >= rows[o + MAX]!;
      const sink = rows[o + SINK]!;
      let kind = done ? 1 : 0;
      if (sink >= 0 && g > 1) {
        bSink[nb] = sink;
        bGap[nb++] = now - times[r * TIME_STRIDE + LAST_MS]!;
        times[r * TIME_STRIDE + LAST_MS] = now;
        if (!done) {
          cohort.join(i, now);
          continue;
        }
        kind = 2;
      } else times[r * TIME_STRIDE + LAST_MS] = now;
      if (done) {
        this.#runningCount--;
        n.successTotal++;
        rows[r * STRIDE + STATE] = DONE;
        this.#dropRunning(i);
      } else if (sink >= 0) cohort.join(i, now);
      else loose[kept++] = i;
      deliver[nd] = r;
      kinds[nd++] = kind;
    }
    run.looseLen = kept;
    n.generationTokensTotal += tokens;
    // Then the callbacks, which may submit or abort: sinks in bulk, then requests one by one.
    if (hasLock || nb > 0) this.#flushSinks(now, lockGapMs, bSink, bGap, nb);
    // (The shared scratch is given back even if a callback throws.)
    try {
      for (let k = 0; k < nd; k++) {
        const r = deliver[k]!;
        const kind = kinds[k]!;
        const caller = seqTable.callerOf(r);
        // (Callbacks may submit and grow the rows: read afresh.)
        const rows = seqTable.rows;
        const id = rows[r * STRIDE + ID]!;
        if (kind === 0) {
          // Skipped if an earlier callback aborted it.
          if (rows[r * STRIDE + STATE] === RUNNING) caller.onToken(id, 1, now);
          continue;
        }
        if (kind === 1) caller.onToken(id, 1, now);
        caller.onFinish(id, 'length', now);
        seqTable.recycle(r);
      }
    } finally {
      scratch.done();
    }
    this.#onStepEnd?.(now);
    this.#kv.sink?.stepEnd(now);
    // The next step starts at once (vLLM's busy loop), not after another timer.
    if (!this.#timer && !this.#inStep) this.#startStep(true);
  }
}
