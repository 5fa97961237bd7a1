import type { KvEventSink } from '../engine/index.js';
import type { KvEvent } from './wire.js';

/** What vLLM's GPU block pool names its medium and its one full-attention group. */
const MEDIUM = 'GPU';

/**
 * An engine's KV events gathered into one list per step, as vLLM's scheduler takes its block
 * pool's events once per step and publishes them as one batch: a BlockStored per run of blocks a
 * request stored (its parent the block before), a BlockRemoved per evicted block.
 *
 * @example
 * const events = new EngineKvEvents((list, nowMs) => publisher.publish({ ts: Date.now() / 1000, events: list }));
 * new Engine({ clock, profile, kvEvents: events });
 */
export class EngineKvEvents implements KvEventSink {
  #events: KvEvent[] = [];
  readonly #onBatch: (events: KvEvent[], nowMs: number) => void;

  constructor(onBatch: (events: KvEvent[], nowMs: number) => void) {
    this.#onBatch = onBatch;
  }

  stored(hashes: readonly number[], from: number, count: number, tokenIds: ArrayLike<number>, blockSize: number): void {
    const ids = Array.prototype.slice.call(tokenIds, from * blockSize, (from + count) * blockSize) as number[];
    this.#events.push({
      type: 'BlockStored',
      blockHashes: hashes.slice(from, from + count),
      parentBlockHash: from > 0 ? hashes[from - 1]! : null,
      tokenIds: ids,
      blockSize,
      loraId: null,
      medium: MEDIUM,
      loraName: null,
      extraKeys: new Array<null>(count).fill(null),
      groupIdx: 0,
      kvCacheSpecKind: 'full_attention',
    });
  }

  removed(hash: number): void {
    this.#events.push({ type: 'BlockRemoved', blockHashes: [hash], medium: MEDIUM, groupIdx: 0 });
  }

  stepEnd(nowMs: number): void {
    if (this.#events.length === 0) return;
    const list = this.#events;
    this.#events = [];
    this.#onBatch(list, nowMs);
  }
}
