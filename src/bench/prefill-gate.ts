/**
 * AIPerf's `--prefill-concurrency`: at most `capacity` requests between being sent and their first
 * token. A request takes a slot before it is sent and gives it back on its first token (or when it
 * ends without one). With a ramp, the capacity climbs from 1 to its target one slot at a time.
 */
export class PrefillGate {
  #capacity: number;
  #inUse = 0;
  #waiters: Array<{ signal: AbortSignal; resolve: (held: boolean) => void }> = [];
  readonly #watched = new WeakSet<AbortSignal>();
  #timers: NodeJS.Timeout[] = [];
  /** Most slots held at once (what a test checks against the capacity). */
  maxInUse = 0;

  constructor(target: number, rampMs = 0) {
    this.#capacity = rampMs > 0 && target > 1 ? 1 : target;
    if (this.#capacity < target) {
      for (let i = 1; i < target; i++) {
        const t = setTimeout(() => this.#grow(i + 1), (rampMs * i) / (target - 1));
        t.unref();
        this.#timers.push(t);
      }
    }
  }

  /** Resolves once a slot is held (at once when one is free), or when `signal` aborts (then nothing is held). */
  acquire(signal: AbortSignal): Promise<boolean> {
    if (this.#inUse < this.#capacity) {
      this.#take();
      return Promise.resolve(true);
    }
    if (signal.aborted) return Promise.resolve(false);
    this.#watch(signal);
    return new Promise((resolve) => this.#waiters.push({ signal, resolve }));
  }

  /** One abort listener per signal, however many requests wait on it (a run's thousands share one signal). */
  #watch(signal: AbortSignal): void {
    if (this.#watched.has(signal)) return;
    this.#watched.add(signal);
    signal.addEventListener('abort', () => {
      const gone = this.#waiters.filter((w) => w.signal === signal);
      this.#waiters = this.#waiters.filter((w) => w.signal !== signal);
      for (const w of gone) w.resolve(false);
    }, { once: true });
  }

  /** Gives a slot back and lets the next waiter in. */
  release(): void {
    this.#inUse--;
    this.#wake();
  }

  /** Stops the ramp's timers. */
  close(): void {
    for (const t of this.#timers) clearTimeout(t);
  }

  #take(): void {
    this.#inUse++;
    if (this.#inUse > this.maxInUse) this.maxInUse = this.#inUse;
  }

  /** Moves the capacity (adaptive scale on prefill_concurrency): a lower one lets held slots finish and admits none until under it. */
  setCapacity(capacity: number): void {
    this.#capacity = capacity;
    this.#wake();
  }

  #grow(capacity: number): void {
    this.#capacity = Math.max(this.#capacity, capacity);
    this.#wake();
  }

  #wake(): void {
    while (this.#inUse < this.#capacity && this.#waiters.length > 0) {
      this.#take();
      this.#waiters.shift()!.resolve(true);
    }
  }
}
