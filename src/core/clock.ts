/** A pending timer; `cancel()` is idempotent. */
export interface Timer {
  cancel(): void;
}

/**
 * Time as milliseconds (float) from an origin the runtime picks. `engine/` and `sim/` read time
 * only through this, so the same code runs live (RealClock) and in virtual time (VirtualClock).
 */
export interface Clock {
  now(): number;
  /** Runs `fn` once when the clock reaches `atMs` (immediately-ish if already past). */
  setTimer(atMs: number, fn: () => void): Timer;
}

/** Wall clock on `performance.now()`; timers are unref()ed so they never hold the process open. */
export class RealClock implements Clock {
  readonly #originMs: number;

  constructor(originMs: number = performance.now()) {
    this.#originMs = originMs;
  }

  now(): number {
    return performance.now() - this.#originMs;
  }

  setTimer(atMs: number, fn: () => void): Timer {
    const handle = setTimeout(fn, Math.max(0, atMs - this.now()));
    handle.unref();
    return { cancel: () => clearTimeout(handle) };
  }
}

/** A timer of the virtual clock: the heap entry is itself the handle (no closure per timer). */
class Scheduled implements Timer {
  cancelled = false;

  constructor(
    readonly atMs: number,
    readonly seq: number,
    readonly fn: () => void,
    private readonly owner: { live: number },
  ) {}

  cancel(): void {
    if (!this.cancelled) {
      this.cancelled = true;
      this.owner.live--;
    }
  }
}

/**
 * Discrete-event clock: a binary heap of timers ordered by time, then insertion order.
 * Nothing happens until `runUntil()` / `run()` is called.
 *
 * @example
 * const clock = new VirtualClock();
 * clock.setTimer(5, () => console.log(clock.now())); // prints 5
 * clock.run();
 */
export class VirtualClock implements Clock {
  #nowMs = 0;
  #seq = 0;
  #heap: Scheduled[] = [];
  readonly #count = { live: 0 };

  now(): number {
    return this.#nowMs;
  }

  /** Timers not yet fired or cancelled. */
  get pending(): number {
    return this.#count.live;
  }

  setTimer(atMs: number, fn: () => void): Timer {
    const item = new Scheduled(Math.max(atMs, this.#nowMs), this.#seq++, fn, this.#count);
    this.#push(item);
    this.#count.live++;
    return item;
  }

  /** Fires every timer due at or before `untilMs`, then leaves the clock at `untilMs`. */
  runUntil(untilMs: number): void {
    while (this.#heap.length > 0 && this.#heap[0]!.atMs <= untilMs) this.#fireNext();
    if (untilMs > this.#nowMs) this.#nowMs = untilMs;
  }

  /** Fires timers until none are left or `maxEvents` have fired; returns how many fired. */
  run(maxEvents = Number.POSITIVE_INFINITY): number {
    let fired = 0;
    while (this.#heap.length > 0 && fired < maxEvents) {
      if (this.#fireNext()) fired++;
    }
    return fired;
  }

  #fireNext(): boolean {
    const item = this.#pop();
    if (item.cancelled) return false;
    item.cancel();
    this.#nowMs = item.atMs;
    item.fn();
    return true;
  }

  #less(a: Scheduled, b: Scheduled): boolean {
    return a.atMs < b.atMs || (a.atMs === b.atMs && a.seq < b.seq);
  }

  #push(item: Scheduled): void {
    const h = this.#heap;
    h.push(item);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#less(h[i]!, h[parent]!)) break;
      const up = h[parent]!;
      h[parent] = h[i]!;
      h[i] = up;
      i = parent;
    }
  }

  #pop(): Scheduled {
    const h = this.#heap;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.#less(h[l]!, h[m]!)) m = l;
        if (r < h.length && this.#less(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        const down = h[m]!;
        h[m] = h[i]!;
        h[i] = down;
        i = m;
      }
    }
    return top;
  }
}
