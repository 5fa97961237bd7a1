import type { Clock, Rng } from '../core/index.js';
import { Dispatcher, createPolicy, type DeadlineSetting, type PolicyName } from '../routing/index.js';

/** Settings of one simulated router replica, defaulted as the live router defaults them. */
export interface FrontendSettings {
  maxInflightPerWorker: number;
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
}

/**
 * The live router's defaults (src/router/options.ts, health.ts): adaptive gets a 256 per-worker
 * cap and `auto` deadlines, the other policies no cap and no deadlines.
 */
export function routerDefaults(policy: PolicyName, overrides: Partial<Pick<FrontendSettings, 'maxInflightPerWorker' | 'maxQueue' | 'ttftDeadline' | 'stallDeadline'>> = {}): FrontendSettings {
  const adaptive = policy === 'adaptive';
  return {
    maxInflightPerWorker: overrides.maxInflightPerWorker ?? (adaptive ? 256 : Number.POSITIVE_INFINITY),
    maxQueue: overrides.maxQueue ?? 4096,
    ttftDeadline: overrides.ttftDeadline ?? (adaptive ? 'auto' : 'off'),
    stallDeadline: overrides.stallDeadline ?? (adaptive ? 'auto' : 'off'),
    deadlineFloorMs: 1000,
    maxResendShare: 0.1,
    ejectAfterFailures: 3,
    baseEjectMs: 2000,
    maxEjectMs: 60_000,
    probeIntervalMs: 1000,
  };
}

interface Health {
  consecutiveFailures: number;
  ejected: boolean;
  ejections: number;
}

/**
 * One router replica in virtual time: its own `Dispatcher` (policy, per-worker counts, cap,
 * queue, deadlines, re-send budget) and the router's passive ejection rule (N consecutive
 * failures eject a worker for a doubling time; never more than half the fleet; probed back).
 */
export class Frontend {
  readonly dispatcher: Dispatcher;
  readonly settings: FrontendSettings;
  readonly deadlinesOn: boolean;
  readonly #clock: Clock;
  readonly #health = new Map<string, Health>();
  #ejectedNow = 0;

  constructor(clock: Clock, policy: PolicyName, rng: Rng, workerIds: readonly string[], settings: FrontendSettings) {
    this.#clock = clock;
    this.settings = settings;
    this.dispatcher = new Dispatcher({
      policy: createPolicy(policy, { now: () => clock.now() }),
      rng,
      maxInflightPerWorker: settings.maxInflightPerWorker,
      maxQueue: settings.maxQueue,
      ttftDeadline: settings.ttftDeadline,
      stallDeadline: settings.stallDeadline,
      ttftDeadlineFloorMs: settings.deadlineFloorMs,
      stallDeadlineFloorMs: settings.deadlineFloorMs,
      maxResendShare: settings.maxResendShare,
    });
    for (const id of workerIds) {
      this.dispatcher.addWorker(id);
      this.#health.set(id, { consecutiveFailures: 0, ejected: false, ejections: 0 });
    }
    this.deadlinesOn = settings.ttftDeadline !== 'off' || settings.stallDeadline !== 'off';
  }

  /** A request on `id` completed. */
  success(id: string): void {
    const h = this.#health.get(id);
    if (h) h.consecutiveFailures = 0;
  }

  /** A request on `id` hit a deadline (the router counts it as a worker failure). */
  failure(id: string): void {
    const h = this.#health.get(id);
    if (!h) return;
    h.consecutiveFailures++;
    if (h.ejected || h.consecutiveFailures < this.settings.ejectAfterFailures) return;
    if (this.#ejectedNow + 1 > Math.floor(this.#health.size / 2)) return;
    h.ejected = true;
    h.ejections++;
    this.#ejectedNow++;
    this.dispatcher.setHealthy(id, false);
    const now = this.#clock.now();
    const untilMs = now + Math.min(this.settings.maxEjectMs, this.settings.baseEjectMs * 2 ** (h.ejections - 1));
    // Back at the first health probe after the ejection ends (a stalled worker still answers /health).
    const p = this.settings.probeIntervalMs;
    this.#clock.setTimer(Math.ceil(untilMs / p) * p, () => {
      h.ejected = false;
      h.consecutiveFailures = 0;
      this.#ejectedNow--;
      this.dispatcher.setHealthy(id, true);
    });
  }
}
