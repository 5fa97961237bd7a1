import type { Clock, Timer } from '../core/index.js';
import type { FaultSpec } from './fault.js';

/** What is wrong with one worker right now. */
export interface ActiveFaults {
  stalled: boolean;
  /** 1 when healthy; the largest active `slow` factor otherwise. */
  slowFactor: number;
  /** 0 when healthy; the largest active `error` rate otherwise. */
  errorRate: number;
  reset: boolean;
  refuse: boolean;
  unhealthy: boolean;
}

/** Anything a schedule can apply engine faults to (an `Engine`). */
export interface FaultTarget {
  setFault(f: { stalled?: boolean; slowFactor?: number }): void;
}

interface Entry {
  spec: FaultSpec;
  active: boolean;
}

/**
 * Fault windows on a clock: timers at each window's start and end flip the fault and notify
 * listeners with the worker index. `bindEngines` applies `stall`/`slow` to engines; the HTTP edge
 * (or the simulator) listens for the rest with `onChange`.
 *
 * @example
 * const s = new FaultSchedule(clock, [parseFault('worker=0,kind=stall,at=1s,for=2s')], clock.now());
 * s.bindEngines([engine]);
 */
export class FaultSchedule {
  readonly #clock: Clock;
  readonly #originMs: number;
  readonly #entries: Entry[] = [];
  readonly #timers: Timer[] = [];
  readonly #listeners: ((worker: number) => void)[] = [];

  constructor(clock: Clock, faults: readonly FaultSpec[], originMs: number) {
    this.#clock = clock;
    this.#originMs = originMs;
    for (const f of faults) this.add(f);
  }

  /** Every fault added so far (start times relative to the origin). */
  get faults(): readonly FaultSpec[] {
    return this.#entries.map((e) => e.spec);
  }

  /** Adds a window (`atMs` from the origin; a window already begun starts now). */
  add(spec: FaultSpec): void {
    const e: Entry = { spec, active: false };
    this.#entries.push(e);
    const startMs = this.#originMs + spec.atMs;
    const endMs = startMs + spec.forMs;
    if (endMs <= this.#clock.now()) return;
    this.#timers.push(
      this.#clock.setTimer(startMs, () => {
        e.active = true;
        this.#emit(spec.worker);
      }),
      this.#clock.setTimer(endMs, () => {
        e.active = false;
        this.#emit(spec.worker);
      }),
    );
  }

  /**
   * The faults on `worker`: as the timers have set them, or, given `nowMs`, as the windows say
   * at that time (start inclusive, end exclusive).
   */
  activeFor(worker: number, nowMs?: number): ActiveFaults {
    const a: ActiveFaults = { stalled: false, slowFactor: 1, errorRate: 0, reset: false, refuse: false, unhealthy: false };
    for (const e of this.#entries) {
      const f = e.spec;
      if (f.worker !== worker) continue;
      if (nowMs === undefined) {
        if (!e.active) continue;
      } else {
        const start = this.#originMs + f.atMs;
        if (nowMs < start || nowMs >= start + f.forMs) continue;
      }
      switch (f.kind) {
        case 'stall': a.stalled = true; break;
        case 'slow': a.slowFactor = Math.max(a.slowFactor, f.factor ?? 10); break;
        case 'error': a.errorRate = Math.max(a.errorRate, f.rate ?? 1); break;
        case 'reset': a.reset = true; break;
        case 'refuse': a.refuse = true; break;
        case 'unhealthy': a.unhealthy = true; break;
      }
    }
    return a;
  }

  /** Calls `fn(worker)` whenever a window on that worker opens or closes. */
  onChange(fn: (worker: number) => void): void {
    this.#listeners.push(fn);
  }

  /** Applies `stall` and `slow` windows to `engines[worker]` as they open and close. */
  bindEngines(engines: readonly FaultTarget[]): void {
    this.onChange((w) => {
      const a = this.activeFor(w);
      engines[w]?.setFault({ stalled: a.stalled, slowFactor: a.slowFactor });
    });
  }

  /** Cancels every pending timer. */
  close(): void {
    for (const t of this.#timers) t.cancel();
    this.#timers.length = 0;
  }

  #emit(worker: number): void {
    for (const fn of this.#listeners) fn(worker);
  }
}
