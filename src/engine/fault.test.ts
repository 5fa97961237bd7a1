import { test } from 'node:test';
import assert from 'node:assert/strict';
import { VirtualClock } from '../core/index.js';
import { parseFault, formatFault, type FaultSpec } from './fault.js';
import { burstyStalls } from './bursty.js';
import { FaultSchedule } from './fault-schedule.js';

test('parseFault accepts the documented grammar', () => {
  const table: [string, FaultSpec][] = [
    ['worker=2,kind=stall,at=20s,for=15s', { worker: 2, kind: 'stall', atMs: 20_000, forMs: 15_000 }],
    ['worker=0,kind=slow,at=1m,for=500ms,factor=4', { worker: 0, kind: 'slow', atMs: 60_000, forMs: 500, factor: 4 }],
    ['worker=1,kind=slow,for=2s', { worker: 1, kind: 'slow', atMs: 0, forMs: 2000, factor: 10 }],
    ['worker=3,kind=error,at=0s,for=1s,rate=0.5', { worker: 3, kind: 'error', atMs: 0, forMs: 1000, rate: 0.5 }],
    ['worker=3,kind=error,for=1s', { worker: 3, kind: 'error', atMs: 0, forMs: 1000, rate: 1 }],
    [' worker=4 , kind=reset , at=5s , for=1s ', { worker: 4, kind: 'reset', atMs: 5000, forMs: 1000 }],
    ['kind=refuse,worker=5,for=3s,at=2s', { worker: 5, kind: 'refuse', atMs: 2000, forMs: 3000 }],
    ['worker=6,kind=unhealthy,at=10s,for=10s', { worker: 6, kind: 'unhealthy', atMs: 10_000, forMs: 10_000 }],
  ];
  for (const [text, want] of table) {
    const got = parseFault(text);
    assert.deepEqual(got, want, text);
    assert.deepEqual(parseFault(formatFault(got)), got, `round trip of ${text}`);
  }
});

test('parseFault rejects bad text with CONFIG_INVALID naming the bad part', () => {
  const table: [string, RegExp][] = [
    ['', /missing worker/],
    ['worker=2,kind=stall,at=20s', /missing for/],
    ['kind=stall,for=1s', /missing worker/],
    ['worker=-1,kind=stall,for=1s', /worker=-1/],
    ['worker=x,kind=stall,for=1s', /worker=x/],
    ['worker=1,kind=explode,for=1s', /kind=explode/],
    ['worker=1,kind=stall,at=soon,for=1s', /at=soon/],
    ['worker=1,kind=stall,for=1s,factor=2', /factor= applies only to kind=slow/],
    ['worker=1,kind=slow,for=1s,factor=0.5', /factor=0.5/],
    ['worker=1,kind=error,for=1s,rate=2', /rate=2/],
    ['worker=1,kind=stall,for=1s,color=red', /unknown key "color"/],
    ['worker=1,worker=2,kind=stall,for=1s', /"worker" given twice/],
    ['worker=1,kind=stall,for', /"for" is not key=value/],
  ];
  for (const [text, msg] of table) {
    assert.throws(() => parseFault(text), (e: Error & { code?: string }) => e.code === 'CONFIG_INVALID' && msg.test(e.message), text);
  }
});

test('burstyStalls is seeded: quiet and active windows, one random stall per active window', () => {
  const opts = { seed: 7, workers: 8, durationMs: 600_000 };
  const a = burstyStalls(opts);
  assert.deepEqual(a, burstyStalls(opts));
  assert.notDeepEqual(a, burstyStalls({ ...opts, seed: 8 }));
  assert.ok(a.length >= 3, `got ${a.length} stalls`);
  for (let i = 0; i < a.length; i++) {
    const f = a[i]!;
    assert.equal(f.kind, 'stall');
    assert.ok(f.worker >= 0 && f.worker < 8);
    assert.ok(f.forMs >= 500, 'a stall lasts at least half a second');
    assert.ok(f.atMs < opts.durationMs);
    if (i > 0) assert.ok(f.atMs >= a[i - 1]!.atMs + a[i - 1]!.forMs, 'windows do not overlap');
  }
  assert.ok(new Set(a.map((f) => f.worker)).size > 1, 'different workers stall');
});

test('FaultSchedule opens and closes windows on the clock and applies engine faults', () => {
  const clock = new VirtualClock();
  const applied: { stalled?: boolean; slowFactor?: number }[] = [];
  const s = new FaultSchedule(
    clock,
    [parseFault('worker=1,kind=stall,at=1s,for=2s'), parseFault('worker=1,kind=error,at=2s,for=2s,rate=0.25'), parseFault('worker=0,kind=slow,at=0s,for=1s,factor=3')],
    100,
  );
  s.bindEngines([{ setFault: () => {} }, { setFault: (f) => applied.push(f) }]);
  const changes: number[] = [];
  s.onChange((w) => changes.push(w));
  assert.equal(s.activeFor(1, 1099).stalled, false);
  assert.equal(s.activeFor(1, 1100).stalled, true);
  assert.equal(s.activeFor(1, 3100).stalled, false, 'end is exclusive');
  assert.deepEqual(s.activeFor(1, 2500), { stalled: true, slowFactor: 1, errorRate: 0.25, reset: false, refuse: false, unhealthy: false });
  assert.equal(s.activeFor(0, 500).slowFactor, 3);
  clock.runUntil(1500);
  assert.equal(s.activeFor(1).stalled, true);
  assert.deepEqual(applied.at(-1), { stalled: true, slowFactor: 1 });
  clock.runUntil(5000);
  assert.deepEqual(applied.at(-1), { stalled: false, slowFactor: 1 });
  assert.deepEqual(s.activeFor(1), { stalled: false, slowFactor: 1, errorRate: 0, reset: false, refuse: false, unhealthy: false });
  assert.deepEqual(changes, [0, 1, 0, 1, 1, 1]); // at 1100 ms: stall opens (added first), slow closes
  s.add({ worker: 0, kind: 'unhealthy', atMs: 4000, forMs: 2000 }); // begun already: starts now
  clock.runUntil(5001);
  assert.equal(s.activeFor(0).unhealthy, true);
  s.close();
});
