import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { reducedStall } from '../../test/sim-scenarios.js';
import type { PolicyName } from '../routing/index.js';
import { isMetricBlock } from '../stats/index.js';
import { runScenario } from './index.js';

/**
 * A hash of a trial's figures: every metric's average and percentiles, the re-send and token
 * counts, the per-worker in-flight series (not the wording of verdicts, which other changes may
 * reword).
 */
function fingerprint(policy: PolicyName, seed: number): string {
  const r = runScenario(reducedStall(), policy, seed, { keepChunks: false, recordMode: 'summary' });
  const metrics = Object.entries(r.summary.metrics).map(([tag, m]) => [tag, m.avg, isMetricBlock(m) ? [m.p50, m.p90, m.p99, m.max] : null]);
  const figures = [metrics, r.redispatched, r.migrated, r.rejected, r.generatedTokens, r.simulatedMs, r.perWorkerInflight];
  return createHash('sha256').update(JSON.stringify(figures)).digest('hex').slice(0, 16);
}

/**
 * Pinned results of the reduced stall. A change made for speed alone must leave them as they are;
 * a change meant to change what the simulator or the routing does updates them here, and says so
 * in its commit message.
 */
const PINNED: [PolicyName, number, string][] = [
  ['adaptive', 1, '6a61ce7b74944ee3'],
  ['p2c', 1, '93d59eebb9297807'],
];

test('same seed, same results: a trial fingerprint repeats and matches the pinned one', () => {
  for (const [policy, seed, want] of PINNED) {
    const a = fingerprint(policy, seed);
    assert.equal(fingerprint(policy, seed), a, `${policy} seed ${seed} repeats`);
    assert.equal(a, want, `${policy} seed ${seed}: results changed (update PINNED only if the change is meant to change them)`);
  }
});
