import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AggregatorRegistry, Histogram, Registry, type Metric } from 'prom-client';
import { WorkerHistogram } from './metrics.js';

test("WorkerHistogram exposes exactly what prom-client's Histogram does, alone and summed over processes", async () => {
  const buckets = [0.001, 0.0025, 0.005, 0.01];
  const a = new Registry();
  const b = new Registry();
  const ref = new Histogram({ name: 'x_seconds', help: 'h', labelNames: ['worker'] as const, buckets, registers: [a] });
  const fast = new WorkerHistogram('x_seconds', 'h', buckets);
  b.registerMetric(fast as unknown as Metric);
  const samples: [string, number][] = [['w:1', 0.0005], ['w:1', 0.001], ['w:1', 0.003], ['w:1', 0.02], ['w:2', 0.0099], ['w:2', 0.0025], ['w:1', Number.NaN]];
  for (const [w, v] of samples) {
    if (Number.isFinite(v)) ref.observe({ worker: w }, v);
    fast.observe(w, v);
  }
  assert.equal(await b.metrics(), await a.metrics());
  const summed = async (r: Registry) => AggregatorRegistry.aggregate([await r.getMetricsAsJSON(), await r.getMetricsAsJSON()]).metrics();
  assert.equal(await summed(b), await summed(a));
  assert.deepEqual(fast.series('w:1'), { count: 4, sum: 0.0245 });
});
