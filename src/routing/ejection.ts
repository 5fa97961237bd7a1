import { ROUTER_DEFAULTS } from './defaults.js';

/** Settings of the passive ejection rule; every default is the router's. */
export interface EjectionOptions {
  /** Consecutive failures (refused, reset, 5xx, missed deadline) that eject a worker. @default 3 */
  ejectAfterFailures?: number;
  /** The first ejection lasts this long; each further one doubles it. @default 2000 */
  baseEjectMs?: number;
  /** @default 60000 */
  maxEjectMs?: number;
  /** Share of the fleet that may be ejected at once (rounded down). @default 0.5 */
  maxEjectedShare?: number;
}

/**
 * One worker's standing, kept by the runtime (the live router's `Backend`, the simulator's own
 * records) and changed only through the rule.
 */
export interface EjectionRecord {
  consecutiveFailures: number;
  ejected: boolean;
  ejectedUntilMs: number;
  /** Times it has been ejected; the next ejection lasts base x 2^ejections (capped). */
  ejections: number;
}

/**
 * What a failure did: `ejected` (out until `ejectedUntilMs`), `suspect` (counted, not ejected:
 * the caller admits it half-open until it produces tokens again), `already-ejected`.
 */
export type FailureVerdict = 'ejected' | 'suspect' | 'already-ejected';

/** A fresh record: no failure, never ejected. */
export function freshEjectionRecord(): EjectionRecord {
  return { consecutiveFailures: 0, ejected: false, ejectedUntilMs: 0, ejections: 0 };
}

/**
 * The router's passive ejection rule, shared by the live router (router/health.ts) and the
 * simulator (sim/frontend.ts): `ejectAfterFailures` failures in a row eject a worker for
 * `baseEjectMs`, doubling per ejection up to `maxEjectMs`; never more than `maxEjectedShare` of
 * the fleet at once. When its time is up and a health probe passes, the worker is re-admitted on
 * probation (a circuit breaker's half-open state): one more failure before a success ejects it
 * again at once, for the doubled time. Pure: the caller owns the records and passes the clock
 * reading and the fleet's current counts.
 *
 * @example
 * const rule = new EjectionRule();
 * const w = freshEjectionRecord();
 * for (let i = 0; i < 3; i++) rule.failure(w, 10, { size: 8, ejected: 0 }); // the third: 'ejected'
 * rule.readmit(w, 2010); // true: back, on probation
 * rule.failure(w, 2500, { size: 8, ejected: 0 }); // 'ejected' again, for 4 s
 */
export class EjectionRule {
  readonly #opts: Required<EjectionOptions>;

  constructor(opts: EjectionOptions = {}) {
    this.#opts = {
      ejectAfterFailures: opts.ejectAfterFailures ?? ROUTER_DEFAULTS.ejectAfterFailures,
      baseEjectMs: opts.baseEjectMs ?? ROUTER_DEFAULTS.baseEjectMs,
      maxEjectMs: opts.maxEjectMs ?? ROUTER_DEFAULTS.maxEjectMs,
      maxEjectedShare: opts.maxEjectedShare ?? 0.5,
    };
  }

  /** A request on the worker succeeded: the failure streak (and any probation) ends. */
  success(w: EjectionRecord): void {
    w.consecutiveFailures = 0;
  }

  /**
   * A request on the worker failed in a way that says something about it. `fleet` is the
   * number of workers and how many of them are ejected now (this one excluded).
   */
  failure(w: EjectionRecord, nowMs: number, fleet: { size: number; ejected: number }): FailureVerdict {
    if (w.ejected) return 'already-ejected';
    w.consecutiveFailures++;
    if (w.consecutiveFailures < this.#opts.ejectAfterFailures) return 'suspect';
    if (fleet.ejected + 1 > Math.floor(fleet.size * this.#opts.maxEjectedShare)) return 'suspect';
    w.ejected = true;
    w.ejections++;
    w.ejectedUntilMs = nowMs + Math.min(this.#opts.maxEjectMs, this.#opts.baseEjectMs * 2 ** (w.ejections - 1));
    return 'ejected';
  }

  /** True when the worker is ejected and its time is up at `nowMs`. */
  due(w: EjectionRecord, nowMs: number): boolean {
    return w.ejected && nowMs >= w.ejectedUntilMs;
  }

  /**
   * Re-admits an ejected worker whose time is up (call it when its health probe passes), on
   * probation: its streak stands one short of ejection. False when it is not due.
   */
  readmit(w: EjectionRecord, nowMs: number): boolean {
    if (!this.due(w, nowMs)) return false;
    w.ejected = false;
    w.consecutiveFailures = this.#opts.ejectAfterFailures - 1;
    return true;
  }
}
