import { FREE, HOLE, type RunningSet } from './running-set.js';
import { BLOCKS, COMPUTED, FIN, FIN_NEXT, FIN_PREV, GENERATED, JOIN, LAST_MS, MAX, SINK, SLOT, STEP, STRIDE, TIME_STRIDE, type SeqTable } from './seq.js';

/** Buckets of members by finishing step (a power of two; a member due later than that is skipped until its turn). */
const FINISH_RING = 512;

/**
 * The decode cohort: running sink requests past their first token that all got their last token
 * at `lastMs` and get one more at every step. They advance as one count (`steps`), so a step costs
 * O(1) for them instead of O(sequences); a member keeps its computed and generated counts as of
 * its JOIN and is brought up to date (`unlock`) only when something touches it alone.
 * A member's FIN field is the `steps` after which it has all its tokens.
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
  readonly #run: RunningSet;
  readonly #blockSize: number;
  readonly #seqs: SeqTable;
  // Members by the step at which they finish, modulo FINISH_RING: a doubly linked list of record
  // indices per ring bucket, in the order they joined, linked through the records' FIN_NEXT and
  // FIN_PREV fields (beside its FIN and SLOT). A member is listed from its join to its
  // unlock, so a bucket holds exactly the members due at its step and any due a whole number of
  // turns later (skipped until then). Typed arrays: no hashing, and no object per bucket (at fleet
  // scale those were most of what the garbage collector promoted).
  readonly #finHead = new Int32Array(FINISH_RING).fill(-1);
  readonly #finTail = new Int32Array(FINISH_RING).fill(-1);

  constructor(run: RunningSet, seqs: SeqTable, blockSize: number) {
    this.#run = run;
    this.#seqs = seqs;
    this.#blockSize = blockSize;
    this.phase = new Int32Array(blockSize);
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
    const r = this.#run.rec[i]!;
    const rows = this.#seqs.rows;
    const o = r * STRIDE;
    const c = rows[o + COMPUTED]!;
    const bs = this.#blockSize;
    // Its blocks must be what its tokens need (true after any step), so they can be recomputed.
    if (rows[o + BLOCKS] !== Math.ceil(c / bs)) return;
    if (this.count === 0) this.lastMs = now;
    const s = this.steps;
    const fin = s + rows[o + MAX]! - rows[o + GENERATED]!;
    rows[o + JOIN] = s;
    rows[o + FIN] = fin;
    const k = fin & (FINISH_RING - 1);
    const tail = this.#finTail[k]!;
    rows[o + FIN_PREV] = tail;
    rows[o + FIN_NEXT] = -1;
    if (tail >= 0) rows[tail * STRIDE + FIN_NEXT] = r;
    else this.#finHead[k] = r;
    this.#finTail[k] = r;
    this.count++;
    this.bySink[rows[o + SINK]!]!++;
    this.phase[(((s - c) % bs) + bs) % bs]!++;
  }

  /** Takes entry `i` out (if a member), bringing its counters, blocks and step up to date. */
  unlock(i: number): void {
    const r = this.#run.rec[i]!;
    const seqs = this.#seqs;
    const rows = seqs.rows;
    const o = r * STRIDE;
    const fin = rows[o + FIN]!;
    if (fin < 0) return;
    rows[o + FIN] = FREE;
    const bucket = fin & (FINISH_RING - 1);
    const prev = rows[o + FIN_PREV]!;
    const next = rows[o + FIN_NEXT]!;
    if (prev >= 0) rows[prev * STRIDE + FIN_NEXT] = next;
    else this.#finHead[bucket] = next;
    if (next >= 0) rows[next * STRIDE + FIN_PREV] = prev;
    else this.#finTail[bucket] = prev;
    const bs = this.#blockSize;
    const join = rows[o + JOIN]!;
    const k = this.steps - join;
    this.count--;
    this.bySink[rows[o + SINK]!]!--;
    const c0 = rows[o + COMPUTED]!;
    this.phase[(((join - c0) % bs) + bs) % bs]!--;
    const c = c0 + k;
    rows[o + COMPUTED] = c;
    rows[o + GENERATED] = rows[o + GENERATED]! + k;
    seqs.times[r * TIME_STRIDE + LAST_MS] = this.lastMs;
    // Mid-step it holds this step's block (if it needed one) and its decode token is scheduled.
    rows[o + BLOCKS] = Math.ceil(c / bs) + (this.stepping && c % bs === 0 ? 1 : 0);
    rows[o + STEP] = this.stepping ? 1 : 0;
  }

  /** Dissolves the cohort: every member runs alone again. */
  unlockAll(): void {
    const run = this.#run;
    for (let i = 0; i < run.len && this.count > 0; i++) if (run.rec[i] !== HOLE) this.unlock(i);
    run.rebuildLoose();
  }

  /** Blocks the members need at the next cohort step (those whose last block is full). */
  get blocksDue(): number {
    return this.phase[this.steps % this.#blockSize]!;
  }

  /** Tokens running record `r` has generated (a member's as of now). */
  generatedOf(r: number): number {
    const rows = this.#seqs.rows;
    const o = r * STRIDE;
    return rows[o + GENERATED]! + (rows[o + FIN]! >= 0 ? this.steps - rows[o + JOIN]! : 0);
  }

  /** When running record `r` last got a token (0 before its first). */
  lastTokenMsOf(r: number): number {
    return this.#seqs.rows[r * STRIDE + FIN]! >= 0 ? this.lastMs : this.#seqs.lastMs(r);
  }

  /**
   * Writes to `slots` (room for every member), ascending, the entries of the members that finish at
   * cohort step `at`, and returns how many (they stay listed until the engine drops them, which unlocks them).
   */
  collectFinishing(at: number, rows: Int32Array, slots: Int32Array): number {
    let m = 0;
    for (let r = this.#finHead[at & (FINISH_RING - 1)]!; r >= 0; r = rows[r * STRIDE + FIN_NEXT]!) {
      if (rows[r * STRIDE + FIN] !== at) continue;
      slots[m++] = rows[r * STRIDE + SLOT]!;
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
