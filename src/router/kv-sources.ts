import { Counter, Gauge, type Registry } from 'prom-client';
import { KvBlockIndex, KvEventSubscriber, offsetEndpoint, type KvSubscriberCounts } from '../kv-events/index.js';
import type { KvCacheReport } from '../routing/index.js';

/** The router's side of KV events (`--kv-events-config`, the same JSON the workers take). */
export interface RouterKvEventsOptions {
  /**
   * Each worker's PUB endpoint: `*` (or an empty host) stands for the worker's host, and backend i
   * (in `--backend` order) uses the port + i, as a fleet or a vLLM with data-parallel ranks publishes.
   */
  endpoint: string;
  /** Likewise its replay endpoint; null: gaps are not recovered (the worker's part is dropped). @default null */
  replayEndpoint?: string | null;
  /** @default '' */
  topic?: string;
  /** A worker sent new blocks and silent this long has stale events (scored on the estimate). @default 2000 */
  staleMs?: number;
  /** A batch stamped this long before it arrived (the worker's ts against this host's clock) marks its worker lagging. @default 5000 */
  maxLagMs?: number;
  /** Tokens per KV block, the router's request hashing. @default 16 */
  blockSize?: number;
}

interface Source {
  sub: KvEventSubscriber;
  /** Router-clock ms of the oldest dispatch of new blocks not yet followed by a batch; -1: none. */
  pendingSinceMs: number;
  lagging: boolean;
}

const COUNTS: [keyof KvSubscriberCounts, string, string][] = [
  ['batches', 'tailgate_kv_events_batches_total', 'KV-event batches applied from the worker (replayed ones included).'],
  ['replayedBatches', 'tailgate_kv_events_replayed_batches_total', 'Batches recovered through the replay socket after a sequence gap.'],
  ['gapsRecovered', 'tailgate_kv_events_gaps_recovered_total', 'Sequence gaps filled by replay.'],
  ['gapsLost', 'tailgate_kv_events_gaps_lost_total', "Sequence gaps replay could not fill (the worker's part of the index was dropped)."],
  ['restarts', 'tailgate_kv_events_restarts_total', "Sequences that went back: the worker restarted (its part of the index was dropped)."],
  ['malformedMessages', 'tailgate_kv_events_malformed_messages_total', 'Messages that were not [topic, 8-byte sequence, msgpack batch] (skipped).'],
  ['malformedEvents', 'tailgate_kv_events_malformed_events_total', 'Events whose fields did not fit their tag (skipped).'],
  ['unknownEvents', 'tailgate_kv_events_unknown_events_total', 'Events of an unknown tag (skipped).'],
];

/**
 * Follows every worker's KV events (one subscriber each) into one index of which worker holds
 * which block, and reports it to `prefix` (`KvCacheReport`). A worker is fresh while it has a
 * subscriber, its last batch was not stamped more than `maxLagMs` before it arrived, and no
 * request that stores new blocks has waited `staleMs` for its events (an idle worker publishes
 * nothing and stays fresh); otherwise `prefix` scores it on the router's own estimate, and
 * `/metrics` says so (`tailgate_kv_events_fresh`).
 *
 * @example
 * const kv = new KvEventSources({ endpoint: 'tcp://*:5557' }, () => clock.now());
 * kv.add('10.0.0.5:8000', '10.0.0.5', 0);
 */
export class KvEventSources implements KvCacheReport {
  readonly index: KvBlockIndex;
  readonly #opts: RouterKvEventsOptions;
  readonly #now: () => number;
  readonly #sources = new Map<string, Source>();

  constructor(opts: RouterKvEventsOptions, now: () => number) {
    this.#opts = opts;
    this.#now = now;
    this.index = new KvBlockIndex({ blockSize: opts.blockSize ?? 16 });
  }

  /** Adds the KV-event families to `/metrics`. */
  registerMetrics(registry: Registry): void {
    const registers = [registry];
    const sources = this.#sources;
    const fresh = (id: string): boolean => this.fresh(id);
    const index = this.index;
    new Gauge({
      name: 'tailgate_kv_events_fresh',
      help: "1 while prefix scoring reads the worker's own KV events; 0 when they are stale, lagging or missing (the router's estimate is used).",
      labelNames: ['worker'] as const,
      registers,
      collect() {
        for (const id of sources.keys()) this.set({ worker: id }, fresh(id) ? 1 : 0);
      },
    });
    new Gauge({
      name: 'tailgate_kv_events_blocks',
      help: 'KV blocks the index holds for the worker, from its events.',
      labelNames: ['worker'] as const,
      registers,
      collect() {
        for (const id of sources.keys()) this.set({ worker: id }, index.blocksOf(id));
      },
    });
    for (const [key, name, help] of COUNTS) {
      new Counter({
        name,
        help,
        labelNames: ['worker'] as const,
        registers,
        collect() {
          this.reset();
          for (const [id, s] of sources) this.inc({ worker: id }, s.sub.counts[key]);
        },
      });
    }
  }

  /** The endpoint of worker `host`, backend number `i`, from a template (see `RouterKvEventsOptions.endpoint`). */
  static endpointFor(template: string, host: string, i: number): string {
    const shifted = offsetEndpoint(template, i);
    return shifted.replace(/^tcp:\/\/(\*|)(?=:)/, `tcp://${host.includes(':') ? `[${host}]` : host}`);
  }

  /** Subscribes to worker `id` (host `host`, backend number `i`) at the template's endpoints. */
  add(id: string, host: string, i: number): void {
    if (this.#sources.has(id)) return;
    const o = this.#opts;
    this.#subscribe(id, KvEventSources.endpointFor(o.endpoint, host, i), o.replayEndpoint ? KvEventSources.endpointFor(o.replayEndpoint, host, i) : null);
  }

  /** Follows worker `id` at these endpoints instead (`*` or an empty host read as `host`); its index part starts afresh. */
  follow(id: string, host: string, endpoint: string, replayEndpoint: string | null): void {
    const s = this.#sources.get(id);
    if (s !== undefined) {
      this.#sources.delete(id);
      this.index.clearWorker(id);
      void s.sub.close();
    }
    this.#subscribe(id, KvEventSources.endpointFor(endpoint, host, 0), replayEndpoint === null ? null : KvEventSources.endpointFor(replayEndpoint, host, 0));
  }

  #subscribe(id: string, endpoint: string, replayEndpoint: string | null): void {
    const o = this.#opts;
    const src: Source = { pendingSinceMs: -1, lagging: false, sub: null as unknown as KvEventSubscriber };
    src.sub = new KvEventSubscriber({
      endpoint,
      replayEndpoint,
      topic: o.topic ?? '',
      onBatch: (batch) => {
        src.pendingSinceMs = -1;
        src.lagging = Date.now() - batch.ts * 1000 > (o.maxLagMs ?? 5000);
        this.index.apply(id, batch.events);
      },
      onReset: () => this.index.clearWorker(id),
    });
    this.#sources.set(id, src);
  }

  /** Stops following worker `id` and forgets its blocks. */
  remove(id: string): void {
    const s = this.#sources.get(id);
    if (!s) return;
    this.#sources.delete(id);
    this.index.removeWorker(id);
    void s.sub.close();
  }

  fresh(workerId: string): boolean {
    const s = this.#sources.get(workerId);
    if (s === undefined || s.lagging) return false;
    return s.pendingSinceMs < 0 || this.#now() - s.pendingSinceMs <= (this.#opts.staleMs ?? 2000);
  }

  matchDepths(hashes: readonly number[]): ReadonlyMap<string, number> {
    return this.index.matchDepths(hashes);
  }

  /** `prefix` sent `hashes` to `workerId`: if the index lacks some, events for them are now due. */
  assigned(workerId: string, hashes: readonly number[]): void {
    const s = this.#sources.get(workerId);
    if (s === undefined || s.pendingSinceMs >= 0 || hashes.length === 0) return;
    if ((this.index.matchDepths(hashes).get(workerId) ?? 0) < hashes.length) s.pendingSinceMs = this.#now();
  }

  /** What worker `id`'s subscriber has seen (for tests and listings). */
  counts(id: string): KvSubscriberCounts | undefined {
    return this.#sources.get(id)?.sub.counts;
  }

  async close(): Promise<void> {
    const all = [...this.#sources.values()];
    this.#sources.clear();
    await Promise.all(all.map((s) => s.sub.close()));
  }
}
