import { PENDING, STATE, STRIDE, WAITING, type SeqTable } from './seq.js';

// Both queues are [head, tail) of typed arrays (a plain array's items are twice the size, made in
// the young generation and copied out of it), emptied by resetting both ends, so they keep their
// room; one that is full moves its items to the front if half of it is dead, else to a copy twice
// the size. Their room is made at the first push, for `room` requests. They list record indices
// (-1: taken out).

/**
 * Room for one more item in `items` (of `size` slots each) whose [from, to) is listed and whose end
 * is reached: new, for `room` items; or the listed ones moved to the front of itself, or of a copy
 * twice the size. The caller's range is then [0, to - from).
 */
function withRoom<T extends Int32Array | Float64Array>(items: T, from: number, to: number, size: number, room: number, make: (n: number) => T): T {
  if (items.length === 0) return make(room * size);
  let out = items;
  if (from * 2 < to) out = make(items.length * 2);
  out.set(items.subarray(from * size, to * size));
  return out;
}

/**
 * The scheduler's waiting queue, FIFO with preempted requests put back at the front. An aborted
 * request stays listed until the queue reaches it, and is recycled then.
 */
export class WaitingQueue {
  /** Requests waiting (aborted ones still listed do not count). */
  count = 0;
  #items = new Int32Array(0);
  #head = 0;
  #tail = 0;
  readonly #seqs: SeqTable;
  readonly #room: number;

  constructor(seqs: SeqTable, room: number) {
    this.#seqs = seqs;
    this.#room = Math.max(16, room);
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
    if (this.#tail === this.#items.length) {
      this.#items = withRoom(this.#items, this.#head, this.#tail, 1, this.#room, (n) => new Int32Array(n));
      this.#tail -= this.#head;
      this.#head = 0;
    }
    this.#items[this.#tail++] = r;
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
    this.#items[this.#head++] = -1;
    this.count--;
    if (this.#head === this.#tail) {
      this.#head = 0;
      this.#tail = 0;
    }
  }
}

/**
 * Requests still in the frontend, oldest first, with when each reaches the scheduler. The frontend
 * is one process handling requests one at a time (vLLM's API server), so a wave of arrivals queues
 * there; ready times stay in arrival order.
 */
export class FrontendQueue {
  /** Pairs: a record index, when it is ready (side by side: a push or a drain touches one line). */
  #items = new Float64Array(0);
  #head = 0;
  #tail = 0;
  readonly #seqs: SeqTable;
  readonly #room: number;

  constructor(seqs: SeqTable, room: number) {
    this.#seqs = seqs;
    this.#room = Math.max(16, room);
  }

  get empty(): boolean {
    return this.#head === this.#tail;
  }

  /** When the oldest listed request is ready (only while not `empty`). */
  get nextReadyMs(): number {
    return this.#items[2 * this.#head + 1]!;
  }

  /** Takes record `r` at `nowMs`; it is ready `overheadMs` after the frontend finishes those before it. */
  push(r: number, nowMs: number, overheadMs: number): void {
    // The frontend is free when the last request listed is ready (a time kept in a field is one more
    // object to touch per submit); an empty queue's requests were all ready by now.
    const tail = this.#tail;
    const readyMs = (tail > this.#head ? Math.max(nowMs, this.#items[2 * tail - 1]!) : nowMs) + overheadMs;
    if (2 * tail === this.#items.length) {
      this.#items = withRoom(this.#items, this.#head, tail, 2, this.#room, (n) => new Float64Array(n));
      this.#tail -= this.#head;
      this.#head = 0;
    }
    const t = 2 * this.#tail++;
    this.#items[t] = r;
    this.#items[t + 1] = readyMs;
  }

  /** Moves every request ready by `now` into `waiting`. */
  drainInto(now: number, waiting: WaitingQueue): void {
    const q = this.#items;
    let h = this.#head;
    const tail = this.#tail;
    if (h === tail || q[2 * h + 1]! > now) return;
    const rows = this.#seqs.rows;
    while (h < tail && q[2 * h + 1]! <= now) {
      const r = q[2 * h]! | 0;
      h++;
      if (rows[r * STRIDE + STATE] !== PENDING) {
        this.#seqs.recycle(r); // aborted while pending
        continue;
      }
      rows[r * STRIDE + STATE] = WAITING;
      waiting.push(r);
    }
    if (h === tail) {
      h = 0;
      this.#tail = 0;
    }
    this.#head = h;
  }
}
