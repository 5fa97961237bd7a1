import type { Clock } from '../core/index.js';
import type { Engine, KvEventSink } from '../engine/index.js';
import { KvBlockIndex } from '../kv-events/index.js';
import type { KvCacheReport } from '../routing/index.js';

/** Where `prefix` learns which worker holds which block: its own estimate, the engines' KV events, or their true caches. */
export type PrefixSource = 'estimate' | 'events' | 'oracle';

/** Every prefix source, in the order comparisons list them. */
export const PREFIX_SOURCES: readonly PrefixSource[] = ['estimate', 'events', 'oracle'];

const ALWAYS = (): boolean => true;

/**
 * The engines' true caches at zero lag, read at pick time: a worker's depth is how many leading
 * blocks its engine holds now (what KV events would say with no delay and no loss).
 */
export function oracleReport(engines: readonly Engine[], ids: readonly string[]): KvCacheReport {
  return {
    fresh: ALWAYS,
    matchDepths(hashes) {
      const out = new Map<string, number>();
      for (let i = 0; i < engines.length; i++) {
        const e = engines[i]!;
        let k = 0;
        while (k < hashes.length && e.holdsBlock(hashes[k]!)) k++;
        if (k > 0) out.set(ids[i]!, k);
      }
      return out;
    },
  };
}

/**
 * KV events in simulation: each engine's stores and evictions of a step reach one index (every
 * router replica subscribes to every worker, so all read the same) `delayMs` after the step ends,
 * as vLLM publishes a step's events when it ends. Returns the report and each engine's sink.
 */
export function eventsReport(clock: Clock, ids: readonly string[], delayMs: number): { report: KvCacheReport; sinks: KvEventSink[]; index: KvBlockIndex } {
  const index = new KvBlockIndex();
  const sinks = ids.map((id): KvEventSink => {
    // One step's events as closures over the index, applied together at step end (+ delay).
    let pending: (() => void)[] = [];
    return {
      stored(hashes, from, count) {
        pending.push(() => index.storeHashes(id, hashes, from, count));
      },
      removed(hash) {
        pending.push(() => index.removeHash(id, hash));
      },
      stepEnd(nowMs) {
        if (pending.length === 0) return;
        const batch = pending;
        pending = [];
        const apply = (): void => {
          for (const f of batch) f();
        };
        if (delayMs <= 0) apply();
        else clock.setTimer(nowMs + delayMs, apply);
      },
    };
  });
  return { report: { fresh: ALWAYS, matchDepths: (h) => index.matchDepths(h) }, sinks, index };
}
