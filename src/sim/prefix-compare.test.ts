import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PRESETS, comparePrefixSources, type PrefixCompareRow } from './index.js';

test('prefix-pressure: KV-event routing hits within 2% of the true caches at zero lag, the same with 3 replicas as with 1; the estimate falls behind', () => {
  // The preset, shortened (1500 requests after 256): still 64 prefixes of 125 blocks over 2048-block workers.
  const s = { ...PRESETS['prefix-pressure']!, requestCount: 1500, warmupRequestCount: 256 };
  const r = comparePrefixSources(s, { seed: 1 });
  const row = (source: string, replicas: number): PrefixCompareRow => r.rows.find((x) => x.source === source && x.replicas === replicas)!;
  for (const replicas of [1, 3]) {
    const events = row('events', replicas).prefixHitRate;
    const oracle = row('oracle', replicas).prefixHitRate;
    assert.ok(Math.abs(events - oracle) <= 0.02, `${replicas} replica(s): events ${events}, oracle ${oracle}`);
    assert.ok(row('estimate', replicas).prefixHitRate < events - 0.02, `${replicas} replica(s): estimate ${row('estimate', replicas).prefixHitRate} vs events ${events}`);
    assert.ok(row('events', replicas).ttftP50Ms < row('estimate', replicas).ttftP50Ms, 'fewer prefills: a lower TTFT p50');
  }
  assert.ok(Math.abs(row('events', 3).prefixHitRate - row('events', 1).prefixHitRate) <= 0.02, 'events: 3 replicas as 1');
});

test('KV events that arrive late cost hit rate, never correctness: every request still completes', () => {
  const s = { ...PRESETS['prefix-pressure']!, requestCount: 800, warmupRequestCount: 128 };
  const fast = comparePrefixSources(s, { seed: 2, replicas: [1], sources: ['events'] }).rows[0]!;
  const slow = comparePrefixSources(s, { seed: 2, replicas: [1], sources: ['events'], kvEventDelayMs: 2000 }).rows[0]!;
  assert.ok(slow.prefixHitRate <= fast.prefixHitRate + 0.01, `delay 2 s: ${slow.prefixHitRate} vs ${fast.prefixHitRate}`);
  assert.ok(Number.isFinite(slow.outputTokensPerS) && slow.outputTokensPerS > 0);
});

test('a stalled worker with a warm cache gets nothing for it: prefix on KV events keeps the stall scenario clean', async () => {
  const { reducedStall } = await import('../../test/sim-scenarios.js');
  const { runScenario } = await import('./index.js');
  const s = reducedStall();
  const estimate = runScenario(s, 'prefix', 1, { recordMode: 'summary' });
  for (const source of ['events', 'oracle'] as const) {
    const r = runScenario(s, 'prefix', 1, { prefixSource: source, recordMode: 'summary' });
    assert.equal(r.shape.shape, 'clean', `${source}: ${r.shape.shape}`);
    assert.ok(r.pass, `${source} passes the gates`);
    const p99 = (x: typeof r): number => (x.summary.metrics['time_to_first_token'] as { p99: number }).p99;
    assert.ok(p99(r) <= Math.max(1.1 * p99(estimate), p99(estimate) + 100), `${source} TTFT p99 ${p99(r)} vs estimate ${p99(estimate)}`);
  }
});
