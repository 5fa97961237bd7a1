import { rowLayout } from '../core/index.js';
import type { EngineCaller, Ticket } from './engine-types.js';

// Where a request is: in the frontend, in the waiting queue, in the running set, or ended.
export const PENDING = 0;
export const WAITING = 1;
export const RUNNING = 2;
export const DONE = 3;

// A ticket is uses x RECORDS + index: exact in a double for 2^31 uses of each of up to 2^21 records.
const RECORDS = 2 ** 21;

// A record's numeric fields: one row of Int32 slots (96 bytes), by record index, the last a Float64
// (its last token time); while its request runs, these are its live counters (the running set lists
// records in admission order). Its prompt hashes are in a plain array. Declared once, in row order.
const ROW = rowLayout({
  /** How many requests this record has held (part of their tickets). */
  USES: 'i32',
  /** PENDING, WAITING, RUNNING or DONE. */
  STATE: 'i32',
  // Copied from the request, which is cold in memory by the time it is admitted.
  PROMPT: 'i32',
  MAX: 'i32',
  /** Index of its sink in the engine's sink table, -1 for none. */
  SINK: 'i32',
  /** Tokens to compute before decoding (the prompt; prompt + generated after a preemption). */
  TARGET: 'i32',
  /** Tokens whose KV is in cache (a decode cohort member's as of its JOIN). */
  COMPUTED: 'i32',
  GENERATED: 'i32',
  /** Its entry in the running set while RUNNING; while spare, the next spare record (-1: none). */
  SLOT: 'i32',
  /** Prompt blocks offered to the cache so far (the first `registered` of its cache entries are set). */
  REGISTERED: 'i32',
  /** How many of those are cache entries (the rest of its blocks are private). */
  SHARED: 'i32',
  /** Bits: ADMITTED (its prompt counted), ON_ADMIT (its request has an `onAdmit`); above them (>> CALLER_SHIFT), who its callbacks go to (see `callerOf`). */
  FLAGS: 'i32',
  /** The caller's number for its request (what its callbacks are given). */
  ID: 'i32',
  /** Its cache entries per prompt block while running (see `KvBlocks`): -1 for none, <= -2 a run of consecutive entries from -2 - this, else where its list is and its size class. */
  ENTRIES: 'i32',
  /** While a decode cohort member: the next and previous member (records, -1 for none) in its list of those due at the same step (see `DecodeCohort`). */
  FIN_NEXT: 'i32',
  FIN_PREV: 'i32',
  /** While running: KV blocks it holds. */
  BLOCKS: 'i32',
  /** While running: tokens scheduled for it in the step in flight. */
  STEP: 'i32',
  /** While running: FREE outside the decode cohort, else the cohort step after which it has all its tokens. */
  FIN: 'i32',
  /** While a decode cohort member: the cohort step at which it joined (its counters are as of then). */
  JOIN: 'i32',
  /** Times its request was preempted (its KV dropped, to be recomputed). */
  PREEMPTIONS: 'i32',
  /** When its request last got its last token, in Float64 slots (`SeqTable.times`): set only once it had one (read it through `lastMs`), a decode cohort member's as of its JOIN. */
  LAST_MS: 'f64',
});

/** A record's fields, as indices into its row (see ROW above; LAST_MS in Float64 slots, the rest in Int32 ones). */
export const { USES, STATE, PROMPT, MAX, SINK, TARGET, COMPUTED, GENERATED, SLOT, REGISTERED, SHARED, FLAGS, ID, ENTRIES, FIN_NEXT, FIN_PREV, BLOCKS, STEP, FIN, JOIN, PREEMPTIONS, LAST_MS } = ROW.at;
/** FLAGS bits. */
export const ADMITTED = 1;
export const ON_ADMIT = 2;
const CALLER_SHIFT = 2;
/** A row in Int32 slots (`SeqTable.rows`). */
export const STRIDE = ROW.i32Stride;
/** A row in Float64 slots (`SeqTable.times`). */
export const TIME_STRIDE = ROW.f64Stride;

/**
 * An engine's request records as rows of typed arrays, by record index, and those free for reuse. The engine keeps no
 * table of ticket ids: a ticket names its record and that record's use (at fleet scale, a record
 * per request and an id lookup were a third of a simulation's time). No object per request: a
 * record is one 96-byte row, and hundreds of thousands in flight leave nothing for the garbage
 * collector to copy.
 */
export class SeqTable {
  /** The numeric fields, STRIDE to a row. */
  rows = new Int32Array(0);
  /** The same rows as Float64 slots, TIME_STRIDE to a row (a time beside the counters: one line of memory, not two). */
  times = new Float64Array(0);
  /** By record index: its prompt's block hashes, or null. */
  hashes: (readonly number[] | null)[] = [];
  /** Records made. */
  #made = 0;
  /** The most recently freed record (the spare ones are a stack linked through their SLOT), or -1. */
  #spare = -1;
  // Who the records' callbacks go to, numbered as first seen (requests come in runs with one
  // caller: a number in the row is no extra line of memory to touch per request, a plain array of them was).
  readonly #callers: EngineCaller[] = [];
  readonly #callerIndex = new Map<EngineCaller, number>();
  #lastCaller: EngineCaller | undefined = undefined;
  #lastCallerIndex = -1;

  /** A free record, or a new one, or -1 if the engine holds as many requests as tickets can name. */
  take(): number {
    let r = this.#spare;
    if (r >= 0) {
      this.#spare = this.rows[r * STRIDE + SLOT]!;
      return r;
    }
    r = this.#made;
    if (r === RECORDS) return -1;
    if (r * STRIDE === this.rows.length) this.#grow();
    this.#made++;
    this.rows[r * STRIDE + STATE] = DONE;
    this.rows[r * STRIDE + ENTRIES] = -1;
    // (Past the room `reserve` made, this grows.)
    this.hashes[r] = null;
    return r;
  }

  /** Takes a request (pending in the frontend) into record `r`, its callbacks to `caller` with `id`; returns its ticket. */
  start(r: number, caller: EngineCaller, id: number, promptTokens: number, maxTokens: number, sink: number, hashes: readonly number[] | null, onAdmit: boolean): Ticket {
    const rows = this.rows;
    const o = r * STRIDE;
    const uses = rows[o + USES]! + 1;
    rows[o + USES] = uses;
    rows[o + STATE] = PENDING;
    rows[o + PROMPT] = promptTokens;
    rows[o + MAX] = maxTokens;
    rows[o + SINK] = sink;
    rows[o + TARGET] = Math.max(1, promptTokens);
    rows[o + COMPUTED] = 0;
    rows[o + GENERATED] = 0;
    rows[o + SLOT] = -1;
    rows[o + REGISTERED] = 0;
    rows[o + SHARED] = 0;
    rows[o + PREEMPTIONS] = 0;
    let c = this.#lastCallerIndex;
    if (caller !== this.#lastCaller) {
      c = this.#callerIndex.get(caller) ?? -1;
      if (c < 0) {
        c = this.#callers.length;
        this.#callerIndex.set(caller, c);
        this.#callers.push(caller);
      }
      this.#lastCaller = caller;
      this.#lastCallerIndex = c;
    }
    rows[o + FLAGS] = (c << CALLER_SHIFT) | (onAdmit ? ON_ADMIT : 0);
    rows[o + ID] = id;
    this.hashes[r] = hashes;
    return (uses * RECORDS + r) as Ticket;
  }

  /** Who record `r`'s callbacks go to, with its row's ID. */
  callerOf(r: number): EngineCaller {
    return this.#callers[this.rows[r * STRIDE + FLAGS]! >> CALLER_SHIFT]!;
  }

  /** When record `r`'s request last got a token (0 before the first; a cohort member's as of its JOIN). */
  lastMs(r: number): number {
    return this.rows[r * STRIDE + GENERATED]! > 0 ? this.times[r * TIME_STRIDE + LAST_MS]! : 0;
  }

  /**
   * Returns a record for reuse once nothing refers to its request: after its last callback, or
   * when a queue meets it aborted. (Its hashes stay until the record is reused: a line of memory
   * not touched per request, and at most a table's worth of arrays kept.)
   */
  recycle(r: number): void {
    this.rows[r * STRIDE + SLOT] = this.#spare;
    this.#spare = r;
  }

  /** The record a ticket names, whatever its use (the low 21 bits). */
  static recordOf(ticket: Ticket): number {
    return ticket & (RECORDS - 1);
  }

  /** The record a ticket names while its request is known (-1 once ended and reused, or if malformed). */
  of(ticket: Ticket): number {
    // The low 21 bits (a bitwise and takes an integer's low 32 bits exactly; `%` on a double is a libm call).
    const r = ticket & (RECORDS - 1);
    return r < this.#made && this.rows[r * STRIDE + USES]! * RECORDS + r === ticket ? r : -1;
  }

  /**
   * Makes room for `cap` records at once (an engine sizes it as its running set: at fleet scale,
   * growing by steps allocated and first touched twice the memory in the start-up burst).
   */
  reserve(cap: number): void {
    if (cap * STRIDE > this.rows.length) this.#grow(cap);
    // The plain array too (grown by pushes, it was copied several times in the burst).
    if (this.#made === 0 && this.hashes.length < cap) this.hashes = new Array<readonly number[] | null>(cap).fill(null);
  }

  /** Half as much room again by default (records are made as requests in flight grow). */
  #grow(cap = Math.max(64, (this.#made + (this.#made >> 1) + 15) & ~15)): void {
    const buf = new ArrayBuffer(cap * ROW.bytes);
    const rows = new Int32Array(buf);
    rows.set(this.rows);
    this.rows = rows;
    this.times = new Float64Array(buf);
  }
}
