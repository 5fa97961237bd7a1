import type { Rng } from '../core/index.js';
import { ArrayPool, scanMin } from './candidates.js';
import type { RouteRequest, RoutingPolicy, WorkerPool, WorkerView } from './policy.js';

const inflight = (w: WorkerView): number => w.inflight;

/** The eligible worker with the fewest requests in flight; ties at random (a full scan per pick). */
export class LeastLoadedPolicy implements RoutingPolicy {
  readonly name = 'least-loaded' as const;

  pick(workers: readonly WorkerView[], req: RouteRequest, rng: Rng): WorkerView | undefined {
    return this.pickFrom(new ArrayPool(workers, req), req, rng);
  }

  pickFrom(pool: WorkerPool, _req: RouteRequest, rng: Rng): WorkerView | undefined {
    return scanMin(pool, inflight, rng);
  }
}
