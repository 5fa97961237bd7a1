/**
 * A map from 32-bit block hashes to small non-negative integers, in two typed arrays (open
 * addressing, linear probing, kept at most half full). The prefix cache registers, looks up and
 * evicts a block at every turn; at fleet scale (thousands of engines, each caching up to its whole
 * KV pool) a `Map` spends most of that time allocating and rehashing, this spends none.
 *
 * @example
 * const ix = new HashIndex();
 * ix.set(0xdeadbeef, 7);
 * ix.get(0xdeadbeef); // 7
 * ix.delete(0xdeadbeef);
 * ix.get(0xdeadbeef); // -1
 */
export class HashIndex {
  #keys = new Int32Array(64);
  /** Value + 1; 0 marks an empty slot. */
  #vals = new Int32Array(64);
  #mask = 63;
  #shift = 26;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** The value stored under `hash`, or -1. */
  get(hash: number): number {
    const key = hash | 0;
    const keys = this.#keys;
    const vals = this.#vals;
    for (let i = this.#home(key); ; i = (i + 1) & this.#mask) {
      const v = vals[i]!;
      if (v === 0) return -1;
      if (keys[i] === key) return v - 1;
    }
  }

  /** Stores `value` (>= 0) under `hash`, which must not be present. */
  set(hash: number, value: number): void {
    if ((this.#size + 1) * 2 > this.#vals.length) this.#rehash(this.#vals.length * 2);
    this.#put(hash | 0, value + 1);
    this.#size++;
  }

  /** Removes `hash` if present. */
  delete(hash: number): void {
    const key = hash | 0;
    const keys = this.#keys;
    const vals = this.#vals;
    const mask = this.#mask;
    let i = this.#home(key);
    while (vals[i] !== 0 && keys[i] !== key) i = (i + 1) & mask;
    if (vals[i] === 0) return;
    this.#size--;
    // Backward-shift deletion: pull later members of the probe run into the hole, so lookups
    // never need tombstones.
    for (let j = (i + 1) & mask; vals[j] !== 0; j = (j + 1) & mask) {
      const home = this.#home(keys[j]!);
      // Move j into the hole at i unless its home lies cyclically in (i, j].
      if (((j - home) & mask) >= ((j - i) & mask)) {
        keys[i] = keys[j]!;
        vals[i] = vals[j]!;
        i = j;
      }
    }
    vals[i] = 0;
  }

  #home(key: number): number {
    return Math.imul(key, 0x9e3779b1) >>> this.#shift;
  }

  #put(key: number, stored: number): void {
    const mask = this.#mask;
    let i = this.#home(key);
    while (this.#vals[i] !== 0) i = (i + 1) & mask;
    this.#keys[i] = key;
    this.#vals[i] = stored;
  }

  #rehash(capacity: number): void {
    const keys = this.#keys;
    const vals = this.#vals;
    this.#keys = new Int32Array(capacity);
    this.#vals = new Int32Array(capacity);
    this.#mask = capacity - 1;
    this.#shift = 32 - Math.log2(capacity);
    for (let i = 0; i < vals.length; i++) if (vals[i] !== 0) this.#put(keys[i]!, vals[i]!);
  }
}
