import { test } from 'node:test';
import assert from 'node:assert/strict';
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
