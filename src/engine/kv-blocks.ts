import { BlockPool } from './block-pool.js';
import { REGISTERED, SHARED, STRIDE, TARGET, type SeqTable } from './seq.js';

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
  readonly #seqs: SeqTable;

  constructor(blocks: number, blockSize: number, caching: boolean, seqs: SeqTable) {
    this.#seqs = seqs;
    this.pool = new BlockPool(blocks);
    this.blockSize = blockSize;
    this.caching = caching;
  }

  blocksFor(tokens: number): number {
    return Math.ceil(tokens / this.blockSize);
  }

  /**
   * The longest run of waiting record `r`'s leading prompt blocks in the cache, written to its
   * `entries` (not yet referenced). At most promptTokens - 1 tokens, as in vLLM: the last prompt
   * token is always computed to get logits, so a fully cached block-aligned prompt recomputes its
   * last block.
   */
  lookup(r: number): number {
    const seqs = this.#seqs;
    const hashes = seqs.hashes[r];
    if (!this.caching || !hashes || hashes.length === 0) return 0;
    // A new list is made at its size: one grown from empty took twice the room, for every request in flight.
    const entries = (seqs.entries[r] ??= this.#spareEntries.pop() ?? new Array<number>(hashes.length));
    return this.pool.match(hashes, Math.min(hashes.length, Math.floor((seqs.rows[r * STRIDE + TARGET]! - 1) / this.blockSize)), entries);
  }

  /** References the `hit` cached blocks `lookup` found for record `r` (it is being admitted). */
  acquire(r: number, hit: number): void {
    const seqs = this.#seqs;
    this.pool.acquire(seqs.entries[r]!, hit);
    seqs.rows[r * STRIDE + REGISTERED] = hit;
    seqs.rows[r * STRIDE + SHARED] = hit;
  }

  /**
   * Offers to the cache the prompt blocks that record `r` fills up to `tokens` (vLLM caches a
   * block as soon as the step that computes it is scheduled). Each is O(1); a prompt's blocks once in all.
   */
  register(r: number, tokens: number): void {
    const seqs = this.#seqs;
    const entries = seqs.entries[r];
    const hashes = seqs.hashes[r];
    // (A record reused keeps its list: a request without token ids has none to offer.)
    if (!entries || !hashes) return;
    const rows = seqs.rows;
    const o = r * STRIDE;
    const upTo = Math.min(hashes.length, Math.floor(tokens / this.blockSize));
    let shared = 0;
    for (let b = rows[o + REGISTERED]!; b < upTo; b++) {
      const e = this.pool.register(hashes[b]!, b > 0 ? entries[b - 1]! + 1 : -1);
      entries[b] = e;
      if (e >= 0) shared++;
    }
    rows[o + SHARED] = rows[o + SHARED]! + shared;
    if (upTo > rows[o + REGISTERED]!) rows[o + REGISTERED] = upTo;
  }

  /**
   * Gives back what record `r`, holding `blocks` blocks, held: its private blocks return to the
   * pool, its cache entries lose a reference (and stay cached).
   */
  release(r: number, blocks: number): void {
    const seqs = this.#seqs;
    const rows = seqs.rows;
    const o = r * STRIDE;
    this.pool.release(blocks - rows[o + SHARED]!);
    const entries = seqs.entries[r];
    if (!entries) return;
    this.pool.deref(entries, rows[o + REGISTERED]!);
    rows[o + REGISTERED] = 0;
    rows[o + SHARED] = 0;
    // Recycled while still in cache: the next admission writes over it.
    this.#spareEntries.push(entries);
    seqs.entries[r] = null;
  }
}
