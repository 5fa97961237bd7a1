import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRng } from '../core/index.js';
import { Dispatcher, PrefixAffinityPolicy, PrefixGreedyPolicy, PrefixIndex, createPolicy, type PolicyName, type RouteRequest, type WorkerView } from './index.js';

const M = 'm';
const NOW = 100_000;
const blocks = (group: number, n = 8): number[] => Array.from({ length: n }, (_, k) => group * 1000 + k);
const req = (hashes: readonly number[]): RouteRequest => ({ model: M, promptTokens: hashes.length * 16, blockHashes: hashes });

function w(id: string, inflight: number, over: Partial<WorkerView> = {}): WorkerView {
  // Busy workers that produced a token 5 ms ago: not silent (per-token latency 10 ms).
  return { id, inflight, healthy: true, ttftMsEwma: 100, itlMsEwma: 10, model: M, lastProgressMs: NOW - 5, ...over };
}

/** Share of picks per worker, with `holders` already holding the request's blocks (the index is not fed by these picks). */
function shares(name: PolicyName, fleet: WorkerView[], holders: Record<string, number>, n = 2000): Map<string, number> {
  const p = createPolicy(name, { now: () => NOW });
  const full = blocks(1);
  for (const [id, depth] of Object.entries(holders)) p.assigned?.(id, req(full.slice(0, depth)));
  const rng = createRng(9);
  const out = new Map<string, number>(fleet.map((x) => [x.id, 0]));
  for (let i = 0; i < n; i++) {
    const id = p.pick(fleet, req(full), rng)!.id;
    out.set(id, out.get(id)! + 1 / n);
  }
  return out;
}

const even = (n: number, c: number, cOver: Partial<WorkerView> = {}): WorkerView[] => [w('a', n), w('b', n), w('c', c, cOver), w('d', n)];

// bound = max(mean + 8, 1.25 x mean), mean = in-flight per eligible worker (c included).
const table: { why: string; name: PolicyName; fleet: WorkerView[]; holders: Record<string, number>; expect: Record<string, [number, number]> }[] = [
  { why: 'affinity taken within the bound', name: 'prefix', fleet: even(4, 4), holders: { c: 8 }, expect: { c: [1, 1] } },
  { why: 'longest match wins over a shorter one', name: 'prefix', fleet: even(4, 4), holders: { b: 3, c: 8 }, expect: { c: [1, 1] } },
  { why: 'a shorter match is taken when the longest holder is past the bound', name: 'prefix', fleet: [w('a', 10), w('b', 10), w('c', 30), w('d', 10)], holders: { b: 3, c: 8 }, expect: { b: [1, 1] } },
  { why: 'absolute bound: 17 vs mean 11.75 (bound 19.75) keeps affinity', name: 'prefix', fleet: even(10, 17), holders: { c: 8 }, expect: { c: [1, 1] } },
  { why: 'absolute bound: 21 vs mean 12.75 (bound 20.75) refuses it', name: 'prefix', fleet: even(10, 21), holders: { c: 8 }, expect: { c: [0, 0] } },
  { why: 'relative bound: 120 vs mean 105 (bound 131.25) keeps affinity', name: 'prefix', fleet: even(100, 120), holders: { c: 8 }, expect: { c: [1, 1] } },
  { why: 'relative bound: 140 vs mean 110 (bound 137.5) refuses it', name: 'prefix', fleet: even(100, 140), holders: { c: 8 }, expect: { c: [0, 0] } },
  { why: 'a worker silent for 200 ms with requests in flight is refused', name: 'prefix', fleet: even(4, 4, { lastProgressMs: NOW - 200 }), holders: { c: 8 }, expect: { c: [0, 0] } },
  { why: 'a worker 5x slower per token is refused', name: 'prefix', fleet: even(4, 4, { itlMsEwma: 50 }), holders: { c: 8 }, expect: { c: [0, 0] } },
  { why: 'equal matches at equal load: ties at random', name: 'prefix', fleet: even(4, 4), holders: { b: 8, c: 8 }, expect: { b: [0.45, 0.55], c: [0.45, 0.55] } },
  { why: 'equal matches: the lower adaptive score of two wins', name: 'prefix', fleet: [w('a', 4), w('b', 2), w('c', 6), w('d', 4)], holders: { b: 8, c: 8 }, expect: { b: [1, 1] } },
  { why: 'no holder: adaptive two-choice (the busiest never wins)', name: 'prefix', fleet: [w('a', 4), w('b', 4), w('c', 40), w('d', 4)], holders: {}, expect: { c: [0, 0], a: [0.3, 0.37] } },
  { why: 'greedy: the holder wins however loaded', name: 'prefix-greedy', fleet: even(10, 400), holders: { c: 8 }, expect: { c: [1, 1] } },
  { why: 'greedy: the holder wins however silent', name: 'prefix-greedy', fleet: even(4, 4, { lastProgressMs: NOW - 60_000 }), holders: { c: 8 }, expect: { c: [1, 1] } },
  { why: 'greedy: ties at random', name: 'prefix-greedy', fleet: even(4, 4), holders: { a: 8, d: 8 }, expect: { a: [0.45, 0.55], d: [0.45, 0.55] } },
  { why: 'greedy: no holder gives two-choice on in-flight', name: 'prefix-greedy', fleet: [w('a', 4), w('b', 4), w('c', 40), w('d', 4)], holders: {}, expect: { c: [0, 0] } },
];

for (const row of table) {
  test(`${row.name}: ${row.why}`, () => {
    const got = shares(row.name, row.fleet, row.holders);
    for (const [id, [lo, hi]] of Object.entries(row.expect)) {
      const share = got.get(id)!;
      assert.ok(share >= lo - 1e-9 && share <= hi + 1e-9, `${id} got ${share.toFixed(3)}, want [${lo}, ${hi}] (${JSON.stringify([...got])})`);
    }
  });
}

test('prefix: a request without block hashes is placed by adaptive, and the options are checked', () => {
  const p = new PrefixAffinityPolicy({ now: () => NOW });
  p.assigned('c', req(blocks(1)));
  const got = new Set<string>();
  const rng = createRng(3);
  for (let i = 0; i < 200; i++) got.add(p.pick(even(4, 4), { model: M, promptTokens: 128 }, rng)!.id);
  assert.equal(got.size, 4);
  assert.throws(() => new PrefixAffinityPolicy({ prefix: { balanceRel: 0.5 } }), /balance-rel must be a number >= 1/);
  assert.throws(() => new PrefixGreedyPolicy({ indexBlocks: 0 }), /index blocks must be an integer >= 1/);
});

test('prefix index: bounded, least recently sent blocks go first, tails before their prefix', () => {
  const ix = new PrefixIndex({ indexBlocks: 100 });
  for (let g = 0; g < 1000; g++) ix.record(`w${g % 4}`, blocks(g));
  assert.equal(ix.size, 100);
  assert.equal(ix.longestMatch(blocks(0), () => true).blocks, 0, 'the oldest prompt is forgotten');
  assert.deepEqual(ix.longestMatch(blocks(999), () => true), { blocks: 8, ids: ['w3'] });
  // 100 = 12 whole prompts + 4 blocks of the 13th newest: its first 4 blocks, not its last 4.
  assert.equal(ix.longestMatch(blocks(987), () => true).blocks, 4);
});

test('prefix index: a block keeps only its most recent holders; forget drops a worker everywhere', () => {
  const ix = new PrefixIndex({ holdersPerBlock: 2 });
  ix.record('a', blocks(1));
  ix.record('b', blocks(1));
  ix.record('c', blocks(1, 4));
  assert.deepEqual(ix.longestMatch(blocks(1), () => true), { blocks: 8, ids: ['a', 'b'] });
  assert.deepEqual(ix.longestMatch(blocks(1, 4), () => true), { blocks: 4, ids: ['b', 'c'] });
  ix.record('a', blocks(1, 1));
  assert.deepEqual(ix.longestMatch(blocks(1, 1), () => true).ids, ['c', 'a'], 'a re-sent block moves its worker to the most recent end');
  ix.forget('a');
  assert.deepEqual([...ix.workers()].sort(), ['b', 'c']);
  assert.deepEqual(ix.longestMatch(blocks(1), (id) => id !== 'b'), { blocks: 4, ids: ['c'] });
});

test('dispatcher: learns from what it assigns, so a repeated prefix follows its first worker while within the bound', () => {
  const d = new Dispatcher({ policy: createPolicy('prefix', { now: () => 0 }), rng: createRng(2) });
  for (const id of ['a', 'b', 'c', 'd']) d.addWorker(id, { models: [M] });
  const first: string[] = [];
  // 4 prompts, each sent 4 times, each finishing before the next: no load, pure affinity.
  for (let rep = 0; rep < 4; rep++) {
    for (let g = 0; g < 4; g++) {
      d.submit(req(blocks(g)), (v) => {
        if (rep === 0) first.push(v.id);
        else assert.equal(v.id, first[g], `prompt ${g} repeat ${rep}`);
        d.release(v.id);
      });
    }
  }
  // Held open, the prompt's worker fills up to the bound (mean + 8 at this load), then the rest
  // spill: first by two-choice, then to the new holders while they are within the bound.
  const held: string[] = [];
  for (let i = 0; i < 40; i++) d.submit(req(blocks(0)), (v) => held.push(v.id));
  const onFirst = held.filter((id) => id === first[0]).length;
  assert.ok(onFirst >= 11 && onFirst <= 40 / 4 + 8, `${onFirst} of 40 on the prompt's worker`);
  assert.ok(new Set(held).size >= 3, 'the rest spread');
});

test('dispatcher: removeWorker drops the worker, its counts and the policy memory of it; refused while in flight', () => {
  const d = new Dispatcher({ policy: createPolicy('prefix', { now: () => 0 }), rng: createRng(4), maxInflightPerWorker: 'auto' });
  for (const id of ['a', 'b', 'c']) d.addWorker(id, { models: [M] });
  let on = '';
  d.submit(req(blocks(5)), (v) => (on = v.id));
  d.recordTtft(on, 50);
  assert.equal(d.removeWorker(on), false, 'a request is still in flight there');
  assert.equal(d.removeWorker('nope'), false);
  d.release(on);
  assert.equal(d.removeWorker(on), true);
  assert.deepEqual(d.workerIds(), ['a', 'b', 'c'].filter((id) => id !== on));
  assert.equal(d.stats(on), undefined);
  assert.ok(!(d.policy as PrefixAffinityPolicy).index.workers().has(on), 'the prefix index forgot it');
  const picked = new Set<string>();
  for (let i = 0; i < 300; i++) d.submit(req(blocks(i)), (v) => picked.add(v.id));
  assert.deepEqual([...picked].sort(), d.workerIds().sort(), 'the others keep taking work; the removed one never');
  assert.equal(d.totalInflight, 300);
  assert.ok(d.capacity <= Math.ceil((1.25 * 300) / 2), `the auto cap counts two workers: ${d.capacity}`);
  d.addWorker(on, { models: [M] });
  assert.ok(Number.isNaN(d.stats(on)!.ttftMsEwma), 'added again, it starts afresh');
  d.submit(req(blocks(999)), () => {});
  assert.equal(d.totalInflight, 301);
});
