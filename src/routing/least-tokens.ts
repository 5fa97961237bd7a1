import type { Rng } from '../core/index.js';
import { ArrayPool, scanMin } from './candidates.js';
import type { RouteRequest, RoutingPolicy, WorkerPool, WorkerView } from './policy.js';

/**
 * A worker's token load: prompt tokens still to prefill, output tokens still to decode, and one per
 * request in flight (so a request with neither still counts, and a view without token counts reads
 * as least-loaded). Prefill and decode tokens weigh the same, as Dynamo's KV router weighs prefill
 * and decode blocks by default (docs/reference.md#token-load).
 */
export function tokenLoad(w: WorkerView): number {
  return (w.inflightPrefillTokens ?? 0) + (w.inflightDecodeTokens ?? 0) + w.inflight;
}

/**
 * The eligible worker with the least token load in flight ({@link tokenLoad}); ties at random (a
 * full scan per pick). One 30k-token prompt weighs what it is, not one request's worth.
 */
export class LeastTokensPolicy implements RoutingPolicy {
  readonly name = 'least-tokens' as const;

  pick(workers: readonly WorkerView[], req: RouteRequest, rng: Rng): WorkerView | undefined {
    return this.pickFrom(new ArrayPool(workers, req), req, rng);
  }

  pickFrom(pool: WorkerPool, _req: RouteRequest, rng: Rng): WorkerView | undefined {
    return scanMin(pool, tokenLoad, rng);
  }
}
