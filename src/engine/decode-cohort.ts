import { FREE, type RunningSet } from './running-set.js';
import { SLOT, STRIDE } from './seq.js';

/** Buckets of members by finishing step (a power of two; a member due later than that is skipped until its turn). */
const FINISH_RING = 512;

/**
 * The decode cohort: running sink requests past their first token that all got their last token
 * at `lastMs` and get one more at every step. They advance as one count (`steps`), so a step costs
 * O(1) for them instead of O(sequences); a member keeps its computed and generated counts as of
 * its `join` entry and is brought up to date (`unlock`) only when something touches it alone.
 * A member's `fin` entry is the `steps` after which it has all its tokens.
 */
export class DecodeCohort {
  /** Cohort steps taken. */
  steps = 0;
  /** Members. */
  count = 0;
  /** When every member got its last token. */
  lastMs = 0;
  /** The step in flight decodes the cohort. */
  stepping = false;
  /** Members by sink index; and, per step, the counts each sink is told about. */
  bySink = new Int32Array(4);
  flush = new Int32Array(4);
  /** Members by the cohort step (mod block size) at which each needs a new KV block. */
  readonly phase: Int32Array;
  /** The entries `collectFinishing` found, ascending. */
  finSlots = new Int32Array(64);
  readonly #run: RunningSet;
  readonly #blockSize: number;
  // Members by the step at which they finish, modulo FINISH_RING: a doubly linked list of record
  // indices per ring bucket, in the order they joined. A member is listed from its join to its
  // unlock, so a bucket holds exactly the members due at its step and any due a whole number of
  // turns later (skipped until then). Typed arrays: no hashing, and no object per bucket (at fleet
  // scale those were most of what the garbage collector promoted).
  readonly #finHead = new Int32Array(FINISH_RING).fill(-1);
  readonly #finTail = new Int32Array(FINISH_RING).fill(-1);
  /** By record index: the next and previous member of its bucket (-1: none). */
  #finNext = new Int32Array(0);
  #finPrev = new Int32Array(0);

  constructor(run: RunningSet, blockSize: number) {
    this.#run = run;
    this.#blockSize = blockSize;
    this.phase = new Int32Array(blockSize);
  }

  /** Makes room in the bucket lists for record `index`. */
  fitRecord(index: number): void {
    if (index < this.#finNext.length) return;
    const cap = Math.max(64, 2 * index);
    const buf = new ArrayBuffer(cap * 8);
    const next = new Int32Array(buf, 0, cap);
    const prev = new Int32Array(buf, cap * 4, cap);
    next.set(this.#finNext);
    prev.set(this.#finPrev);
    this.#finNext = next;
    this.#finPrev = prev;
  }

  /** Makes room in the per-sink counts for sink `index`. */
  fitSink(index: number): void {
    if (index < this.bySink.length) return;
    const by = new Int32Array(index * 2);
    by.set(this.bySink);
    this.bySink = by;
    this.flush = new Int32Array(index * 2);
  }

  /** Adds running entry `i` (a sink request that just got a token and has more to come) at `now`. */
  join(i: number, now: number): void {
    const run = this.#run;
    const c = run.computed[i]!;
    const bs = this.#blockSize;
    // Its blocks must be what its tokens need (true after any step), so they can be recomputed.
    if (run.blocks[i] !== Math.ceil(c / bs)) return;
    if (this.count === 0) this.lastMs = now;
    const s = this.steps;
    const fin = s + run.max[i]! - run.generated[i]!;
    run.join[i] = s;
    run.fin[i] = fin;
    const r = run.rec[i]!;
    const k = fin & (FINISH_RING - 1);
    const tail = this.#finTail[k]!;
    this.#finPrev[r] = tail;
    this.#finNext[r] = -1;
    if (tail >= 0) this.#finNext[tail] = r;
    else this.#finHead[k] = r;
    this.#finTail[k] = r;
    this.count++;
    this.bySink[run.sink[i]!]!++;
    this.phase[(((s - c) % bs) + bs) % bs]!++;
  }

  /** Takes entry `i` out (if a member), bringing its counters, blocks and step up to date. */
  unlock(i: number): void {
    const run = this.#run;
    const fin = run.fin[i]!;
    if (fin < 0) return;
    run.fin[i] = FREE;
    const r = run.rec[i]!;
    const bucket = fin & (FINISH_RING - 1);
    const prev = this.#finPrev[r]!;
    const next = this.#finNext[r]!;
    if (prev >= 0) this.#finNext[prev] = next;
    else this.#finHead[bucket] = next;
    if (next >= 0) this.#finPrev[next] = prev;
    else this.#finTail[bucket] = prev;
    const bs = this.#blockSize;
    const join = run.join[i]!;
    const k = this.steps - join;
    this.count--;
    this.bySink[run.sink[i]!]!--;
    this.phase[(((join - run.computed[i]!) % bs) + bs) % bs]!--;
    const c = run.computed[i]! + k;
    run.computed[i] = c;
    run.generated[i] = run.generated[i]! + k;
    run.lastMs[i] = this.lastMs;
    // Mid-step it holds this step's block (if it needed one) and its decode token is scheduled.
    run.blocks[i] = Math.ceil(c / bs) + (this.stepping && c % bs === 0 ? 1 : 0);
    run.step[i] = this.stepping ? 1 : 0;
  }

  /** Dissolves the cohort: every member runs alone again. */
  unlockAll(): void {
    const run = this.#run;
    for (let i = 0; i < run.len && this.count > 0; i++) this.unlock(i);
    run.rebuildLoose();
  }

  /** Blocks the members need at the next cohort step (those whose last block is full). */
  get blocksDue(): number {
    return this.phase[this.steps % this.#blockSize]!;
  }

  /** Tokens running entry `i` has generated (a member's as of now). */
  generatedOf(i: number): number {
    const run = this.#run;
    return run.generated[i]! + (run.fin[i]! >= 0 ? this.steps - run.join[i]! : 0);
  }

  /** When running entry `i` last got a token. */
  lastTokenMsOf(i: number): number {
    const run = this.#run;
    return run.fin[i]! >= 0 ? this.lastMs : run.lastMs[i]!;
  }

  /**
   * Writes to `finSlots`, ascending, the entries of the members that finish at cohort step `at`,
   * and returns how many (they stay listed until the engine drops them, which unlocks them).
   */
  collectFinishing(at: number, rows: Int32Array): number {
    const next = this.#finNext;
    const fin = this.#run.fin;
    let slots = this.finSlots;
    let m = 0;
    for (let r = this.#finHead[at & (FINISH_RING - 1)]!; r >= 0; r = next[r]!) {
      const i = rows[r * STRIDE + SLOT]!;
      if (fin[i] !== at) continue;
      if (m === slots.length) {
        const grown = new Int32Array(m * 2);
        grown.set(slots);
        this.finSlots = slots = grown;
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
}
