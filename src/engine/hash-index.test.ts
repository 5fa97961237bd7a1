import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { HashIndex } from './hash-index.js';

/** `n` keys whose home slot in a 64-slot table is `slot` (the index's multiplicative hash). */
function colliding(slot: number, n: number): number[] {
  const out: number[] = [];
  for (let k = 1; out.length < n; k++) if (Math.imul(k, 0x9e3779b1) >>> 26 === slot) out.push(k >>> 0);
  return out;
}

/** Runs set/delete/get ops on a HashIndex and a Map side by side; every key must agree after each op. */
function agrees(keys: readonly number[], ops: [string, number, number][]): void {
  const ix = new HashIndex();
  const ref = new Map<number, number>();
  for (const [kind, at, v] of ops) {
    const k = keys[at % keys.length]!;
    if (kind === 'set' && !ref.has(k)) {
      ix.set(k, v);
      ref.set(k, v);
    } else if (kind === 'delete') {
      ix.delete(k);
      ref.delete(k);
    }
    assert.equal(ix.size, ref.size);
    for (const key of keys) assert.equal(ix.get(key), ref.get(key) ?? -1);
  }
}

const ops = fc.array(fc.tuple(fc.constantFrom('set', 'set', 'delete', 'get'), fc.nat(), fc.nat(1000)), { maxLength: 200 });

test('HashIndex agrees with a Map when keys pile up on neighbouring slots and runs wrap around the end', () => {
  // 16 keys (no growth) on four homes, 62, 63, 0 and 1, so runs collide, wrap and shift back.
  const keys = [...colliding(62, 4), ...colliding(63, 4), ...colliding(0, 4), ...colliding(1, 4)];
  fc.assert(fc.property(ops, (o) => agrees(keys, o)), { numRuns: 300 });
});

test('HashIndex agrees with a Map across growth, with uint32 hashes above 2^31', () => {
  const keys = Array.from({ length: 300 }, (_, i) => (Math.imul(i + 1, 0x85ebca6b) >>> 0) | (i % 2 === 0 ? 0x80000000 : 0));
  fc.assert(fc.property(fc.array(fc.tuple(fc.constantFrom('set', 'set', 'set', 'delete', 'get'), fc.nat(), fc.nat(1000)), { maxLength: 600 }), (o) => agrees(keys, o)), { numRuns: 30 });
});
