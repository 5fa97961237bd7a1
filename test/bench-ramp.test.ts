// `--concurrency-ramp-duration` and `--request-rate-ramp-duration`: the closed loop's slots open one by one
// over the ramp, and an open loop's rate climbs to its target, instead of starting at it; the warm-up
// has a load of its own (`--warmup-concurrency`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFleet } from '../src/fleet/index.js';
import { runBench } from '../src/bench/index.js';
import { rampedTime } from '../src/bench/run-bench.js';
import type { RequestRecord } from '../src/core/index.js';

/** The most requests in flight at once among `rs`. */
function peakInflight(rs: readonly RequestRecord[]): number {
  const ev = rs.flatMap((r) => [[r.startMs, 1], [r.endMs, -1]] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let n = 0;
  let peak = 0;
  for (const [, d] of ev) peak = Math.max(peak, (n += d));
  return peak;
}

test('a concurrency ramp opens the slots one by one: one request at a time at first, the full concurrency later', async (t) => {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: 'm' });
  t.after(() => fleet.close());
  const rampMs = 1200;
  const r = await runBench({ url: fleet.workers[0]!.url, model: 'm', streaming: true, concurrency: 4, requestCount: 40, inputTokensMean: 8, outputTokensMean: 8, concurrencyRampMs: rampMs });
  const prof = r.records.filter((x) => x.phase === 'profiling');
  assert.equal(prof.length, 40);
  const start = Math.min(...prof.map((x) => x.startMs));
  // Slot 1 opens a third of the way into the ramp: before that only slot 0 sends, one request after another.
  const early = prof.filter((x) => x.startMs < start + rampMs / 3);
  assert.ok(early.length >= 1);
  assert.equal(peakInflight(early), 1, 'one slot open at the start');
  assert.equal(peakInflight(prof), 4, 'every slot open by the end of the ramp');

  const flat = await runBench({ url: fleet.workers[0]!.url, model: 'm', streaming: true, concurrency: 4, requestCount: 8, inputTokensMean: 8, outputTokensMean: 8 });
  const first = flat.records.filter((x) => x.phase === 'profiling').sort((a, b) => a.startMs - b.startMs).slice(0, 4);
  assert.equal(peakInflight(first), 4, 'without a ramp all four start together');
});

test('a request-rate ramp: the arrivals a ramped rate would send, from AIPerf\'s start rate to the target, and all of them sent', async (t) => {
  // The ramped rate r(t) climbs from R x 100 ms / D to R over D: by rampedTime(a) it has sent R x a requests.
  const R = 40;
  const D = 1000;
  const r0 = (R * 100) / D;
  const sentBy = (ms: number): number => (ms <= D ? (r0 * ms) / 1000 + ((R - r0) * ms * ms) / (2 * D * 1000) : ((r0 + R) * D) / 2000 + (R * (ms - D)) / 1000);
  for (const a of [0, 10, 100, 300, 549, 550, 551, 900, 2000]) {
    const t = rampedTime(a, R, D);
    assert.ok(Math.abs(sentBy(t) - (R * a) / 1000) < 1e-9, `at ${a} ms`);
    assert.ok(t >= a, 'a ramp only delays');
  }
  assert.equal(rampedTime(700, R, 0), 700, 'no ramp');

  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: 'm' });
  t.after(() => fleet.close());
  const r = await runBench({ url: fleet.workers[0]!.url, model: 'm', streaming: true, requestRate: R, requestRateMode: 'constant', requestCount: 40, inputTokensMean: 8, outputTokensMean: 4, requestRateRampMs: D });
  const starts = r.records.filter((x) => x.phase === 'profiling').map((x) => x.startMs).sort((a, b) => a - b);
  assert.equal(starts.length, 40);
  // At the full rate 20 requests start in the first half second; the ramp has sent about 6.5 by then.
  assert.ok(starts.filter((s) => s < starts[0]! + 500).length <= 8, 'the rate starts low');
});

test('the warm-up runs at its own load (--warmup-concurrency) and the profiling phase at its own', async (t) => {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: 'm' });
  t.after(() => fleet.close());
  const r = await runBench({ url: fleet.workers[0]!.url, model: 'm', streaming: true, concurrency: 1, requestCount: 4, warmupRequestCount: 8, warmupConcurrency: 4, inputTokensMean: 8, outputTokensMean: 8 });
  assert.equal(peakInflight(r.records.filter((x) => x.phase === 'warmup')), 4);
  assert.equal(peakInflight(r.records.filter((x) => x.phase === 'profiling')), 1);
  assert.equal(r.summary.metrics['request_count']!.avg, 4);
});
