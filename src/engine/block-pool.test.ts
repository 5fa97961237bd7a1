import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { blockHashes, cachedBlockHashes } from './block-hash.js';
import { BlockPool } from './block-pool.js';

/** A sequence's view of the pool: allocate `hashes.length` blocks and register each as a cache entry. */
function fill(pool: BlockPool, hashes: readonly number[]): number[] {
  pool.allocate(hashes.length);
  return hashes.map((h) => pool.register(h));
}

test('block hashes: a shared block-aligned prefix shares hashes, then they part; a partial block has none', () => {
  const a = [1, 2, 3, 4, 5, 6, 7, 8, 9];
  const b = [1, 2, 3, 4, 5, 6, 0, 8, 9];
  const ha = blockHashes(a, 2);
  const hb = blockHashes(b, 2);
  assert.equal(ha.length, 4, 'four full blocks of 2; the ninth token is a partial block');
  assert.deepEqual(hb.slice(0, 3), ha.slice(0, 3));
  assert.notEqual(hb[3], ha[3]);
  // Chained: the same block content after a different parent hashes differently.
  assert.notEqual(blockHashes([9, 9, 3, 4], 2)[1], ha[1]);
  assert.deepEqual(blockHashes([1, 2, 3], 4), []);
  // Remembered per array (and block size), so a reused prompt array is hashed once.
  const ids = Uint32Array.from(a);
  assert.equal(cachedBlockHashes(ids, 2), cachedBlockHashes(ids, 2));
  assert.deepEqual(cachedBlockHashes(ids, 2), ha);
  assert.deepEqual(cachedBlockHashes(ids, 4), blockHashes(a, 4));
});

test('match finds the longest cached run of leading hashes, capped, without changing anything', () => {
  const pool = new BlockPool(16);
  const h = blockHashes([1, 2, 3, 4, 5, 6, 7, 8], 2);
  const held = fill(pool, h.slice(0, 3));
  const into = new Array<number>(4);
  assert.equal(pool.match(h, 4, into), 3);
  assert.deepEqual([...into.slice(0, 3)], [...held]);
  assert.equal(pool.match(h, 2, into), 2, 'capped by maxBlocks');
  assert.equal(pool.match([h[0]!, 12345, h[2]!], 3, into), 1, 'stops at the first miss');
  assert.equal(pool.matchedIdle, 0, 'all held');
  assert.equal(pool.free, 13);
  pool.deref(held, 3);
  assert.equal(pool.free, 16, 'idle cached blocks count as free');
  assert.equal(pool.cached, 3);
  assert.equal(pool.match(h, 4, into), 3);
  assert.equal(pool.matchedIdle, 3);
  pool.acquire(into, 3);
  assert.equal(pool.free, 13, 'acquiring idle entries takes free blocks');
  pool.acquire(into, 3);
  assert.equal(pool.free, 13, 'sharing a held entry takes none');
  // A list may be a slice of a larger array (an engine keeps every record's list in one).
  const lists = new Int32Array(12).fill(-7);
  assert.equal(pool.match(h, 4, lists, 8), 3);
  assert.deepEqual([...lists], [-7, -7, -7, -7, -7, -7, -7, -7, ...held, -7]);
  pool.deref(lists, 3, 8);
  pool.deref(into, 3);
  assert.equal(pool.free, 16, 'the slice names the same entries');
});

test('allocation uses unused blocks first, then evicts idle entries least recently freed first, last block first', () => {
  const pool = new BlockPool(8);
  const a = fill(pool, [11, 12, 13]);
  const b = fill(pool, [21, 22, 23]);
  pool.deref(a, 3); // freed first: evicted first, its last block before its first
  pool.deref(b, 3);
  assert.equal(pool.free, 8);
  pool.allocate(2);
  assert.equal(pool.cached, 6, 'the two never-used blocks went first');
  pool.allocate(2);
  const into = new Array<number>(3);
  assert.equal(pool.match([11, 12, 13], 3, into), 1, "a's blocks 13 and 12 were evicted, 11 kept");
  assert.equal(pool.match([21, 22, 23], 3, into), 3);
  pool.allocate(3);
  assert.equal(pool.match([11], 1, into), 0);
  assert.equal(pool.match([21, 22, 23], 3, into), 1);
  assert.equal(pool.free, 1);
  // A hint at an evicted entry (which still has 12 in its slot of the hash table) is not a cached 12.
  assert.ok(pool.register(12, a[1]!) >= 0, '12 is cached anew');
  assert.equal(pool.register(12, a[1]!), -1, 'and then it is cached');
});

test('held entries are never evicted; a hash already cached stays a private block', () => {
  const pool = new BlockPool(6);
  const held = fill(pool, [1, 2]);
  const idle = fill(pool, [3, 4]);
  pool.deref(idle, 2);
  pool.allocate(4); // 2 unused + both idle entries
  assert.equal(pool.free, 0);
  const into = new Array<number>(2);
  assert.equal(pool.match([1, 2], 2, into), 2, 'held entries survived');
  assert.equal(pool.match([3], 1, into), 0);
  assert.equal(pool.register(1), -1, 'one block per hash');
  pool.deref(held, 2);
  pool.release(4);
  assert.equal(pool.free, 6);
  assert.equal(pool.cached, 2);
});

/** `n` hashes sharing bucket `bucket` of a hash index of 128 buckets (a pool's first, up to 64 entries), from `from` on. */
function sameBucket(n: number, bucket: number, from = 1): number[] {
  const out: number[] = [];
  for (let k = from; out.length < n; k++) if (Math.imul(k, 0x9e3779b1) >>> 25 === bucket) out.push(k >>> 0);
  return out;
}

/** Runs random registrations, acquires, releases and allocations (which evict) on a pool and a plain model; they must agree after each. */
function agreesWithModel(total: number, keys: readonly number[], runs: number, kinds: string[], opsPerRun = 300): void {
  const op = fc.tuple(fc.constantFrom(...kinds), fc.nat(keys.length - 1), fc.nat(total));
  fc.assert(
    fc.property(fc.array(op, { minLength: opsPerRun / 3, maxLength: opsPerRun, size: 'max' }), (ops) => {
      const pool = new BlockPool(total);
      // The model: each cached hash's references, idle hashes oldest first, private blocks, and each reference held.
      const ref = new Map<number, number>();
      let idle: number[] = [];
      let priv = 0;
      const held: { e: number; h: number }[] = [];
      const into = [0];
      // What the pool must evict to hand out `k` blocks: never-used ones go first.
      const evict = (k: number): void => {
        for (let over = priv + ref.size + k - total; over > 0; over--) ref.delete(idle.shift()!);
      };
      for (const [kind, at, n] of ops) {
        const h = keys[at]!;
        if (kind === 'register') {
          if (pool.free === 0) continue;
          pool.allocate(1);
          evict(1);
          const e = pool.register(h);
          if (ref.has(h)) {
            assert.equal(e, -1);
            priv++;
          } else {
            assert.ok(e >= 0);
            ref.set(h, 1);
            held.push({ e, h });
          }
        } else if (kind === 'acquire' && ref.has(h) && (ref.get(h)! > 0 || pool.free > 0)) {
          assert.equal(pool.match([h], 1, into), 1);
          if (ref.get(h) === 0) idle = idle.filter((x) => x !== h);
          pool.acquire(into, 1);
          ref.set(h, ref.get(h)! + 1);
          held.push({ e: into[0]!, h });
        } else if (kind === 'deref' && held.length > 0) {
          const { e, h } = held.splice(n % held.length, 1)[0]!;
          pool.deref([e], 1);
          ref.set(h, ref.get(h)! - 1);
          if (ref.get(h) === 0) idle.push(h);
        } else if (kind === 'allocate') {
          const k = Math.min(n, pool.free);
          pool.allocate(k);
          evict(k);
          pool.release(k);
        } else if (kind === 'release' && priv > 0) {
          pool.release(1);
          priv--;
        }
        assert.equal(pool.free, total - priv - ref.size + idle.length);
        assert.equal(pool.cached, ref.size);
        for (let i = at % 7; i < keys.length; i += keys.length > 100 ? 97 : 1) assert.equal(pool.match([keys[i]!], 1, into), ref.has(keys[i]!) ? 1 : 0);
      }
    }),
    { numRuns: runs },
  );
}

test('the pool agrees with a plain model when hashes pile up in a few hash buckets (chains unlinked from any place on eviction)', () => {
  agreesWithModel(10, [...sameBucket(8, 5), ...sameBucket(4, 6, 0x80000000), ...sameBucket(4, 127)], 200, ['register', 'register', 'acquire', 'deref', 'deref', 'allocate', 'release']);
});

test('the pool agrees with a plain model as its tables grow past 1024 and 4096 entries (hashes above 2^31 too; a pool of 5000 blocks and one of 70000, with 32-bit links)', () => {
  const keys = Array.from({ length: 6000 }, (_, i) => (Math.imul(i + 1, 0x85ebca6b) >>> 0) | (i % 2 === 0 ? 0x80000000 : 0));
  for (const total of [5000, 70000]) agreesWithModel(total, keys, 3, ['register', 'register', 'register', 'register', 'register', 'register', 'acquire', 'deref', 'allocate'], 9000);
});

test('a pool holds and finds every one of 65535, 65536 and 70000 distinct entries (16-bit links up to 65535 blocks, 32-bit past), then evicts them all for new ones', () => {
  for (const total of [65535, 65536, 70000]) {
    const pool = new BlockPool(total);
    const keys = Array.from({ length: total }, (_, i) => Math.imul(i + 1, 0x85ebca6b) >>> 0);
    const entries = fill(pool, keys);
    assert.equal(pool.cached, total);
    assert.equal(pool.free, 0);
    const into: number[] = [];
    for (let i = 0; i < total; i += 1) assert.equal(pool.match([keys[i]!], 1, into), 1, `${total} blocks: entry ${i} found`);
    pool.deref(entries, entries.length);
    assert.equal(pool.free, total, 'every entry idle: counted free, still cached');
    // New hashes take every block, evicting the idle entries oldest first.
    fill(pool, keys.map((k) => (k ^ 0x5bd1e995) >>> 0));
    assert.equal(pool.cached, total);
    assert.equal(pool.match([keys[0]!], 1, into), 0, 'the first entry was evicted');
  }
});
