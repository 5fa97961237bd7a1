import { PENDING, STATE, STRIDE, WAITING, type SeqTable } from './seq.js';

// Both queues are [head, tail) of arrays that are emptied by resetting both, so they keep their
// room, and compacted once the dead front is over 1024 entries and half the array. They list
// record indices (-1: taken out).

/**
 * The scheduler's waiting queue, FIFO with preempted requests put back at the front. An aborted
 * request stays listed until the queue reaches it, and is recycled then.
 */
export class WaitingQueue {
  /** Requests waiting (aborted ones still listed do not count). */
  count = 0;
  readonly #items: number[] = [];
  #head = 0;
  #tail = 0;
  readonly #seqs: SeqTable;

  constructor(seqs: SeqTable) {
    this.#seqs = seqs;
  }

  push(r: number): void {
    this.#append(r);
    this.count++;
  }

  /** Puts record `r` first (a preempted request goes back to the front). */
  pushFront(r: number): void {
    if (this.#head === 0) {
      // Room at the front: shift the queue up one.
      this.#append(-1);
      this.#items.copyWithin(1, 0, this.#tail - 1);
      this.#head = 1;
    }
    this.#items[--this.#head] = r;
    this.count++;
  }

  #append(r: number): void {
    const t = this.#tail++;
    if (t < this.#items.length) this.#items[t] = r;
    else this.#items.push(r);
  }

  /** The first request still waiting (recycling the aborted ones before it), or -1. */
  peek(): number {
    const w = this.#items;
    while (this.#head < this.#tail) {
      const r = w[this.#head]!;
      if (r >= 0) {
        if (this.#seqs.rows[r * STRIDE + STATE] === WAITING) return r;
        this.#seqs.recycle(r); // aborted while waiting
      }
      w[this.#head++] = -1;
    }
    this.#head = 0;
    this.#tail = 0;
    return -1;
  }

  /** Removes the request `peek` returned. */
  shift(): void {
    const w = this.#items;
    w[this.#head++] = -1;
    this.count--;
    const head = this.#head;
    const tail = this.#tail;
    if (head === tail) {
      this.#head = 0;
      this.#tail = 0;
    } else if (head > 1024 && head * 2 > tail) {
      w.copyWithin(0, head, tail);
      w.fill(-1, tail - head, tail);
      this.#head = 0;
      this.#tail = tail - head;
    }
  }
}

/**
 * Requests still in the frontend, oldest first, with when each reaches the scheduler. The frontend
 * is one process handling requests one at a time (vLLM's API server), so a wave of arrivals queues
 * there; ready times stay in arrival order.
 */
export class FrontendQueue {
  /** Requests pending (aborted ones still listed do not count). */
  count = 0;
  readonly #items: number[] = [];
  readonly #readyMs: number[] = [];
  #head = 0;
  #tail = 0;
  /** When the frontend finishes the requests it already holds. */
  #freeMs = -Infinity;
  readonly #seqs: SeqTable;

  constructor(seqs: SeqTable) {
    this.#seqs = seqs;
  }

  get empty(): boolean {
    return this.#head === this.#tail;
  }

  /** When the oldest listed request is ready (only while not `empty`). */
  get nextReadyMs(): number {
    return this.#readyMs[this.#head]!;
  }

  /** Takes record `r` at `nowMs`; it is ready `overheadMs` after the frontend finishes those before it. */
  push(r: number, nowMs: number, overheadMs: number): void {
    const readyMs = Math.max(nowMs, this.#freeMs) + overheadMs;
    this.#freeMs = readyMs;
    const t = this.#tail++;
    if (t < this.#items.length) {
      this.#items[t] = r;
      this.#readyMs[t] = readyMs;
    } else {
      this.#items.push(r);
      this.#readyMs.push(readyMs);
    }
    this.count++;
  }

  /** Moves every request ready by `now` into `waiting`. */
  drainInto(now: number, waiting: WaitingQueue): void {
    const q = this.#items;
    const ready = this.#readyMs;
    let h = this.#head;
    const tail = this.#tail;
    if (h === tail || ready[h]! > now) return;
    const rows = this.#seqs.rows;
    while (h < tail && ready[h]! <= now) {
      const r = q[h]!;
      q[h++] = -1;
      if (rows[r * STRIDE + STATE] !== PENDING) {
        this.#seqs.recycle(r); // aborted while pending
        continue;
      }
      this.count--;
      rows[r * STRIDE + STATE] = WAITING;
      waiting.push(r);
    }
    if (h === tail) {
      h = 0;
      this.#tail = 0;
    } else if (h > 1024 && h * 2 > tail) {
      q.copyWithin(0, h, tail);
      ready.copyWithin(0, h, tail);
      q.fill(-1, tail - h, tail);
      this.#tail = tail - h;
      h = 0;
    }
    this.#head = h;
  }
}
