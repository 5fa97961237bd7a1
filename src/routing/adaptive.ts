import type { Rng } from '../core/index.js';
import { ArrayPool, minOfTwo, sampleTwo } from './candidates.js';
import type { AdaptiveOptions, FleetLatency, RouteRequest, RoutingPolicy, WorkerPool, WorkerView } from './policy.js';
import { relativeLatency } from './worker-stats.js';

/**
 * Two random choices compared on `(inflight + 1) x max(1, rel - latencyTolerance)^w`, where `rel`
 * is the worker's recent latency relative to the fleet's median (the larger of the TTFT and
 * per-token ratios): within the tolerance a worker counts as typical, so the latency a worker gains
 * by taking its share of a stalled one's load does not push that load away again. A worker whose
 * per-token latency alone is `avoidRel` times the fleet's loses to any worker below that: the first
 * stream on a worker that slow adds less than one more stream on a typical worker (the step model's
 * marginal rates), and it keeps a request for `avoidRel` times as long. A worker with requests in
 * flight that has sent no token for longer than its usual per-token latency is scored with that
 * silence as its per-token latency, so a stall repels new work at once. An idle worker's bad record
 * fades toward typical (half-life `recoveryHalfLifeMs`), so a worker that recovered is tried again.
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
  readonly #avoidRel: number;
  /** The per-token ratio of the last {@link relative} call (read by `score`, no allocation). */
  #itlRel = 1;

  constructor(opts: AdaptiveOptions = {}) {
    this.#weight = opts.latencyWeight ?? 1;
    this.now = opts.now;
    [this.#lo, this.#hi] = opts.relClamp ?? [0.2, 1000];
    this.#halfLifeMs = opts.recoveryHalfLifeMs ?? 20_000;
    this.#tolerance = opts.latencyTolerance ?? 0.5;
    this.#avoidRel = opts.avoidRel ?? 4;
  }

  pick(workers: readonly WorkerView[], req: RouteRequest, rng: Rng): WorkerView | undefined {
    return this.pickFrom(new ArrayPool(workers, req), req, rng);
  }

  pickFrom(pool: WorkerPool, _req: RouteRequest, rng: Rng): WorkerView | undefined {
    const two = sampleTwo(pool, rng);
    if (two.length <= 1) return two.length === 0 ? undefined : pool.at(two[0]!);
    const a = pool.at(two[0]!);
    const b = pool.at(two[1]!);
    const fleet = pool.fleetLatency();
    const nowMs = this.now?.();
    return minOfTwo(a, this.score(a, fleet, nowMs), b, this.score(b, fleet, nowMs), rng);
  }

  /** The score the policy minimises (exposed for tests and the simulator's charts). */
  score(w: WorkerView, fleet: FleetLatency, nowMs?: number): number {
    const full = this.relative(w, fleet, nowMs);
    const rel = Math.max(1, full - this.#tolerance);
    const s = (w.inflight + 1) * (this.#weight === 1 ? rel : rel ** this.#weight);
    return full >= this.#avoidRel && this.#itlRel >= this.#avoidRel / 2 ? AVOIDED + s : s;
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
    let itlRel = itl >= 0 && fleet.itlMs > 0 ? itl / fleet.itlMs : 1;
    if (nowMs !== undefined && w.inflight === 0 && rel > 1) {
      // no request on it means no new measurement: let an old bad record fade so it gets probed
      const fade = 2 ** (-Math.max(0, nowMs - w.lastProgressMs) / this.#halfLifeMs);
      rel = 1 + (rel - 1) * fade;
      if (itlRel > 1) itlRel = 1 + (itlRel - 1) * fade;
    }
    this.#itlRel = itlRel;
    return Math.min(this.#hi, Math.max(this.#lo, rel));
  }
}

/** Added to an avoided worker's score: it loses to every worker that is not avoided. */
const AVOIDED = 1e12;
