import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EjectionRule, freshEjectionRecord } from './index.js';

const FLEET = { size: 8, ejected: 0 };

test('ejection: three failures in a row eject; a success in between resets the streak', () => {
  const rule = new EjectionRule();
  const w = freshEjectionRecord();
  assert.equal(rule.failure(w, 0, FLEET), 'suspect');
  assert.equal(rule.failure(w, 1, FLEET), 'suspect');
  rule.success(w);
  assert.equal(rule.failure(w, 2, FLEET), 'suspect');
  assert.equal(rule.failure(w, 3, FLEET), 'suspect');
  assert.equal(rule.failure(w, 4, FLEET), 'ejected');
  assert.equal(w.ejectedUntilMs, 2004);
  assert.equal(rule.failure(w, 5, FLEET), 'already-ejected');
});

test('ejection: the backoff doubles per ejection up to the maximum', () => {
  const rule = new EjectionRule({ baseEjectMs: 1000, maxEjectMs: 5000 });
  const w = freshEjectionRecord();
  const lengths: number[] = [];
  let now = 0;
  for (let round = 0; round < 5; round++) {
    let v = rule.failure(w, now, FLEET);
    while (v !== 'ejected') v = rule.failure(w, now, FLEET);
    lengths.push(w.ejectedUntilMs - now);
    now = w.ejectedUntilMs;
    assert.equal(rule.readmit(w, now - 1), false, 'not before its time');
    assert.equal(rule.readmit(w, now), true);
  }
  assert.deepEqual(lengths, [1000, 2000, 4000, 5000, 5000]);
});

test('ejection: re-admitted on probation, one failure ejects again; a success ends probation', () => {
  const rule = new EjectionRule();
  const w = freshEjectionRecord();
  for (let i = 0; i < 3; i++) rule.failure(w, 0, FLEET);
  assert.equal(rule.readmit(w, 2000), true);
  assert.equal(rule.failure(w, 2100, FLEET), 'ejected', 'a failure on probation ejects at once');
  assert.equal(w.ejectedUntilMs, 2100 + 4000);
  assert.equal(rule.readmit(w, 6100), true);
  rule.success(w);
  assert.equal(rule.failure(w, 6200, FLEET), 'suspect', 'after a success it takes three failures again');
});

test('ejection: never more than half the fleet at once', () => {
  const rule = new EjectionRule();
  const fleet = Array.from({ length: 5 }, () => freshEjectionRecord());
  const verdicts = fleet.map((w) => {
    let v = 'suspect';
    for (let i = 0; i < 3; i++) v = rule.failure(w, 0, { size: fleet.length, ejected: fleet.filter((x) => x.ejected).length });
    return v;
  });
  assert.deepEqual(verdicts, ['ejected', 'ejected', 'suspect', 'suspect', 'suspect']);
});
