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

  /** Never fires before `atMs`: setTimeout counts from the event loop's cached whole-ms time and woke up to 1.8 ms early, so an early wake waits again. */
  setTimer(atMs: number, fn: () => void): Timer {
    let handle: ReturnType<typeof setTimeout>;
    const fire = (): void => {
      const wait = atMs - this.now();
      if (wait <= 0) {
        fn();
        return;
      }
      handle = setTimeout(fire, wait);
      handle.unref();
    };
    handle = setTimeout(fire, Math.max(0, atMs - this.now()));
    handle.unref();
    return { cancel: () => clearTimeout(handle) };
  }
}

/** A timer of the virtual clock: the heap holds it (no closure per timer). */
class Scheduled implements Timer {
  cancelled = false;

  constructor(
    readonly atMs: number,
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
 * The heap's keys live in typed arrays beside it, so ordering a timer reads dense memory rather
 * than the timer objects (at fleet scale thousands are pending, and each was a cache miss).
 *
 * @example
 * const clock = new VirtualClock();
 * clock.setTimer(5, () => console.log(clock.now())); // prints 5
 * clock.run();
 */
export class VirtualClock implements Clock {
  #nowMs = 0;
  #seq = 0;
  #size = 0;
  #items: (Scheduled | undefined)[] = [];
  #atMs = new Float64Array(64);
  /** Insertion order, for timers due at the same time. */
  #order = new Float64Array(64);
  readonly #count = { live: 0 };

  now(): number {
    return this.#nowMs;
  }

  /** Timers not yet fired or cancelled. */
  get pending(): number {
    return this.#count.live;
  }

  setTimer(atMs: number, fn: () => void): Timer {
    const item = new Scheduled(Math.max(atMs, this.#nowMs), fn, this.#count);
    this.#push(item, this.#seq++);
    this.#count.live++;
    return item;
  }

  /** Fires every timer due at or before `untilMs`, then leaves the clock at `untilMs`. */
  runUntil(untilMs: number): void {
    while (this.#size > 0 && this.#atMs[0]! <= untilMs) this.#fireNext();
    if (untilMs > this.#nowMs) this.#nowMs = untilMs;
  }

  /** Fires timers until none are left or `maxEvents` have fired; returns how many fired. */
  run(maxEvents = Number.POSITIVE_INFINITY): number {
    let fired = 0;
    while (this.#size > 0 && fired < maxEvents) {
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

  #push(item: Scheduled, order: number): void {
    if (this.#size === this.#atMs.length) {
      const at = new Float64Array(this.#size * 2);
      const ord = new Float64Array(this.#size * 2);
      at.set(this.#atMs);
      ord.set(this.#order);
      this.#atMs = at;
      this.#order = ord;
    }
    const atMs = item.atMs;
    // Sift up: parents later than the new timer move down into the hole.
    let i = this.#size++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (this.#earlier(p, atMs, order)) break;
      this.#move(i, p);
      i = p;
    }
    this.#set(i, atMs, order, item);
  }

  #pop(): Scheduled {
    const items = this.#items;
    const top = items[0]!;
    const n = --this.#size;
    const last = items[n]!;
    const atMs = this.#atMs[n]!;
    const order = this.#order[n]!;
    items[n] = undefined;
    if (n > 0) {
      // Sift down: the earlier child moves up into the hole until the last timer fits there.
      let i = 0;
      for (;;) {
        let c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && this.#earlier(c + 1, this.#atMs[c]!, this.#order[c]!)) c++;
        if (!this.#earlier(c, atMs, order)) break;
        this.#move(i, c);
        i = c;
      }
      this.#set(i, atMs, order, last);
    }
    return top;
  }

  /** Whether the timer in slot `i` is due before one at `atMs` set as the `order`th. */
  #earlier(i: number, atMs: number, order: number): boolean {
    const at = this.#atMs[i]!;
    return at < atMs || (at === atMs && this.#order[i]! < order);
  }

  #move(to: number, from: number): void {
    this.#set(to, this.#atMs[from]!, this.#order[from]!, this.#items[from]!);
  }

  #set(i: number, atMs: number, order: number, item: Scheduled): void {
    this.#atMs[i] = atMs;
    this.#order[i] = order;
    this.#items[i] = item;
  }
}
