/**
 * A map from 32-bit block hashes to small non-negative integers, in one typed array of key/value
 * pairs (open addressing, linear probing, kept at most half full). The prefix cache registers,
 * looks up and evicts a block at every turn; at fleet scale (thousands of engines, each caching up
 * to its whole KV pool) a `Map` spends most of that time allocating and rehashing, this spends none.
 *
 * @example
 * const ix = new HashIndex();
 * ix.set(0xdeadbeef, 7);
 * ix.get(0xdeadbeef); // 7
 * ix.delete(0xdeadbeef);
 * ix.get(0xdeadbeef); // -1
 */
export class HashIndex {
  /** Slot i is [2i] the key, [2i + 1] its value + 1 (0 marks an empty slot): one cache line per probe. */
  #slots = new Int32Array(128);
  #mask = 63;
  #shift = 26;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** The value stored under `hash`, or -1. */
  get(hash: number): number {
    const key = hash | 0;
    const slots = this.#slots;
    for (let i = this.#home(key); ; i = (i + 1) & this.#mask) {
      const v = slots[2 * i + 1]!;
      if (v === 0) return -1;
      if (slots[2 * i] === key) return v - 1;
    }
  }

  /** Stores `value` (>= 0) under `hash`, which must not be present. */
  set(hash: number, value: number): void {
    if ((this.#size + 1) * 2 > this.#mask + 1) this.#rehash((this.#mask + 1) * 2);
    this.#put(hash | 0, value + 1);
    this.#size++;
  }

  /** Removes `hash` if present. */
  delete(hash: number): void {
    const key = hash | 0;
    const slots = this.#slots;
    const mask = this.#mask;
    let i = this.#home(key);
    while (slots[2 * i + 1] !== 0 && slots[2 * i] !== key) i = (i + 1) & mask;
    if (slots[2 * i + 1] === 0) return;
    this.#size--;
    // Backward-shift deletion: pull later members of the probe run into the hole, so lookups
    // never need tombstones.
    for (let j = (i + 1) & mask; slots[2 * j + 1] !== 0; j = (j + 1) & mask) {
      const home = this.#home(slots[2 * j]!);
      // Move j into the hole at i unless its home lies cyclically in (i, j].
      if (((j - home) & mask) >= ((j - i) & mask)) {
        slots[2 * i] = slots[2 * j]!;
        slots[2 * i + 1] = slots[2 * j + 1]!;
        i = j;
      }
    }
    slots[2 * i + 1] = 0;
  }

  #home(key: number): number {
    return Math.imul(key, 0x9e3779b1) >>> this.#shift;
  }

  #put(key: number, stored: number): void {
    const mask = this.#mask;
    const slots = this.#slots;
    let i = this.#home(key);
    while (slots[2 * i + 1] !== 0) i = (i + 1) & mask;
    slots[2 * i] = key;
    slots[2 * i + 1] = stored;
  }

  #rehash(capacity: number): void {
    const old = this.#slots;
    this.#slots = new Int32Array(2 * capacity);
    this.#mask = capacity - 1;
    this.#shift = 32 - Math.log2(capacity);
    for (let i = 1; i < old.length; i += 2) if (old[i] !== 0) this.#put(old[i - 1]!, old[i]!);
  }
}
