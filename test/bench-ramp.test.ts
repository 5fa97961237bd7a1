// `--concurrency-ramp-duration`: the closed loop's slots open one by one over the ramp, so the
// concurrency climbs from 1 to its target instead of starting at it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFleet } from '../src/fleet/index.js';
import { runBench } from '../src/bench/index.js';
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
