import type { Rng } from '../core/index.js';
import { eligible } from './candidates.js';
import type { RouteRequest, RoutingPolicy, WorkerView } from './policy.js';

/** Uniform random choice among the eligible workers. */
export class RandomPolicy implements RoutingPolicy {
  readonly name = 'random' as const;

  pick(workers: readonly WorkerView[], req: RouteRequest, rng: Rng): WorkerView | undefined {
    const c = eligible(workers, req);
    return c.length === 0 ? undefined : c[rng.int(0, c.length - 1)];
  }
}
