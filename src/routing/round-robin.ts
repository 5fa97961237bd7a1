import type { Rng } from '../core/index.js';
import { ArrayPool } from './candidates.js';
import type { RouteRequest, RoutingPolicy, WorkerPool, WorkerView } from './policy.js';

/** Cycles over the workers from a random starting point, skipping ineligible ones; blind to load. */
export class RoundRobinPolicy implements RoutingPolicy {
  readonly name = 'round-robin' as const;
  #next = -1;

  pick(workers: readonly WorkerView[], req: RouteRequest, rng: Rng): WorkerView | undefined {
    return this.pickFrom(new ArrayPool(workers, req), req, rng);
  }

  pickFrom(pool: WorkerPool, _req: RouteRequest, rng: Rng): WorkerView | undefined {
    const n = pool.size;
    if (n === 0) return undefined;
    if (this.#next < 0) this.#next = rng.int(0, n - 1);
    for (let k = 0; k < n; k++) {
      const i = (this.#next + k) % n;
      if (pool.eligible(i)) {
        this.#next = (i + 1) % n;
        return pool.at(i);
      }
    }
    return undefined;
  }
}
