import { COMPUTED, GENERATED, MAX, SINK, SLOT, STRIDE, TARGET, type SeqTable } from './seq.js';

// What `fin` holds for a running entry outside the decode cohort (a member holds its finishing step).
/** Running alone. */
export const FREE = -1;
/** Dropped (compacted later). */
export const HOLE = -2;

/**
 * An engine's running sequences as parallel typed arrays, one entry per sequence in admission
 * order, removed lazily (`fin[i] = HOLE`) and compacted once half are holes. The fields are the
 * arrays themselves, for the engine's step loops to read into locals; growing replaces them, so
 * a loop that may admit reads them again after.
 */
export class RunningSet {
  /** Entries in use, holes included. */
  len = 0;
  /** Dropped entries since the last compaction. */
  holes = 0;
  computed = new Int32Array(0);
  target = new Int32Array(0);
  generated = new Int32Array(0);
  max = new Int32Array(0);
  blocks = new Int32Array(0);
  /** Tokens scheduled for the entry in the step in flight. */
  step = new Int32Array(0);
  sink = new Int32Array(0);
  /** The entry's record index in the engine's SeqTable. */
  rec = new Int32Array(0);
  lastMs = new Float64Array(0);
  /** For a cohort member, the cohort step after which it has all its tokens; otherwise FREE or HOLE. */
  fin = new Int32Array(0);
  /** For a cohort member, the cohort step at which it joined (its counters are as of then). */
  join = new Int32Array(0);
  // Entries outside the cohort, in index order: every FREE entry, and some that have since joined
  // or left (dropped at the next step's end), so a step visits them, not the whole running set.
  loose = new Int32Array(0);
  looseLen = 0;

  readonly #seqs: SeqTable;

  constructor(cap: number, seqs: SeqTable) {
    this.#seqs = seqs;
    this.#alloc(cap);
  }

  /** Appends record `r` (its counters as its row holds them, its last token at `lastMs`) as a FREE entry, growing if full; returns the entry. */
  push(r: number, lastMs: number): number {
    if (this.len === this.computed.length) {
      // Full: squeeze out the holes if they are a fair share, else grow (a running set just
      // short of the room would otherwise be compacted at nearly every admission).
      if (this.holes * 4 >= this.len) this.compact();
      if (this.len === this.computed.length) this.#alloc(this.len * 2);
    }
    const i = this.len++;
    const rows = this.#seqs.rows;
    const o = r * STRIDE;
    this.computed[i] = rows[o + COMPUTED]!;
    this.target[i] = rows[o + TARGET]!;
    this.generated[i] = rows[o + GENERATED]!;
    this.max[i] = rows[o + MAX]!;
    this.blocks[i] = 0;
    this.step[i] = 0;
    this.sink[i] = rows[o + SINK]!;
    this.rec[i] = r;
    this.lastMs[i] = lastMs;
    this.fin[i] = FREE;
    rows[o + SLOT] = i;
    this.loose[this.looseLen++] = i;
    return i;
  }

  /** Marks entry `i` dropped (the caller has released what it held). */
  drop(i: number): void {
    this.fin[i] = HOLE;
    this.holes++;
    this.blocks[i] = 0;
    this.step[i] = 0;
  }

  /** The newest live entry, or -1. */
  newest(): number {
    const fin = this.fin;
    for (let i = this.len - 1; i >= 0; i--) if (fin[i] !== HOLE) return i;
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
    const fin = this.fin;
    const rows = this.#seqs.rows;
    const n = this.len;
    let j = 0;
    for (let i = 0; i < n; i++) {
      if (fin[i] === HOLE) continue;
      if (j !== i) {
        this.computed[j] = this.computed[i]!;
        this.target[j] = this.target[i]!;
        this.generated[j] = this.generated[i]!;
        this.max[j] = this.max[i]!;
        this.blocks[j] = this.blocks[i]!;
        this.step[j] = this.step[i]!;
        this.sink[j] = this.sink[i]!;
        this.rec[j] = this.rec[i]!;
        this.lastMs[j] = this.lastMs[i]!;
        this.fin[j] = this.fin[i]!;
        this.join[j] = this.join[i]!;
        rows[this.rec[j]! * STRIDE + SLOT] = j;
      }
      j++;
    }
    this.len = j;
    this.rebuildLoose();
  }

  /** Lists every FREE entry afresh (after compaction moved them, or the cohort dissolved). */
  rebuildLoose(): void {
    const fin = this.fin;
    let k = 0;
    for (let i = 0; i < this.len; i++) if (fin[i] === FREE) this.loose[k++] = i;
    this.looseLen = k;
  }

  /**
   * Gives the arrays room for `cap` entries, keeping their contents: views on one buffer
   * (allocating a typed array costs microseconds, and a fleet has thousands of engines).
   */
  #alloc(cap: number): void {
    // Per entry: 1 Float64 + 11 Int32 = 52 bytes, laid out widest first so every view is aligned
    // (a view past the end throws, so a table added without growing this fails at once).
    const buf = new ArrayBuffer(cap * 52);
    let at = 0;
    const view = <T extends Float64Array | Int32Array | Uint8Array>(old: T, make: (b: ArrayBuffer, offset: number, n: number) => T): T => {
      const a = make(buf, at, cap);
      a.set(old);
      at += cap * a.BYTES_PER_ELEMENT;
      return a;
    };
    const f64 = (b: ArrayBuffer, offset: number, n: number) => new Float64Array(b, offset, n);
    const i32 = (b: ArrayBuffer, offset: number, n: number) => new Int32Array(b, offset, n);
    this.lastMs = view(this.lastMs, f64);
    this.computed = view(this.computed, i32);
    this.target = view(this.target, i32);
    this.generated = view(this.generated, i32);
    this.max = view(this.max, i32);
    this.blocks = view(this.blocks, i32);
    this.step = view(this.step, i32);
    this.sink = view(this.sink, i32);
    this.rec = view(this.rec, i32);
    this.fin = view(this.fin, i32);
    this.join = view(this.join, i32);
    this.loose = view(this.loose, i32);
  }
}
