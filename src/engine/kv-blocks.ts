import { BlockPool } from './block-pool.js';
import type { Seq } from './seq.js';

/**
 * The sequences' side of an engine's KV blocks: how many a number of tokens takes, the cached
 * prefix a prompt starts with, the prompt blocks a sequence offers to the cache as it fills them,
 * and what it gives back when it leaves the running set. The pool itself is `pool`.
 */
export class KvBlocks {
  readonly pool: BlockPool;
  readonly blockSize: number;
  /** vLLM V1's automatic prefix caching. */
  readonly caching: boolean;
  /** Prompt-block entry arrays of sequences that left the running set, reused by the next admissions. */
  readonly #spareEntries: number[][] = [];

  constructor(blocks: number, blockSize: number, caching: boolean) {
    this.pool = new BlockPool(blocks);
    this.blockSize = blockSize;
    this.caching = caching;
  }

  blocksFor(tokens: number): number {
    return Math.ceil(tokens / this.blockSize);
  }

  /**
   * The longest run of the waiting `seq`'s leading prompt blocks in the cache, written to its
   * `entries` (not yet referenced). At most promptTokens - 1 tokens, as in vLLM: the last prompt
   * token is always computed to get logits, so a fully cached block-aligned prompt recomputes its
   * last block.
   */
  lookup(seq: Seq): number {
    const hashes = seq.hashes;
    if (!this.caching || hashes === null || hashes.length === 0) return 0;
    // A new list is made at its size: one grown from empty took twice the room, for every request in flight.
    const entries = (seq.entries ??= this.#spareEntries.pop() ?? new Array<number>(hashes.length));
    return this.pool.match(hashes, Math.min(hashes.length, Math.floor((seq.prefillTarget - 1) / this.blockSize)), entries);
  }

  /** References the `hit` cached blocks `lookup` found for `seq` (it is being admitted). */
  acquire(seq: Seq, hit: number): void {
    this.pool.acquire(seq.entries!, hit);
    seq.registered = hit;
    seq.shared = hit;
  }

  /**
   * Offers to the cache the prompt blocks that `seq` fills up to `tokens` (vLLM caches a block as
   * soon as the step that computes it is scheduled). Each is O(1); a prompt's blocks once in all.
   */
  register(seq: Seq, tokens: number): void {
    const entries = seq.entries;
    if (entries === null) return;
    const hashes = seq.hashes!;
    const upTo = Math.min(hashes.length, Math.floor(tokens / this.blockSize));
    for (let b = seq.registered; b < upTo; b++) {
      const e = this.pool.register(hashes[b]!, b > 0 ? entries[b - 1]! + 1 : -1);
      entries[b] = e;
      if (e >= 0) seq.shared++;
    }
    if (upTo > seq.registered) seq.registered = upTo;
  }

  /**
   * Gives back what `seq`, holding `blocks` blocks, held: its private blocks return to the pool,
   * its cache entries lose a reference (and stay cached).
   */
  release(seq: Seq, blocks: number): void {
    this.pool.release(blocks - seq.shared);
    const entries = seq.entries;
    if (entries === null) return;
    this.pool.deref(entries, seq.registered);
    seq.registered = 0;
    seq.shared = 0;
    // Recycled while still in cache: the next admission writes over it.
    this.#spareEntries.push(entries);
    seq.entries = null;
  }
}
