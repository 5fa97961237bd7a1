import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createRng } from '../core/index.js';
import { Dispatcher, FlowQueue, createPolicy, PRIORITIES, type FlowTicket, type Priority, type RouteRequest } from './index.js';

/** Dispatches `n` requests one at a time at `nowMs`, returning their values in order. */
function take<T>(q: FlowQueue<T>, n: number, nowMs = 0): T[] {
  const out: T[] = [];
  for (let i = 0; i < n; i++) {
    const v = q.ordered(nowMs).next().value;
    if (v === undefined) break;
    q.remove(v, nowMs);
    out.push(v);
  }
  return out;
}

function fill(q: FlowQueue<string>, tenant: string, n: number, priority: Priority = 'standard', nowMs = 0): void {
  for (let i = 0; i < n; i++) assert.equal(q.push(`${tenant}${i}`, { tenant, priority }, nowMs).outcome, 'queued');
}

const count = (xs: string[], prefix: string): number => xs.filter((x) => x.startsWith(prefix)).length;

test('flow queue: strict priority between bands, whatever the arrival order', () => {
  const q = new FlowQueue<string>();
  q.push('s1', { tenant: 'a', priority: 'sheddable' }, 0);
  q.push('n1', { tenant: 'a', priority: 'standard' }, 0);
  q.push('c1', { tenant: 'b', priority: 'critical' }, 0);
  q.push('n2', { tenant: 'b', priority: 'standard' }, 0);
  q.push('c2', { tenant: 'a', priority: 'critical' }, 0);
  assert.deepEqual(take(q, 5), ['c1', 'c2', 'n1', 'n2', 's1']);
  assert.equal(q.length, 0);
  assert.deepEqual(q.stats(), []);
});

test('flow queue: dispatch shares follow the weights while both tenants wait', () => {
  // a table: weights, the first 40 dispatches, the expected count of a's
  const cases: { weights: Record<string, number>; a: number }[] = [
    { weights: {}, a: 20 },
    { weights: { a: 3, b: 1 }, a: 30 },
    { weights: { a: 1, b: 4 }, a: 8 },
  ];
  for (const c of cases) {
    const q = new FlowQueue<string>({ weights: c.weights });
    fill(q, 'a', 100);
    fill(q, 'b', 100);
    const got = take(q, 40);
    assert.ok(Math.abs(count(got, 'a') - c.a) <= 1, `${JSON.stringify(c.weights)}: ${count(got, 'a')} a's`);
  }
});

test('flow queue: an idle tenant lends its share, and gets no credit for its idle time when it returns', () => {
  const q = new FlowQueue<string>({ weights: { a: 1, b: 1 } });
  fill(q, 'a', 200);
  assert.equal(count(take(q, 50), 'a'), 50);
  fill(q, 'b', 100);
  const got = take(q, 40);
  // from then on one to one, not a burst of b's catching up on the 50 it missed
  assert.ok(Math.abs(count(got, 'b') - 20) <= 1, `${count(got, 'b')} b's`);
});

test('flow queue: a waiting request ages up its band, so a light tenant never starves behind a heavy one', () => {
  // a weight-1000 tenant sends 10 requests per dispatch (one every 10 ms); when does light's second one go?
  const stepOf = (agingMs: number): number => {
    const q = new FlowQueue<string>({ weights: { heavy: 1000, light: 1 }, agingMs, maxQueue: 100_000 });
    q.push('light1', { tenant: 'light', priority: 'standard' }, 0);
    q.push('light2', { tenant: 'light', priority: 'standard' }, 0);
    for (let step = 0; step < 3000; step++) {
      for (let i = 0; i < 10; i++) q.push(`heavy${step}.${i}`, { tenant: 'heavy', priority: 'standard' }, step * 10);
      if (take(q, 1, step * 10)[0] === 'light2') return step;
    }
    return Number.POSITIVE_INFINITY;
  };
  const aged = stepOf(100);
  const unaged = stepOf(1e12);
  assert.ok(aged < 300, `aged: step ${aged}`);
  assert.ok(unaged > 3 * aged, `aged: step ${aged}, without aging: step ${unaged}`);
});

test('flow queue: bounds: a full tenant or queue sheds sheddable work first and refuses, never sheds, the rest', () => {
  const q = new FlowQueue<string>({ maxQueue: 6, maxPerTenant: 4 });
  fill(q, 'a', 3, 'standard');
  q.push('as0', { tenant: 'a', priority: 'sheddable' }, 0); // a is at its bound of 4
  assert.deepEqual(q.push('x', { tenant: 'a', priority: 'sheddable' }, 0), { outcome: 'shed', reason: 'tenant_full' });
  assert.deepEqual(q.push('y', { tenant: 'a', priority: 'critical' }, 0), { outcome: 'queued', evicted: { value: 'as0', reason: 'tenant_full' } });
  assert.deepEqual(q.push('z', { tenant: 'a', priority: 'critical' }, 0), { outcome: 'rejected', reason: 'tenant_full' });
  fill(q, 'b', 1, 'sheddable');
  fill(q, 'c', 1, 'standard'); // the queue is at its bound of 6
  assert.deepEqual(q.push('w', { tenant: 'd', priority: 'standard' }, 0), { outcome: 'queued', evicted: { value: 'b0', reason: 'queue_full' } });
  assert.deepEqual(q.push('v', { tenant: 'd', priority: 'sheddable' }, 0), { outcome: 'shed', reason: 'queue_full' });
  assert.deepEqual(q.push('u', { tenant: 'e', priority: 'critical' }, 0), { outcome: 'rejected', reason: 'queue_full' });
  assert.equal(q.length, 6);
});

test('flow queue: a sheddable request is shed when its wait passes its deadline, or would on arrival', () => {
  const q = new FlowQueue<string>();
  q.push('s', { tenant: 'a', priority: 'sheddable', maxWaitMs: 100 }, 0);
  q.push('n', { tenant: 'a', priority: 'standard', maxWaitMs: 100 }, 0);
  assert.deepEqual(q.expire(100), []);
  assert.deepEqual(q.expire(101), ['s']);
  assert.equal(q.length, 1);
  // dispatches every 10 ms while 20 standard requests wait: a sheddable one would wait about 200 ms
  fill(q, 'b', 30);
  for (let t = 10; t <= 100; t += 10) take(q, 1, t);
  assert.ok(q.predictedWaitMs('c', 'sheddable') >= 150, String(q.predictedWaitMs('c', 'sheddable')));
  assert.deepEqual(q.push('late', { tenant: 'c', priority: 'sheddable', maxWaitMs: 100 }, 100), { outcome: 'shed', reason: 'deadline' });
  assert.equal(q.push('soon', { tenant: 'c', priority: 'critical', maxWaitMs: 100 }, 100).outcome, 'queued');
});

test('dispatcher with flows: a critical request waits behind no standard one, and tenants share the freed slots by weight', () => {
  const d = new Dispatcher({ policy: createPolicy('least-loaded'), rng: createRng(1), maxInflightPerWorker: 2, flows: { weights: { a: 3, b: 1 } } });
  d.addWorker('w1', { models: ['m'] });
  const order: string[] = [];
  const submit = (id: string, flow: FlowTicket) => d.submit({ model: 'm', promptTokens: 1 }, () => order.push(id), { flow });
  assert.equal(submit('first', { tenant: 'a', priority: 'standard' }), 'assigned');
  assert.equal(submit('second', { tenant: 'a', priority: 'standard' }), 'assigned');
  for (let i = 0; i < 20; i++) {
    submit(`a${i}`, { tenant: 'a', priority: 'standard' });
    submit(`b${i}`, { tenant: 'b', priority: 'standard' });
  }
  assert.equal(submit('crit', { tenant: 'b', priority: 'critical' }), 'queued');
  d.release('w1');
  assert.equal(order.at(-1), 'crit');
  for (let i = 0; i < 16; i++) d.release('w1');
  const shares = order.slice(3);
  assert.equal(count(shares, 'a'), 12);
  assert.equal(count(shares, 'b'), 4);
  assert.deepEqual(d.flowStats().map((s) => [s.tenant, s.queued]), [['a', 8], ['b', 16]]);
});

test('dispatcher with flows: every request is dispatched, shed, rejected or cancelled exactly once; counts return to 0', () => {
  const op = fc.oneof(
    fc.record({ kind: fc.constant('submit' as const), tenant: fc.constantFrom('a', 'b', 'c'), priority: fc.constantFrom(...PRIORITIES), maxWaitMs: fc.constantFrom(5, 50, Number.POSITIVE_INFINITY) }),
    fc.record({ kind: fc.constant('release' as const), worker: fc.nat(2) }),
    fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }),
    fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 40 }) }),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 200 }), fc.integer({ min: 1, max: 3 }), (ops, cap) => {
      let nowMs = 0;
      const d = new Dispatcher({
        policy: createPolicy('p2c'), rng: createRng(3), maxInflightPerWorker: cap, now: () => nowMs,
        flows: { weights: { a: 2 }, maxQueue: 8, maxPerTenant: 5, agingMs: 50 },
      });
      const workers = ['w0', 'w1', 'w2'];
      for (const id of workers) d.addWorker(id);
      const ends = new Map<RouteRequest, string[]>();
      const prio = new Map<RouteRequest, Priority>();
      const running = new Map<string, { req: RouteRequest; flow: FlowTicket }[]>(workers.map((w) => [w, []]));
      const end = (req: RouteRequest, how: string) => ends.get(req)!.push(how);
      for (const o of ops) {
        if (o.kind === 'submit') {
          const req: RouteRequest = { model: 'm', promptTokens: 1 };
          ends.set(req, []);
          const r = d.submit(req, (w) => {
            end(req, 'dispatched');
            running.get(w.id)!.push({ req, flow: o });
            // a slot lent to a tenant below its share goes at most one over the cap
            assert.ok(w.inflight <= cap + 1, `${w.id} holds ${w.inflight} with a cap of ${cap}`);
          }, { flow: o, onShed: () => end(req, 'shed') });
          if (r === 'rejected') end(req, r);
          prio.set(req, o.priority);
        } else if (o.kind === 'release') {
          const w = workers[o.worker]!;
          const r = running.get(w)!.shift();
          if (r) assert.ok(d.release(w, r.flow));
        } else if (o.kind === 'cancel') {
          const waiting = [...ends].filter(([, e]) => e.length === 0).map(([r]) => r);
          const req = waiting[o.pick % Math.max(1, waiting.length)];
          if (req && d.cancel(req)) end(req, 'cancelled');
        } else {
          nowMs += o.ms;
          // the workers answer: they may be lent slots
          for (const w of workers) if (running.get(w)!.length > 0) {
            d.recordItl(w, 10);
            d.progress(w, nowMs);
          }
          d.shedExpired();
        }
      }
      for (const [req] of [...ends].filter(([, e]) => e.length === 0)) if (d.cancel(req)) end(req, 'cancelled');
      for (const w of workers) for (const r of running.get(w)!.splice(0)) d.release(w, r.flow);
      for (const [req, e] of ends) {
        assert.equal(e.length, 1, `request ended ${JSON.stringify(e)}`);
        if (e[0] === 'shed') assert.equal(prio.get(req), 'sheddable');
      }
      assert.equal(d.queueLength, 0);
      assert.equal(d.totalInflight, 0);
      assert.deepEqual(d.flowStats(), []);
      for (const tenant of ['a', 'b', 'c']) assert.equal(d.flowInflight(tenant), 0);
    }),
    { numRuns: 200, seed: 23 },
  );
});

test('dispatcher with flows: a tenant below its share is lent the next slot to free, at most one over the cap, never on a silent or half-open worker', () => {
  let nowMs = 0;
  const make = (flows: { lendSlots?: number } = {}, workers = ['w1'], seed = 1) => {
    const d = new Dispatcher({ policy: createPolicy('least-loaded'), rng: createRng(seed), maxInflightPerWorker: 2, now: () => nowMs, flows });
    for (const w of workers) d.addWorker(w, { models: ['m'] });
    const order: string[] = [];
    const submit = (id: string, tenant: string, priority: Priority = 'standard') => d.submit({ model: 'm', promptTokens: 1 }, (w, lent) => order.push(`${id}@${w.id}${lent ? ' lent' : ''}`), { flow: { tenant, priority } });
    // the noisy tenant fills every slot and queues 5 more; the workers answer
    for (let i = 0; i < 2 * workers.length + 5; i++) submit(`noisy${i}`, 'noisy');
    for (const w of workers) {
      d.recordItl(w, 20);
      d.progress(w, nowMs);
    }
    return { d, order, submit };
  };
  const noisy = { tenant: 'noisy', priority: 'standard' } as const;
  const good = { tenant: 'good', priority: 'standard' } as const;
  {
    const { d, submit, order } = make();
    // good holds nothing, less than its share (1 of 2 slots): it goes now, over the cap
    assert.equal(submit('good1', 'good'), 'assigned');
    assert.equal(d.inflight('w1'), 3);
    assert.equal(d.flowInflight('good'), 1);

    // it holds its share now: the next one waits its turn
    assert.equal(submit('good2', 'good'), 'queued');
    // the next slot to free was the one lent: the noisy tenant gets none until the worker is under its cap
    d.release('w1', noisy);
    assert.deepEqual(order.slice(-1), ['good1@w1 lent']);
    // good1 ends: good2 goes at once (its turn at the freed slot, or lent one again)
    d.release('w1', good);
    assert.ok(order.some((x) => x.startsWith('good2@w1')));
    assert.ok(d.inflight('w1') <= 3);
  }
  // with lending off, or on a half-open worker, good waits for a slot
  assert.equal(make({ lendSlots: 0 }).submit('good1', 'good'), 'queued');
  const halfOpen = make();
  halfOpen.d.halfOpen('w1');
  assert.equal(halfOpen.submit('good1', 'good'), 'queued');
  // w1 has sent nothing for 100 ms (5 token intervals) while w2 answers: the lent slot is w2's. Both hold
  // 2, so least-loaded would pick either at random: over 20 seeds, lending on w1 would show.
  for (let seed = 1; seed <= 20; seed++) {
    const { d, submit, order } = make({}, ['w1', 'w2'], seed);
    nowMs = 100;
    d.progress('w2', nowMs);
    assert.equal(submit('good1', 'good'), 'assigned');
    assert.deepEqual(order.slice(-1), ['good1@w2 lent'], `seed ${seed}`);
    nowMs = 0;
  }
  {
    // a critical request waiting: no standard request is lent a slot ahead of it
    const { submit } = make();
    assert.equal(submit('crit', 'noisy', 'critical'), 'queued');
    assert.equal(submit('good1', 'good'), 'queued');
  }
});

test('flow queue: age counts only first in line, so a tenant\'s deep backlog does not outrank a newcomer', () => {
  const q = new FlowQueue<string>({ agingMs: 1000 });
  fill(q, 'deep', 100, 'standard', 0);
  take(q, 50, 10_000); // 10 s later, half of it went
  q.push('new', { tenant: 'new', priority: 'standard' }, 10_000);
  assert.ok(take(q, 2, 10_000).includes('new'));
});
