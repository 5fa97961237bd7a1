import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TurnClock } from './turn-clock.js';

test('a turn clock reads its clock once per event-loop turn: stamps within a turn are equal, the next turn reads again', async () => {
  let reads = 0;
  const clock = new TurnClock({ now: () => ++reads * 10, setTimer: () => ({ cancel: () => undefined }) });
  assert.equal(clock.now(), 10);
  assert.equal(clock.now(), 10);
  assert.equal(reads, 1);
  await new Promise((r) => setImmediate(r));
  assert.equal(clock.now(), 20);
  assert.equal(clock.now(), 20);
  assert.equal(reads, 2);
});
