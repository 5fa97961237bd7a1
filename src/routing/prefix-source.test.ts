import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KvCacheReport } from './policy.js';
import { PrefixIndex } from './prefix-index.js';
import { deepestHolders } from './prefix-source.js';

/** A report from a table of depths; `stale` workers are not fresh. */
function report(depths: Record<string, number>, stale: string[] = []): KvCacheReport {
  return { fresh: (id) => !stale.includes(id), matchDepths: () => new Map(Object.entries(depths)) };
}

const H = [11, 12, 13, 14];
const all = (): boolean => true;

test('a fresh report overrides what the router sent where: an evicted prefix no longer attracts', () => {
  const estimate = new PrefixIndex();
  estimate.record('a', H); // the router sent a all four blocks; a has since evicted them
  assert.deepEqual(deepestHolders(H, estimate, undefined, all), ['a']);
  assert.deepEqual(deepestHolders(H, estimate, report({ a: 1, b: 3 }), all), ['b']);
});

test('a worker whose events are stale is scored on the estimate', () => {
  const estimate = new PrefixIndex();
  estimate.record('a', H);
  assert.deepEqual(deepestHolders(H, estimate, report({ b: 3 }, ['a']), all), ['a']);
  assert.deepEqual(deepestHolders(H, estimate, report({ b: 4 }, ['a']), all).sort(), ['a', 'b']);
});

test('never for its warm cache: a worker the caller refuses (stalled, ejected, over its bound) is not chosen', () => {
  const estimate = new PrefixIndex();
  const r = report({ stalled: 4, b: 1 });
  assert.deepEqual(deepestHolders(H, estimate, r, (id) => id !== 'stalled'), ['b']);
  assert.deepEqual(deepestHolders(H, estimate, report({ stalled: 4 }), (id) => id !== 'stalled'), []);
});

test('what was just sent counts beside the report (a report shows a block only once computed)', () => {
  const recent = new PrefixIndex({ indexBlocks: 16 });
  recent.record('c', H.slice(0, 2));
  assert.deepEqual(deepestHolders(H, new PrefixIndex(), report({ b: 1 }), all, recent), ['c']);
  assert.deepEqual(deepestHolders(H, new PrefixIndex(), report({ c: 3 }), all, recent), ['c']);
});
