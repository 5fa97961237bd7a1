/** A worker's id (`host:port`, as the router's metrics label it) from its URL or id. */
export function workerIdOf(urlOrId: string): string {
  if (!urlOrId.includes('://')) return urlOrId;
  try {
    const u = new URL(urlOrId);
    const port = u.port || (u.protocol === 'https:' ? '443' : '80');
    return `${u.hostname.replace(/^\[|\]$/g, '')}:${port}`;
  } catch {
    return urlOrId;
  }
}

/** `worker 3 (127.0.0.1:8103)`: the index the user addressed the worker by, and its `host:port`. */
export function workerName(index: number, id: string): string {
  return `worker ${index} (${id})`;
}

const natural = (a: string, b: string): number => a.localeCompare(b, 'en', { numeric: true });

/** Index of every worker: its place in `order`, then the ids `order` misses, in natural order. */
function indices(ids: Iterable<string>, order: readonly string[]): Map<string, number> {
  const index = new Map<string, number>();
  for (const o of order) {
    const id = workerIdOf(o);
    if (!index.has(id)) index.set(id, index.size);
  }
  for (const id of [...new Set(ids)].filter((id) => !index.has(id)).sort(natural)) index.set(id, index.size);
  return index;
}

/**
 * Names every worker as the user addressed it: its index in `order` (the `--backend` or
 * `--worker-url` list, the router's `/workers`, the fleet's workers; URLs or `host:port` ids) and
 * its `host:port`. Ids missing from `order` follow, in natural order (port 9000 before 10000).
 * Every chart, table and verdict that names a worker uses this, so they agree.
 *
 * @example
 * workerNames(['127.0.0.1:8102', '127.0.0.1:8101'], ['http://127.0.0.1:8101', 'http://127.0.0.1:8102']).get('127.0.0.1:8102');
 * // 'worker 1 (127.0.0.1:8102)'
 */
export function workerNames(ids: Iterable<string>, order: readonly string[] = []): Map<string, string> {
  const list = [...ids];
  const index = indices(list, order);
  return new Map(list.map((id) => [id, workerName(index.get(id)!, id)]));
}

/** Ids sorted by the index {@link workerNames} gives them: the order the user addressed the workers in. */
export function workerOrder(ids: Iterable<string>, order: readonly string[] = []): string[] {
  const list = [...new Set(ids)];
  const index = indices(list, order);
  return list.sort((a, b) => index.get(a)! - index.get(b)!);
}
