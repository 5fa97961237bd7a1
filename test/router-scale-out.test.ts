// Scale-out, live: three `tailgate route` processes over one fleet behind a round-robin TCP front
// (what a Kubernetes Service does: it balances connections, not requests), with the seed's fault,
// one worker stalled in the middle of the run. No replica knows the others' counts.
// The outcomes are checked here; the latency figures (TTFT p99 and max against the stall) are
// wall-clock and live in perf/scale-out.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CONCURRENCY, WORKERS, quantile, runScaleOut } from './scale-out-run.js';

test('three router replicas behind one round-robin front: each avoids the stalled worker, in-flight stays balanced', async (t) => {
  const o = await runScaleOut();
  t.diagnostic(`records=${o.records} connections per replica=${o.perReplica.join('/')} ` +
    `dispatched to the stalled worker while stalled, per replica=${o.during.join('/')} (to the healthy ones: ${o.healthyDuring.join('/')}), held on it after noticing=${o.stalledPeak.join('/')} ` +
    `in-flight spread across healthy workers p50=${quantile(o.spreads, 0.5)} p90=${quantile(o.spreads, 0.9)} (fair share ${CONCURRENCY / WORKERS}-${CONCURRENCY / (WORKERS - 1)}), ` +
    `busiest/fair p50=${quantile(o.peakOverFair, 0.5).toFixed(2)} p90=${quantile(o.peakOverFair, 0.9).toFixed(2)}, ttft p50=${o.ttft.p50.toFixed(0)}ms p99=${o.ttft.p99.toFixed(0)}ms max=${o.ttft.max.toFixed(0)}ms`);
  // Every stream completes with every token, through all three replicas.
  assert.deepEqual(o.bad, [], 'no stream lost, cut or duplicated');
  assert.ok(o.perReplica.every((n) => n > 0), `every replica took connections: ${o.perReplica.join(', ')}`);
  // A replica may send a suspect worker a probe request now and then, no more.
  for (const [i, n] of o.during.entries()) {
    assert.ok(n <= 3, `replica ${i} avoided the stalled worker: ${n} dispatches to it while stalled (${o.healthyDuring[i]} to the healthy ones)`);
    assert.ok(o.stalledPeak[i]! <= 1, `replica ${i} held at most one request on the stalled worker once it noticed (${o.stalledPeak[i]})`);
  }
  assert.ok(o.spreads.length >= 10, `sampled through the run: ${o.spreads.length}`);
  assert.ok(quantile(o.peakOverFair, 0.9) <= 2, `in-flight balanced across healthy workers: the busiest holds <= 2 x the fair share in 90% of samples (${quantile(o.peakOverFair, 0.9).toFixed(2)})`);
  assert.ok(quantile(o.spreads, 0.5) <= CONCURRENCY / (WORKERS - 1), `median spread ${quantile(o.spreads, 0.5)} <= one fair share`);
});
