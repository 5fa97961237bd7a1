import type { Rng } from '../core/index.js';
import { ArrayPool } from './candidates.js';
import { P2cPolicy } from './p2c.js';
import type { PrefixOptions, RouteRequest, RoutingPolicy, WorkerPool, WorkerView } from './policy.js';
import { PrefixIndex } from './prefix-index.js';

/**
 * "Longest prefix wins" (`prefix-greedy`), the anchor that recreates the seed's hot spot: the
 * eligible worker holding the longest leading run of the request's blocks, whatever its load or
 * latency (ties at random); two-choice on in-flight when nobody holds the first block. This is
 * what a naive KV router does: once one worker holds a prefix, every request sharing it follows,
 * a stalled worker included. For comparison only.
 */
export class PrefixGreedyPolicy implements RoutingPolicy {
  readonly name = 'prefix-greedy' as const;
  readonly hashBlockSize: number;
  readonly index: PrefixIndex;
  readonly #fallback = new P2cPolicy();

  constructor(opts: PrefixOptions = {}) {
    this.index = new PrefixIndex(opts);
    this.hashBlockSize = this.index.blockSize;
  }

  pick(workers: readonly WorkerView[], req: RouteRequest, rng: Rng): WorkerView | undefined {
    return this.pickFrom(new ArrayPool(workers, req), req, rng);
  }

  pickFrom(pool: WorkerPool, req: RouteRequest, rng: Rng): WorkerView | undefined {
    const hashes = req.blockHashes;
    if (hashes !== undefined && hashes.length > 0 && this.index.size > 0) {
      const { ids } = this.index.longestMatch(hashes, (id) => {
        const i = pool.indexOf(id);
        return i >= 0 && pool.eligible(i);
      });
      if (ids.length > 0) return pool.at(pool.indexOf(ids[rng.int(0, ids.length - 1)]!));
    }
    return this.#fallback.pickFrom(pool, req, rng);
  }

  assigned(workerId: string, req: RouteRequest): void {
    if (req.blockHashes !== undefined) this.index.record(workerId, req.blockHashes);
  }

  forget(workerId: string): void {
    this.index.forget(workerId);
  }
}
