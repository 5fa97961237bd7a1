import { test } from 'node:test';
import assert from 'node:assert/strict';
import { judgeGates, parseGate } from '../gate/index.js';
import { summarize, syntheticRecord } from '../stats/index.js';
import { MAX_WORKER_PANELS, runCharts } from './index.js';

const records = Array.from({ length: 40 }, (_, i) => syntheticRecord({ startMs: 1000 + i * 100, ttftMs: 50 + i, itlMs: 10, tokens: 8, worker: `h:${9000 + (i % 4)}` }));

test('run charts: limits at threshold x tolerance, one time axis from 0, windows shaded on every chart', () => {
  const gates = judgeGates(summarize(records), [parseGate('time_to_first_token.p99<=2000'), parseGate('output_token_throughput>=100')]);
  const workerSeries = Object.fromEntries([0, 1, 2, 3].map((w) => [`h:${9000 + w}`, { tMs: [1000, 3000, 6000], inflight: [1, 2, w] }]));
  const charts = runCharts({ idPrefix: 'r', records, workerSeries, workerOrder: ['http://h:9003'], gates, originMs: 0, windows: [{ fromMs: 2000, toMs: 4000, label: 'worker 3 stalled' }] });
  assert.deepEqual(charts.map((c) => c.id), ['r-inflight', 'r-ttft', 'r-throughput']);
  assert.deepEqual(charts.find((c) => c.id === 'r-ttft')!.limits!.map((l) => Math.round(l.y)), [2200]);
  assert.deepEqual(charts.find((c) => c.id === 'r-throughput')!.limits!.map((l) => Math.round(l.y)), [90]);
  for (const c of charts) {
    assert.deepEqual(c.bands, [{ from: 2, to: 4, label: 'worker 3 stalled' }]);
    assert.equal(c.xDomain![0], 0);
    assert.equal(c.xDomain![1], charts[0]!.xDomain![1]);
  }
  // The worker the user named first is worker 0; the rest follow by port.
  assert.deepEqual(charts[0]!.series.map((s) => s.name), ['worker 0 (h:9003)', 'worker 1 (h:9000)', 'worker 2 (h:9001)', 'worker 3 (h:9002)']);
  assert.equal(charts[0]!.facets, true);
});

test('past the panel cap the busiest workers keep their panels and one panel shows the rest at their highest', () => {
  const n = MAX_WORKER_PANELS + 10;
  const workerSeries = Object.fromEntries(Array.from({ length: n }, (_, w) => [`h:${9000 + w}`, { tMs: [0, 1000], inflight: [w, w === 3 ? 500 : 1] }]));
  const [inflight] = runCharts({ idPrefix: 'big', records: [], workerSeries });
  assert.equal(inflight!.series.length, MAX_WORKER_PANELS);
  assert.ok(inflight!.series.some((s) => s.name === 'worker 3 (h:9003)'), 'the backed-up worker keeps its panel');
  const rest = inflight!.series.at(-1)!;
  assert.equal(rest.name, 'highest of the other 11 workers');
  assert.deepEqual(rest.points, [[0, 11], [1, 1]]); // workers 0-2 and 4-11
});

test('without originMs the time axis starts at the earliest record, whatever the count (300k: more than a spread takes)', () => {
  const many = Array.from({ length: 300_000 }, (_, i) => syntheticRecord({ startMs: 5000 + (i % 1000), ttftMs: 10, itlMs: 1, tokens: 2 }));
  many[123_456] = syntheticRecord({ startMs: 4000, ttftMs: 10, itlMs: 1, tokens: 2 });
  const ttft = runCharts({ idPrefix: 'm', records: many }).find((c) => c.id === 'm-ttft')!;
  const xs = ttft.series.flatMap((s) => s.points.map((p) => p[0]));
  // 1 s buckets from the earliest start (4000 ms): it alone in the first, every other in the second.
  assert.deepEqual([...new Set(xs)].sort((a, b) => a - b), [0.5, 1.5]);
});
