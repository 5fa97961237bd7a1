import type { Clock, Rng } from '../core/index.js';
import { Dispatcher, EjectionRule, ROUTER_DEFAULTS, createPolicy, freshEjectionRecord, usesAdaptiveDefaults, type DeadlineSetting, type EjectionRecord, type FlowQueueOptions, type KvCacheReport, type PolicyName } from '../routing/index.js';

/** Settings of one simulated router replica, defaulted as the live router defaults them. */
export interface FrontendSettings {
  maxInflightPerWorker: number | 'auto';
  maxQueue: number;
  ttftDeadline: DeadlineSetting;
  stallDeadline: DeadlineSetting;
  deadlineFloorMs: number;
  maxResendShare: number;
  /** Consecutive failures (deadline hits) that eject a worker. */
  ejectAfterFailures: number;
  baseEjectMs: number;
  maxEjectMs: number;
  probeIntervalMs: number;
  /** Flow control (priority bands, fair queuing between tenants). @default off */
  flows?: FlowQueueOptions;
  /** The workers' own report of their caches, for `prefix` (KV events or the true caches). @default none */
  cacheReport?: KvCacheReport;
}

/**
 * The live router's defaults (ROUTER_DEFAULTS, routing/defaults.ts): adaptive gets the `auto`
 * per-worker cap (a multiple of the fair share) and `auto` deadlines, the other policies no cap
 * and no deadlines.
 */
export function routerDefaults(policy: PolicyName, overrides: Partial<Pick<FrontendSettings, 'maxInflightPerWorker' | 'maxQueue' | 'ttftDeadline' | 'stallDeadline'>> = {}): FrontendSettings {
  const adaptive = usesAdaptiveDefaults(policy);
  return {
    maxInflightPerWorker: overrides.maxInflightPerWorker ?? (adaptive ? 'auto' : Number.POSITIVE_INFINITY),
    maxQueue: overrides.maxQueue ?? ROUTER_DEFAULTS.maxQueue,
    ttftDeadline: overrides.ttftDeadline ?? (adaptive ? 'auto' : 'off'),
    stallDeadline: overrides.stallDeadline ?? (adaptive ? 'auto' : 'off'),
    deadlineFloorMs: ROUTER_DEFAULTS.deadlineFloorMs,
    maxResendShare: ROUTER_DEFAULTS.maxResendShare,
    ejectAfterFailures: ROUTER_DEFAULTS.ejectAfterFailures,
    baseEjectMs: ROUTER_DEFAULTS.baseEjectMs,
    maxEjectMs: ROUTER_DEFAULTS.maxEjectMs,
    probeIntervalMs: ROUTER_DEFAULTS.probeIntervalMs,
  };
}

/**
 * One router replica in virtual time: its own `Dispatcher` (policy, per-worker counts, cap,
 * queue, deadlines, re-send budget, half-open workers) and the router's ejection rule from
 * routing/ (the one router/health.ts applies): a failure makes a worker half-open, repeated
 * failures eject it for a doubling time, and it comes back half-open at the first health probe
 * after that (a stalled worker still answers /health).
 */
export class Frontend {
  readonly dispatcher: Dispatcher;
  readonly settings: FrontendSettings;
  readonly deadlinesOn: boolean;
  readonly #clock: Clock;
  readonly #rule: EjectionRule;
  /** The workers' ids and ejection records, by worker index (the order given). */
  readonly #ids: readonly string[];
  readonly #records: EjectionRecord[] = [];
  /**
   * By worker index: this replica has made it half-open at some time (only `halfOpen` does). A
   * success elsewhere changes nothing in the dispatcher, which then is not told (a lookup by id
   * among the fleet's per finished request).
   */
  readonly #madeHalfOpen: boolean[] = [];
  #ejectedNow = 0;
  /** Ejections so far (a worker ejected twice counts twice). */
  ejections = 0;

  constructor(clock: Clock, policy: PolicyName, rng: Rng, workerIds: readonly string[], settings: FrontendSettings) {
    this.#clock = clock;
    this.settings = settings;
    this.dispatcher = new Dispatcher({
      policy: createPolicy(policy, { now: () => clock.now(), ...(settings.cacheReport !== undefined && { cacheReport: settings.cacheReport }) }),
      rng,
      // as the live router: the dispatcher reads the clock (silences, lent slots) whatever the policy
      now: () => clock.now(),
      maxInflightPerWorker: settings.maxInflightPerWorker,
      maxQueue: settings.maxQueue,
      ttftDeadline: settings.ttftDeadline,
      stallDeadline: settings.stallDeadline,
      ttftDeadlineFloorMs: settings.deadlineFloorMs,
      stallDeadlineFloorMs: settings.deadlineFloorMs,
      maxResendShare: settings.maxResendShare,
      ...(settings.flows && { flows: settings.flows }),
    });
    this.#rule = new EjectionRule({ ejectAfterFailures: settings.ejectAfterFailures, baseEjectMs: settings.baseEjectMs, maxEjectMs: settings.maxEjectMs });
    this.#ids = workerIds;
    for (const id of workerIds) {
      this.dispatcher.addWorker(id);
      this.#records.push(freshEjectionRecord());
      this.#madeHalfOpen.push(false);
    }
    this.deadlinesOn = settings.ttftDeadline !== 'off' || settings.stallDeadline !== 'off';
  }

  /** A request on worker `index` (in the order of the ids given) completed. */
  success(index: number): void {
    this.#rule.success(this.#records[index]!);
    if (this.#madeHalfOpen[index]) this.dispatcher.succeeded(this.#ids[index]!);
  }

  /** A request on worker `index` hit a deadline (the router counts it as a worker failure). */
  failure(index: number): void {
    const r = this.#records[index]!;
    const id = this.#ids[index]!;
    const verdict = this.#rule.failure(r, this.#clock.now(), { size: this.#records.length, ejected: this.#ejectedNow });
    if (verdict === 'suspect') this.#halfOpen(index);
    if (verdict !== 'ejected') return;
    this.#ejectedNow++;
    this.ejections++;
    this.dispatcher.setHealthy(id, false);
    const p = this.settings.probeIntervalMs;
    this.#clock.setTimer(Math.ceil(r.ejectedUntilMs / p) * p, () => {
      if (!this.#rule.readmit(r, this.#clock.now())) return;
      this.#ejectedNow--;
      this.#halfOpen(index);
      this.dispatcher.setHealthy(id, true);
    });
  }

  #halfOpen(index: number): void {
    this.#madeHalfOpen[index] = true;
    this.dispatcher.halfOpen(this.#ids[index]!);
  }
}
