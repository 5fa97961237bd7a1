import type { Rng } from '../core/index.js';
import { ArrayPool, minOfTwo, sampleTwo } from './candidates.js';
import type { RouteRequest, RoutingPolicy, WorkerPool, WorkerView } from './policy.js';

/** Power of two choices: two distinct random workers, the one with fewer in flight wins. */
export class P2cPolicy implements RoutingPolicy {
  readonly name = 'p2c' as const;

  pick(workers: readonly WorkerView[], req: RouteRequest, rng: Rng): WorkerView | undefined {
    return this.pickFrom(new ArrayPool(workers, req), req, rng);
  }

  pickFrom(pool: WorkerPool, _req: RouteRequest, rng: Rng): WorkerView | undefined {
    const two = sampleTwo(pool, rng);
    if (two.length <= 1) return two.length === 0 ? undefined : pool.at(two[0]!);
    const a = pool.at(two[0]!);
    const b = pool.at(two[1]!);
    return minOfTwo(a, a.inflight, b, b.inflight, rng);
  }
}
