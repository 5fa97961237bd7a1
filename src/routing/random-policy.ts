import type { Rng } from '../core/index.js';
import { ArrayPool, sampleOne } from './candidates.js';
import type { RouteRequest, RoutingPolicy, WorkerPool, WorkerView } from './policy.js';

/** Uniform random choice among the eligible workers. */
export class RandomPolicy implements RoutingPolicy {
  readonly name = 'random' as const;

  pick(workers: readonly WorkerView[], req: RouteRequest, rng: Rng): WorkerView | undefined {
    return this.pickFrom(new ArrayPool(workers, req), req, rng);
  }

  pickFrom(pool: WorkerPool, _req: RouteRequest, rng: Rng): WorkerView | undefined {
    const i = sampleOne(pool, rng);
    return i < 0 ? undefined : pool.at(i);
  }
}
