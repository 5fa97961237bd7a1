import type { Clock, Timer } from '../core/index.js';
import { blockHashes } from './block-hash.js';
import type { EngineProfile } from './profile.js';

/**
 * Receives, in one call per step, the tokens of every request that named it as its `sink`
 * (at fleet scale this replaces hundreds of thousands of `onToken` calls per simulated second,
 * each touching its own request object, with one pass over two dense arrays).
 */
export interface TokenSink {
  /**
   * For `i < count`: the request whose `sinkKey` is `keys[i]` got one token at `nowMs`, `gapsMs[i]`
   * after its previous one. Called before that step's `onToken`/`onFinish` calls; the arrays are
   * reused by the engine once this returns.
   */
  onStepTokens(nowMs: number, count: number, keys: Int32Array, gapsMs: Float64Array): void;
}

/** One generation request as the engine sees it. The model never stops early: exactly `maxTokens`. */
export interface EngineRequest {
  id: string;
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
  /** Prompt token ids, if known: full KV blocks get chained hashes (for prefix caching later). */
  promptTokenIds?: ArrayLike<number>;
  /** Bulk receiver of this request's tokens after the first (read once, at submit). */
  sink?: TokenSink | undefined;
  /** This request's key in its sink's batches (an integer the sink chose, e.g. an index). @default 0 */
  sinkKey?: number;
}

export type SubmitResult = { ok: true } | { ok: false; reason: 'queue_full' | 'too_long' };

export interface EngineStats {
  running: number;
  /** Waiting for a slot, including requests still in the frontend (see `frontendOverheadMs`). */
  waiting: number;
  /** Fraction of KV blocks in use, 0..1. */
  kvUsage: number;
  promptTokensTotal: number;
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
}

const PENDING = 0;
const WAITING = 1;
const RUNNING = 2;
const DONE = 3;

/** A request's cold state; while it runs, its hot counters live in the engine's running arrays. */
interface Seq {
  req: EngineRequest;
  state: number;
  /** Tokens to compute before decoding (the prompt; prompt + generated after a preemption). */
  prefillTarget: number;
  /** Tokens whose KV is in cache (kept here while not running). */
  computed: number;
  generated: number;
  lastTokenMs: number;
  admitted: boolean;
  /** Index of its sink in the engine's sink table, -1 for none. */
  sink: number;
  sinkKey: number;
  hashes: number[] | null;
}

/** A sink and its share of one step's tokens (filled only when an engine has several sinks). */
interface SinkBatch {
  sink: TokenSink;
  count: number;
  keys: Int32Array;
  gapsMs: Float64Array;
}

/**
 * A vLLM-like continuous-batching worker driven only by a Clock (REFERENCE §4): a running set
 * capped by maxNumSeqs, a bounded FIFO waiting queue, a per-step token budget spent on one decode
 * token per running sequence then on chunked prefill, KV blocks allocated as sequences grow
 * (admission stops when the cache is full; a sequence that cannot grow preempts the newest).
 * A step's duration is decided at its start; its tokens are delivered at its end.
 *
 * The running set is kept as parallel typed arrays (one entry per running sequence, in admission
 * order, removed lazily and compacted at each step's start), so a step touches dense memory
 * rather than one object per sequence.
 *
 * @example
 * const clock = new VirtualClock();
 * const engine = new Engine({ clock, profile: getProfile('small') });
 * engine.submit({ id: 'a', promptTokens: 128, maxTokens: 4, onToken() {}, onFinish() {} });
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
  readonly #seqs = new Map<string, Seq>();
  // The running set: entry i is live while rSeq[i] !== null.
  #rLen = 0;
  #rSeq: (Seq | null)[] = [];
  #rComputed = new Int32Array(64);
  #rTarget = new Int32Array(64);
  #rGenerated = new Int32Array(64);
  #rMax = new Int32Array(64);
  #rBlocks = new Int32Array(64);
  #rStep = new Int32Array(64);
  #rSink = new Int32Array(64);
  #rKey = new Int32Array(64);
  #rLastMs = new Float64Array(64);
  #runningCount = 0;
  #waiting: (Seq | undefined)[] = [];
  #waitingHead = 0;
  #waitingCount = 0;
  #pendingCount = 0;
  // Requests still in the frontend, oldest first, and when each reaches the scheduler.
  readonly #pending: (Seq | undefined)[] = [];
  readonly #pendingReadyMs: number[] = [];
  #pendingHead = 0;
  #pendingTimer: Timer | null = null;
  // Dropped entries in the running arrays since the last compaction.
  #rHoles = 0;
  #freeBlocks: number;
  #timer: Timer | null = null;
  #inStep = false;
  #stalled = false;
  #slowFactor = 1;
  #closed = false;
  #stepPrefill = 0;
  #stepStartMs = 0;
  #promptTokensTotal = 0;
  #generationTokensTotal = 0;
  #successTotal = 0;
  #abortTotal = 0;
  #preemptionsTotal = 0;
  #stepsTotal = 0;
  #busyMsTotal = 0;
  readonly #sinks: SinkBatch[] = [];
  // One step's sink tokens, all sinks together: which sink, the request's key, the gap.
  #bSink = new Int32Array(64);
  #bKey = new Int32Array(64);
  #bGapMs = new Float64Array(64);
  readonly #sinkIndex = new Map<TokenSink, number>();
  // Per step: requests that need their own callbacks (first token, no sink, or finished).
  readonly #deliver: (Seq | null)[] = [];
  #deliverKind = new Uint8Array(64);

  constructor(opts: EngineOptions) {
    this.#clock = opts.clock;
    this.profile = opts.profile;
    this.id = opts.id ?? opts.profile.name;
    this.#maxNumSeqs = opts.maxNumSeqs ?? opts.profile.maxNumSeqs;
    this.#maxWaiting = opts.maxWaiting ?? opts.profile.maxWaiting;
    this.#blockSize = opts.profile.blockSize;
    this.#freeBlocks = opts.profile.kvBlocks;
    this.#onStepEnd = opts.onStepEnd;
  }

  get running(): number {
    return this.#runningCount;
  }

  get waiting(): number {
    return this.#waitingCount + this.#pendingCount;
  }

  get kvUsage(): number {
    return 1 - this.#freeBlocks / this.profile.kvBlocks;
  }

  get maxNumSeqs(): number {
    return this.#maxNumSeqs;
  }

  /** Accepts a request or says why not; never throws on load. */
  submit(req: EngineRequest): SubmitResult {
    if (req.promptTokens + req.maxTokens > this.profile.maxModelLen) return { ok: false, reason: 'too_long' };
    if (this.#closed || this.#waitingCount + this.#pendingCount >= this.#maxWaiting || this.#seqs.has(req.id)) {
      return { ok: false, reason: 'queue_full' };
    }
    let sink = -1;
    if (req.sink) {
      sink = this.#sinkIndex.get(req.sink) ?? -1;
      if (sink < 0) {
        sink = this.#sinks.length;
        this.#sinkIndex.set(req.sink, sink);
        this.#sinks.push({ sink: req.sink, count: 0, keys: new Int32Array(64), gapsMs: new Float64Array(64) });
      }
    }
    const seq: Seq = {
      req,
      state: PENDING,
      prefillTarget: Math.max(1, req.promptTokens),
      computed: 0,
      generated: 0,
      lastTokenMs: 0,
      admitted: false,
      sink,
      sinkKey: req.sinkKey ?? 0,
      hashes: req.promptTokenIds ? blockHashes(req.promptTokenIds, this.#blockSize) : null,
    };
    this.#seqs.set(req.id, seq);
    this.#pendingCount++;
    // The frontend delay is the same for every request, so arrivals stay in order: a busy engine
    // takes the due ones at its next step's start; an idle one sets one timer for the oldest.
    this.#pending.push(seq);
    this.#pendingReadyMs.push(this.#clock.now() + this.profile.frontendOverheadMs);
    this.#armPending();
    return { ok: true };
  }

  /** Aborts a request wherever it is; its slot and KV blocks are free at once. False if unknown or done. */
  abort(id: string): boolean {
    const seq = this.#seqs.get(id);
    if (!seq || seq.state === DONE) return false;
    if (seq.state === PENDING) this.#pendingCount--;
    else if (seq.state === WAITING) this.#waitingCount--;
    else {
      this.#runningCount--;
      const at = this.#rSeq.lastIndexOf(seq, this.#rLen - 1);
      if (at >= 0) this.#dropRunning(at);
    }
    seq.state = DONE;
    this.#seqs.delete(id);
    this.#abortTotal++;
    seq.req.onFinish('abort', this.#clock.now());
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

  /** The chained hashes of a known request's full prompt blocks (null if no token ids were given). */
  blockHashesOf(id: string): readonly number[] | null {
    return this.#seqs.get(id)?.hashes ?? null;
  }

  stats(): EngineStats {
    return {
      running: this.running,
      waiting: this.waiting,
      kvUsage: this.kvUsage,
      promptTokensTotal: this.#promptTokensTotal,
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

  /** Removes running entry `i` (its blocks return to the pool); the slot is compacted later. */
  #dropRunning(i: number): void {
    this.#rSeq[i] = null;
    this.#rHoles++;
    this.#freeBlocks += this.#rBlocks[i]!;
    this.#rBlocks[i] = 0;
    this.#rStep[i] = 0;
  }

  /** Moves every request whose frontend delay is over into the waiting queue. */
  #drainPending(now: number): void {
    const q = this.#pending;
    const ready = this.#pendingReadyMs;
    let h = this.#pendingHead;
    if (h === q.length || ready[h]! > now) return;
    while (h < q.length && ready[h]! <= now) {
      const seq = q[h]!;
      q[h++] = undefined;
      if (seq.state !== PENDING) continue;
      this.#pendingCount--;
      seq.state = WAITING;
      this.#waiting.push(seq);
      this.#waitingCount++;
    }
    if (h === q.length) {
      q.length = 0;
      ready.length = 0;
      h = 0;
    } else if (h > 1024 && h * 2 > q.length) {
      q.splice(0, h);
      ready.splice(0, h);
      h = 0;
    }
    this.#pendingHead = h;
  }

  /** While no step is in flight or due, wakes the engine when the oldest pending request is ready. */
  #armPending(): void {
    if (this.#pendingTimer || this.#inStep || this.#timer || this.#closed) return;
    if (this.#pendingHead === this.#pending.length) return;
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
    this.#timer = this.#clock.setTimer(this.#clock.now(), () => {
      this.#timer = null;
      this.#startStep();
    });
  }

  #blocksFor(tokens: number): number {
    return Math.ceil(tokens / this.#blockSize);
  }

  #compactRunning(): void {
    if (this.#rHoles === 0) return;
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
        this.#rKey[j] = this.#rKey[i]!;
        this.#rLastMs[j] = this.#rLastMs[i]!;
      }
      j++;
    }
    for (let i = j; i < n; i++) seqs[i] = null;
    this.#rLen = j;
  }

  /** Appends `seq` to the running arrays (growing them if full); returns its entry. */
  #pushRunning(seq: Seq): number {
    const i = this.#rLen++;
    if (i >= this.#rComputed.length) {
      const cap = this.#rComputed.length * 2;
      const grow = <T extends Int32Array | Float64Array>(a: T, make: (n: number) => T): T => {
        const b = make(cap);
        b.set(a);
        return b;
      };
      const i32 = (n: number) => new Int32Array(n);
      this.#rComputed = grow(this.#rComputed, i32);
      this.#rTarget = grow(this.#rTarget, i32);
      this.#rGenerated = grow(this.#rGenerated, i32);
      this.#rMax = grow(this.#rMax, i32);
      this.#rBlocks = grow(this.#rBlocks, i32);
      this.#rStep = grow(this.#rStep, i32);
      this.#rSink = grow(this.#rSink, i32);
      this.#rKey = grow(this.#rKey, i32);
      this.#rLastMs = grow(this.#rLastMs, (n) => new Float64Array(n));
    }
    this.#rSeq[i] = seq;
    this.#rComputed[i] = seq.computed;
    this.#rTarget[i] = seq.prefillTarget;
    this.#rGenerated[i] = seq.generated;
    this.#rMax[i] = seq.req.maxTokens;
    this.#rBlocks[i] = 0;
    this.#rStep[i] = 0;
    this.#rSink[i] = seq.sink;
    this.#rKey[i] = seq.sinkKey;
    this.#rLastMs[i] = seq.lastTokenMs;
    return i;
  }

  /** Grows running entry `i` to hold `tokens` KV tokens, preempting the newest entries if needed. */
  #grow(i: number, tokens: number): boolean {
    const need = this.#blocksFor(tokens) - this.#rBlocks[i]!;
    if (need <= 0) return true;
    while (this.#freeBlocks < need) {
      const victim = this.#newestRunning();
      if (victim < 0 || victim === i) return false;
      this.#preempt(victim);
    }
    this.#freeBlocks -= need;
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
    const seq = this.#rSeq[i]!;
    this.#preemptionsTotal++;
    this.#runningCount--;
    seq.prefillTarget = Math.max(this.#rTarget[i]!, this.#rComputed[i]!);
    seq.computed = 0;
    seq.generated = this.#rGenerated[i]!;
    seq.lastTokenMs = this.#rLastMs[i]!;
    seq.state = WAITING;
    this.#dropRunning(i);
    if (this.#waitingHead > 0) this.#waiting[--this.#waitingHead] = seq;
    else this.#waiting.unshift(seq);
    this.#waitingCount++;
  }

  #popWaiting(): Seq | undefined {
    const w = this.#waiting;
    while (this.#waitingHead < w.length) {
      const s = w[this.#waitingHead];
      if (s && s.state === WAITING) return s;
      w[this.#waitingHead++] = undefined;
    }
    return undefined;
  }

  #shiftWaiting(): void {
    this.#waiting[this.#waitingHead++] = undefined;
    this.#waitingCount--;
    if (this.#waitingHead > 1024 && this.#waitingHead * 2 > this.#waiting.length) {
      this.#waiting = this.#waiting.slice(this.#waitingHead);
      this.#waitingHead = 0;
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
    // Decodes first, then chunks of prompts already running, as vLLM V1 spends its budget.
    for (let i = 0; i < this.#rLen && budget > 0; i++) {
      if (seqs[i] === null) continue;
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
    for (let i = 0; i < this.#rLen && budget > 0 && prefilling > 0; i++) {
      if (seqs[i] === null) continue;
      const c = computed[i]!;
      const t = target[i]!;
      if (c >= t) continue;
      prefilling--;
      const n = Math.min(t - c, budget);
      if (!this.#grow(i, c + n)) {
        this.#preempt(i);
        continue;
      }
      step[i] = n;
      budget -= n;
      prefill += n;
    }
    while (budget > 0 && this.#runningCount < this.#maxNumSeqs) {
      const s = this.#popWaiting();
      if (!s) break;
      const n = Math.min(s.prefillTarget - s.computed, budget);
      const need = this.#blocksFor(s.computed + n);
      if (need > this.#freeBlocks) break;
      this.#shiftWaiting();
      const i = this.#pushRunning(s);
      this.#freeBlocks -= need;
      this.#rBlocks[i] = need;
      this.#rStep[i] = n;
      s.state = RUNNING;
      this.#runningCount++;
      budget -= n;
      prefill += n;
      if (!s.admitted) {
        s.admitted = true;
        s.req.onAdmit?.(this.#clock.now());
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
    this.#clock.setTimer(this.#stepStartMs + durationMs, () => this.#endStep());
  }

  /** Hands one step's sink tokens to their sinks (split per sink when there are several). */
  #flushSinks(now: number, nb: number): void {
    const sinks = this.#sinks;
    if (sinks.length === 1) {
      sinks[0]!.sink.onStepTokens(now, nb, this.#bKey, this.#bGapMs);
      return;
    }
    for (let i = 0; i < nb; i++) {
      const b = sinks[this.#bSink[i]!]!;
      if (b.count === b.keys.length) {
        const keys = new Int32Array(b.count * 2);
        keys.set(b.keys);
        b.keys = keys;
        const gaps = new Float64Array(b.count * 2);
        gaps.set(b.gapsMs);
        b.gapsMs = gaps;
      }
      b.keys[b.count] = this.#bKey[i]!;
      b.gapsMs[b.count++] = this.#bGapMs[i]!;
    }
    for (const b of sinks) {
      if (b.count === 0) continue;
      const count = b.count;
      b.count = 0;
      b.sink.onStepTokens(now, count, b.keys, b.gapsMs);
    }
  }

  #endStep(): void {
    const now = this.#clock.now();
    this.#inStep = false;
    this.#stepsTotal++;
    this.#busyMsTotal += now - this.#stepStartMs;
    this.#promptTokensTotal += this.#stepPrefill;
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
    if (this.#deliverKind.length < this.#rLen) {
      const cap = this.#rLen * 2;
      this.#deliverKind = new Uint8Array(cap);
      this.#bSink = new Int32Array(cap);
      this.#bKey = new Int32Array(cap);
      this.#bGapMs = new Float64Array(cap);
    }
    const kinds = this.#deliverKind;
    const bSink = this.#bSink;
    const bKey = this.#bKey;
    const bGap = this.#bGapMs;
    const keyOf = this.#rKey;
    // First the bookkeeping over the dense arrays (no callbacks, so nothing moves under it).
    // Delivery kinds: 0 onToken, 1 onToken + onFinish, 2 onFinish (its last token went to a sink).
    let tokens = 0;
    const n = this.#rLen;
    for (let i = 0; i < n; i++) {
      const t = step[i]!;
      if (t === 0) continue;
      step[i] = 0;
      const c = computed[i]! + t;
      computed[i] = c;
      if (c < target[i]!) continue;
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
        bKey[nb] = keyOf[i]!;
        bGap[nb++] = gapMs;
        if (!done) continue;
        kind = 2;
      }
      const seq = seqs[i]!;
      if (done) {
        this.#runningCount--;
        this.#successTotal++;
        seq.state = DONE;
        this.#seqs.delete(seq.req.id);
        this.#dropRunning(i);
      }
      deliver[nd] = seq;
      kinds[nd++] = kind;
    }
    this.#generationTokensTotal += tokens;
    // Then the callbacks, which may submit or abort: sinks in bulk, then requests one by one.
    if (nb > 0) this.#flushSinks(now, nb);
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
    }
    this.#onStepEnd?.(now);
    // The next step starts at once (vLLM's busy loop), not after another timer.
    if (!this.#timer && !this.#inStep) this.#startStep();
  }
}
