import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRng, type Rng } from '../core/index.js';
import { Dispatcher, createPolicy, type PolicyName, type RouteRequest, type RoutingPolicy, type WorkerPool, type WorkerView } from './index.js';

const M = 'm';

function fleet(name: PolicyName, cap: number, maxQueue = 100, ids = ['a', 'b', 'c']): Dispatcher {
  const d = new Dispatcher({ policy: createPolicy(name), rng: createRng(1), maxInflightPerWorker: cap, maxQueue });
  for (const id of ids) d.addWorker(id, { models: [M] });
  return d;
}

test('dispatcher: cap, FIFO queue, rejection when full, and release that hands room to the oldest waiter', () => {
  const d = fleet('least-loaded', 2, 2);
  const assigned: string[] = [];
  const results = Array.from({ length: 9 }, (_, i) => d.submit({ model: M, promptTokens: i }, (w) => assigned.push(`${i}@${w.id}`)));
  assert.deepEqual(results, ['assigned', 'assigned', 'assigned', 'assigned', 'assigned', 'assigned', 'queued', 'queued', 'rejected']);
  assert.equal(d.queueLength, 2);
  for (const id of ['a', 'b', 'c']) assert.equal(d.inflight(id), 2);
  d.release('b');
  assert.equal(assigned.at(-1), '6@b');
  assert.equal(d.inflight('b'), 2);
  d.release('a');
  assert.equal(assigned.at(-1), '7@a');
  assert.equal(d.queueLength, 0);
  assert.equal(d.totalInflight, 6);
});

test('dispatcher: release is exactly once — a second release of an idle worker changes nothing', () => {
  const d = fleet('p2c', 4);
  let got: WorkerView | undefined;
  d.submit({ model: M, promptTokens: 1 }, (w) => (got = w));
  assert.equal(got?.inflight, 1);
  assert.equal(d.release(got!.id), true);
  assert.equal(d.release(got!.id), false);
  assert.equal(d.totalInflight, 0);
});

test('dispatcher: a stalled worker never holds more than its cap, whatever the policy', () => {
  for (const name of ['round-robin', 'random', 'least-loaded', 'p2c', 'adaptive'] as const) {
    const d = fleet(name, 8, 10_000, ['a', 'b', 'c', 'd']);
    const live: string[] = [];
    for (let i = 0; i < 2000; i++) {
      d.submit({ model: M, promptTokens: 10 }, (w) => live.push(w.id));
      // every worker but 'd' finishes its oldest request; 'd' is stalled and never releases
      const j = live.findIndex((id) => id !== 'd');
      if (j >= 0 && i % 2 === 1) d.release(live.splice(j, 1)[0]!);
      assert.ok(d.inflight('d') <= 8, `${name}: stalled worker holds ${d.inflight('d')}`);
    }
    assert.equal(d.inflight('d'), 8);
  }
});

test('dispatcher: cancel removes a queued request; exclusions are honoured from the queue too', () => {
  const d = fleet('least-loaded', 1, 10, ['a', 'b']);
  const log: string[] = [];
  d.submit({ model: M, promptTokens: 1 }, (w) => log.push(`1@${w.id}`));
  d.submit({ model: M, promptTokens: 1 }, (w) => log.push(`2@${w.id}`));
  const r3 = { model: M, promptTokens: 1 };
  const r4 = { model: M, promptTokens: 1 };
  assert.equal(d.submit(r3, (w) => log.push(`3@${w.id}`)), 'queued');
  assert.equal(d.submit(r4, (w) => log.push(`4@${w.id}`), { exclude: new Set(['a']) }), 'queued');
  assert.equal(d.cancel(r3), true);
  assert.equal(d.cancel(r3), false);
  d.release('a'); // r4 may not go to a
  assert.equal(log.length, 2);
  assert.equal(d.inflight('a'), 0);
  d.release('b');
  assert.equal(log.at(-1), '4@b');
});

test('dispatcher: an unhealthy worker gets nothing; becoming healthy drains the queue', () => {
  const d = fleet('p2c', 1, 10, ['a', 'b']);
  d.setHealthy('a', false);
  d.setHealthy('b', false);
  assert.equal(d.canServe(M), false);
  const log: string[] = [];
  assert.equal(d.submit({ model: M, promptTokens: 1 }, (w) => log.push(w.id)), 'queued');
  d.setHealthy('b', true);
  assert.deepEqual(log, ['b']);
});

test('dispatcher: requests go only to workers serving their model; models() lists them', () => {
  const d = new Dispatcher({ policy: createPolicy('round-robin'), rng: createRng(3) });
  d.addWorker('a', { models: ['x'] });
  d.addWorker('b', { models: ['y', 'z'] });
  const log: string[] = [];
  for (let i = 0; i < 10; i++) d.submit({ model: 'y', promptTokens: 1 }, (w) => log.push(w.id));
  assert.deepEqual(new Set(log), new Set(['b']));
  assert.deepEqual([...d.models()].sort(), ['x', 'y', 'z']);
  assert.equal(d.canServe('q'), false);
});

test('dispatcher: leastLoadedServer names the routable worker serving a model with the fewest in flight, never an excluded one', () => {
  const d = fleet('least-loaded', 10, 10, ['a', 'b', 'c']);
  d.addWorker('x', { models: ['other'] });
  for (const id of ['a', 'a', 'b']) d.submit({ model: M, promptTokens: 1 }, () => {}, { exclude: new Set(['a', 'b', 'c'].filter((w) => w !== id)) });
  assert.deepEqual([d.inflight('a'), d.inflight('b'), d.inflight('c')], [2, 1, 0]);
  assert.equal(d.leastLoadedServer(M), 'c');
  assert.equal(d.leastLoadedServer(M, new Set(['c'])), 'b');
  d.setHealthy('b', false);
  assert.equal(d.leastLoadedServer(M, new Set(['c'])), 'a');
  assert.equal(d.leastLoadedServer(M, new Set(['a', 'c'])), undefined);
  assert.equal(d.leastLoadedServer('other'), 'x');
});

test('dispatcher: auto deadlines follow fleet latency with floors; fixed and off settings', () => {
  const d = new Dispatcher({ policy: createPolicy('adaptive'), rng: createRng(1), ttftDeadlineFloorMs: 100, stallDeadlineFloorMs: 50 });
  d.addWorker('a');
  d.addWorker('b');
  assert.equal(d.ttftDeadlineMs(100), 10_000); // no data yet
  d.submit({ model: 'x', promptTokens: 100 }, () => {});
  d.recordTtft('a', 200);
  d.recordTtft('b', 200);
  d.recordItl('a', 10);
  d.recordItl('b', 10);
  assert.equal(d.ttftDeadlineMs(100), 600);
  assert.equal(d.ttftDeadlineMs(400), 2400); // 4x the usual prompt
  assert.equal(d.stallDeadlineMs(), 200);
  d.recordTtft('a', 1);
  d.recordTtft('b', 1);
  assert.ok(d.ttftDeadlineMs(1) >= 100);
  // The bounds a deadline never goes below (the simulator checks nothing younger): the floors here.
  assert.equal(d.minDeadlineMs('ttft'), 100);
  assert.equal(d.minDeadlineMs('stall'), 50);
  assert.ok(d.ttftDeadlineMs(1) >= d.minDeadlineMs('ttft') && d.stallDeadlineMs() >= d.minDeadlineMs('stall'));
  const fixed = new Dispatcher({ policy: createPolicy('p2c'), rng: createRng(1), ttftDeadline: 800, stallDeadline: 'off' });
  assert.equal(fixed.ttftDeadlineMs(5), 800);
  assert.equal(fixed.stallDeadlineMs(), Number.POSITIVE_INFINITY);
  assert.equal(fixed.minDeadlineMs('ttft'), 800);
  assert.equal(fixed.minDeadlineMs('stall'), Number.POSITIVE_INFINITY);
});

test('dispatcher: the re-send budget caps the share of re-sent requests', () => {
  const d = new Dispatcher({ policy: createPolicy('p2c'), rng: createRng(1), maxResendShare: 0.1, resendBurst: 5 });
  d.addWorker('a');
  let resent = 0;
  for (let i = 0; i < 1000; i++) {
    d.submit({ model: 'x', promptTokens: 1 }, (w) => d.release(w.id));
    if (d.tryResend()) resent++;
  }
  assert.ok(resent <= 0.1 * 1000 + 5, `resent ${resent}`);
  assert.ok(resent >= 0.1 * 1000 - 1, `resent ${resent}`);
});

test('dispatcher: streams leave a worker stalled as a whole outside the re-send budget; a worker still sending tokens spends it', () => {
  let now = 0;
  const d = new Dispatcher({ policy: createPolicy('p2c'), rng: createRng(1), now: () => now, stallDeadline: 1000, resendBurst: 2, maxResendShare: 0 });
  d.addWorker('a');
  d.addWorker('b');
  for (let i = 0; i < 8; i++) d.submit({ model: 'x', promptTokens: 1 }, () => {});
  now = 500;
  d.progress('b', now);
  now = 1200; // a: silent since it became busy at 0; b: a token 700 ms ago
  assert.equal(d.stalledWhole('a'), true);
  assert.equal(d.stalledWhole('b'), false);
  for (let i = 0; i < 5; i++) assert.equal(d.tryResend('a'), true, 'every stream of the stalled worker moves');
  assert.equal(d.tryResend('b'), true);
  assert.equal(d.tryResend('b'), true);
  assert.equal(d.tryResend('b'), false, 'the budget of 2 is spent');
  assert.equal(d.tryResend(), false);
  now = 3000; // no token from any worker for 1 s: the router, not a worker, is likely stalled
  assert.equal(d.stalledWhole('a'), false);
});

test('dispatcher: silence is counted from when an idle worker became busy, not from its last token long ago', () => {
  let now = 0;
  const d = new Dispatcher({ policy: createPolicy('adaptive', { now: () => now }), rng: createRng(2) });
  d.addWorker('a');
  d.addWorker('b');
  d.progress('a', 0);
  d.progress('b', 0);
  now = 5000; // both idle for 5 s, then work arrives
  let first: WorkerView | undefined;
  d.submit({ model: 'x', promptTokens: 1 }, (w) => (first = w));
  assert.equal(first?.lastProgressMs, 5000);
  const picks = new Set<string>();
  for (let i = 0; i < 20; i++) d.submit({ model: 'x', promptTokens: 1 }, (w) => picks.add(w.id));
  assert.deepEqual([...picks].sort(), ['a', 'b'], 'the newly busy worker is not shunned as stalled');
});

test('dispatcher: a half-open worker holds at most one request until it produces a token or completes one', () => {
  let now = 0;
  const d = new Dispatcher({ policy: createPolicy('adaptive', { now: () => now }), rng: createRng(4), maxInflightPerWorker: 'auto' });
  for (const id of ['a', 'b', 'c', 'd']) d.addWorker(id, { models: [M] });
  d.progress('d', 0);
  now = 1000;
  d.halfOpen('d'); // e.g. it missed a deadline and its streams were moved away: empty and suspected
  const got: string[] = [];
  for (let i = 0; i < 200; i++) d.submit({ model: M, promptTokens: 1 }, (w) => got.push(w.id));
  assert.equal(got.length, 200, 'nothing waits: the others take the load');
  assert.equal(d.inflight('d'), 1, 'one probe request, not a burst');
  assert.equal(d.isHalfOpen('d'), true);
  d.progress('d', 900); // a token stamped before it was suspected does not count
  assert.equal(d.isHalfOpen('d'), true);
  now = 1200;
  d.progress('d', 1200);
  assert.equal(d.isHalfOpen('d'), false, 'a new token closes the circuit');
  for (let i = 0; i < 200; i++) d.submit({ model: M, promptTokens: 1 }, (w) => got.push(w.id));
  assert.ok(d.inflight('d') > 20, `full share again: ${d.inflight('d')}`);
  d.halfOpen('a');
  d.succeeded('a');
  assert.equal(d.isHalfOpen('a'), false, 'a completed request closes it too');
});

test('dispatcher: the auto cap follows the fair share, so one worker out does not starve the fleet', () => {
  const d = new Dispatcher({ policy: createPolicy('p2c'), rng: createRng(5), maxInflightPerWorker: 'auto', capFactor: 1.25, capFloor: 8 });
  const ids = ['a', 'b', 'c', 'd'];
  for (const id of ids) d.addWorker(id, { models: [M] });
  assert.equal(d.capacity, 8, 'the floor when idle');
  const results = new Map<string, number>();
  for (let i = 0; i < 400; i++) {
    const r = d.submit({ model: M, promptTokens: 1 }, () => {});
    results.set(r, (results.get(r) ?? 0) + 1);
  }
  assert.deepEqual([...results], [['assigned', 400]]);
  assert.ok(Math.max(...ids.map((id) => d.inflight(id))) <= 125, 'no worker above 1.25x its share');
  d.setHealthy('d', false); // out, holding its requests
  for (let i = 0; i < 100; i++) assert.equal(d.submit({ model: M, promptTokens: 1 }, () => {}), 'assigned');
  assert.equal(d.queueLength, 0);
  assert.equal(d.capacity, Math.ceil((1.25 * 500) / 3));
});

test('dispatcher: a missed first token counts against a silent worker; a busy one takes no more than it runs at once', () => {
  let now = 0;
  const d = new Dispatcher({ policy: createPolicy('p2c'), rng: createRng(5), maxInflightPerWorker: 'auto', now: () => now, slotsMemoryMs: 60_000 });
  for (const id of ['a', 'b']) d.addWorker(id, { models: [M] });
  assert.equal(d.missedFirstToken('a', 0, 21), true, 'no token from it since the request was sent: a failure');
  assert.equal(d.slots('a'), null);
  now = 10;
  d.progress('a', 10);
  d.progress('b', 10);
  // the 21st request sent to each waited in its queue while it streamed to others: each runs 20 at once
  assert.equal(d.missedFirstToken('a', 5, 21), false, 'queueing, not failing');
  d.missedFirstToken('b', 5, 21);
  d.missedFirstToken('a', 5, 25);
  assert.deepEqual([d.slots('a'), d.slots('b')], [20, 20], 'a later place in the queue says nothing new');
  const results = Array.from({ length: 50 }, () => d.submit({ model: M, promptTokens: 1 }, () => {}));
  assert.equal(results.filter((r) => r === 'assigned').length, 40);
  assert.deepEqual([d.inflight('a'), d.inflight('b'), d.queueLength], [20, 20, 10], 'held at their slots, the rest wait in the router');
  d.release('b');
  assert.deepEqual([d.inflight('b'), d.queueLength], [20, 9], 'a freed slot takes the oldest waiter');
  // forgotten after slotsMemoryMs (learned again if still true): the waiters go out again
  now = 60_011;
  assert.equal(d.slots('a'), null);
  d.release('a');
  assert.equal(d.queueLength, 0);
  // a fixed cap is the user's word: nothing is learned under it
  const fixed = fleet('p2c', 50, 100, ['a']);
  fixed.progress('a', 10);
  assert.equal(fixed.missedFirstToken('a', 5, 21), false);
  assert.equal(fixed.slots('a'), null);
});

test('dispatcher: a pick samples a few workers, it does not visit the fleet', () => {
  const inner = createPolicy('adaptive');
  let visits = 0;
  const counting = {
    name: inner.name,
    pick: inner.pick.bind(inner),
    pickFrom(pool: WorkerPool, req: RouteRequest, rng: Rng) {
      const spy: WorkerPool = {
        size: pool.size,
        at: (i) => pool.at(i),
        eligible: (i) => (visits++, pool.eligible(i)),
        fleetLatency: () => pool.fleetLatency(),
        indexOf: (id) => pool.indexOf(id),
        meanInflight: () => pool.meanInflight(),
      };
      return inner.pickFrom(spy, req, rng);
    },
  } satisfies RoutingPolicy;
  const d = new Dispatcher({ policy: counting, rng: createRng(6), maxInflightPerWorker: 'auto' });
  for (let i = 0; i < 1024; i++) d.addWorker(`w${i}`, { models: [M] });
  for (let i = 0; i < 5000; i++) d.submit({ model: M, promptTokens: 1 }, () => {});
  assert.ok(visits / 5000 < 3, `${(visits / 5000).toFixed(2)} workers looked at per pick`);
  assert.equal(d.totalInflight, 5000);
});
