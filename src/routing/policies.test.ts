import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRng } from '../core/index.js';
import { AdaptivePolicy, createPolicy, fleetLatency, type PolicyName, type WorkerView } from './index.js';

const M = 'm';
const req = { model: M, promptTokens: 64 };

function w(id: string, over: Partial<WorkerView> = {}): WorkerView {
  return { id, inflight: 0, healthy: true, ttftMsEwma: 100, itlMsEwma: 10, model: M, lastProgressMs: Number.NEGATIVE_INFINITY, ...over };
}

function shares(name: PolicyName, fleet: WorkerView[], n = 4000, seed = 7, opts = {}): Map<string, number> {
  const p = createPolicy(name, opts);
  const rng = createRng(seed);
  const out = new Map<string, number>(fleet.map((x) => [x.id, 0]));
  for (let i = 0; i < n; i++) {
    const id = p.pick(fleet, req, rng)!.id;
    out.set(id, out.get(id)! + 1 / n);
  }
  return out;
}

test('round-robin: exact cyclic sequence from a random start, skipping unhealthy workers', () => {
  const fleet = [w('a'), w('b'), w('c', { healthy: false }), w('d')];
  const p = createPolicy('round-robin');
  const rng = createRng(5);
  const seq = Array.from({ length: 7 }, () => p.pick(fleet, req, rng)!.id).join('');
  const cycle = 'abdabdabdabd';
  assert.ok(cycle.includes(seq), `sequence ${seq} is not a rotation of abd`);
});

const table: { name: PolicyName; fleet: WorkerView[]; expect: Record<string, [number, number]> }[] = [
  { name: 'round-robin', fleet: [w('a'), w('b', { inflight: 40 }), w('c'), w('d')], expect: { a: [0.24, 0.26], b: [0.24, 0.26] } },
  { name: 'random', fleet: [w('a'), w('b', { inflight: 40 }), w('c'), w('d')], expect: { a: [0.22, 0.28], b: [0.22, 0.28] } },
  { name: 'least-loaded', fleet: [w('a', { inflight: 4 }), w('b', { inflight: 40 }), w('c', { inflight: 4 }), w('d', { inflight: 4 })], expect: { b: [0, 0], a: [0.3, 0.37] } },
  // p2c: the busiest worker only loses; each other wins 1/3 of the time.
  { name: 'p2c', fleet: [w('a', { inflight: 4 }), w('b', { inflight: 40 }), w('c', { inflight: 4 }), w('d', { inflight: 4 })], expect: { b: [0, 0], a: [0.3, 0.37] } },
  { name: 'adaptive', fleet: [w('a', { inflight: 4 }), w('b', { inflight: 40 }), w('c', { inflight: 4 }), w('d', { inflight: 4 })], expect: { b: [0, 0] } },
  // adaptive: equal in-flight, one worker 10x slower per token than the fleet: it never wins a pair.
  { name: 'adaptive', fleet: [w('a', { inflight: 3 }), w('b', { inflight: 3, itlMsEwma: 100 }), w('c', { inflight: 3 }), w('d', { inflight: 3 })], expect: { b: [0, 0] } },
  // adaptive: the slow worker with fewer in flight still loses while in-flight x latency is higher.
  { name: 'adaptive', fleet: [w('a', { inflight: 8 }), w('b', { inflight: 2, ttftMsEwma: 1000, itlMsEwma: 100 }), w('c', { inflight: 8 }), w('d', { inflight: 8 })], expect: { b: [0, 0] } },
  // adaptive: within the tolerance (rel 1.4, the latency of a larger batch) a worker is typical: equal in-flight, equal shares.
  { name: 'adaptive', fleet: [w('a', { inflight: 6 }), w('b', { inflight: 6, itlMsEwma: 14 }), w('c', { inflight: 6 }), w('d', { inflight: 6 })], expect: { b: [0.22, 0.28] } },
  // adaptive: a worker 5x slower per token loses every pair while another has room, even idle against 20 in flight.
  { name: 'adaptive', fleet: [w('a', { inflight: 20 }), w('b', { inflight: 0, ttftMsEwma: 500, itlMsEwma: 50 }), w('c', { inflight: 20 }), w('d', { inflight: 20 })], expect: { b: [0, 0] } },
  // adaptive: slow to first token only (a worker back from a stall, its per-token latency typical) is not avoided.
  { name: 'adaptive', fleet: [w('a', { inflight: 20 }), w('b', { inflight: 0, ttftMsEwma: 500 }), w('c', { inflight: 20 }), w('d', { inflight: 20 })], expect: { b: [0.49, 0.51] } },
  // p2c, by contrast, prefers that slow worker because it looks idle.
  { name: 'p2c', fleet: [w('a', { inflight: 8 }), w('b', { inflight: 2, ttftMsEwma: 1000, itlMsEwma: 100 }), w('c', { inflight: 8 }), w('d', { inflight: 8 })], expect: { b: [0.49, 0.51] } },
];

for (const row of table) {
  test(`${row.name} ratios: ${row.fleet.map((x) => `${x.id}=${x.inflight}/${x.itlMsEwma}ms`).join(' ')}`, () => {
    const got = shares(row.name, row.fleet);
    for (const [id, [lo, hi]] of Object.entries(row.expect)) {
      const share = got.get(id)!;
      assert.ok(share >= lo - 1e-9 && share <= hi + 1e-9, `${id} got ${share.toFixed(3)}, want [${lo}, ${hi}]`);
    }
  });
}

test('adaptive: a worker silent with streams in flight is avoided once the silence exceeds its per-token latency', () => {
  let now = 10_000;
  const fleet = [w('a', { inflight: 5, lastProgressMs: 9_990 }), w('b', { inflight: 5, lastProgressMs: 9_000 }), w('c', { inflight: 5, lastProgressMs: 9_995 })];
  const got = shares('adaptive', fleet, 2000, 3, { now: () => now });
  assert.equal(got.get('b'), 0);
  now = 9_001; // silence of 1 ms is not a stall
  const p = new AdaptivePolicy({ now: () => now });
  const fl = fleetLatency(fleet);
  assert.equal(p.score(fleet[1]!, fl, now), p.score(fleet[0]!, fl, now));
});

test('adaptive: an unmeasured worker is treated as typical, not as best or worst', () => {
  const p = new AdaptivePolicy();
  const fleet = [w('a'), w('b', { ttftMsEwma: Number.NaN, itlMsEwma: Number.NaN })];
  const fl = fleetLatency(fleet);
  assert.equal(p.score(fleet[1]!, fl), p.score(fleet[0]!, fl));
});

test('adaptive: an idle slow worker fades back toward typical, so it is probed again', () => {
  const p = new AdaptivePolicy({ now: () => 0, recoveryHalfLifeMs: 1000 });
  const slow = w('s', { itlMsEwma: 100, lastProgressMs: 0 });
  const fl = fleetLatency([w('a'), w('b'), slow]);
  const fresh = p.score(slow, fl, 0);
  const later = p.score(slow, fl, 3000);
  assert.ok(fresh > 1e9, `10x slower per token: avoided (${fresh})`);
  assert.ok(later < 2.2 && later > 1, `score after 3 half-lives ${later}`);
});

test('worker stats: one outlier sample moves the average by a bounded step; a sustained change is followed', async () => {
  const { WorkerStats } = await import('./index.js');
  const s = new WorkerStats({ itlAlpha: 0.1 });
  for (let i = 0; i < 20; i++) s.recordItl(20);
  s.recordItl(5000);
  assert.ok(s.itlMsEwma <= 20 + 0.1 * (80 - 20) + 1e-9, `after one stall gap ${s.itlMsEwma}`);
  for (let i = 0; i < 200; i++) s.recordItl(200);
  assert.ok(s.itlMsEwma > 190, `after a sustained slowdown ${s.itlMsEwma}`);
});

test('worker stats: a count of samples gives the average of that many samples by the rule, one at a time', async () => {
  const { WorkerStats } = await import('./index.js');
  // The documented rule (defaults: alpha 0.05, cap 4x, the first 8 samples weighted up), sample by sample.
  const rule = (avg: number, ms: number, seen: number): number => {
    if (Number.isNaN(avg)) return ms;
    if (seen < 8) return avg + Math.max(0.05, 1 / (seen + 1)) * (ms - avg);
    return avg + 0.05 * ((avg > 0 ? Math.min(ms, 4 * avg) : ms) - avg);
  };
  // Calls of [ms, count] against the rule sample by sample: equal to within rounding (the uncapped run is in closed form).
  const check = (calls: [number, number][]): void => {
    const s = new WorkerStats();
    let avg = Number.NaN;
    let seen = 0;
    calls.forEach(([ms, count], k) => {
      s.recordItl(ms, count);
      if (ms >= 0) for (let i = 0; i < count; i++) avg = rule(avg, ms, seen++);
      assert.ok(Number.isNaN(avg) ? Number.isNaN(s.itlMsEwma) : Math.abs(s.itlMsEwma - avg) <= 1e-12 * avg, `call ${k}: ${s.itlMsEwma} vs ${avg}`);
    });
  };
  const rng = createRng(3);
  const gaps = [12, 12, 12.5, 0, 40, 7.25, Infinity, 9, 9, 3000, 9, -1, 0, 0.5];
  check(Array.from({ length: 400 }, (_, k) => [k < gaps.length ? gaps[k]! : rng.int(1, 2) * 6.5, rng.int(0, k % 2 === 0 ? 40 : 400)]));
  // An average of exactly 0 has no cap: the next positive samples are capped once it moves.
  check([[0, 20], [10, 50], [0, 300], [5, 30]]);
});
