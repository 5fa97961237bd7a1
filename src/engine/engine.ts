import type { Clock, Timer } from '../core/index.js';
import { cachedBlockHashes } from './block-hash.js';
import { BlockPool } from './block-pool.js';
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
}

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
}

export interface EngineFault {
  /** No step starts while set (the one in flight, if any, still completes). */
  stalled?: boolean;
  /** Steps take this many times longer (1 = healthy). */
  slowFactor?: number;
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
}

const PENDING = 0;
const WAITING = 1;
const RUNNING = 2;
const DONE = 3;
// Running entries outside the cohort (see #rFin).
const FREE = -1;
const HOLE = -2;
/** Buckets of cohort members by finishing step (a power of two; a member due later than that is skipped until its turn). */
const FINISH_RING = 512;

// A ticket is uses x RECORDS + index: exact in a double for 2^31 uses of each of up to 2^21 records.
const RECORDS = 2 ** 21;
const IDLE: EngineRequest = { promptTokens: 0, maxTokens: 0, onToken() {}, onFinish() {} };

/**
 * A request's cold state; while it runs, its hot counters live in the engine's running arrays.
 * Records are reused (`start`) once nothing in the engine refers to their last request.
 */
class Seq {
  /** How many requests this record has held (part of their tickets). */
  uses = 0;
  req: EngineRequest = IDLE;
  state = DONE;
  // Copied from `req`, which is cold in memory by the time the request is admitted.
  promptTokens = 0;
  maxTokens = 0;
  onAdmit: ((nowMs: number) => void) | undefined = undefined;
  /** Index of its sink in the engine's sink table, -1 for none. */
  sink = -1;
  hashes: readonly number[] | null = null;
  /** Tokens to compute before decoding (the prompt; prompt + generated after a preemption). */
  prefillTarget = 1;
  /** Tokens whose KV is in cache (kept here while not running). */
  computed = 0;
  generated = 0;
  /** NaN only until `start` (a field that starts as a small integer is converted, in every record, when a fraction is first stored). */
  lastTokenMs = Number.NaN;
  admitted = false;
  /** Its entry in the running arrays while RUNNING. */
  slot = -1;
  /** Per prompt block while running: its cache entry, or -1 if private (null: no full block, or caching off). */
  entries: number[] | null = null;
  /** Prompt blocks offered to the cache so far (`entries[0..registered)` are set). */
  registered = 0;
  /** How many of those are cache entries (the rest of its blocks are private). */
  shared = 0;

  constructor(readonly index: number) {}

  /** Takes `req` (pending in the frontend); returns its ticket. */
  start(req: EngineRequest, sink: number, hashes: readonly number[] | null): Ticket {
    this.uses++;
    this.req = req;
    this.state = PENDING;
    this.promptTokens = req.promptTokens;
    this.maxTokens = req.maxTokens;
    this.onAdmit = req.onAdmit;
    this.sink = sink;
    this.hashes = hashes;
    this.prefillTarget = Math.max(1, req.promptTokens);
    this.computed = 0;
    this.generated = 0;
    this.lastTokenMs = 0;
    this.admitted = false;
    this.slot = -1;
    this.registered = 0;
    this.shared = 0;
    return (this.uses * RECORDS + this.index) as Ticket;
  }
}

/**
 * A vLLM-like continuous-batching worker driven only by a Clock (REFERENCE §4): a running set
 * capped by maxNumSeqs, a bounded FIFO waiting queue, a per-step token budget spent on one decode
 * token per running sequence then on chunked prefill, KV blocks allocated as sequences grow
 * (admission stops when the cache is full; a sequence that cannot grow preempts the newest),
 * and vLLM V1's prefix cache over them (see `BlockPool`): a request with token ids shares the
 * cached blocks its prompt starts with and skips their prefill.
 * A step's duration is decided at its start; its tokens are delivered at its end.
 *
 * The running set is kept as parallel typed arrays (one entry per running sequence, in admission
 * order, removed lazily and compacted at a step's start once half are holes); a step visits
 * the entries outside the decode cohort (see #loose) and the cohort members that finish.
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
  #inStep = false;
  #timer: Timer | null = null;
  #pendingTimer: Timer | null = null;
  #waitingCount = 0;
  #pendingCount = 0;
  // The sink of the last submit (requests come in runs with one sink: a map lookup each was cold).
  #lastSink: TokenSink | undefined = undefined;
  #lastSinkIndex = -1;
  /** Records free for reuse, most recently freed last. */
  readonly #spareSeqs: Seq[] = [];
  // Requests still in the frontend, oldest first, and when each reaches the scheduler: [head, tail)
  // of these two, emptied by resetting both, so the arrays keep their room.
  readonly #pending: (Seq | undefined)[] = [];
  readonly #pendingReadyMs: number[] = [];
  #pendingHead = 0;
  #pendingTail = 0;
  /** When the frontend finishes the requests it already holds. */
  #frontendFreeMs = -Infinity;
  // The running set: entry i is live while rSeq[i] !== null. Its per-entry arrays (and the per-step
  // scratch arrays sized like them) are views on one buffer, see #allocRunning.
  #rLen = 0;
  #rSeq: (Seq | null)[] = [];
  #rComputed = new Int32Array(0);
  #rTarget = new Int32Array(0);
  #rGenerated = new Int32Array(0);
  #rMax = new Int32Array(0);
  #rBlocks = new Int32Array(0);
  #rStep = new Int32Array(0);
  #rSink = new Int32Array(0);
  /** The entry's record index (what the cohort's lists link), so they need not read the record. */
  #rRec = new Int32Array(0);
  #rLastMs = new Float64Array(0);
  // The cohort: running sink requests past their first token that all got their last token at
  // #lockLastMs and get one more at every step. They advance as one count (#lockSteps), so a
  // step costs O(1) for them instead of O(sequences); an entry keeps its computed and generated
  // counts as of #rJoin and is brought up to date (#unlock) only when something touches it alone.
  // #rFin: for a cohort member, the #lockSteps after which it has all its tokens; otherwise FREE
  // (running alone) or HOLE (dropped). One dense read per entry tells a step's loops what to skip.
  #rFin = new Int32Array(0);
  #rJoin = new Int32Array(0);
  #lockSteps = 0;
  #lockCount = 0;
  #lockLastMs = 0;
  /** The step in flight decodes the cohort. */
  #lockStepping = false;
  // Cohort members by the #lockSteps at which they finish, modulo FINISH_RING: a doubly linked
  // list of record indices per ring bucket, in the order they joined. A member is listed from its
  // #join to its #unlock, so a bucket holds exactly the members due at its step and any due a whole
  // number of turns later (skipped until then). Typed arrays: no hashing, and no object per bucket
  // (at fleet scale those were most of what the garbage collector promoted).
  readonly #finHead = new Int32Array(FINISH_RING).fill(-1);
  readonly #finTail = new Int32Array(FINISH_RING).fill(-1);
  /** By record index: the next and previous member of its bucket (-1: none). */
  #finNext = new Int32Array(0);
  #finPrev = new Int32Array(0);
  // Running entries outside the cohort, in index order: every FREE entry, and some that have since
  // joined or left (dropped at the next #endStep), so a step visits them, not the whole running set.
  #loose = new Int32Array(0);
  #looseLen = 0;
  #finSlots = new Int32Array(64);
  #lockBySink = new Int32Array(4);
  #lockFlush = new Int32Array(4);
  /** Members by the cohort step (mod block size) at which each needs a new KV block. */
  readonly #lockPhase: Int32Array;
  #runningCount = 0;
  // [head, tail), kept like the frontend queue below.
  readonly #waiting: (Seq | undefined)[] = [];
  #waitingHead = 0;
  #waitingTail = 0;
  // Dropped entries in the running arrays since the last compaction.
  #rHoles = 0;
  readonly #pool: BlockPool;
  readonly #caching: boolean;
  #stalled = false;
  #slowFactor = 1;
  #stepPrefill = 0;
  #stepStartMs = 0;
  #promptTokensTotal = 0;
  #prefillTokensTotal = 0;
  #cacheQueriesTotal = 0;
  #cacheHitsTotal = 0;
  #generationTokensTotal = 0;
  #successTotal = 0;
  #abortTotal = 0;
  #preemptionsTotal = 0;
  #stepsTotal = 0;
  #busyMsTotal = 0;
  readonly #sinks: TokenSink[] = [];
  // One step's sink tokens outside the cohort: which sink, the gap.
  #bSink = new Int32Array(0);
  #bGapMs = new Float64Array(0);
  readonly #sinkIndex = new Map<TokenSink, number>();
  // Per step: requests that need their own callbacks (first token, no sink, or finished).
  readonly #deliver: (Seq | null)[] = [];
  // Every record this engine made (by index); those free for reuse are in #spareSeqs.
  readonly #seqs: Seq[] = [];
  /** Prompt-block entry arrays of sequences that left the running set, reused by the next admissions. */
  readonly #spareEntries: number[][] = [];
  #deliverKind = new Uint8Array(0);

  constructor(opts: EngineOptions) {
    this.#clock = opts.clock;
    this.profile = opts.profile;
    this.id = opts.id ?? opts.profile.name;
    this.#maxNumSeqs = opts.maxNumSeqs ?? opts.profile.maxNumSeqs;
    this.#maxWaiting = opts.maxWaiting ?? opts.profile.maxWaiting;
    this.#blockSize = opts.profile.blockSize;
    this.#lockPhase = new Int32Array(opts.profile.blockSize);
    this.#pool = new BlockPool(opts.profile.kvBlocks);
    this.#caching = opts.prefixCaching ?? true;
    this.#onStepEnd = opts.onStepEnd;
    // Room for a full running set and as many holes (compacted once they are half the entries):
    // each growth is a fresh buffer (and its page faults).
    this.#allocRunning(Math.min(2048, Math.max(16, 2 * this.#maxNumSeqs)));
  }

  get running(): number {
    return this.#runningCount;
  }

  get waiting(): number {
    return this.#waitingCount + this.#pendingCount;
  }

  get kvUsage(): number {
    return 1 - this.#pool.free / this.profile.kvBlocks;
  }

  /** Whether this engine caches prompt prefixes. */
  get prefixCaching(): boolean {
    return this.#caching;
  }

  /** KV blocks held by the prefix cache, referenced or idle. */
  get cachedBlocks(): number {
    return this.#pool.cached;
  }

  get maxNumSeqs(): number {
    return this.#maxNumSeqs;
  }

  /** Accepts a request or says why not; never throws on load. */
  submit(req: EngineRequest): SubmitResult {
    if (req.promptTokens + req.maxTokens > this.profile.maxModelLen) return { ok: false, reason: 'too_long' };
    if (this.#closed || this.#waitingCount + this.#pendingCount >= this.#maxWaiting) {
      return { ok: false, reason: 'queue_full' };
    }
    let sink = -1;
    if (req.sink === this.#lastSink) sink = this.#lastSinkIndex;
    else if (req.sink) {
      sink = this.#sinkIndex.get(req.sink) ?? -1;
      if (sink < 0) {
        sink = this.#sinks.length;
        this.#sinkIndex.set(req.sink, sink);
        this.#sinks.push(req.sink);
        if (sink >= this.#lockBySink.length) {
          const by = new Int32Array(sink * 2);
          by.set(this.#lockBySink);
          this.#lockBySink = by;
          this.#lockFlush = new Int32Array(sink * 2);
        }
      }
      this.#lastSink = req.sink;
      this.#lastSinkIndex = sink;
    }
    const hashes = req.promptTokenIds ? cachedBlockHashes(req.promptTokenIds, this.#blockSize) : null;
    const seq = this.#spareSeqs.pop() ?? this.#newSeq();
    if (seq === null) return { ok: false, reason: 'queue_full' };
    const ticket = seq.start(req, sink, hashes);
    this.#pendingCount++;
    // The frontend is one process handling requests one at a time (vLLM's API server), so a wave of
    // arrivals queues there; ready times stay in arrival order: a busy engine takes the due ones at
    // its next step's start, an idle one sets one timer for the oldest.
    const readyMs = Math.max(this.#clock.now(), this.#frontendFreeMs) + this.profile.frontendOverheadMs;
    this.#frontendFreeMs = readyMs;
    const t = this.#pendingTail++;
    if (t < this.#pending.length) {
      this.#pending[t] = seq;
      this.#pendingReadyMs[t] = readyMs;
    } else {
      this.#pending.push(seq);
      this.#pendingReadyMs.push(readyMs);
    }
    this.#armPending();
    return { ok: true, ticket };
  }

  /** A new record, or null if the engine holds as many requests as tickets can name. */
  #newSeq(): Seq | null {
    if (this.#seqs.length === RECORDS) return null;
    const seq = new Seq(this.#seqs.length);
    this.#seqs.push(seq);
    if (seq.index >= this.#finNext.length) {
      const cap = Math.max(64, 2 * seq.index);
      const buf = new ArrayBuffer(cap * 8);
      const next = new Int32Array(buf, 0, cap);
      const prev = new Int32Array(buf, cap * 4, cap);
      next.set(this.#finNext);
      prev.set(this.#finPrev);
      this.#finNext = next;
      this.#finPrev = prev;
    }
    return seq;
  }

  /**
   * Returns a record for reuse once nothing refers to its request: after its last callback, or
   * when a queue meets it aborted. Its request object is let go.
   */
  #recycle(seq: Seq): void {
    seq.req = IDLE;
    seq.onAdmit = undefined;
    this.#spareSeqs.push(seq);
  }

  /** The record a ticket names while its request is known (null once ended and reused, or if malformed). */
  #seqOf(ticket: Ticket): Seq | null {
    const index = ticket % RECORDS;
    const seq = this.#seqs[index];
    return seq !== undefined && seq.uses * RECORDS + index === ticket ? seq : null;
  }

  /** Aborts a request wherever it is; its slot and KV blocks are free at once. False if it already ended. */
  abort(ticket: Ticket): boolean {
    const seq = this.#seqOf(ticket);
    if (!seq || seq.state === DONE) return false;
    const running = seq.state === RUNNING;
    if (seq.state === PENDING) this.#pendingCount--;
    else if (seq.state === WAITING) this.#waitingCount--;
    else {
      this.#runningCount--;
      if (this.#rSeq[seq.slot] === seq) this.#dropRunning(seq.slot);
    }
    seq.state = DONE;
    this.#abortTotal++;
    seq.req.onFinish('abort', this.#clock.now());
    // A queued one is still listed in its queue, which recycles it when it gets there.
    if (running) this.#recycle(seq);
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
    return {
      running: this.running,
      waiting: this.waiting,
      kvUsage: this.kvUsage,
      promptTokensTotal: this.#promptTokensTotal,
      prefixCacheQueriesTotal: this.#cacheQueriesTotal,
      prefixCacheHitsTotal: this.#cacheHitsTotal,
      prefillTokensTotal: this.#prefillTokensTotal,
      generationTokensTotal: this.#generationTokensTotal,
      requestSuccessTotal: this.#successTotal,
      requestAbortTotal: this.#abortTotal,
      preemptionsTotal: this.#preemptionsTotal,
      stepsTotal: this.#stepsTotal,
      busyMsTotal: this.#busyMsTotal,
    };
  }

  /** Stops stepping; later submits are refused. Requests in flight are left as they are. */
  close(): void {
    this.#closed = true;
    this.#timer?.cancel();
    this.#timer = null;
    this.#pendingTimer?.cancel();
    this.#pendingTimer = null;
  }

  /**
   * Removes running entry `i`: its private blocks return to the pool, its cache entries lose a
   * reference (and stay cached). The slot is compacted later.
   */
  #dropRunning(i: number): void {
    this.#unlock(i);
    const seq = this.#rSeq[i]!;
    this.#rSeq[i] = null;
    this.#rFin[i] = HOLE;
    this.#rHoles++;
    this.#pool.release(this.#rBlocks[i]! - seq.shared);
    const entries = seq.entries;
    if (entries !== null) {
      this.#pool.deref(entries, seq.registered);
      seq.registered = 0;
      seq.shared = 0;
      // Recycled while still in cache: the next admission writes over it.
      this.#spareEntries.push(entries);
      seq.entries = null;
    }
    this.#rBlocks[i] = 0;
    this.#rStep[i] = 0;
  }

  /**
   * The longest run of the waiting `seq`'s leading prompt blocks in the cache, written to its
   * `entries` (not yet referenced). At most promptTokens - 1 tokens, as in vLLM: the last prompt
   * token is always computed to get logits, so a fully cached block-aligned prompt recomputes its
   * last block.
   */
  #lookup(seq: Seq): number {
    const hashes = seq.hashes;
    if (!this.#caching || hashes === null || hashes.length === 0) return 0;
    const entries = (seq.entries ??= this.#spareEntries.pop() ?? []);
    return this.#pool.match(hashes, Math.min(hashes.length, Math.floor((seq.prefillTarget - 1) / this.#blockSize)), entries);
  }

  /**
   * Offers to the cache the prompt blocks that `seq` fills up to `tokens` (vLLM caches a block as
   * soon as the step that computes it is scheduled). Each is O(1); a prompt's blocks once in all.
   */
  #register(seq: Seq, tokens: number): void {
    const entries = seq.entries;
    if (entries === null) return;
    const hashes = seq.hashes!;
    const upTo = Math.min(hashes.length, Math.floor(tokens / this.#blockSize));
    for (let b = seq.registered; b < upTo; b++) {
      const e = this.#pool.register(hashes[b]!, b > 0 ? entries[b - 1]! + 1 : -1);
      entries[b] = e;
      if (e >= 0) seq.shared++;
    }
    if (upTo > seq.registered) seq.registered = upTo;
  }

  /** Moves every request whose frontend delay is over into the waiting queue. */
  #drainPending(now: number): void {
    const q = this.#pending;
    const ready = this.#pendingReadyMs;
    let h = this.#pendingHead;
    const tail = this.#pendingTail;
    if (h === tail || ready[h]! > now) return;
    while (h < tail && ready[h]! <= now) {
      const seq = q[h]!;
      q[h++] = undefined;
      if (seq.state !== PENDING) {
        this.#recycle(seq); // aborted while pending
        continue;
      }
      this.#pendingCount--;
      seq.state = WAITING;
      this.#pushWaiting(seq);
      this.#waitingCount++;
    }
    if (h === tail) {
      h = 0;
      this.#pendingTail = 0;
    } else if (h > 1024 && h * 2 > tail) {
      q.copyWithin(0, h, tail);
      ready.copyWithin(0, h, tail);
      q.fill(undefined, tail - h, tail);
      this.#pendingTail = tail - h;
      h = 0;
    }
    this.#pendingHead = h;
  }

  /** While no step is in flight or due, wakes the engine when the oldest pending request is ready. */
  #armPending(): void {
    if (this.#pendingTimer || this.#inStep || this.#timer || this.#closed) return;
    if (this.#pendingHead === this.#pendingTail) return;
    this.#pendingTimer = this.#clock.setTimer(this.#pendingReadyMs[this.#pendingHead]!, this.#onPendingDue);
  }

  readonly #onPendingDue = (): void => {
    this.#pendingTimer = null;
    this.#drainPending(this.#clock.now());
    this.#kick();
    this.#armPending();
  };

  /** Starts a step soon if idle and there is work (deferred so same-instant arrivals batch). */
  #kick(): void {
    if (this.#timer || this.#inStep || this.#closed || this.#stalled) return;
    if (this.#runningCount === 0 && this.#waitingCount === 0) return;
    this.#timer = this.#clock.setTimer(this.#clock.now(), this.#onKickDue);
  }

  // Timer callbacks made once per engine, not once per step.
  readonly #onKickDue = (): void => {
    this.#timer = null;
    this.#startStep();
  };

  readonly #onStepDue = (): void => this.#endStep();

  #blocksFor(tokens: number): number {
    return Math.ceil(tokens / this.#blockSize);
  }

  /**
   * Squeezes out dropped entries once they are half the arrays, or the arrays are full. A step
   * visits only the loose entries and the finishing ones, so holes cost little; a compaction
   * moves every later entry and touches its (cold) record.
   */
  #compactRunning(): void {
    if (this.#rHoles === 0 || (this.#rHoles * 2 < this.#rLen && this.#rLen < this.#rComputed.length)) return;
    this.#rHoles = 0;
    const seqs = this.#rSeq;
    const n = this.#rLen;
    let j = 0;
    for (let i = 0; i < n; i++) {
      const s = seqs[i]!;
      if (s === null) continue;
      if (j !== i) {
        seqs[j] = s;
        this.#rComputed[j] = this.#rComputed[i]!;
        this.#rTarget[j] = this.#rTarget[i]!;
        this.#rGenerated[j] = this.#rGenerated[i]!;
        this.#rMax[j] = this.#rMax[i]!;
        this.#rBlocks[j] = this.#rBlocks[i]!;
        this.#rStep[j] = this.#rStep[i]!;
        this.#rSink[j] = this.#rSink[i]!;
        this.#rRec[j] = this.#rRec[i]!;
        this.#rLastMs[j] = this.#rLastMs[i]!;
        this.#rFin[j] = this.#rFin[i]!;
        this.#rJoin[j] = this.#rJoin[i]!;
        s.slot = j;
      }
      j++;
    }
    for (let i = j; i < n; i++) seqs[i] = null;
    this.#rLen = j;
    this.#rebuildLoose();
  }

  /** Lists every FREE running entry afresh (after compaction moved them, or the cohort dissolved). */
  #rebuildLoose(): void {
    const fin = this.#rFin;
    let k = 0;
    for (let i = 0; i < this.#rLen; i++) if (fin[i] === FREE) this.#loose[k++] = i;
    this.#looseLen = k;
  }

  /**
   * Gives the running set's arrays room for `cap` entries, keeping their contents: views on one
   * buffer (allocating a typed array costs microseconds, and a fleet has thousands of engines).
   * The loose list and the scratch arrays never hold more than the running arrays do.
   */
  #allocRunning(cap: number): void {
    // Per entry: 2 Float64 + 12 Int32 + 1 Uint8 = 65 bytes, laid out widest first so every view is
    // aligned (a view past the end throws, so a table added without growing this fails at once).
    const buf = new ArrayBuffer(cap * 65);
    let at = 0;
    const view = <T extends Float64Array | Int32Array | Uint8Array>(old: T, make: (b: ArrayBuffer, offset: number, n: number) => T): T => {
      const a = make(buf, at, cap);
      a.set(old);
      at += cap * a.BYTES_PER_ELEMENT;
      return a;
    };
    const f64 = (b: ArrayBuffer, offset: number, n: number) => new Float64Array(b, offset, n);
    const i32 = (b: ArrayBuffer, offset: number, n: number) => new Int32Array(b, offset, n);
    this.#rLastMs = view(this.#rLastMs, f64);
    this.#bGapMs = view(this.#bGapMs, f64);
    this.#rComputed = view(this.#rComputed, i32);
    this.#rTarget = view(this.#rTarget, i32);
    this.#rGenerated = view(this.#rGenerated, i32);
    this.#rMax = view(this.#rMax, i32);
    this.#rBlocks = view(this.#rBlocks, i32);
    this.#rStep = view(this.#rStep, i32);
    this.#rSink = view(this.#rSink, i32);
    this.#rRec = view(this.#rRec, i32);
    this.#rFin = view(this.#rFin, i32);
    this.#rJoin = view(this.#rJoin, i32);
    this.#loose = view(this.#loose, i32);
    this.#bSink = view(this.#bSink, i32);
    this.#deliverKind = view(this.#deliverKind, (b, offset, n) => new Uint8Array(b, offset, n));
  }

  /** Appends `seq` to the running arrays (growing them if full); returns its entry. */
  #pushRunning(seq: Seq): number {
    if (this.#rLen === this.#rComputed.length) {
      // Full: squeeze out the holes first, grow only if there are none.
      this.#compactRunning();
      if (this.#rLen === this.#rComputed.length) this.#allocRunning(this.#rLen * 2);
    }
    const i = this.#rLen++;
    this.#rSeq[i] = seq;
    this.#rComputed[i] = seq.computed;
    this.#rTarget[i] = seq.prefillTarget;
    this.#rGenerated[i] = seq.generated;
    this.#rMax[i] = seq.maxTokens;
    this.#rBlocks[i] = 0;
    this.#rStep[i] = 0;
    this.#rSink[i] = seq.sink;
    this.#rRec[i] = seq.index;
    this.#rLastMs[i] = seq.lastTokenMs;
    this.#rFin[i] = FREE;
    seq.slot = i;
    this.#loose[this.#looseLen++] = i;
    return i;
  }

  /** Adds running entry `i` (a sink request that just got a token and has more to come) to the cohort. */
  #join(i: number, now: number): void {
    const c = this.#rComputed[i]!;
    const bs = this.#blockSize;
    // Its blocks must be what its tokens need (true after any step), so they can be recomputed.
    if (this.#rBlocks[i] !== Math.ceil(c / bs)) return;
    if (this.#lockCount === 0) this.#lockLastMs = now;
    const s = this.#lockSteps;
    const fin = s + this.#rMax[i]! - this.#rGenerated[i]!;
    this.#rJoin[i] = s;
    this.#rFin[i] = fin;
    const r = this.#rRec[i]!;
    const k = fin & (FINISH_RING - 1);
    const tail = this.#finTail[k]!;
    this.#finPrev[r] = tail;
    this.#finNext[r] = -1;
    if (tail >= 0) this.#finNext[tail] = r;
    else this.#finHead[k] = r;
    this.#finTail[k] = r;
    this.#lockCount++;
    this.#lockBySink[this.#rSink[i]!]!++;
    this.#lockPhase[(((s - c) % bs) + bs) % bs]!++;
  }

  /** Takes entry `i` out of the cohort, bringing its counters, blocks and step up to date. */
  #unlock(i: number): void {
    const fin = this.#rFin[i]!;
    if (fin < 0) return;
    this.#rFin[i] = FREE;
    const r = this.#rRec[i]!;
    const bucket = fin & (FINISH_RING - 1);
    const prev = this.#finPrev[r]!;
    const next = this.#finNext[r]!;
    if (prev >= 0) this.#finNext[prev] = next;
    else this.#finHead[bucket] = next;
    if (next >= 0) this.#finPrev[next] = prev;
    else this.#finTail[bucket] = prev;
    const bs = this.#blockSize;
    const join = this.#rJoin[i]!;
    const k = this.#lockSteps - join;
    this.#lockCount--;
    this.#lockBySink[this.#rSink[i]!]!--;
    this.#lockPhase[(((join - this.#rComputed[i]!) % bs) + bs) % bs]!--;
    const c = this.#rComputed[i]! + k;
    this.#rComputed[i] = c;
    this.#rGenerated[i] = this.#rGenerated[i]! + k;
    this.#rLastMs[i] = this.#lockLastMs;
    // Mid-step it holds this step's block (if it needed one) and its decode token is scheduled.
    this.#rBlocks[i] = Math.ceil(c / bs) + (this.#lockStepping && c % bs === 0 ? 1 : 0);
    this.#rStep[i] = this.#lockStepping ? 1 : 0;
  }

  #unlockAll(): void {
    for (let i = 0; i < this.#rLen && this.#lockCount > 0; i++) this.#unlock(i);
    this.#rebuildLoose();
  }

  /** Tokens a request has generated so far (-1 once it ended). */
  generatedOf(ticket: Ticket): number {
    const seq = this.#seqOf(ticket);
    if (!seq || seq.state === DONE) return -1;
    if (seq.state !== RUNNING) return seq.generated;
    const i = seq.slot;
    return this.#rGenerated[i]! + (this.#rFin[i]! >= 0 ? this.#lockSteps - this.#rJoin[i]! : 0);
  }

  /** When a request last got a token (0 before its first; NaN once it ended). */
  lastTokenMsOf(ticket: Ticket): number {
    const seq = this.#seqOf(ticket);
    if (!seq || seq.state === DONE) return Number.NaN;
    if (seq.state !== RUNNING) return seq.lastTokenMs;
    return this.#rFin[seq.slot]! >= 0 ? this.#lockLastMs : this.#rLastMs[seq.slot]!;
  }

  /** Grows running entry `i` to hold `tokens` KV tokens, preempting the newest entries if needed. */
  #grow(i: number, tokens: number): boolean {
    const need = this.#blocksFor(tokens) - this.#rBlocks[i]!;
    if (need <= 0) return true;
    while (this.#pool.free < need) {
      const victim = this.#newestRunning();
      if (victim < 0 || victim === i) return false;
      this.#preempt(victim);
    }
    this.#pool.allocate(need);
    this.#rBlocks[i] = this.#rBlocks[i]! + need;
    return true;
  }

  #newestRunning(): number {
    const seqs = this.#rSeq;
    for (let i = this.#rLen - 1; i >= 0; i--) if (seqs[i] !== null) return i;
    return -1;
  }

  /** vLLM's recompute preemption: drop the KV, go back to the front of the queue. */
  #preempt(i: number): void {
    this.#unlock(i);
    const seq = this.#rSeq[i]!;
    this.#preemptionsTotal++;
    this.#runningCount--;
    seq.prefillTarget = Math.max(this.#rTarget[i]!, this.#rComputed[i]!);
    seq.computed = 0;
    seq.generated = this.#rGenerated[i]!;
    seq.lastTokenMs = this.#rLastMs[i]!;
    seq.state = WAITING;
    this.#dropRunning(i);
    if (this.#waitingHead === 0) {
      // Room at the front: shift the queue up one.
      this.#pushWaiting(undefined);
      this.#waiting.copyWithin(1, 0, this.#waitingTail - 1);
      this.#waitingHead = 1;
    }
    this.#waiting[--this.#waitingHead] = seq;
    this.#waitingCount++;
  }

  #pushWaiting(seq: Seq | undefined): void {
    const t = this.#waitingTail++;
    if (t < this.#waiting.length) this.#waiting[t] = seq;
    else this.#waiting.push(seq);
  }

  #popWaiting(): Seq | undefined {
    const w = this.#waiting;
    while (this.#waitingHead < this.#waitingTail) {
      const s = w[this.#waitingHead];
      if (s && s.state === WAITING) return s;
      if (s) this.#recycle(s); // aborted while waiting
      w[this.#waitingHead++] = undefined;
    }
    this.#waitingHead = 0;
    this.#waitingTail = 0;
    return undefined;
  }

  #shiftWaiting(): void {
    const w = this.#waiting;
    w[this.#waitingHead++] = undefined;
    this.#waitingCount--;
    const head = this.#waitingHead;
    const tail = this.#waitingTail;
    if (head === tail) {
      this.#waitingHead = 0;
      this.#waitingTail = 0;
    } else if (head > 1024 && head * 2 > tail) {
      w.copyWithin(0, head, tail);
      w.fill(undefined, tail - head, tail);
      this.#waitingHead = 0;
      this.#waitingTail = tail - head;
    }
  }

  #startStep(): void {
    if (this.#closed) return;
    if (this.#stalled) {
      this.#armPending();
      return;
    }
    this.#drainPending(this.#clock.now());
    this.#compactRunning();
    let budget = this.profile.maxNumBatchedTokens;
    let prefill = 0;
    let decode = 0;
    const seqs = this.#rSeq;
    const computed = this.#rComputed;
    const target = this.#rTarget;
    const step = this.#rStep;
    const blocks = this.#rBlocks;
    const bs = this.#blockSize;
    let prefilling = 0;
    // The cohort decodes as one when every running sequence has budget and every decoder could
    // grow a block (so no decode preempts, and the outcome is the one per-sequence order gives);
    // otherwise it dissolves and this step runs sequence by sequence.
    if (this.#lockCount > 0) {
      const need = this.#lockPhase[this.#lockSteps % bs]!;
      if (budget >= this.#runningCount && this.#pool.free >= need + this.#runningCount - this.#lockCount) {
        this.#pool.allocate(need);
        budget -= this.#lockCount;
        decode += this.#lockCount;
        this.#lockStepping = true;
      } else this.#unlockAll();
    }
    const fin = this.#rFin;
    const loose = this.#loose;
    const nLoose = this.#looseLen;
    // Decodes first, then chunks of prompts already running, as vLLM V1 spends its budget (the
    // cohort's decodes are counted above; the rest are loose, visited in admission order).
    for (let k = 0; k < nLoose && budget > 0; k++) {
      const i = loose[k]!;
      if (fin[i] !== FREE) continue;
      const c = computed[i]!;
      if (c < target[i]!) {
        prefilling++;
        continue;
      }
      if (c + 1 > blocks[i]! * bs && !this.#grow(i, c + 1)) {
        this.#preempt(i);
        continue;
      }
      step[i] = 1;
      budget--;
      decode++;
    }
    for (let k = 0; k < nLoose && budget > 0 && prefilling > 0; k++) {
      const i = loose[k]!;
      if (fin[i] !== FREE) continue;
      const c = computed[i]!;
      const t = target[i]!;
      if (c >= t) continue;
      prefilling--;
      const n = Math.min(t - c, budget);
      if (!this.#grow(i, c + n)) {
        this.#preempt(i);
        continue;
      }
      this.#register(seqs[i]!, c + n);
      step[i] = n;
      budget -= n;
      prefill += n;
    }
    while (budget > 0 && this.#runningCount < this.#maxNumSeqs) {
      const s = this.#popWaiting();
      if (!s) break;
      // Cached leading blocks are shared, not allocated, and their tokens skip prefill; taking an
      // idle one uses a free block, so the check counts those too.
      const hit = this.#lookup(s);
      const cached = hit * bs;
      const n = Math.min(s.prefillTarget - cached, budget);
      const fresh = this.#blocksFor(cached + n) - hit;
      if (fresh + (hit > 0 ? this.#pool.matchedIdle : 0) > this.#pool.free) break;
      this.#shiftWaiting();
      if (hit > 0) {
        this.#pool.acquire(s.entries!, hit);
        s.registered = hit;
        s.shared = hit;
      }
      this.#pool.allocate(fresh);
      s.computed = cached;
      const i = this.#pushRunning(s);
      this.#rBlocks[i] = hit + fresh;
      this.#rStep[i] = n;
      this.#register(s, cached + n);
      s.state = RUNNING;
      this.#runningCount++;
      budget -= n;
      prefill += n;
      if (!s.admitted) {
        s.admitted = true;
        this.#promptTokensTotal += s.promptTokens;
        if (this.#caching && s.hashes !== null) {
          this.#cacheQueriesTotal += s.promptTokens;
          this.#cacheHitsTotal += cached;
        }
        s.onAdmit?.call(s.req, this.#clock.now());
      }
    }
    if (prefill + decode === 0) {
      this.#armPending();
      return;
    }
    const p = this.profile;
    const durationMs = (p.stepBaseMs + p.prefillMsPerToken * prefill + p.decodeMsPerToken * decode) * this.#slowFactor;
    this.#stepPrefill = prefill;
    this.#stepStartMs = this.#clock.now();
    this.#inStep = true;
    this.#clock.setTimer(this.#stepStartMs + durationMs, this.#onStepDue);
  }

  /** Hands one step's sink tokens to their sinks: the cohort's as one count per sink, then the others. */
  #flushSinks(now: number, lockGapMs: number, nb: number): void {
    const sinks = this.#sinks;
    const flush = this.#lockFlush;
    for (let k = 0; k < sinks.length; k++) {
      const count = flush[k]!;
      if (count === 0) continue;
      flush[k] = 0;
      sinks[k]!.onStepTokens(now, count, lockGapMs);
    }
    for (let i = 0; i < nb; i++) sinks[this.#bSink[i]!]!.onStepTokens(now, 1, this.#bGapMs[i]!);
  }

  /**
   * Writes to #finSlots, ascending, the entries of the cohort members that finish at cohort step
   * `at`, and returns how many (they stay listed until #dropRunning unlocks them).
   */
  #collectFinishing(at: number): number {
    const next = this.#finNext;
    const seqs = this.#seqs;
    const fin = this.#rFin;
    let slots = this.#finSlots;
    let m = 0;
    for (let r = this.#finHead[at & (FINISH_RING - 1)]!; r >= 0; r = next[r]!) {
      const i = seqs[r]!.slot;
      if (fin[i] !== at) continue;
      if (m === slots.length) {
        const grown = new Int32Array(m * 2);
        grown.set(slots);
        this.#finSlots = slots = grown;
      }
      slots[m++] = i;
    }
    // Mostly in entry order already (members join in it), and usually a few: insertion sort then.
    if (m > 32) slots.subarray(0, m).sort();
    else {
      for (let k = 1; k < m; k++) {
        const v = slots[k]!;
        let j = k;
        for (; j > 0 && slots[j - 1]! > v; j--) slots[j] = slots[j - 1]!;
        slots[j] = v;
      }
    }
    return m;
  }

  #endStep(): void {
    const now = this.#clock.now();
    this.#inStep = false;
    this.#stepsTotal++;
    this.#busyMsTotal += now - this.#stepStartMs;
    this.#prefillTokensTotal += this.#stepPrefill;
    const seqs = this.#rSeq;
    const computed = this.#rComputed;
    const target = this.#rTarget;
    const generated = this.#rGenerated;
    const max = this.#rMax;
    const step = this.#rStep;
    const sinkOf = this.#rSink;
    const lastMs = this.#rLastMs;
    const deliver = this.#deliver;
    let nd = 0;
    let nb = 0;
    const kinds = this.#deliverKind;
    const bSink = this.#bSink;
    const bGap = this.#bGapMs;
    const fin = this.#rFin;
    let tokens = 0;
    let lockGapMs = 0;
    let hasLock = false;
    if (this.#lockStepping) {
      // Every cohort member got one token, all with the same gap.
      this.#lockStepping = false;
      hasLock = true;
      tokens = this.#lockCount;
      lockGapMs = now - this.#lockLastMs;
      this.#lockLastMs = now;
      this.#lockSteps++;
      this.#lockFlush.set(this.#lockBySink);
    }
    // First the bookkeeping over the dense arrays (no callbacks, so nothing moves under it): the
    // cohort members this step finished and the loose entries, merged in index order.
    // Delivery kinds: 0 onToken, 1 onToken + onFinish, 2 onFinish (its last token went to a sink).
    const nf = hasLock ? this.#collectFinishing(this.#lockSteps) : 0;
    const finSlots = this.#finSlots;
    const loose = this.#loose;
    const nLoose = this.#looseLen;
    let kept = 0;
    for (let k = 0, f = 0; k < nLoose || f < nf; ) {
      if (f < nf && (k === nLoose || finSlots[f]! <= loose[k]!)) {
        // A cohort member's last token: it leaves with its counters brought up to date.
        const i = finSlots[f++]!;
        const seq = seqs[i]!;
        this.#runningCount--;
        this.#successTotal++;
        seq.state = DONE;
        this.#dropRunning(i);
        deliver[nd] = seq;
        kinds[nd++] = 2;
        continue;
      }
      const i = loose[k++]!;
      if (fin[i] !== FREE) continue;
      const t = step[i]!;
      if (t === 0) {
        loose[kept++] = i;
        continue;
      }
      step[i] = 0;
      const c = computed[i]! + t;
      computed[i] = c;
      if (c < target[i]!) {
        loose[kept++] = i;
        continue;
      }
      tokens++;
      const g = generated[i]! + 1;
      generated[i] = g;
      const gapMs = now - lastMs[i]!;
      lastMs[i] = now;
      const done = g >= max[i]!;
      const sink = sinkOf[i]!;
      let kind = done ? 1 : 0;
      if (sink >= 0 && g > 1) {
        bSink[nb] = sink;
        bGap[nb++] = gapMs;
        if (!done) {
          this.#join(i, now);
          continue;
        }
        kind = 2;
      }
      const seq = seqs[i]!;
      if (done) {
        this.#runningCount--;
        this.#successTotal++;
        seq.state = DONE;
        this.#dropRunning(i);
      } else if (sink >= 0) this.#join(i, now);
      else loose[kept++] = i;
      deliver[nd] = seq;
      kinds[nd++] = kind;
    }
    this.#looseLen = kept;
    this.#generationTokensTotal += tokens;
    // Then the callbacks, which may submit or abort: sinks in bulk, then requests one by one.
    if (hasLock || nb > 0) this.#flushSinks(now, lockGapMs, nb);
    for (let k = 0; k < nd; k++) {
      const seq = deliver[k]!;
      deliver[k] = null;
      const kind = kinds[k]!;
      if (kind === 0) {
        // Skipped if an earlier callback aborted it.
        if (seq.state === RUNNING) seq.req.onToken(1, now);
        continue;
      }
      if (kind === 1) seq.req.onToken(1, now);
      seq.req.onFinish('length', now);
      this.#recycle(seq);
    }
    this.#onStepEnd?.(now);
    // The next step starts at once (vLLM's busy loop), not after another timer.
    if (!this.#timer && !this.#inStep) this.#startStep();
  }
}
