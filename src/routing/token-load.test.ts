import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRng } from '../core/index.js';
import { createPolicy } from './create-policy.js';
import { Dispatcher } from './dispatcher.js';
import type { WorkerView } from './policy.js';

test('token-aware load: each worker\'s view counts the prompt tokens in flight on it, and releases bring it back to 0', () => {
  const d = new Dispatcher({ policy: createPolicy('least-loaded'), rng: createRng(1) });
  d.addWorker('a', { healthy: true });
  d.addWorker('b', { healthy: true });
  const on: string[] = [];
  const place = (promptTokens: number): void => {
    assert.equal(d.submit({ model: 'm', promptTokens }, (w: WorkerView) => on.push(w.id)), 'assigned');
  };
  place(30_000);
  place(100);
  place(50);
  const tokens = (id: string): number | undefined => d.views('m').find((v) => v.id === id)!.inflightPromptTokens;
  const [first, second] = [on[0]!, on[1]!];
  assert.notEqual(first, second);
  // least-loaded spread them by request count; the view shows the long prompt's weight.
  assert.equal((tokens(first) ?? 0) + (tokens(second) ?? 0), 30_150);
  assert.ok(Math.max(tokens('a')!, tokens('b')!) >= 30_000);
  assert.equal(d.inflightPromptTokens(on[0]!), tokens(on[0]!));
  // Released with its own count, exactly; without, its share (never below 0, 0 when idle).
  d.release(first, undefined, 30_000);
  assert.equal(tokens(first), on[2] === first ? 50 : 0);
  d.release(second);
  d.release(on[2]!);
  assert.equal(tokens('a'), 0);
  assert.equal(tokens('b'), 0);
});
