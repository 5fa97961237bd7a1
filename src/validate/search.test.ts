import { test } from 'node:test';
import assert from 'node:assert/strict';
import { searchMaxConcurrency } from './search.js';

const by = (limit: number) => async (c: number) => ({ pass: c <= limit, why: c <= limit ? 'ok' : 'over' });

test('search: bisection on the grid lands on the largest passing level, bracketed by the smallest failing one', async () => {
  const cases: [lo: number, hi: number, step: number, limit: number, tried: number[], pass: number | null, fail: number | null][] = [
    [16, 96, 16, 64, [16, 96, 48, 64, 80], 64, 80],
    [16, 96, 16, 200, [16, 96], 96, null],
    [16, 96, 16, 8, [16], null, 16],
    [1, 100, 1, 37, [1, 100, 50, 25, 37, 43, 40, 38], 37, 38],
    [10, 35, 10, 25, [10, 30, 20], 20, 30],
  ];
  for (const [lo, hi, step, limit, tried, pass, fail] of cases) {
    const r = await searchMaxConcurrency({ lo, hi, step }, by(limit));
    assert.deepEqual(r.points.map((p) => p.concurrencyPerGpu), tried, `${lo}:${hi}/${step} limit ${limit}`);
    assert.deepEqual([r.maxPassingPerGpu, r.minFailingPerGpu], [pass, fail]);
    assert.ok(r.points.length <= Math.ceil(Math.log2((hi - lo) / step + 1)) + 2);
  }
});

test('search: a stop (null judgement) ends it with what was found', async () => {
  const r = await searchMaxConcurrency({ lo: 16, hi: 96, step: 16 }, async (c) => (c === 48 ? null : { pass: true, why: '' }));
  assert.equal(r.maxPassingPerGpu, 96);
  const s = await searchMaxConcurrency({ lo: 16, hi: 96, step: 16 }, async (c) => (c === 48 ? null : { pass: c < 50, why: '' }));
  assert.deepEqual([s.maxPassingPerGpu, s.minFailingPerGpu, s.points.length], [16, 96, 2]);
});
