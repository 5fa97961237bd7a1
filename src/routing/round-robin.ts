import type { Rng } from '../core/index.js';
import { eligible } from './candidates.js';
import type { RouteRequest, RoutingPolicy, WorkerView } from './policy.js';

/** Cycles over the eligible workers from a random starting point; blind to load. */
export class RoundRobinPolicy implements RoutingPolicy {
  readonly name = 'round-robin' as const;
  #next = -1;

  pick(workers: readonly WorkerView[], req: RouteRequest, rng: Rng): WorkerView | undefined {
    const c = eligible(workers, req);
    if (c.length === 0) return undefined;
    if (this.#next < 0) this.#next = rng.int(0, c.length - 1);
    const w = c[this.#next % c.length]!;
    this.#next = (this.#next + 1) % Number.MAX_SAFE_INTEGER;
    return w;
  }
}
