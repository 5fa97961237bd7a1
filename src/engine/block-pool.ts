const NONE32 = new Int32Array(0);
const NONE16 = new Uint16Array(0);
// Two empty buckets (a shift by 32 would be one by 0 in JS).
const EMPTY32 = new Int32Array(2);
const EMPTY16 = new Uint16Array(2);

/** The bucket of a hash key among 2^(32 - shift) (Fibonacci hashing: its top bits after a multiply). */
function bucketOf(key: number, shift: number): number {
  return Math.imul(key, 0x9e3779b1) >>> shift;
}

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
  #size = 0;
  // The entry tables, in one buffer per growth. `#keys` holds each entry's hash (as an int32) and
  // reference count side by side ([2e], [2e + 1]; count -1: no longer an entry): a match, an
  // acquire and a release read both for a prompt's usually consecutive entries, so a prompt's walk
  // touches one or two cache lines. The rest is read seldom, so it stays off those lines: `#chain`,
  // the next entry + 1 in the same hash bucket (0: none); `#lru`, an idle entry's neighbours + 1 in the
  // doubly linked LRU list of idle entries ([2e] previous, [2e + 1] next; 0: none), head evicted first.
  #keys = NONE32;
  #chain: Uint16Array | Int32Array;
  #lru: Uint16Array | Int32Array;
  // The hash index: per bucket, its first entry + 1 (0: empty), chained through `#chain`. Twice as
  // many buckets as entry rows (a power of two), rebuilt only when the rows grow: less memory to
  // touch than an open-addressing table of key/value pairs kept half full, and no rehash of its own.
  #buckets: Uint16Array | Int32Array;
  #shift = 31;
  #cap = 0;
  #head = -1;
  #tail = -1;
  #created = 0;
  readonly #spare: number[] = [];
  #matchedIdle = 0;
  #matchedFirst = -1;
  /** Told each evicted entry's hash (unsigned); null: nobody listens (one check per eviction). */
  onEvict: ((hash: number) => void) | null = null;

  constructor(total: number) {
    this.total = total;
    this.#free = total;
    // Entry numbers + 1 in the hash index and the LRU list: 16 bits when they fit (half their memory to touch).
    // Until the first entry, tables shared by every pool and never written (a fleet makes a pool per engine).
    this.#lru = this.#chain = total <= 0xffff ? NONE16 : NONE32;
    this.#buckets = total <= 0xffff ? EMPTY16 : EMPTY32;
  }

  /** Blocks nobody references (never used, freed, or cached and idle). */
  get free(): number {
    return this.#free;
  }

  /** Blocks held in the cache (referenced or idle). */
  get cached(): number {
    return this.#size;
  }

  /** Whether the cache holds a block under `hash`. */
  has(hash: number): boolean {
    return this.#find(hash | 0) >= 0;
  }

  /** The hashes (unsigned) of every block the cache holds, referenced or idle, in entry order. */
  hashes(): number[] {
    const out: number[] = [];
    for (let e = 0; e < this.#created; e++) if (this.#keys[2 * e + 1]! >= 0) out.push(this.#keys[2 * e]! >>> 0);
    return out;
  }

  /** Of the entries the last `match` or `matchRun` found, how many were idle (acquiring them uses free blocks). */
  get matchedIdle(): number {
    return this.#matchedIdle;
  }

  /** The first entry of the run the last `matchRun` found (-1 if it found none). */
  get matchedFirst(): number {
    return this.#matchedFirst;
  }

  /**
   * Writes into `into` (from index `at`) the entries of the longest run of `hashes` (from the
   * first, at most `maxBlocks`) that the cache holds, and returns its length. Changes nothing.
   */
  match(hashes: readonly number[], maxBlocks: number, into: Int32Array | number[], at = 0): number {
    let idle = 0;
    let k = 0;
    for (; k < maxBlocks; k++) {
      const key = hashes[k]! | 0;
      // A prompt's blocks are usually cached together, in consecutive entries: try the next one first.
      let e = k > 0 ? into[at + k - 1]! + 1 : -1;
      if (!this.#holds(e, key)) e = this.#find(key);
      if (e < 0) break;
      into[at + k] = e;
      if (this.#keys[2 * e + 1] === 0) idle++;
    }
    this.#matchedIdle = idle;
    return k;
  }

  /**
   * `match` for the usual case, where the cached blocks are consecutive entries: their number (the
   * first is `matchedFirst`), or -1 if a cached block is not the entry after its predecessor's
   * (then `match` must list them). Changes nothing.
   */
  matchRun(hashes: readonly number[], maxBlocks: number): number {
    let idle = 0;
    let k = 0;
    let e = -1;
    for (; k < maxBlocks; k++) {
      const key = hashes[k]! | 0;
      if (k > 0 && this.#holds(e + 1, key)) e++;
      else {
        const found = this.#find(key);
        if (found < 0) break;
        if (k > 0) return -1;
        e = found;
      }
      if (this.#keys[2 * e + 1] === 0) idle++;
    }
    this.#matchedIdle = idle;
    this.#matchedFirst = k > 0 ? e - k + 1 : -1;
    return k;
  }

  /** References the first `count` entries of `entries` from index `at` (a `match`'s); idle ones leave the LRU list. */
  acquire(entries: Int32Array | readonly number[], count: number, at = 0): void {
    for (let b = 0; b < count; b++) this.#take(entries[at + b]!);
  }

  /** `acquire` for the `count` entries from `first` on (a `matchRun`'s). */
  acquireRun(first: number, count: number): void {
    for (let e = first; e < first + count; e++) this.#take(e);
  }

  #take(e: number): void {
    const keys = this.#keys;
    if (keys[2 * e + 1] === 0) {
      this.#unlink(e);
      this.#idle--;
      this.#free--;
    }
    keys[2 * e + 1]!++;
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
    const key = hash | 0;
    if (this.#holds(hint, key) || this.#find(key) >= 0) return -1;
    const e = this.#spare.pop() ?? this.#newEntry();
    this.#keys[2 * e] = key;
    this.#keys[2 * e + 1] = 1;
    const b = bucketOf(key, this.#shift);
    this.#chain[e] = this.#buckets[b]!;
    this.#buckets[b] = e + 1;
    this.#size++;
    return e;
  }

  /**
   * Drops one reference from each of the first `count` entries of `entries` from index `at` (-1 =
   * a private block, skipped). Entries left unreferenced stay cached and count as free; they are
   * queued for eviction last block first, as vLLM frees them, so a shared prefix outlives the
   * tails behind it.
   */
  deref(entries: Int32Array | readonly number[], count: number, at = 0): void {
    for (let b = count - 1; b >= 0; b--) if (entries[at + b]! >= 0) this.#drop(entries[at + b]!);
  }

  /** `deref` for the `count` entries from `first` on (last first, as `deref` goes). */
  derefRun(first: number, count: number): void {
    for (let e = first + count - 1; e >= first; e--) this.#drop(e);
  }

  #drop(e: number): void {
    if (--this.#keys[2 * e + 1]! === 0) {
      this.#append(e);
      this.#idle++;
      this.#free++;
    }
  }

  /** Whether entry `e` is cached under `key` (one pair of slots: no hash probe). */
  #holds(e: number, key: number): boolean {
    return e >= 0 && e < this.#created && this.#keys[2 * e + 1]! >= 0 && this.#keys[2 * e] === key;
  }

  /** The entry cached under `key`, or -1. */
  #find(key: number): number {
    const keys = this.#keys;
    let e = this.#buckets[bucketOf(key, this.#shift)]! - 1;
    while (e >= 0 && keys[2 * e] !== key) e = this.#chain[e]! - 1;
    return e;
  }

  #newEntry(): number {
    if (this.#created === this.#cap) this.#grow();
    return this.#created++;
  }

  /**
   * Four times the entry rows, and the buckets rebuilt for them. Each growth is a fresh buffer, a
   * copy and a rebuild, so the first makes room for 1024 entries at once (at fleet scale an engine
   * caches ~740 blocks in its first second: 757k over 1024 engines at 1 s of `perf/simulate.ts --fleet`): pages of it no entry reaches are never touched.
   */
  #grow(): void {
    const cap = Math.min(this.total, Math.max(1024, this.#cap * 4));
    const shift = Math.clz32(cap - 1) - 1;
    const buckets = 2 ** (32 - shift);
    const w = this.#chain.BYTES_PER_ELEMENT;
    // One buffer for all: allocating a typed array costs microseconds, and a fleet has thousands of pools.
    const buf = new ArrayBuffer(8 * cap + w * (3 * cap + buckets));
    const keys = new Int32Array(buf, 0, 2 * cap);
    keys.set(this.#keys);
    const Index = w === 2 ? Uint16Array : Int32Array;
    const lru = new Index(buf, 8 * cap, 2 * cap);
    lru.set(this.#lru);
    const chain = new Index(buf, 8 * cap + 2 * w * cap, cap);
    const heads = new Index(buf, 8 * cap + 3 * w * cap, buckets);
    for (let e = 0; e < this.#created; e++) {
      if (keys[2 * e + 1]! < 0) continue;
      const b = bucketOf(keys[2 * e]!, shift);
      chain[e] = heads[b]!;
      heads[b] = e + 1;
    }
    this.#keys = keys;
    this.#lru = lru;
    this.#chain = chain;
    this.#buckets = heads;
    this.#shift = shift;
    this.#cap = cap;
  }

  #evictOldest(): void {
    const e = this.#head;
    this.#unlink(e);
    this.#idle--;
    this.#size--;
    // Out of its bucket's chain.
    const chain = this.#chain;
    const b = bucketOf(this.#keys[2 * e]!, this.#shift);
    if (this.#buckets[b] === e + 1) this.#buckets[b] = chain[e]!;
    else {
      let p = this.#buckets[b]! - 1;
      while (chain[p] !== e + 1) p = chain[p]! - 1;
      chain[p] = chain[e]!;
    }
    this.#keys[2 * e + 1] = -1; // no longer an entry (see #holds)
    this.#spare.push(e);
    if (this.onEvict !== null) this.onEvict(this.#keys[2 * e]! >>> 0);
  }

  // (Links are entry numbers + 1, 0 for none.)
  #append(e: number): void {
    const lru = this.#lru;
    lru[2 * e] = this.#tail + 1;
    lru[2 * e + 1] = 0;
    if (this.#tail >= 0) lru[2 * this.#tail + 1] = e + 1;
    else this.#head = e;
    this.#tail = e;
  }

  #unlink(e: number): void {
    const lru = this.#lru;
    const p = lru[2 * e]! - 1;
    const n = lru[2 * e + 1]! - 1;
    if (p >= 0) lru[2 * p + 1] = n + 1;
    else this.#head = n;
    if (n >= 0) lru[2 * n] = p + 1;
    else this.#tail = p;
  }
}
