import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { reducedStall } from '../../test/sim-scenarios.js';
import type { PolicyName } from '../routing/index.js';
import { runScenario } from './index.js';

/** A hash of everything a trial reports (summary, gates, shape, counts, in-flight series). */
function fingerprint(policy: PolicyName, seed: number): string {
  const { records: _records, ...r } = runScenario(reducedStall(), policy, seed, { keepChunks: false, recordMode: 'summary' });
  return createHash('sha256').update(JSON.stringify(r)).digest('hex').slice(0, 16);
}

/**
 * Pinned results of the reduced stall. A change made for speed alone must leave them as they are;
 * a change meant to change what the simulator or the routing does updates them here, and says so
 * in its commit message.
 */
const PINNED: [PolicyName, number, string][] = [
  ['adaptive', 1, '5657dcf7af0db400'],
  ['p2c', 1, '5f2df04a733765f4'],
];

test('same seed, same results: a trial fingerprint repeats and matches the pinned one', () => {
  for (const [policy, seed, want] of PINNED) {
    const a = fingerprint(policy, seed);
    assert.equal(fingerprint(policy, seed), a, `${policy} seed ${seed} repeats`);
    assert.equal(a, want, `${policy} seed ${seed}: results changed (update PINNED only if the change is meant to change them)`);
  }
});
