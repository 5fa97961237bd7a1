import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRng } from '../core/index.js';
import { createPolicy } from './create-policy.js';
import { Dispatcher } from './dispatcher.js';
import { sloRefusal } from './slo-admission.js';

const NONE = new Set<string>();
const INF = Number.POSITIVE_INFINITY;

test('sloRefusal: a worker with room must be within both targets; one quick to a first token and another quick per token are not one that is both', () => {
  const d = new Dispatcher({ policy: createPolicy('least-loaded'), rng: createRng(1), maxInflightPerWorker: 1 });
  d.addWorker('quick-first');
  d.addWorker('quick-steps');
  d.recordTtft('quick-first', 50);
  d.recordItl('quick-first', 80);
  d.recordTtft('quick-steps', 900);
  d.recordItl('quick-steps', 10);
  assert.equal(sloRefusal(d, 'm', { ttftMs: 100, tpotMs: INF }, NONE), undefined);
  assert.equal(sloRefusal(d, 'm', { ttftMs: INF, tpotMs: 20 }, NONE), undefined);
  assert.match(sloRefusal(d, 'm', { ttftMs: 100, tpotMs: 20 }, NONE)!, /no worker with room is within both the 100 ms of x-slo-ttft-ms and the 20 ms of x-slo-tpot-ms/);
  assert.match(sloRefusal(d, 'm', { ttftMs: INF, tpotMs: 5 }, NONE)!, /~10 ms a token \(its decode step\), over the 5 ms of x-slo-tpot-ms/);
  // the only worker within it is excluded (tried before): refused
  assert.match(sloRefusal(d, 'm', { ttftMs: INF, tpotMs: 20 }, new Set(['quick-steps']))!, /~80 ms a token/);
  // both full (cap 1): no room, whatever the targets
  d.submit({ model: 'm', promptTokens: 1 }, () => {});
  d.submit({ model: 'm', promptTokens: 1 }, () => {});
  assert.match(sloRefusal(d, 'm', { ttftMs: INF, tpotMs: 1000 }, NONE)!, /no worker has room now, so none can meet the 1000 ms of x-slo-tpot-ms$/);
  // a request that gives no target is never refused for one, room or not
  assert.equal(sloRefusal(d, 'm', { ttftMs: INF, tpotMs: INF }, NONE), undefined);
});
