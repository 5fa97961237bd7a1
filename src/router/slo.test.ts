import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sloTpotMsOf, sloTtftMsOf } from './slo.js';

test('the SLO headers: a positive number of ms, else none', () => {
  assert.equal(sloTpotMsOf({ 'x-slo-tpot-ms': '25' }), 25);
  assert.equal(sloTtftMsOf({ 'x-slo-ttft-ms': ['300', '400'] }), 300);
  for (const v of ['0', '-5', 'soon', '']) assert.equal(sloTpotMsOf({ 'x-slo-tpot-ms': v }), undefined, v);
  assert.equal(sloTtftMsOf({}), undefined);
});
