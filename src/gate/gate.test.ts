import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RequestRecord } from '../core/index.js';
import { summarize, syntheticError, syntheticRecord, timeSeries, type Summary } from '../stats/index.js';
import {
  aggregateTrials, classifyTrial, findKnee, judgeGates, parseGate, seedGates, type Gate, type TrialEvidence,
} from './index.js';

/** A closed loop per worker: `slots` streams each running `rounds` requests back to back. */
function workerLoad(worker: string, o: { slots: number; rounds: number; ttftMs: number; itlMs?: number; tokens?: number; fromMs?: number }): RequestRecord[] {
  const out: RequestRecord[] = [];
  const itl = o.itlMs ?? 10;
  const tokens = o.tokens ?? 20;
  for (let s = 0; s < o.slots; s++) {
    let t = (o.fromMs ?? 0) + s * 3;
    for (let k = 0; k < o.rounds; k++) {
      const r = syntheticRecord({ id: `${worker}-${s}-${k}`, worker, startMs: t, ttftMs: o.ttftMs, itlMs: itl, tokens });
      out.push(r);
      t = r.endMs;
    }
  }
  return out;
}

const WORKERS = Array.from({ length: 8 }, (_, i) => `127.0.0.1:${9000 + i}`);
const ttftGate = (ceiling: number): Gate => ({ metric: 'time_to_first_token', stat: 'p99', op: '<=', threshold: ceiling, tolerance: 1.1 });
const tputGate = (floor: number): Gate => ({ metric: 'output_token_throughput', stat: 'avg', op: '>=', threshold: floor, tolerance: 0.9 });

function evidence(records: RequestRecord[], gates: Gate[], extra: Partial<TrialEvidence> = {}): TrialEvidence {
  const summary = summarize(records);
  return { summary, gates: judgeGates(summary, gates), expectedWorkers: 8, ...extra };
}

function healthy(ttftMs = 100): RequestRecord[] {
  return WORKERS.flatMap((w) => workerLoad(w, { slots: 16, rounds: 10, ttftMs }));
}

// Healthy synthetic fleet: 8 x 16 streams, 20 tokens per 290 ms -> ~8,800 tok/s.
const GATES = [tputGate(8000), ttftGate(1000)];

test('judgeGates applies tolerance: floors at 90%, ceilings at 110%', () => {
  const s = summarize(healthy(1050));
  const [tput, ttft] = judgeGates(s, [tputGate(1e9), ttftGate(1000)]);
  assert.equal(tput!.pass, false);
  assert.equal(tput!.limit, 0.9e9);
  assert.equal(ttft!.pass, true, '1050 ms passes a 1000 ms ceiling within 10%');
  assert.equal(ttft!.value, 1050);
  const missing = judgeGates(s, [{ metric: 'goodput', stat: 'avg', op: '>=', threshold: 1, tolerance: 0.9 }]);
  assert.deepEqual([missing[0]!.value, missing[0]!.pass], [null, false]);
});

test('seedGates follows the reference: full-node floor, scaled only for part of a node', () => {
  assert.deepEqual(seedGates({ gpus: 8 }).map((g) => [g.metric, g.stat, g.op, g.threshold, g.tolerance]), [
    ['output_token_throughput', 'avg', '>=', 50000, 0.9],
    ['time_to_first_token', 'p99', '<=', 2000, 1.1],
  ]);
  assert.equal(seedGates({ gpus: 4 })[0]!.threshold, 25000);
  assert.equal(seedGates({ gpus: 4, gpusPerNode: 4 })[0]!.threshold, 50000);
});

test('parseGate reads specs and rejects nonsense with CONFIG_INVALID', () => {
  assert.deepEqual(parseGate('time_to_first_token.p99<=2000'), ttftGate(2000));
  assert.deepEqual(parseGate('output_token_throughput >= 50000 @0.95'), { ...tputGate(50000), tolerance: 0.95 });
  for (const bad of ['ttft', 'x.p42<=1', 'a.p99=<3', 'a>=1@0']) {
    assert.throws(() => parseGate(bad), (e: Error & { code?: string }) => e.code === 'CONFIG_INVALID');
  }
});

test('shape: clean when every gate passes with margin', () => {
  const v = classifyTrial(evidence(healthy(), GATES));
  assert.equal(v.shape, 'clean');
  assert.equal(v.worker, null);
  assert.match(v.explanation, /All 2 gates passed/);
});

test('shape: single-worker-backup names the worker, when, and its in-flight against the median', () => {
  const stalled = WORKERS[3]!;
  const records = WORKERS.flatMap((w) => (w === stalled
    ? workerLoad(w, { slots: 120, rounds: 1, ttftMs: 9000, fromMs: 500 })
    : workerLoad(w, { slots: 16, rounds: 10, ttftMs: 100 })));
  const v = classifyTrial(evidence(records, GATES));
  assert.equal(v.shape, 'single-worker-backup');
  assert.equal(v.worker, stalled);
  assert.equal(v.evidence.peakInflight, 120);
  assert.equal(v.evidence.medianOthersPeakInflight, 16);
  assert.equal(v.evidence.ratioToMedian, 7.5);
  assert.equal(typeof v.evidence.peakAtS, 'number');
  assert.match(v.explanation, new RegExp(`Worker ${stalled.replace(/\./g, '\\.')} backed up: its in-flight peaked at 120 at t=`));
  assert.match(v.explanation, /median of 16 on the other 7 workers/);
});

test('shape: single-worker-backup also from collector series (router in-flight / vLLM gauges)', () => {
  const records = healthy(3000); // records alone look balanced but slow
  const tMs = Array.from({ length: 20 }, (_, i) => i * 250);
  const workerSeries = Object.fromEntries(WORKERS.map((w, i) => [w, {
    tMs,
    inflight: tMs.map(() => 16),
    ...(i === 5 ? { running: tMs.map((_, k) => (k > 8 ? 256 : 16)), waiting: tMs.map((_, k) => (k > 10 ? 151 : 0)) } : {}),
  }]));
  const v = classifyTrial(evidence(records, GATES, { workerSeries }));
  assert.equal(v.shape, 'single-worker-backup');
  assert.equal(v.worker, WORKERS[5]);
  assert.equal(v.evidence.peakInflight, 407);
  assert.equal(v.evidence.peakAtMs, 11 * 250);
});

test('shape: broad-degradation when gates fail and load is balanced', () => {
  const v = classifyTrial(evidence(healthy(4000), GATES));
  assert.equal(v.shape, 'broad-degradation');
  assert.equal(v.worker, null);
  assert.match(v.explanation, /balanced across 8 workers/);
  assert.match(v.explanation, /TTFT p99 4,000 ms past the 1,100 ms ceiling \(1,000 x1\.1\)/);
});

test('shape: knee-jitter on a narrow TTFT miss, and on a pass only thanks to tolerance', () => {
  const miss = classifyTrial(evidence(healthy(1300), [tputGate(1000), ttftGate(1000)]));
  assert.equal(miss.shape, 'knee-jitter');
  assert.equal(miss.evidence.ceilingRatio, 1.3);
  assert.match(miss.explanation, /narrow miss/);
  const squeak = classifyTrial(evidence(healthy(1050), [tputGate(1000), ttftGate(1000)]));
  assert.equal(squeak.shape, 'knee-jitter');
  assert.match(squeak.explanation, /only thanks to the tolerance/);
  // 1.5x the ceiling or more is not jitter.
  assert.equal(classifyTrial(evidence(healthy(1600), [tputGate(1000), ttftGate(1000)])).shape, 'broad-degradation');
});

test('shape: under-provisioned from readiness or from records showing k of N workers', () => {
  const five = WORKERS.slice(0, 5).flatMap((w) => workerLoad(w, { slots: 16, rounds: 10, ttftMs: 100 }));
  const byRecords = classifyTrial(evidence(five, GATES));
  assert.equal(byRecords.shape, 'under-provisioned');
  assert.equal(byRecords.evidence.servingWorkers, 5);
  assert.match(byRecords.explanation, /only 5 of 8 expected workers/);
  const byReadiness = classifyTrial(evidence(healthy(), GATES, { readyWorkers: 6 }));
  assert.equal(byReadiness.shape, 'under-provisioned');
  assert.match(byReadiness.explanation, /Only 6 of 8 expected workers were ready/);
  // All 8 ready and the gates held: the router spared three workers; that is a warning's matter, not a failed measurement.
  assert.equal(classifyTrial(evidence(five, [tputGate(1), ttftGate(1e6)], { readyWorkers: 8 })).shape, 'clean');
  assert.equal(classifyTrial(evidence(five, [tputGate(1e9), ttftGate(1000)], { readyWorkers: 8 })).shape, 'under-provisioned');
});

test('shape: errors when more than 5% of requests fail', () => {
  const records = healthy();
  const n = records.length;
  for (let i = 0; i < Math.ceil(n * 0.08); i++) records.push(syntheticError({ startMs: i, endMs: i + 5, status: 503, error: 'overloaded', worker: WORKERS[i % 8]! }));
  const v = classifyTrial(evidence(records, GATES));
  assert.equal(v.shape, 'errors');
  assert.equal(v.evidence.topError, 'http_error 503: overloaded');
  assert.match(v.explanation, /requests failed \(7\.\d%\)/);
});

test('shape: client-bound only on a real event-loop stall, never from a busy shared machine alone', () => {
  const slow = healthy(4000);
  const busy = classifyTrial(evidence(slow, GATES, { client: { eventLoopDelayP99Ms: 35, cpuPercent: 98 }, host: { cpuSomeAvg10: 60 } }));
  assert.equal(busy.shape, 'broad-degradation');
  const bound = classifyTrial(evidence(slow, GATES, { client: { eventLoopDelayP99Ms: 450, cpuPercent: 100 } }));
  assert.equal(bound.shape, 'client-bound');
  assert.equal(bound.evidence.eventLoopDelayP99Ms, 450);
  // A passing trial is not blamed on the client.
  assert.equal(classifyTrial(evidence(healthy(), GATES, { client: { eventLoopDelayP99Ms: 450, cpuPercent: 100 } })).shape, 'clean');
});

test('shape precedence: under-provisioned > single-worker-backup > errors > client-bound > knee-jitter > broad', () => {
  const stalled = WORKERS[0]!;
  const backup = WORKERS.flatMap((w) => (w === stalled
    ? workerLoad(w, { slots: 100, rounds: 1, ttftMs: 9000 })
    : workerLoad(w, { slots: 16, rounds: 10, ttftMs: 100 })));
  for (let i = 0; i < 200; i++) backup.push(syntheticError({ startMs: i, endMs: i + 1, worker: stalled }));
  const client = { eventLoopDelayP99Ms: 500, cpuPercent: 100 };
  assert.equal(classifyTrial(evidence(backup, GATES, { client, readyWorkers: 7 })).shape, 'under-provisioned');
  assert.equal(classifyTrial(evidence(backup, GATES, { client })).shape, 'single-worker-backup');
  const errs = healthy(4000);
  for (let i = 0; i < 200; i++) errs.push(syntheticError({ startMs: i, endMs: i + 1, worker: WORKERS[i % 8]! }));
  assert.equal(classifyTrial(evidence(errs, GATES, { client })).shape, 'errors');
  assert.equal(classifyTrial(evidence(healthy(1300), [tputGate(1000), ttftGate(1000)], { client })).shape, 'client-bound');
});

test('timeSeries per-worker in-flight feeds the classifier like collector series', () => {
  const stalled = WORKERS[6]!;
  const records = WORKERS.flatMap((w) => (w === stalled
    ? workerLoad(w, { slots: 90, rounds: 1, ttftMs: 5000, fromMs: 1000 })
    : workerLoad(w, { slots: 16, rounds: 10, ttftMs: 100 })));
  const ts = timeSeries(records, { bucketMs: 250 });
  const workerSeries = Object.fromEntries(Object.entries(ts.perWorkerInflight).map(([w, inflight]) => [w, { tMs: ts.tMs, inflight }]));
  const v = classifyTrial(evidence(records, GATES, { workerSeries }));
  assert.equal(v.shape, 'single-worker-backup');
  assert.equal(v.worker, stalled);
  assert.equal(v.evidence.peakInflight, 90);
});

function fakeSummary(tput: number, ttftP99: number): Summary {
  const s = summarize(healthy());
  s.metrics.output_token_throughput = { unit: 'tokens/sec', avg: tput };
  s.metrics.time_to_first_token = { ...(s.metrics.time_to_first_token as never as Record<string, number>), unit: 'ms', p99: ttftP99 } as never;
  return s;
}

test('aggregateTrials: all / majority / median rules, flaky when mixed, spread per figure', () => {
  const gates = [tputGate(50000), ttftGate(2000)];
  const mk = (tput: number, ttft: number) => {
    const summary = fakeSummary(tput, ttft);
    return { pass: judgeGates(summary, gates).every((r) => r.pass), summary };
  };
  const trials = [mk(60000, 900), mk(62000, 1000), mk(30000, 9000)];
  assert.equal(aggregateTrials(trials, 'all').verdict, 'flaky');
  assert.equal(aggregateTrials(trials, 'majority').verdict, 'pass');
  assert.equal(aggregateTrials(trials, 'median', gates).verdict, 'pass');
  assert.equal(aggregateTrials([trials[2]!, trials[2]!], 'all').verdict, 'fail');
  assert.equal(aggregateTrials([trials[0]!, trials[2]!, trials[2]!], 'majority').verdict, 'flaky');
  assert.equal(aggregateTrials(trials.slice(0, 2), 'all').verdict, 'pass');
  const agg = aggregateTrials(trials, 'all');
  const t = agg.stats['output_token_throughput.avg']!;
  assert.deepEqual([t.median, t.min, t.max], [60000, 30000, 62000]);
  // Sample std 17,925.8 (n - 1); CV = std / mean; 95% interval = mean ± t(0.975, 2) x std / sqrt(3).
  assert.ok(Math.abs(t.std - 17925.77) < 0.01);
  assert.ok(Math.abs(t.cv - 0.3538) < 0.001);
  assert.ok(Math.abs(t.ci!.halfWidth - 4.302653 * 17925.77 / Math.sqrt(3)) < 0.1);
  assert.equal(agg.stats['time_to_first_token.p99']!.median, 1000);
  assert.equal(agg.passed, 2);
  // Both figures' intervals hold their limits: the honest flaky, more trials would not settle it.
  const judged = aggregateTrials(trials, 'all', gates, { confidenceLevel: 0.9 }).gates;
  assert.deepEqual(judged.map((g) => [g.passedTrials, g.straddles, g.stat!.ci!.level]), [[2, true, 0.9], [2, true, 0.9]]);
  assert.equal(aggregateTrials(trials.slice(0, 2), 'all', gates).gates.some((g) => g.straddles), false);
});

test('findKnee: saturating curve gives the knee and a sub-knee recommendation', () => {
  // Per GPU: throughput saturates past 256 while TTFT p99 climbs (the reference's shape).
  const curve = [
    { concurrency: 16, throughput: 1400, ttftP99Ms: 60 },
    { concurrency: 32, throughput: 2700, ttftP99Ms: 70 },
    { concurrency: 64, throughput: 5200, ttftP99Ms: 90 },
    { concurrency: 128, throughput: 9500, ttftP99Ms: 180 },
    { concurrency: 256, throughput: 15500, ttftP99Ms: 700 },
    { concurrency: 512, throughput: 16200, ttftP99Ms: 4200 },
  ];
  const k = findKnee(curve, { ttftCeilingMs: 2000 });
  assert.equal(k.kneeConcurrency, 256);
  assert.equal(k.recommendedConcurrency, 128);
  assert.match(k.explanation, /Knee at concurrency 256: going to 512 added 4\.5% throughput/);
  assert.match(k.explanation, /recommended 128/);
  // A tight ceiling pushes the recommendation down: 80% of 100 ms leaves only 32 (70 ms).
  assert.equal(findKnee(curve, { ttftCeilingMs: 100 }).recommendedConcurrency, 32);
});

test('findKnee: linear scaling has no knee; flat throughput without TTFT climb is not a knee', () => {
  const linear = [16, 32, 64, 128].map((c) => ({ concurrency: c, throughput: c * 100, ttftP99Ms: 50 + c }));
  const k = findKnee(linear, { ttftCeilingMs: 2000 });
  assert.equal(k.kneeConcurrency, null);
  assert.equal(k.recommendedConcurrency, 128);
  const flat = [16, 32, 64].map((c) => ({ concurrency: c, throughput: 1000, ttftP99Ms: 50 }));
  assert.equal(findKnee(flat).kneeConcurrency, null);
  assert.equal(findKnee([]).recommendedConcurrency, null);
  // Unsorted input and non-doubling steps are handled.
  const k2 = findKnee([{ concurrency: 300, throughput: 10500, ttftP99Ms: 900 }, { concurrency: 100, throughput: 5000, ttftP99Ms: 100 }, { concurrency: 200, throughput: 10000, ttftP99Ms: 200 }]);
  assert.equal(k2.kneeConcurrency, 200);
  assert.equal(k2.recommendedConcurrency, 100);
});

test('shape: single-worker-backup when few requests sat on one worker for long (load-aware routing, stalled worker)', () => {
  // Seven workers healthy; one held only a few streams, but each waited 4 s for its first token.
  const records = [
    ...WORKERS.slice(0, 7).flatMap((w) => workerLoad(w, { slots: 16, rounds: 10, ttftMs: 100 })),
    ...workerLoad(WORKERS[7]!, { slots: 4, rounds: 4, ttftMs: 4000 }),
  ];
  const v = classifyTrial(evidence(records, [tputGate(1000), ttftGate(1000)]));
  assert.equal(v.shape, 'single-worker-backup');
  assert.equal(v.worker, WORKERS[7]);
  assert.equal(v.evidence.workerTtftP99Ms, 4000);
  assert.match(v.explanation, /held the tail/);
  // The same worker-level outlier with every gate passing is not a failure shape.
  assert.equal(classifyTrial(evidence(records, [tputGate(1000), ttftGate(10_000)])).shape, 'clean');
});
