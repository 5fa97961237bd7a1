import type { TokenSink } from './engine-types.js';
import { FREE, HOLE, type RunningSet } from './running-set.js';
import { BLOCKS, COMPUTED, FIN, FIN_NEXT, FIN_PREV, GENERATED, JOIN, LAST_MS, MAX, SINK, SLOT, STEP, STRIDE, TIME_STRIDE, type SeqTable } from './seq.js';

/** Buckets of members by finishing step (a power of two; a member due later than that is skipped until its turn). */
const FINISH_RING = 512;
// Where the cohort's tables are in its one Int32Array (a view and its data are lines of memory a
// step touches: one view, not five): the bucket heads and tails, then the members by block phase,
// then by sink and the per-step counts per sink (both as long as `#sinkRoom`).
const HEAD = 0;
const TAIL = FINISH_RING;
const PHASE = 2 * FINISH_RING;

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
  readonly #run: RunningSet;
  readonly #blockSize: number;
  readonly #seqs: SeqTable;
  // Members by the step at which they finish, modulo FINISH_RING: a doubly linked list of record
  // indices per ring bucket (HEAD, TAIL), in the order they joined, linked through the records'
  // FIN_NEXT and FIN_PREV fields (beside its FIN and SLOT). A member is listed from its join to its
  // unlock, so a bucket holds exactly the members due at its step and any due a whole number of
  // turns later (skipped until then). Typed arrays: no hashing, and no object per bucket (at fleet
  // scale those were most of what the garbage collector promoted).
  // By phase (at PHASE): members by the cohort step (mod block size) at which each needs a new KV
  // block. By sink (at #by): members by sink index; and (at #flush) the counts each sink is told
  // about at the step that ended.
  #t: Int32Array;
  #sinkRoom = 4;
  #by: number;
  #flush: number;

  constructor(run: RunningSet, seqs: SeqTable, blockSize: number) {
    this.#run = run;
    this.#seqs = seqs;
    this.#blockSize = blockSize;
    this.#by = PHASE + blockSize;
    this.#flush = this.#by + this.#sinkRoom;
    this.#t = new Int32Array(this.#flush + this.#sinkRoom);
    this.#t.fill(-1, HEAD, PHASE);
  }

  /** Makes room in the per-sink counts for sink `index`. */
  fitSink(index: number): void {
    if (index < this.#sinkRoom) return;
    const room = index * 2;
    const old = this.#t;
    const t = new Int32Array(this.#by + 2 * room);
    t.set(old.subarray(0, this.#flush));
    t.set(old.subarray(this.#flush, this.#flush + this.#sinkRoom), this.#by + room);
    this.#t = t;
    this.#sinkRoom = room;
    this.#flush = this.#by + room;
  }

  /** Takes the per-sink counts of the cohort's step that is ending (before its members change). */
  countFlush(): void {
    this.#t.copyWithin(this.#flush, this.#by, this.#by + this.#sinkRoom);
  }

  /** Tells each sink (by index) the cohort's tokens of the step that ended, `gapMs` after their previous ones. */
  flushTo(sinks: readonly TokenSink[], now: number, gapMs: number): void {
    const t = this.#t;
    const at = this.#flush;
    for (let k = 0; k < sinks.length; k++) {
      const count = t[at + k]!;
      if (count === 0) continue;
      t[at + k] = 0;
      sinks[k]!.onStepTokens(now, count, gapMs);
    }
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
    const t = this.#t;
    const tail = t[TAIL + k]!;
    rows[o + FIN_PREV] = tail;
    rows[o + FIN_NEXT] = -1;
    if (tail >= 0) rows[tail * STRIDE + FIN_NEXT] = r;
    else t[HEAD + k] = r;
    t[TAIL + k] = r;
    this.count++;
    t[this.#by + rows[o + SINK]!]!++;
    t[PHASE + ((((s - c) % bs) + bs) % bs)]!++;
  }

  /** Takes entry `i` out (if a member), bringing its counters, blocks and step up to date. */
  unlock(i: number): void {
    const r = this.#run.rec[i]!;
    if (r === HOLE) return;
    const seqs = this.#seqs;
    const rows = seqs.rows;
    const o = r * STRIDE;
    const fin = rows[o + FIN]!;
    if (fin < 0) return;
    rows[o + FIN] = FREE;
    const bucket = fin & (FINISH_RING - 1);
    const prev = rows[o + FIN_PREV]!;
    const next = rows[o + FIN_NEXT]!;
    const t = this.#t;
    if (prev >= 0) rows[prev * STRIDE + FIN_NEXT] = next;
    else t[HEAD + bucket] = next;
    if (next >= 0) rows[next * STRIDE + FIN_PREV] = prev;
    else t[TAIL + bucket] = prev;
    const bs = this.#blockSize;
    const join = rows[o + JOIN]!;
    const k = this.steps - join;
    this.count--;
    t[this.#by + rows[o + SINK]!]!--;
    const c0 = rows[o + COMPUTED]!;
    t[PHASE + ((((join - c0) % bs) + bs) % bs)]!--;
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
    return this.#t[PHASE + (this.steps % this.#blockSize)]!;
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
    for (let r = this.#t[HEAD + (at & (FINISH_RING - 1))]!; r >= 0; r = rows[r * STRIDE + FIN_NEXT]!) {
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
