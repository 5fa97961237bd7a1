import { BlockPool } from './block-pool.js';
import type { KvEventSink } from './engine-types.js';
import { ENTRIES, REGISTERED, SHARED, STRIDE, TARGET, type SeqTable } from './seq.js';

const NONE = new Int32Array(0);

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
  // A record's cache entries, one per prompt block (-1: a private block), are usually a run: entries
  // first, first + 1, ... for its first SHARED blocks (a prompt's blocks are cached together, in
  // consecutive entries), private blocks after them. Its ENTRIES field then holds -2 - first, and
  // the run needs no memory of its own (the lists were 14.7 MB over 1024 engines at 3 s of
  // `perf/simulate.ts --fleet`, by a heap snapshot: first-touched pages, and a cold cache line at
  // each admission and release). Otherwise its list is a slice of 2^c slots of one array (c its
  // size class, from its prompt's blocks), taken when a lookup or a registration breaks the run and
  // given back when it leaves the running set; free slices of a class are linked through their
  // first slot. ENTRIES then holds the slice's start << 5 | c. -1: none.
  #lists = NONE;
  #listsTop = 0;
  #freeList = NONE; // (made at the first slice: an engine at fleet scale may never take one)
  readonly #seqs: SeqTable;
  /** Told of stores and evictions (null: no KV events). */
  readonly sink: KvEventSink | null;
  /** With a sink: by record, its prompt's token ids (what a BlockStored carries). */
  readonly tokenIds: (ArrayLike<number> | null)[] = [];
  // The run of blocks one `register` call stored so far (first block, count): one BlockStored each.
  #runFrom = 0;
  #runCount = 0;

  constructor(blocks: number, blockSize: number, caching: boolean, seqs: SeqTable, sink: KvEventSink | null = null) {
    this.#seqs = seqs;
    this.pool = new BlockPool(blocks);
    this.blockSize = blockSize;
    this.caching = caching;
    this.sink = sink;
    if (sink !== null) this.pool.onEvict = (h) => sink.removed(h);
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
    const o = r * STRIDE;
    const max = Math.min(hashes.length, Math.floor((seqs.rows[o + TARGET]! - 1) / this.blockSize));
    let list = seqs.rows[o + ENTRIES]!;
    // (A slice is kept from an earlier lookup of the same request while it waits: see `forget`.)
    if (list < 0) {
      const hit = this.pool.matchRun(hashes, max);
      if (hit >= 0) {
        seqs.rows[o + ENTRIES] = -2 - Math.max(0, this.pool.matchedFirst);
        return hit;
      }
      seqs.rows[o + ENTRIES] = list = this.#takeList(hashes.length);
    }
    return this.pool.match(hashes, max, this.#lists, list >>> 5);
  }

  /** A slice of at least `n` slots (its start << 5 | its size class). */
  #takeList(n: number): number {
    const c = n <= 1 ? 0 : 32 - Math.clz32(n - 1);
    if (this.#freeList === NONE) this.#freeList = new Int32Array(32).fill(-1);
    let at = this.#freeList[c]!;
    if (at >= 0) this.#freeList[c] = this.#lists[at]!;
    else {
      at = this.#listsTop;
      const end = at + (1 << c);
      if (end >= 1 << 26) throw new RangeError('engine: prompt-block lists past 2^26 slots');
      if (end > this.#lists.length) {
        // 2048 slots at first: 256 running prompts of 8 blocks (each growth is a fresh buffer and a copy).
        const grown = new Int32Array(Math.max(2048, 2 * this.#lists.length, end));
        grown.set(this.#lists);
        this.#lists = grown;
      }
      this.#listsTop = end;
    }
    return (at << 5) | c;
  }

  #giveList(list: number): void {
    const c = list & 31;
    const at = list >>> 5;
    this.#lists[at] = this.#freeList[c]!;
    this.#freeList[c] = at;
  }

  /** References the `hit` cached blocks `lookup` found for record `r` (it is being admitted). */
  acquire(r: number, hit: number): void {
    const rows = this.#seqs.rows;
    const list = rows[r * STRIDE + ENTRIES]!;
    if (list >= 0) this.pool.acquire(this.#lists, hit, list >>> 5);
    else this.pool.acquireRun(-2 - list, hit);
    rows[r * STRIDE + REGISTERED] = hit;
    rows[r * STRIDE + SHARED] = hit;
  }

  /**
   * Offers to the cache the prompt blocks that record `r` fills up to `tokens` (vLLM caches a
   * block as soon as the step that computes it is scheduled). Each is O(1); a prompt's blocks once in all.
   */
  register(r: number, tokens: number): void {
    const seqs = this.#seqs;
    const rows = seqs.rows;
    const o = r * STRIDE;
    let list = rows[o + ENTRIES]!;
    if (list === -1) return;
    const hashes = seqs.hashes[r]!;
    const upTo = Math.min(hashes.length, Math.floor(tokens / this.blockSize));
    let shared = rows[o + SHARED]!;
    const sink = this.sink;
    for (let b = rows[o + REGISTERED]!; b < upTo; b++) {
      if (list >= 0) {
        const at = list >>> 5;
        const e = this.pool.register(hashes[b]!, b > 0 ? this.#lists[at + b - 1]! + 1 : -1);
        this.#lists[at + b] = e;
        if (e >= 0) shared++;
        if (e >= 0 && sink !== null) this.#stored(r, hashes, b);
        continue;
      }
      // A run so far: entries first, first + 1, ... for the first `shared` blocks, then private ones.
      const first = -2 - list;
      const e = this.pool.register(hashes[b]!, b === shared && b > 0 ? first + b : -1);
      if (e < 0) continue;
      if (sink !== null) this.#stored(r, hashes, b);
      if (b === shared && (b === 0 || e === first + b)) {
        if (b === 0) rows[o + ENTRIES] = list = -2 - e;
        shared++;
        continue;
      }
      // The run breaks: its entries go to a slice, and this one after them.
      list = this.#takeList(hashes.length);
      const at = list >>> 5;
      for (let i = 0; i < b; i++) this.#lists[at + i] = i < shared ? first + i : -1;
      this.#lists[at + b] = e;
      rows[o + ENTRIES] = list;
      shared++;
    }
    rows[o + SHARED] = shared;
    if (upTo > rows[o + REGISTERED]!) rows[o + REGISTERED] = upTo;
    if (this.#runCount > 0) this.#flushStored(r, hashes);
  }

  /** Block `b` of record `r`'s prompt was stored: it extends the current run, or ends it and starts one. */
  #stored(r: number, hashes: readonly number[], b: number): void {
    if (this.#runCount > 0 && this.#runFrom + this.#runCount === b) {
      this.#runCount++;
      return;
    }
    if (this.#runCount > 0) this.#flushStored(r, hashes);
    this.#runFrom = b;
    this.#runCount = 1;
  }

  #flushStored(r: number, hashes: readonly number[]): void {
    const ids = this.tokenIds[r];
    if (ids) this.sink!.stored(hashes, this.#runFrom, this.#runCount, ids, this.blockSize);
    this.#runCount = 0;
  }

  /**
   * Gives back what record `r`, holding `blocks` blocks, held: its private blocks return to the
   * pool, its cache entries lose a reference (and stay cached).
   */
  release(r: number, blocks: number): void {
    const rows = this.#seqs.rows;
    const o = r * STRIDE;
    this.pool.release(blocks - rows[o + SHARED]!);
    const list = rows[o + ENTRIES]!;
    if (list === -1) return;
    if (list >= 0) {
      this.pool.deref(this.#lists, rows[o + REGISTERED]!, list >>> 5);
      // Given back while its entries are still in cache: the next admission writes over it.
      this.#giveList(list);
    } else this.pool.derefRun(-2 - list, rows[o + SHARED]!);
    rows[o + REGISTERED] = 0;
    rows[o + SHARED] = 0;
    rows[o + ENTRIES] = -1;
  }

  /** Gives back the list of waiting record `r` (looked up, never admitted), which was aborted. */
  forget(r: number): void {
    const rows = this.#seqs.rows;
    const list = rows[r * STRIDE + ENTRIES]!;
    if (list >= 0) this.#giveList(list);
    rows[r * STRIDE + ENTRIES] = -1;
  }
}
