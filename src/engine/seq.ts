import type { EngineRequest, Ticket } from './engine-types.js';

// Where a request is: in the frontend, in the waiting queue, in the running set, or ended.
export const PENDING = 0;
export const WAITING = 1;
export const RUNNING = 2;
export const DONE = 3;

// A ticket is uses x RECORDS + index: exact in a double for 2^31 uses of each of up to 2^21 records.
const RECORDS = 2 ** 21;
const IDLE: EngineRequest = { promptTokens: 0, maxTokens: 0, onToken() {}, onFinish() {} };

/**
 * A request's cold state; while it runs, its hot counters live in the engine's running arrays.
 * Records are reused (`start`) once nothing in the engine refers to their last request.
 */
export class Seq {
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
    this.admitted = false;
    this.slot = -1;
    this.registered = 0;
    this.shared = 0;
    return (this.uses * RECORDS + this.index) as Ticket;
  }
}

/**
 * Every record an engine made, by index, and those free for reuse. The engine keeps no table of
 * ticket ids: a ticket names its record and that record's use (at fleet scale, a record per
 * request and an id lookup were a third of a simulation's time).
 */
export class SeqTable {
  /** By record index. */
  readonly all: Seq[] = [];
  /**
   * By record index: when its request last got a token (0 before the first), kept here while it
   * does not run (a fraction in an object field is a heap number of its own, one per request; an
   * array of them holds them unboxed, and grows in the engine's heap, not by fresh buffers).
   */
  readonly lastTokenMs: number[] = [];
  /** Records free for reuse, most recently freed last. */
  readonly #spare: Seq[] = [];

  /** A free record (its last token time 0), or a new one, or null if the engine holds as many requests as tickets can name. */
  take(): Seq | null {
    let seq = this.#spare.pop();
    if (seq === undefined) {
      const index = this.all.length;
      if (index === RECORDS) return null;
      seq = new Seq(index);
      this.all.push(seq);
      this.lastTokenMs.push(0);
    } else this.lastTokenMs[seq.index] = 0;
    return seq;
  }

  /**
   * Returns a record for reuse once nothing refers to its request: after its last callback, or
   * when a queue meets it aborted. Its request object is let go.
   */
  recycle(seq: Seq): void {
    seq.req = IDLE;
    seq.onAdmit = undefined;
    this.#spare.push(seq);
  }

  /** The record a ticket names while its request is known (null once ended and reused, or if malformed). */
  of(ticket: Ticket): Seq | null {
    // The low 21 bits (a bitwise and takes an integer's low 32 bits exactly; `%` on a double is a libm call).
    const index = ticket & (RECORDS - 1);
    const seq = this.all[index];
    return seq !== undefined && seq.uses * RECORDS + index === ticket ? seq : null;
  }
}
