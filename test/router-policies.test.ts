// The policies live: 4 fleet workers, the same seeded closed-loop bench through each policy (one
// fleet per policy, run side by side), one worker slow by 10x or stalled repeatedly. Asserted: what
// each policy does with the sick worker (its share, who holds the most in flight, the streams
// rescued) and that nothing is lost; which policy's p99 is lowest is a comparison of times, printed
// by perf/policies.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseFault } from '../src/engine/index.js';
import type { PolicyName } from '../src/routing/index.js';
import { POLICIES, runPolicy, table, type Outcome } from './policy-run.js';

function checkClean(rows: Outcome[]): void {
  for (const r of rows) {
    assert.deepEqual(r.bad, [], `${r.policy}: every stream complete, none lost or duplicated`);
    assert.deepEqual(r.inflightAfter, [0, 0, 0, 0], `${r.policy}: in-flight gauges back to 0`);
    assert.equal(r.queueAfter, '0', `${r.policy}: queue empty`);
  }
}

test('one worker slow by 10x: round-robin keeps feeding it and it holds the most in flight; every stream completes under every policy', async (t) => {
  const rows = await Promise.all(POLICIES.map((p) => runPolicy(p, [parseFault('worker=0,kind=slow,at=0s,for=10m,factor=10')], 64)));
  t.diagnostic(`\n${table(rows)}`);
  checkClean(rows);
  const by = Object.fromEntries(rows.map((r) => [r.policy, r])) as Record<PolicyName, Outcome>;
  assert.ok(by['round-robin'].slowShare >= 0.2, 'round-robin keeps sending the slow worker its share');
  assert.ok(by['round-robin'].slowPeakIsHighest, 'round-robin: the slow worker holds the most in flight');
});

test('one worker stalled repeatedly with requests waiting: adaptive rescues streams from it, the others (no deadlines by default) none, no stream lost or duplicated', async (t) => {
  const faults = [parseFault('worker=0,kind=stall,at=1500ms,for=2500ms'), parseFault('worker=0,kind=stall,at=5500ms,for=2500ms')];
  // 24 streams over 4 workers that run 4 each: about two requests wait in every worker's queue
  const rows = await Promise.all(POLICIES.map((p) => runPolicy(p, faults, 160, 24, 4)));
  t.diagnostic(`\n${table(rows)}`);
  checkClean(rows);
  const by = Object.fromEntries(rows.map((r) => [r.policy, r])) as Record<PolicyName, Outcome>;
  assert.ok(by.adaptive.rescued > 0, 'adaptive re-dispatched or migrated streams off the stalled worker');
  // the other policies run without deadlines by default: their streams wait the stall out
  for (const p of ['round-robin', 'least-loaded', 'p2c'] as const) assert.equal(by[p].rescued, 0, `${p} rescues nothing`);
});
