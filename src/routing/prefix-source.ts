import type { KvCacheReport } from './policy.js';
import type { PrefixIndex } from './prefix-index.js';

/**
 * The workers `accept` lets through that hold the longest leading run of `hashes`: by the
 * workers' own `report` for those it is fresh for, by the router's `estimate` (what it sent
 * where) for the others, or by the estimate alone without a report. A fresh worker also counts
 * what `recent` (the router's last few thousand blocks sent) says it was just sent: a report
 * shows a block only once the engine has computed it, and requests sharing a new prefix arrive
 * together. Empty when none holds the first block. `accept` is applied to every worker either
 * way, so a worker that may not take the request (stalled, ejected, over its bound) is never
 * chosen for its warm cache.
 *
 * @example
 * deepestHolders(hashes, index, report, (id) => pool.eligible(pool.indexOf(id))); // ['sim-2:8000']
 */
export function deepestHolders(hashes: readonly number[], estimate: PrefixIndex, report: KvCacheReport | undefined, accept: (workerId: string) => boolean, recent?: PrefixIndex): string[] {
  if (report === undefined) return estimate.longestMatch(hashes, accept).ids;
  let best = 0;
  let ids: string[] = [];
  const consider = (id: string, depth: number): void => {
    if (depth > best) {
      best = depth;
      ids = [id];
    } else if (depth === best && depth > 0) ids.push(id);
  };
  const depths = new Map<string, number>();
  for (const [id, depth] of report.matchDepths(hashes)) if (report.fresh(id) && accept(id)) depths.set(id, depth);
  if (recent !== undefined) for (const [id, depth] of recent.depths(hashes, (w) => report.fresh(w) && accept(w))) depths.set(id, Math.max(depth, depths.get(id) ?? 0));
  for (const [id, depth] of depths) consider(id, depth);
  const stale = estimate.longestMatch(hashes, (id) => !report.fresh(id) && accept(id));
  for (const id of stale.ids) consider(id, stale.blocks);
  return ids;
}
