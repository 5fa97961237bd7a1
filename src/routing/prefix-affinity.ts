import { TailgateError, type Rng } from '../core/index.js';
import { AdaptivePolicy } from './adaptive.js';
import { ArrayPool, minOfTwo } from './candidates.js';
import { ROUTER_DEFAULTS } from './defaults.js';
import type { KvCacheReport, PolicyOptions, RouteRequest, RoutingPolicy, WorkerPool, WorkerView } from './policy.js';
import { PrefixIndex } from './prefix-index.js';
import { deepestHolders } from './prefix-source.js';

/**
 * Prefix affinity that cannot hot-spot (`prefix`). The router remembers which worker it sent
 * each KV block to ({@link PrefixIndex}) and prefers the worker holding the longest leading run
 * of the request's blocks, but only a worker that
 *
 * - holds fewer than max(mean + `balanceAbs`, `balanceRel` x mean) requests, the mean being the
 *   fleet's in-flight per full-share worker, and
 * - is not suspected of stalling: adaptive's relative latency (silence with requests in flight
 *   counted as per-token latency) below `suspectRel`.
 *
 * Among equal matches, the lower adaptive score of two random holders wins. No such worker:
 * adaptive's two-choice. A stalled worker stops producing tokens, so its silence disqualifies it
 * within a few of its per-token latencies, and its in-flight, which no longer drains, trips the
 * bound soon after; the prefixes it held are then re-learned on the workers that take them.
 *
 * @example
 * const p = new PrefixAffinityPolicy({ now: () => clock.now() });
 * p.pick(views, { model: 'm', promptTokens: 2048, blockHashes }, rng);
 */
export class PrefixAffinityPolicy implements RoutingPolicy {
  readonly name = 'prefix' as const;
  readonly hashBlockSize: number;
  readonly index: PrefixIndex;
  /** The clock reading it was given (a Dispatcher without its own `now` borrows it). */
  readonly now: (() => number) | undefined;
  readonly #fallback: AdaptivePolicy;
  readonly #abs: number;
  readonly #rel: number;
  readonly #suspect: number;
  /** The workers' own report of their caches, preferred to the index where fresh. */
  readonly cacheReport: KvCacheReport | undefined;
  /** With a report: the blocks sent most recently (what the report cannot show yet). */
  readonly #recent: PrefixIndex | undefined;

  constructor(opts: PolicyOptions = {}) {
    this.cacheReport = opts.cacheReport;
    this.#recent = opts.cacheReport === undefined ? undefined : new PrefixIndex({ indexBlocks: opts.prefix?.recentBlocks ?? 4096, ...(opts.prefix?.blockSize !== undefined && { blockSize: opts.prefix.blockSize }) });
    const p = opts.prefix ?? {};
    this.#fallback = new AdaptivePolicy(opts);
    this.now = opts.now;
    this.index = new PrefixIndex(p);
    this.hashBlockSize = this.index.blockSize;
    this.#abs = checked('balance-abs', p.balanceAbs ?? ROUTER_DEFAULTS.prefixBalanceAbs, 0);
    this.#rel = checked('balance-rel', p.balanceRel ?? ROUTER_DEFAULTS.prefixBalanceRel, 1);
    this.#suspect = checked('suspect-rel', p.suspectRel ?? 3, 1);
  }

  pick(workers: readonly WorkerView[], req: RouteRequest, rng: Rng): WorkerView | undefined {
    return this.pickFrom(new ArrayPool(workers, req), req, rng);
  }

  pickFrom(pool: WorkerPool, req: RouteRequest, rng: Rng): WorkerView | undefined {
    const hashes = req.blockHashes;
    if (hashes === undefined || hashes.length === 0 || (this.index.size === 0 && this.cacheReport === undefined)) return this.#fallback.pickFrom(pool, req, rng);
    const mean = pool.meanInflight();
    const bound = Math.max(mean + this.#abs, this.#rel * mean);
    const fleet = pool.fleetLatency();
    const nowMs = this.now?.();
    const fallback = this.#fallback;
    const ids = deepestHolders(hashes, this.index, this.cacheReport, (id) => {
      const i = pool.indexOf(id);
      if (i < 0 || !pool.eligible(i)) return false;
      const w = pool.at(i);
      return w.inflight < bound && fallback.relative(w, fleet, nowMs) < this.#suspect;
    }, this.#recent);
    if (ids.length === 0) return fallback.pickFrom(pool, req, rng);
    if (ids.length === 1) return pool.at(pool.indexOf(ids[0]!));
    const a = rng.int(0, ids.length - 1);
    let b = rng.int(0, ids.length - 2);
    if (b >= a) b++;
    const wa = pool.at(pool.indexOf(ids[a]!));
    const wb = pool.at(pool.indexOf(ids[b]!));
    return minOfTwo(wa, fallback.score(wa, fleet, nowMs), wb, fallback.score(wb, fleet, nowMs), rng);
  }

  assigned(workerId: string, req: RouteRequest): void {
    if (req.blockHashes !== undefined) {
      this.index.record(workerId, req.blockHashes);
      this.#recent?.record(workerId, req.blockHashes);
      this.cacheReport?.assigned?.(workerId, req.blockHashes);
    }
  }

  forget(workerId: string): void {
    this.index.forget(workerId);
    this.#recent?.forget(workerId);
  }
}

/** `v` when it is a finite number >= `min`; a CONFIG_INVALID error naming the option otherwise. */
function checked(name: string, v: number, min: number): number {
  if (!Number.isFinite(v) || v < min) throw new TailgateError('CONFIG_INVALID', `prefix ${name} must be a number >= ${min} (got ${v})`);
  return v;
}
