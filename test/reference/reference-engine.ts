// The engine's scheduling rules written plainly, one object per request and per cache entry, to
// check the fast engine (src/engine/engine.ts) against: where the fast one keeps typed-array rows,
// a decode cohort, run-length cache entries and lazy holes, this keeps arrays and Maps. It lives
// under test/ because nothing ships with it: it is the oracle of test/engine-reference.test.ts.
import type { Clock, Timer } from '../../src/core/index.js';
import { blockHashes, type EngineFault, type EngineProfile, type EngineRequest, type EngineStats, type SubmitResult, type Ticket } from '../../src/engine/index.js';

/** What the reference engine takes (the fast engine's options it models). */
export interface ReferenceEngineOptions {
  clock: Clock;
  profile: EngineProfile;
  maxNumSeqs?: number;
  maxWaiting?: number;
  prefixCaching?: boolean;
  onStepEnd?: (nowMs: number) => void;
}

type State = 'pending' | 'waiting' | 'running' | 'done';

/** One full prompt block in the prefix cache, shared by every running request that references it. */
interface CacheEntry {
  hash: number;
  refs: number;
}

/** One request and everything the scheduler knows of it. */
interface Seq {
  req: EngineRequest;
  state: State;
  /** When the frontend hands it to the scheduler. */
  readyMs: number;
  /** Its prompt's full-block hashes (empty without token ids). */
  hashes: readonly number[];
  /** Tokens to compute before the next token comes out: the prompt, or after a preemption all it had. */
  target: number;
  /** Tokens whose KV is computed (or scheduled to be, while a step is in flight). */
  computed: number;
  generated: number;
  /** KV blocks held while running, private ones and cache entries alike. */
  blocks: number;
  /** The cache entries it references, in prompt-block order (its other blocks are private). */
  entries: CacheEntry[];
  /** Prompt blocks offered to the cache so far. */
  registered: number;
  /** Tokens scheduled for it in the step in flight. */
  scheduled: number;
  lastMs: number;
  preemptions: number;
  admitted: boolean;
}

/**
 * The prefix cache over the KV blocks, as vLLM V1 keeps it: a full prompt block is cached under its
 * chained hash, shared and reference-counted; an unreferenced entry stays cached and counts as free
 * until an allocation needs its room, least recently freed first.
 */
class KvCache {
  readonly byHash = new Map<number, CacheEntry>();
  /** Unreferenced entries, least recently freed first (a Map keeps insertion order). */
  readonly idle = new Map<number, CacheEntry>();
  /** Blocks held by one request and not cached. */
  private = 0;
  /** Cache entries with a reference. */
  referenced = 0;

  constructor(readonly total: number) {}

  /** Blocks nobody references: never used, freed, or cached and idle. */
  get free(): number {
    return this.total - this.private - this.referenced;
  }

  /** The cached entries of the longest run of leading `hashes` (at most `max`). */
  match(hashes: readonly number[], max: number): CacheEntry[] {
    const out: CacheEntry[] = [];
    for (let b = 0; b < max; b++) {
      const e = this.byHash.get(hashes[b]!);
      if (e === undefined) break;
      out.push(e);
    }
    return out;
  }

  acquire(entries: readonly CacheEntry[]): void {
    for (const e of entries) {
      if (e.refs === 0) {
        this.idle.delete(e.hash);
        this.referenced++;
      }
      e.refs++;
    }
  }

  /** Takes `n` private blocks, evicting the oldest idle entries if the never-used and freed ones are too few. */
  allocate(n: number): void {
    this.private += n;
    while (this.private + this.byHash.size > this.total) {
      const [hash] = this.idle.keys();
      this.idle.delete(hash!);
      this.byHash.delete(hash!);
    }
  }

  /** Turns one of a request's private blocks into an entry under `hash`, unless that hash is cached already. */
  register(hash: number): CacheEntry | null {
    if (this.byHash.has(hash)) return null;
    const e = { hash, refs: 1 };
    this.byHash.set(hash, e);
    this.private--;
    this.referenced++;
    return e;
  }

  /** Gives back a request's blocks: private ones to the pool, its entries' references last block first. */
  release(blocks: number, entries: readonly CacheEntry[]): void {
    this.private -= blocks - entries.length;
    for (let k = entries.length - 1; k >= 0; k--) {
      const e = entries[k]!;
      if (--e.refs === 0) {
        this.referenced--;
        this.idle.set(e.hash, e);
      }
    }
  }
}

/**
 * The engine's scheduler, readably: a frontend serving requests one at a time, a FIFO waiting queue
 * (a preempted request goes back to its front), a running set of at most maxNumSeqs in admission
 * order, and per step a token budget spent on one decode token per running request, then on
 * prefill chunks of running prompts, then on admitting waiting ones; KV blocks grow with each
 * request, and a request that cannot grow preempts the newest (recompute: its KV is dropped).
 * Timers are set as the fast engine sets them, so both see the same clock events.
 *
 * Where these rules (the fast engine's too) are simpler than vLLM V1's scheduler
 * (vllm/v1/core/sched/scheduler.py, `schedule()`, read at commit 00024d3): V1 walks the running
 * requests once, each taking its decode token or its prefill chunk in turn (not decodes first);
 * V1 admits no waiting request in a step that preempted one; and a resumed request recomputes
 * every token it had, the last output token included (here all but that one). docs/limits.md lists them.
 */
export class ReferenceEngine {
  readonly profile: EngineProfile;
  readonly #clock: Clock;
  readonly #maxNumSeqs: number;
  readonly #maxWaiting: number;
  readonly #caching: boolean;
  readonly #onStepEnd: ((nowMs: number) => void) | undefined;
  readonly #cache: KvCache;
  readonly #seqs: Seq[] = [];
  /** Submitted requests not yet handed to the scheduler, aborted ones included until their turn. */
  readonly #frontend: Seq[] = [];
  readonly #waiting: Seq[] = [];
  readonly #running: Seq[] = [];
  #closed = false;
  #stalled = false;
  #slowFactor = 1;
  #inStep = false;
  #kickTimer: Timer | null = null;
  #pendingTimer: Timer | null = null;
  #stepStartMs = 0;
  #stepPrefill = 0;
  readonly #n = { promptTokensTotal: 0, prefillTokensTotal: 0, cacheQueriesTotal: 0, cacheHitsTotal: 0, generationTokensTotal: 0, successTotal: 0, abortTotal: 0, preemptionsTotal: 0, stepsTotal: 0, busyMsTotal: 0 };

  constructor(opts: ReferenceEngineOptions) {
    this.profile = opts.profile;
    this.#clock = opts.clock;
    this.#maxNumSeqs = opts.maxNumSeqs ?? opts.profile.maxNumSeqs;
    this.#maxWaiting = opts.maxWaiting ?? opts.profile.maxWaiting;
    this.#caching = opts.prefixCaching ?? true;
    this.#onStepEnd = opts.onStepEnd;
    this.#cache = new KvCache(opts.profile.kvBlocks);
  }

  /** Accepts a request or says why not. */
  submit(req: EngineRequest): SubmitResult {
    if (req.promptTokens + req.maxTokens > this.profile.maxModelLen) return { ok: false, reason: 'too_long' };
    if (this.#closed || this.#queued() >= this.#maxWaiting) return { ok: false, reason: 'queue_full' };
    const now = this.#clock.now();
    const last = this.#frontend.at(-1);
    const readyMs = (last ? Math.max(now, last.readyMs) : now) + this.profile.frontendOverheadMs;
    const seq: Seq = {
      req,
      state: 'pending',
      readyMs,
      hashes: req.promptTokenIds ? blockHashes(req.promptTokenIds, this.profile.blockSize) : [],
      target: Math.max(1, req.promptTokens),
      computed: 0,
      generated: 0,
      blocks: 0,
      entries: [],
      registered: 0,
      scheduled: 0,
      lastMs: 0,
      preemptions: 0,
      admitted: false,
    };
    this.#seqs.push(seq);
    this.#frontend.push(seq);
    this.#armPending();
    return { ok: true, ticket: (this.#seqs.length - 1) as Ticket };
  }

  /** Aborts a request wherever it is; false if it already ended. */
  abort(ticket: Ticket): boolean {
    const s = this.#seqs[ticket];
    if (s === undefined || s.state === 'done') return false;
    if (s.state === 'waiting') this.#waiting.splice(this.#waiting.indexOf(s), 1);
    if (s.state === 'running') this.#leave(s);
    s.state = 'done';
    this.#n.abortTotal++;
    s.req.onFinish('abort', this.#clock.now());
    this.#kick();
    return true;
  }

  setFault(f: EngineFault): void {
    this.#stalled = f.stalled ?? false;
    this.#slowFactor = f.slowFactor !== undefined && f.slowFactor > 0 ? f.slowFactor : 1;
    this.#kick();
  }

  close(): void {
    this.#closed = true;
    this.#kickTimer?.cancel();
    this.#kickTimer = null;
    this.#pendingTimer?.cancel();
    this.#pendingTimer = null;
  }

  /** Tokens a request has generated so far (-1 once it ended). */
  generatedOf(ticket: Ticket): number {
    const s = this.#seqs[ticket];
    return s === undefined || s.state === 'done' ? -1 : s.generated;
  }

  /** When a request last got a token (0 before its first; NaN once it ended). */
  lastTokenMsOf(ticket: Ticket): number {
    const s = this.#seqs[ticket];
    return s === undefined || s.state === 'done' ? Number.NaN : s.generated > 0 ? s.lastMs : 0;
  }

  /** Times a request was preempted. */
  preemptionsOf(ticket: Ticket): number {
    return this.#seqs[ticket]?.preemptions ?? -1;
  }

  stats(): EngineStats {
    const n = this.#n;
    return {
      running: this.#running.length,
      waiting: this.#queued(),
      kvUsage: 1 - this.#cache.free / this.profile.kvBlocks,
      promptTokensTotal: n.promptTokensTotal,
      prefixCacheQueriesTotal: n.cacheQueriesTotal,
      prefixCacheHitsTotal: n.cacheHitsTotal,
      prefillTokensTotal: n.prefillTokensTotal,
      generationTokensTotal: n.generationTokensTotal,
      requestSuccessTotal: n.successTotal,
      requestAbortTotal: n.abortTotal,
      preemptionsTotal: n.preemptionsTotal,
      stepsTotal: n.stepsTotal,
      busyMsTotal: n.busyMsTotal,
      // The reference runs on the virtual clock only, whose timers are never late.
      lateMsTotal: 0,
    };
  }

  /** Requests in the frontend or waiting (what maxWaiting caps). */
  #queued(): number {
    return this.#frontend.filter((s) => s.state === 'pending').length + this.#waiting.length;
  }

  /** Removes a running request and gives back its blocks. */
  #leave(s: Seq): void {
    this.#running.splice(this.#running.indexOf(s), 1);
    this.#cache.release(s.blocks, s.entries);
    s.blocks = 0;
    s.entries = [];
    s.registered = 0;
  }

  /** Grows running request `s` to hold `tokens` KV tokens, preempting the newest requests if short; false if it would have to preempt itself. */
  #grow(s: Seq, tokens: number): boolean {
    const need = Math.ceil(tokens / this.profile.blockSize) - s.blocks;
    if (need <= 0) return true;
    while (this.#cache.free < need) {
      const victim = this.#running.at(-1);
      if (victim === undefined || victim === s) return false;
      this.#preempt(victim);
    }
    this.#cache.allocate(need);
    s.blocks += need;
    return true;
  }

  /** Recompute preemption: drop its KV, put it first in the waiting queue, recompute everything it had. */
  #preempt(s: Seq): void {
    this.#n.preemptionsTotal++;
    s.preemptions++;
    s.target = Math.max(s.target, s.computed);
    s.computed = 0;
    s.scheduled = 0;
    this.#leave(s);
    s.state = 'waiting';
    this.#waiting.unshift(s);
  }

  /** Offers to the cache the prompt blocks `s` fills up to `tokens` (cached as soon as scheduled, as vLLM does). */
  #register(s: Seq, tokens: number): void {
    const upTo = Math.min(s.hashes.length, Math.floor(tokens / this.profile.blockSize));
    for (let b = s.registered; b < upTo; b++) {
      const e = this.#cache.register(s.hashes[b]!);
      if (e !== null) s.entries.push(e);
    }
    s.registered = Math.max(s.registered, upTo);
  }

  #armPending(): void {
    if (this.#pendingTimer || this.#inStep || this.#kickTimer || this.#closed) return;
    const first = this.#frontend[0];
    if (first === undefined) return;
    this.#pendingTimer = this.#clock.setTimer(first.readyMs, () => {
      this.#pendingTimer = null;
      this.#drainFrontend();
      this.#kick();
      this.#armPending();
    });
  }

  #drainFrontend(): void {
    const now = this.#clock.now();
    while (this.#frontend.length > 0 && this.#frontend[0]!.readyMs <= now) {
      const s = this.#frontend.shift()!;
      if (s.state !== 'pending') continue;
      s.state = 'waiting';
      this.#waiting.push(s);
    }
  }

  /** Starts a step soon if idle with work (a timer at now, so same-instant arrivals join it). */
  #kick(): void {
    if (this.#kickTimer || this.#inStep || this.#closed || this.#stalled) return;
    if (this.#running.length === 0 && this.#waiting.length === 0) return;
    this.#kickTimer = this.#clock.setTimer(this.#clock.now(), () => {
      this.#kickTimer = null;
      this.#startStep();
    });
  }

  #startStep(): void {
    if (this.#closed) return;
    if (this.#stalled) {
      this.#armPending();
      return;
    }
    this.#drainFrontend();
    let budget = this.profile.maxNumBatchedTokens;
    let prefill = 0;
    let decode = 0;
    // Decodes first, one token each, in admission order.
    for (const s of [...this.#running]) {
      if (budget <= 0) break;
      if (s.state !== 'running' || s.computed < s.target) continue;
      if (!this.#grow(s, s.computed + 1)) {
        this.#preempt(s);
        continue;
      }
      s.scheduled = 1;
      budget--;
      decode++;
    }
    // Then chunks of the prompts already running, in admission order.
    for (const s of [...this.#running]) {
      if (budget <= 0) break;
      if (s.state !== 'running' || s.computed >= s.target) continue;
      const n = Math.min(s.target - s.computed, budget);
      if (!this.#grow(s, s.computed + n)) {
        this.#preempt(s);
        continue;
      }
      this.#register(s, s.computed + n);
      s.scheduled = n;
      budget -= n;
      prefill += n;
    }
    prefill += this.#admit(budget);
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

  /** Admits waiting requests, oldest first, while budget, seats and free blocks last; returns the prefill tokens scheduled. */
  #admit(budget: number): number {
    const bs = this.profile.blockSize;
    let prefill = 0;
    while (budget > 0 && this.#running.length < this.#maxNumSeqs) {
      const s = this.#waiting[0];
      if (s === undefined) break;
      // The last prompt token is always computed (its logits give the next token), so at most target - 1 tokens hit.
      const hit = this.#caching ? this.#cache.match(s.hashes, Math.min(s.hashes.length, Math.floor((s.target - 1) / bs))) : [];
      const cached = hit.length * bs;
      const n = Math.min(s.target - cached, budget);
      const fresh = Math.ceil((cached + n) / bs) - hit.length;
      // Taking an idle cached block uses a free one too.
      if (fresh + hit.filter((e) => e.refs === 0).length > this.#cache.free) break;
      this.#waiting.shift();
      this.#cache.acquire(hit);
      this.#cache.allocate(fresh);
      s.entries = [...hit];
      s.registered = hit.length;
      s.computed = cached;
      s.blocks = hit.length + fresh;
      s.scheduled = n;
      s.state = 'running';
      this.#running.push(s);
      if (this.#caching) this.#register(s, cached + n);
      budget -= n;
      prefill += n;
      if (!s.admitted) {
        s.admitted = true;
        this.#n.promptTokensTotal += s.req.promptTokens;
        if (this.#caching && s.req.promptTokenIds !== undefined) {
          this.#n.cacheQueriesTotal += s.req.promptTokens;
          this.#n.cacheHitsTotal += cached;
        }
        s.req.onAdmit?.(this.#clock.now());
      }
    }
    return prefill;
  }

  #endStep(): void {
    const now = this.#clock.now();
    const n = this.#n;
    this.#inStep = false;
    n.stepsTotal++;
    n.busyMsTotal += now - this.#stepStartMs;
    n.prefillTokensTotal += this.#stepPrefill;
    // The bookkeeping first, then the callbacks (which may submit or abort), in admission order.
    const told: { s: Seq; token: boolean; finish: boolean }[] = [];
    for (const s of [...this.#running]) {
      if (s.scheduled === 0) continue;
      s.computed += s.scheduled;
      s.scheduled = 0;
      if (s.computed < s.target) continue;
      s.generated++;
      n.generationTokensTotal++;
      const finish = s.generated >= s.req.maxTokens;
      // With a sink, every token after the first goes to it as a count.
      const toSink = s.req.sink !== undefined && s.generated > 1;
      if (toSink) s.req.sink!.onStepTokens(now, 1, now - s.lastMs);
      s.lastMs = now;
      if (finish) {
        n.successTotal++;
        this.#leave(s);
        s.state = 'done';
      }
      if (!toSink || finish) told.push({ s, token: !toSink, finish });
    }
    for (const { s, token, finish } of told) {
      if (token && (finish || s.state === 'running')) s.req.onToken(1, now);
      if (finish) s.req.onFinish('length', now);
    }
    this.#onStepEnd?.(now);
    if (!this.#kickTimer && !this.#inStep) this.#startStep();
  }
}
