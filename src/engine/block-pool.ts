import { HashIndex } from './hash-index.js';

/**
 * An engine's KV blocks with vLLM V1's prefix cache on top. A block is either private to one
 * sequence (partial prompt blocks, generated tokens, or caching off) or a cache entry: a full
 * prompt block known by its chained hash and shared, ref-counted, by every sequence whose prompt
 * starts with it. An entry nobody references stays cached but counts as free (as vLLM's KV usage
 * counts it); an allocation takes never-used or private-freed blocks first and evicts idle entries,
 * least recently freed first, only when it needs their room. Every operation is O(1) per block,
 * and the entry tables grow only as far as blocks are cached (an engine fed no token ids
 * allocates none of them).
 *
 * @example
 * const pool = new BlockPool(100);
 * pool.allocate(2);                // a sequence's two blocks
 * const e = pool.register(0xabc);  // its first block is full: now a cache entry (ref 1)
 * pool.deref([e], 1);              // the sequence ends: entry idle, still cached
 * pool.release(1);                 // its private block
 * pool.free;                       // 100
 */
export class BlockPool {
  /** Blocks in the pool. */
  readonly total: number;
  #free: number;
  /** Entries with no reference (cached, counted in #free): the eviction candidates. */
  #idle = 0;
  readonly #byHash = new HashIndex();
  #hash = new Uint32Array(0);
  #ref = new Int32Array(0);
  // Doubly linked LRU list of idle entries: head is evicted first.
  #prev = new Int32Array(0);
  #next = new Int32Array(0);
  #head = -1;
  #tail = -1;
  #created = 0;
  readonly #spare: number[] = [];
  #matchedIdle = 0;

  constructor(total: number) {
    this.total = total;
    this.#free = total;
  }

  /** Blocks nobody references (never used, freed, or cached and idle). */
  get free(): number {
    return this.#free;
  }

  /** Blocks held in the cache (referenced or idle). */
  get cached(): number {
    return this.#byHash.size;
  }

  /** Of the entries the last `match` found, how many were idle (acquiring them uses free blocks). */
  get matchedIdle(): number {
    return this.#matchedIdle;
  }

  /**
   * Writes into `into` (from index `at`) the entries of the longest run of `hashes` (from the
   * first, at most `maxBlocks`) that the cache holds, and returns its length. Changes nothing.
   */
  match(hashes: readonly number[], maxBlocks: number, into: Int32Array | number[], at = 0): number {
    let idle = 0;
    let k = 0;
    for (; k < maxBlocks; k++) {
      const h = hashes[k]!;
      // A prompt's blocks are usually cached together, in consecutive entries: try the next one first.
      let e = k > 0 ? into[at + k - 1]! + 1 : -1;
      if (!this.#holds(e, h)) e = this.#byHash.get(h);
      if (e < 0) break;
      into[at + k] = e;
      if (this.#ref[e] === 0) idle++;
    }
    this.#matchedIdle = idle;
    return k;
  }

  /** References the first `count` entries of `entries` from index `at` (a `match`'s); idle ones leave the LRU list. */
  acquire(entries: Int32Array | readonly number[], count: number, at = 0): void {
    const ref = this.#ref;
    for (let b = 0; b < count; b++) {
      const e = entries[at + b]!;
      if (ref[e] === 0) {
        this.#unlink(e);
        this.#idle--;
        this.#free--;
      }
      ref[e]!++;
    }
  }

  /** Takes `n` private blocks (the caller checked `n <= free`), evicting idle entries if the rest is short. */
  allocate(n: number): void {
    let evict = n - (this.#free - this.#idle);
    this.#free -= n;
    while (evict-- > 0) this.#evictOldest();
  }

  /** Returns `n` private blocks to the pool. */
  release(n: number): void {
    this.#free += n;
  }

  /**
   * Turns one full private block, just scheduled, into a cache entry under `hash` with one
   * reference (its owner's), and returns the entry; -1 if that hash is already cached (the block
   * stays private: the cache keeps one block per hash). `hint`: an entry that may hold `hash`,
   * checked first (the previous block's entry + 1 usually does: no hash probe then).
   */
  register(hash: number, hint = -1): number {
    if (this.#holds(hint, hash) || this.#byHash.get(hash) >= 0) return -1;
    const e = this.#spare.pop() ?? this.#newEntry();
    this.#hash[e] = hash;
    this.#ref[e] = 1;
    this.#byHash.set(hash, e);
    return e;
  }

  /**
   * Drops one reference from each of the first `count` entries of `entries` from index `at` (-1 =
   * a private block, skipped). Entries left unreferenced stay cached and count as free; they are
   * queued for eviction last block first, as vLLM frees them, so a shared prefix outlives the
   * tails behind it.
   */
  deref(entries: Int32Array | readonly number[], count: number, at = 0): void {
    const ref = this.#ref;
    for (let b = count - 1; b >= 0; b--) {
      const e = entries[at + b]!;
      if (e < 0) continue;
      if (--ref[e]! === 0) {
        this.#append(e);
        this.#idle++;
        this.#free++;
      }
    }
  }

  /** Whether entry `e` is cached under `hash` (a check of two array slots: no hash probe). */
  #holds(e: number, hash: number): boolean {
    return e >= 0 && e < this.#created && this.#ref[e]! >= 0 && this.#hash[e] === hash;
  }

  #newEntry(): number {
    const e = this.#created++;
    if (e >= this.#ref.length) {
      // Four times the room each time: every growth is a fresh buffer (and its page faults).
      const cap = Math.min(this.total, Math.max(64, this.#ref.length * 4));
      // One buffer for the four tables: allocating a typed array costs microseconds, and a fleet has thousands of pools.
      const buf = new ArrayBuffer(cap * 16);
      const grow = <T extends Int32Array | Uint32Array>(a: T, b: T): T => {
        b.set(a);
        return b;
      };
      this.#hash = grow(this.#hash, new Uint32Array(buf, 0, cap));
      this.#ref = grow(this.#ref, new Int32Array(buf, cap * 4, cap));
      this.#prev = grow(this.#prev, new Int32Array(buf, cap * 8, cap));
      this.#next = grow(this.#next, new Int32Array(buf, cap * 12, cap));
    }
    return e;
  }

  #evictOldest(): void {
    const e = this.#head;
    this.#unlink(e);
    this.#idle--;
    this.#byHash.delete(this.#hash[e]!);
    this.#ref[e] = -1; // no longer an entry (see #holds)
    this.#spare.push(e);
  }

  #append(e: number): void {
    this.#prev[e] = this.#tail;
    this.#next[e] = -1;
    if (this.#tail >= 0) this.#next[this.#tail] = e;
    else this.#head = e;
    this.#tail = e;
  }

  #unlink(e: number): void {
    const p = this.#prev[e]!;
    const n = this.#next[e]!;
    if (p >= 0) this.#next[p] = n;
    else this.#head = n;
    if (n >= 0) this.#prev[n] = p;
    else this.#tail = p;
  }
}
