import { requestHeadersOf, type ResolvedBenchOptions } from './options.js';

/**
 * AIPerf `--reset-kv-cache`: POSTs `path` (vLLM's `/reset_prefix_cache` by default) on every
 * `--url` before a run, so each run starts with a cold prefix cache. Never throws: returns one
 * warning line per server that did not confirm (the run goes on, as a cache it could not clear only
 * makes the run warmer).
 *
 * @example const warnings = await resetKvCache(resolved, '/reset_prefix_cache', 10_000);
 */
export async function resetKvCache(o: ResolvedBenchOptions, path: string, timeoutMs: number): Promise<string[]> {
  const p = path.startsWith('/') ? path : `/${path}`;
  const results = await Promise.all(o.targets.map(async (t) => {
    const url = `${t.url}${p}`;
    try {
      const res = await fetch(url, { method: 'POST', headers: requestHeadersOf(o, false), signal: AbortSignal.timeout(timeoutMs) });
      await res.arrayBuffer();
      return res.ok ? null : `warning: --reset-kv-cache: ${url} answered HTTP ${res.status}; the run starts with whatever the cache holds`;
    } catch (e) {
      const why = (e as { cause?: { code?: string } }).cause?.code ?? (e as Error).message;
      return `warning: --reset-kv-cache: ${url}: ${why}; the run starts with whatever the cache holds`;
    }
  }));
  return results.filter((w): w is string => w !== null);
}
