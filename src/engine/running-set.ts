import { FIN, SLOT, STRIDE, type SeqTable } from './seq.js';

/** What a running record's FIN holds outside the decode cohort (a member's holds its finishing step). */
export const FREE = -1;
/** What `rec` holds for a dropped entry (compacted later). */
export const HOLE = -1;

/**
 * An engine's running sequences in admission order: entry i names a record (`rec`), whose row holds
 * the sequence's counters (computed, target, generated, blocks, step, FIN...), so admitting or
 * dropping one touches its row and one slot here, not a dozen parallel arrays, and no table sized
 * for the running set is made per engine. Entries are removed lazily (`rec[i] = HOLE`) and compacted
 * once half are holes; a record's SLOT is its entry. Growing replaces `rec` and `loose`, so a loop
 * that may admit reads them again after.
 */
export class RunningSet {
  /** Entries in use, holes included. */
  len = 0;
  /** Dropped entries since the last compaction. */
  holes = 0;
  /** The entry's record index in the engine's SeqTable, or HOLE. */
  rec = new Int32Array(0);
  // Entries outside the cohort, in index order: every FREE entry, and some that have since joined
  // or left (dropped at the next step's end), so a step visits them, not the whole running set.
  loose = new Int32Array(0);
  looseLen = 0;

  readonly #seqs: SeqTable;

  constructor(cap: number, seqs: SeqTable) {
    this.#seqs = seqs;
    this.#alloc(cap);
  }

  /** Appends record `r` as a FREE entry (its BLOCKS and STEP are the caller's to set), growing if full; returns the entry. */
  push(r: number): number {
    if (this.len === this.rec.length) {
      // Full: squeeze out the holes if they are a fair share, else grow (a running set just
      // short of the room would otherwise be compacted at nearly every admission).
      if (this.holes * 4 >= this.len) this.compact();
      if (this.len === this.rec.length) this.#alloc(this.len * 2);
    }
    const i = this.len++;
    const rows = this.#seqs.rows;
    rows[r * STRIDE + FIN] = FREE;
    rows[r * STRIDE + SLOT] = i;
    this.rec[i] = r;
    this.loose[this.looseLen++] = i;
    return i;
  }

  /** Marks entry `i` dropped (the caller has released what it held). */
  drop(i: number): void {
    this.rec[i] = HOLE;
    this.holes++;
  }

  /** The newest live entry, or -1. */
  newest(): number {
    const rec = this.rec;
    for (let i = this.len - 1; i >= 0; i--) if (rec[i] !== HOLE) return i;
    return -1;
  }

  /**
   * Squeezes out dropped entries once they are half the entries (at a step's start). A step
   * visits only the loose entries and the finishing ones, so holes cost little; a compaction
   * moves every later entry and writes its record's slot.
   */
  tidy(): void {
    if (this.holes > 0 && this.holes * 2 >= this.len) this.compact();
  }

  /** Squeezes out every dropped entry, keeping the order of the others. */
  compact(): void {
    if (this.holes === 0) return;
    this.holes = 0;
    const rec = this.rec;
    const rows = this.#seqs.rows;
    const n = this.len;
    let j = 0;
    for (let i = 0; i < n; i++) {
      const r = rec[i]!;
      if (r === HOLE) continue;
      if (j !== i) {
        rec[j] = r;
        rows[r * STRIDE + SLOT] = j;
      }
      j++;
    }
    this.len = j;
    this.rebuildLoose();
  }

  /** Lists every FREE entry afresh (after compaction moved them, or the cohort dissolved). */
  rebuildLoose(): void {
    const rec = this.rec;
    const rows = this.#seqs.rows;
    let k = 0;
    for (let i = 0; i < this.len; i++) {
      const r = rec[i]!;
      if (r !== HOLE && rows[r * STRIDE + FIN] === FREE) this.loose[k++] = i;
    }
    this.looseLen = k;
  }

  /** Gives the arrays room for `cap` entries, keeping their contents (views on one buffer). */
  #alloc(cap: number): void {
    const buf = new ArrayBuffer(cap * 8);
    const rec = new Int32Array(buf, 0, cap);
    rec.set(this.rec);
    const loose = new Int32Array(buf, cap * 4, cap);
    loose.set(this.loose);
    this.rec = rec;
    this.loose = loose;
  }
}
