import type { Rng } from '../core/index.js';
import { eligible, minBy } from './candidates.js';
import type { RouteRequest, RoutingPolicy, WorkerView } from './policy.js';

/** The eligible worker with the fewest requests in flight; ties at random. */
export class LeastLoadedPolicy implements RoutingPolicy {
  readonly name = 'least-loaded' as const;

  pick(workers: readonly WorkerView[], req: RouteRequest, rng: Rng): WorkerView | undefined {
    return minBy(eligible(workers, req), (w) => w.inflight, rng);
  }
}
