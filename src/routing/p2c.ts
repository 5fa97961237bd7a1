import type { Rng } from '../core/index.js';
import { eligible, minBy, twoDistinct } from './candidates.js';
import type { RouteRequest, RoutingPolicy, WorkerView } from './policy.js';

/** Power of two choices: two distinct random workers, the one with fewer in flight wins. */
export class P2cPolicy implements RoutingPolicy {
  readonly name = 'p2c' as const;

  pick(workers: readonly WorkerView[], req: RouteRequest, rng: Rng): WorkerView | undefined {
    const c = eligible(workers, req);
    if (c.length <= 1) return c[0];
    return minBy(twoDistinct(c, rng), (w) => w.inflight, rng);
  }
}
