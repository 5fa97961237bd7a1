import { getEventListeners } from 'node:events';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PrefillGate } from './prefill-gate.js';

test('prefill gate: N slots, the next waits for a release, an abort leaves the queue', async () => {
  const gate = new PrefillGate(2);
  const ctl = new AbortController();
  assert.equal(await gate.acquire(ctl.signal), true);
  assert.equal(await gate.acquire(ctl.signal), true);
  let third = false;
  const waiting = gate.acquire(ctl.signal).then((v) => (third = v));
  const other = new AbortController();
  const aborted = gate.acquire(other.signal);
  await Promise.resolve();
  assert.equal(third, false, 'both slots are held');
  other.abort();
  assert.equal(await aborted, false, 'an aborted wait holds nothing');
  gate.release();
  await waiting;
  assert.equal(third, true);
  assert.equal(gate.maxInUse, 2);
});

test('prefill gate ramp: one slot at first, the target once the ramp is over', async () => {
  const gate = new PrefillGate(3, 30);
  const ctl = new AbortController();
  // The ramp's timers are unref'd (they must not hold a run open): keep this test's loop alive.
  const keepAlive = setTimeout(() => {}, 10_000);
  await gate.acquire(ctl.signal);
  let second = false;
  const p = gate.acquire(ctl.signal).then(() => (second = true));
  await Promise.resolve();
  assert.equal(second, false, 'the ramp starts at 1');
  await p;
  await gate.acquire(ctl.signal);
  assert.equal(gate.maxInUse, 3);
  gate.close();
  clearTimeout(keepAlive);
});

test('prefill gate: a thousand waits on the run\'s one signal add one abort listener to it, and its abort turns every one away', async () => {
  const gate = new PrefillGate(1);
  const ctl = new AbortController();
  assert.equal(await gate.acquire(ctl.signal), true);
  const waits = Array.from({ length: 1000 }, () => gate.acquire(ctl.signal));
  assert.equal(getEventListeners(ctl.signal, 'abort').length, 1, 'not one per waiting request (Node warns past 10)');
  ctl.abort();
  assert.deepEqual(new Set(await Promise.all(waits)), new Set([false]));
  gate.release();
  assert.equal(gate.maxInUse, 1, 'an aborted wait never took a slot');
});
