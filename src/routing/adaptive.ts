import type { Rng } from '../core/index.js';
import { ArrayPool, minIndexBy, sampleTwo } from './candidates.js';
import type { AdaptiveOptions, FleetLatency, RouteRequest, RoutingPolicy, WorkerPool, WorkerView } from './policy.js';
import { relativeLatency } from './worker-stats.js';

/**
 * Two random choices compared on `(inflight + 1) x max(1, rel - tolerance)^w`, where `rel` is the
 * worker's recent latency relative to the fleet's median (the larger of the TTFT and per-token
 * ratios): within `tolerance` of typical a worker counts as typical, so the few percent of latency
 * a worker gains by taking its share of a stalled one's load does not push that load away again. A worker
 * with requests in flight that has sent no token for longer than its usual per-token latency
 * is scored with that silence as its per-token latency, so a stall repels new work at once.
 * An idle worker's bad record fades toward typical (half-life `recoveryHalfLifeMs`), so a
 * worker that recovered is tried again.
 */
export class AdaptivePolicy implements RoutingPolicy {
  readonly name = 'adaptive' as const;
  readonly #weight: number;
  /** The clock reading it was given (a Dispatcher without its own `now` borrows it). */
  readonly now: (() => number) | undefined;
  readonly #lo: number;
  readonly #hi: number;
  readonly #halfLifeMs: number;
  readonly #tolerance: number;

  constructor(opts: AdaptiveOptions = {}) {
    this.#weight = opts.latencyWeight ?? 1;
    this.now = opts.now;
    [this.#lo, this.#hi] = opts.relClamp ?? [0.2, 1000];
    this.#halfLifeMs = opts.recoveryHalfLifeMs ?? 20_000;
    this.#tolerance = opts.latencyTolerance ?? 0.5;
  }

  pick(workers: readonly WorkerView[], req: RouteRequest, rng: Rng): WorkerView | undefined {
    return this.pickFrom(new ArrayPool(workers, req), req, rng);
  }

  pickFrom(pool: WorkerPool, _req: RouteRequest, rng: Rng): WorkerView | undefined {
    const two = sampleTwo(pool, rng);
    if (two.length <= 1) return two.length === 0 ? undefined : pool.at(two[0]!);
    const fleet = pool.fleetLatency();
    const nowMs = this.now?.();
    return pool.at(minIndexBy(pool, two, (w) => this.score(w, fleet, nowMs), rng));
  }

  /** The score the policy minimises (exposed for tests and the simulator's charts). */
  score(w: WorkerView, fleet: FleetLatency, nowMs?: number): number {
    const rel = Math.max(1, this.relative(w, fleet, nowMs) - this.#tolerance);
    return (w.inflight + 1) * (this.#weight === 1 ? rel : rel ** this.#weight);
  }

  /**
   * The worker's latency relative to the fleet's as this policy sees it: silence with requests in
   * flight counts as per-token latency, an idle worker's bad record fades, clamped to `relClamp`.
   */
  relative(w: WorkerView, fleet: FleetLatency, nowMs?: number): number {
    let itl = w.itlMsEwma;
    if (nowMs !== undefined && w.inflight > 0 && Number.isFinite(w.lastProgressMs)) {
      const silentMs = nowMs - w.lastProgressMs;
      if (!(itl >= silentMs)) itl = silentMs;
    }
    let rel = relativeLatency(w.ttftMsEwma, itl, fleet);
    if (nowMs !== undefined && w.inflight === 0 && rel > 1) {
      // no request on it means no new measurement: let an old bad record fade so it gets probed
      rel = 1 + (rel - 1) * 2 ** (-Math.max(0, nowMs - w.lastProgressMs) / this.#halfLifeMs);
    }
    return Math.min(this.#hi, Math.max(this.#lo, rel));
  }
}
