import type { Clock, Timer } from '../core/index.js';
import { blockHashes } from './block-hash.js';
import type { EngineProfile } from './profile.js';

/** One generation request as the engine sees it. The model never stops early: exactly `maxTokens`. */
export interface EngineRequest {
  id: string;
  promptTokens: number;
  maxTokens: number;
  /** Called once per step in which this request got tokens (usually 1), at the step's end. */
  onToken: (count: number, nowMs: number) => void;
  onFinish: (reason: 'length' | 'abort', nowMs: number) => void;
  /** Called when the scheduler first moves the request from waiting to running (queue time ends). */
  onAdmit?: (nowMs: number) => void;
  /** Prompt token ids, if known: full KV blocks get chained hashes (for prefix caching later). */
  promptTokenIds?: ArrayLike<number>;
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

interface Seq {
  req: EngineRequest;
  state: number;
  /** Tokens to compute before decoding (the prompt; prompt + generated after a preemption). */
  prefillTarget: number;
  /** Tokens whose KV is in cache. */
  computed: number;
  generated: number;
  blocks: number;
  /** Tokens scheduled in the step in flight (0: not in it). */
  stepTokens: number;
  admitted: boolean;
  hashes: number[] | null;
}

/**
 * A vLLM-like continuous-batching worker driven only by a Clock (REFERENCE §4): a running set
 * capped by maxNumSeqs, a bounded FIFO waiting queue, a per-step token budget spent on one decode
 * token per running sequence then on chunked prefill, KV blocks allocated as sequences grow
 * (admission stops when the cache is full; a sequence that cannot grow preempts the newest).
 * A step's duration is decided at its start; its tokens are delivered at its end.
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
  readonly #onStepEnd: ((nowMs: number) => void) | undefined;
  readonly #seqs = new Map<string, Seq>();
  #running: Seq[] = [];
  #runningCount = 0;
  #waiting: (Seq | undefined)[] = [];
  #waitingHead = 0;
  #waitingCount = 0;
  #pendingCount = 0;
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

  constructor(opts: EngineOptions) {
    this.#clock = opts.clock;
    this.profile = opts.profile;
    this.id = opts.id ?? opts.profile.name;
    this.#maxNumSeqs = opts.maxNumSeqs ?? opts.profile.maxNumSeqs;
    this.#maxWaiting = opts.maxWaiting ?? opts.profile.maxWaiting;
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
    const seq: Seq = {
      req,
      state: PENDING,
      prefillTarget: Math.max(1, req.promptTokens),
      computed: 0,
      generated: 0,
      blocks: 0,
      stepTokens: 0,
      admitted: false,
      hashes: req.promptTokenIds ? blockHashes(req.promptTokenIds, this.profile.blockSize) : null,
    };
    this.#seqs.set(req.id, seq);
    this.#pendingCount++;
    const overhead = this.profile.frontendOverheadMs;
    this.#clock.setTimer(this.#clock.now() + overhead, () => this.#enqueue(seq));
    return { ok: true };
  }

  /** Aborts a request wherever it is; its slot and KV blocks are free at once. False if unknown or done. */
  abort(id: string): boolean {
    const seq = this.#seqs.get(id);
    if (!seq || seq.state === DONE) return false;
    if (seq.state === PENDING) this.#pendingCount--;
    else if (seq.state === WAITING) this.#waitingCount--;
    else this.#runningCount--;
    this.#release(seq);
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
  }

  #release(seq: Seq): void {
    seq.state = DONE;
    this.#freeBlocks += seq.blocks;
    seq.blocks = 0;
    seq.stepTokens = 0;
    this.#seqs.delete(seq.req.id);
  }

  #enqueue(seq: Seq): void {
    if (seq.state !== PENDING) return;
    this.#pendingCount--;
    seq.state = WAITING;
    this.#waiting.push(seq);
    this.#waitingCount++;
    this.#kick();
  }

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
    return Math.ceil(tokens / this.profile.blockSize);
  }

  #compactRunning(): void {
    const r = this.#running;
    let j = 0;
    for (let i = 0; i < r.length; i++) {
      const s = r[i]!;
      if (s.state === RUNNING) r[j++] = s;
    }
    r.length = j;
  }

  /** Grows `seq` to hold `tokens` KV tokens, preempting the newest running sequences if needed. */
  #grow(seq: Seq, tokens: number): boolean {
    const need = this.#blocksFor(tokens) - seq.blocks;
    if (need <= 0) return true;
    while (this.#freeBlocks < need) {
      const victim = this.#newestRunning();
      if (!victim || victim === seq) return false;
      this.#preempt(victim);
    }
    this.#freeBlocks -= need;
    seq.blocks += need;
    return true;
  }

  #newestRunning(): Seq | undefined {
    const r = this.#running;
    for (let i = r.length - 1; i >= 0; i--) if (r[i]!.state === RUNNING) return r[i];
    return undefined;
  }

  /** vLLM's recompute preemption: drop the KV, go back to the front of the queue. */
  #preempt(seq: Seq): void {
    this.#preemptionsTotal++;
    this.#runningCount--;
    this.#freeBlocks += seq.blocks;
    seq.blocks = 0;
    seq.stepTokens = 0;
    seq.prefillTarget = Math.max(seq.prefillTarget, seq.computed);
    seq.computed = 0;
    seq.state = WAITING;
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
    if (this.#closed || this.#stalled) return;
    this.#compactRunning();
    let budget = this.profile.maxNumBatchedTokens;
    let prefill = 0;
    let decode = 0;
    const r = this.#running;
    // Decodes first, then chunks of prompts already running, as vLLM V1 spends its budget.
    for (let pass = 0; pass < 2; pass++) {
      for (let i = 0; i < r.length && budget > 0; i++) {
        const s = r[i]!;
        if (s.state !== RUNNING) continue;
        const decoding = s.computed >= s.prefillTarget;
        if (decoding !== (pass === 0)) continue;
        const n = decoding ? 1 : Math.min(s.prefillTarget - s.computed, budget);
        if (!this.#grow(s, s.computed + n)) {
          this.#preempt(s);
          continue;
        }
        s.stepTokens = n;
        budget -= n;
        if (decoding) decode += n;
        else prefill += n;
      }
    }
    while (budget > 0 && this.#runningCount < this.#maxNumSeqs) {
      const s = this.#popWaiting();
      if (!s) break;
      const n = Math.min(s.prefillTarget - s.computed, budget);
      const need = this.#blocksFor(s.computed + n) - s.blocks;
      if (need > this.#freeBlocks) break;
      this.#freeBlocks -= need;
      s.blocks += need;
      this.#shiftWaiting();
      s.state = RUNNING;
      s.stepTokens = n;
      this.#runningCount++;
      r.push(s);
      budget -= n;
      prefill += n;
      if (!s.admitted) {
        s.admitted = true;
        s.req.onAdmit?.(this.#clock.now());
      }
    }
    if (prefill + decode === 0) return;
    const p = this.profile;
    const durationMs = (p.stepBaseMs + p.prefillMsPerToken * prefill + p.decodeMsPerToken * decode) * this.#slowFactor;
    this.#stepPrefill = prefill;
    this.#stepStartMs = this.#clock.now();
    this.#inStep = true;
    this.#clock.setTimer(this.#stepStartMs + durationMs, () => this.#endStep());
  }

  #endStep(): void {
    const now = this.#clock.now();
    this.#inStep = false;
    this.#stepsTotal++;
    this.#busyMsTotal += now - this.#stepStartMs;
    this.#promptTokensTotal += this.#stepPrefill;
    const r = this.#running;
    // Callbacks may submit or abort; new sequences are appended and carry stepTokens 0.
    const n = r.length;
    for (let i = 0; i < n; i++) {
      const s = r[i]!;
      const t = s.stepTokens;
      if (t === 0 || s.state !== RUNNING) continue;
      s.stepTokens = 0;
      s.computed += t;
      if (s.computed < s.prefillTarget) continue;
      s.generated++;
      this.#generationTokensTotal++;
      const done = s.generated >= s.req.maxTokens;
      if (done) {
        this.#runningCount--;
        this.#successTotal++;
        this.#release(s);
      }
      s.req.onToken(1, now);
      if (done) s.req.onFinish('length', now);
    }
    this.#onStepEnd?.(now);
    // The next step starts at once (vLLM's busy loop), not after another timer.
    if (!this.#timer && !this.#inStep) this.#startStep();
  }
}
