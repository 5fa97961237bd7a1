import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isTailgateError } from '../core/index.js';
import { isMetricBlock, summarize, syntheticError } from '../stats/index.js';
import { StreamingSummary } from './streaming-summary.js';
import { reducedStall } from '../../test/sim-scenarios.js';
import type { PolicyName } from '../routing/index.js';
import { KEEP_RECORDS_LIMIT, PRESETS, parseScenario, runMonteCarlo, runScenario, scenarioFromObject, simulateJson, wilsonInterval, type Scenario } from './index.js';

function small(extra: Record<string, unknown> = {}): Scenario {
  return scenarioFromObject({ workers: 4, concurrency: 128, requestCount: 600, warmupRequestCount: 64, inputTokens: { mean: 96, stddev: 30 }, outputTokens: { mean: 40, stddev: 15 }, ...extra }, 'test');
}

const p99 = (r: ReturnType<typeof runScenario>, tag: string): number => {
  const m = r.summary.metrics[tag];
  assert.ok(isMetricBlock(m), `${tag} present`);
  return m.p99;
};

test('the same seed gives the same simulated result; another seed changes the random choices', () => {
  const s = small({ faults: ['worker=1,kind=stall,at=500ms,for=1500ms'], bursty: { quiet: '2s', active: '1s', meanStall: '400ms' } });
  const a = runScenario(s, 'p2c', 7);
  const b = runScenario(s, 'p2c', 7);
  assert.deepEqual(b.records, a.records);
  assert.deepEqual(b.summary, a.summary);
  assert.deepEqual(b.perWorkerInflight, a.perWorkerInflight);
  assert.equal(b.simulatedMs, a.simulatedMs);
  const c = runScenario(s, 'p2c', 8);
  assert.notDeepEqual(c.records.map((r) => r.worker), a.records.map((r) => r.worker));
});

test('token accounting: every ok request gets exactly its max_tokens, client = server, also across re-dispatch and migration', () => {
  const s = small({ faults: ['worker=2,kind=stall,at=1s,for=3s'] });
  const r = runScenario(s, 'adaptive', 3);
  assert.ok(r.redispatched + r.migrated > 0, 'the stall made the router re-send something');
  const ok = r.records.filter((x) => x.outcome === 'ok');
  assert.equal(ok.length, 600 + 64, 'every request completed');
  let migrated = 0;
  for (const rec of ok) {
    const index = Number(rec.id.split('-')[1]);
    // The dataset cycles in order (as bench/): entry index % 100.
    assert.equal(rec.outputTokens.client, rec.outputTokens.server);
    assert.equal(rec.chunkMs.length, rec.outputTokens.client, 'one chunk per token-bearing step');
    assert.ok(rec.firstTokenMs !== null && rec.firstTokenMs >= rec.startMs, 'first token after start');
    assert.ok(Number.isInteger(index), rec.id);
    if (rec.migrated) migrated++;
  }
  const want = new Map<string, number>();
  const ds = runScenario({ ...s, faults: [] }, 'round-robin', 3).records;
  for (const rec of ds) want.set(rec.id, rec.outputTokens.client);
  for (const rec of ok) assert.equal(rec.outputTokens.client, want.get(rec.id), `${rec.id} got its max_tokens`);
  assert.ok(migrated > 0, 'some streams were migrated mid-way and still got every token');
});

test('stall preset at reduced scale: round-robin shows the seed signature, adaptive avoids it', () => {
  const s = reducedStall();
  const healthy = runScenario({ ...s, faults: [] }, 'round-robin', 1);
  const rr = runScenario(s, 'round-robin', 1);
  const ad = runScenario(s, 'adaptive', 1);
  const tput = (r: typeof rr): number => r.summary.metrics['output_token_throughput']!.avg;

  // Round-robin: one worker holds most of the in-flight, TTFT p99 many seconds, throughput down.
  assert.equal(rr.shape.shape, 'single-worker-backup');
  assert.equal(rr.shape.worker, 'sim-3:8000');
  const w3 = rr.perWorkerInflight['sim-3:8000']!;
  const peak = Math.max(...w3.inflight);
  const at = w3.inflight.indexOf(peak);
  const total = Object.values(rr.perWorkerInflight).reduce((n, ws) => n + ws.inflight[at]!, 0);
  assert.ok(peak / total > 0.5, `stalled worker holds ${peak} of ${total} in flight`);
  assert.ok(p99(rr, 'time_to_first_token') > 5000, `round-robin TTFT p99 ${p99(rr, 'time_to_first_token')}`);
  assert.ok(tput(rr) < 0.8 * tput(healthy), `throughput ${tput(rr)} vs healthy ${tput(healthy)}`);
  assert.equal(rr.pass, false);

  // Adaptive keeps the gate, spreads the load and cuts the request-latency tail.
  assert.equal(ad.pass, true, ad.shape.explanation);
  assert.notEqual(ad.shape.shape, 'single-worker-backup');
  assert.ok(p99(ad, 'time_to_first_token') < 2000, 'adaptive TTFT p99 under the gate');
  assert.ok(p99(ad, 'request_latency') < p99(rr, 'request_latency') / 2, 'adaptive halves the request-latency tail');
  assert.ok(ad.migrated > 0, 'streams stuck mid-way on the stalled worker were migrated');
  assert.ok(tput(ad) > tput(rr), 'adaptive throughput above round-robin');
});

test('a fleet at its slot capacity: a first token that waits in a busy queue moves the request, costs the worker nothing and teaches the router its slots', () => {
  // 4 x 64 slots, 256 streams started at once with equal lengths: whoever lands on a full worker
  // waits a whole answer. Two random choices overfill a worker now and then; suspecting those busy
  // workers (half-open, then ejected) cost a third of the throughput, and until the router learned
  // each worker's slots the TTFT tail stayed a whole answer long.
  const s = scenarioFromObject({ workers: 4, profile: 'small', concurrency: 256, requestCount: 8192, warmupRequestCount: 1024, outputTokens: { mean: 64, stddev: 0 } }, 'test');
  const ll = runScenario(s, 'least-loaded', 1);
  const p2c = runScenario(s, 'p2c', 1);
  const ad = runScenario(s, 'adaptive', 1);
  const tput = (r: typeof ad): number => r.summary.metrics['output_token_throughput']!.avg;
  const ttft = (r: typeof ad): number => p99(r, 'time_to_first_token');
  assert.ok(ad.redispatched > 0, 'requests waiting a whole answer were moved');
  assert.ok(ttft(p2c) > 1000, `two random choices alone leave a tail of a whole answer: ${ttft(p2c)} ms`);
  assert.ok(ttft(ad) < 1.5 * ttft(ll), `adaptive TTFT p99 ${ttft(ad)} vs least-loaded ${ttft(ll)}`);
  assert.ok(tput(ad) > 0.97 * tput(ll), `adaptive ${tput(ad)} tok/s vs least-loaded ${tput(ll)}`);
});

test('histogram mode agrees with the record pipeline', () => {
  const s = small();
  const a = runScenario(s, 'least-loaded', 2);
  const b = runScenario(s, 'least-loaded', 2, { recordMode: 'histogram', keepChunks: false });
  assert.equal(b.records.length, 0);
  assert.equal(b.summary.okCount, a.summary.okCount);
  const rel = (x: number, y: number): number => Math.abs(x - y) / y;
  assert.ok(rel(p99(b, 'time_to_first_token'), p99(a, 'time_to_first_token')) < 0.01, 'TTFT p99 within 1%');
  assert.ok(rel(b.summary.metrics['output_token_throughput']!.avg, a.summary.metrics['output_token_throughput']!.avg) < 1e-9, 'same throughput');
});

test('router replicas each count locally; open-loop arrivals run to completion', () => {
  const r = runScenario(small({ router: { replicas: 3, replicaPick: 'random' } }), 'p2c', 1);
  assert.equal(r.summary.okCount, 600);
  const open = runScenario(small({ concurrency: undefined, rate: 400 }), 'adaptive', 1);
  assert.equal(open.summary.okCount, 600);
  assert.ok(open.summary.metrics['request_throughput']!.avg > 200, 'open loop kept its rate');
});

test('Monte Carlo: fail probability with a Wilson interval per policy; JSON has the documented keys', () => {
  const mc = runMonteCarlo({ scenario: small({ gates: ['time_to_first_token.p99<=1'] }), policies: ['round-robin', 'p2c'], trials: 3, seed: 5 });
  const rr = mc.policies['round-robin']!;
  assert.equal(rr.failures, 3);
  assert.equal(rr.failProbability, 1);
  assert.ok(rr.failInterval95.low > 0.4 && rr.failInterval95.high === 1, 'Wilson interval of 3/3');
  const json = simulateJson({ scenarios: [{ scenario: small(), result: mc }], policies: ['round-robin', 'p2c'], trials: 3, seed: 5, wallMs: 1000 }) as {
    simulatedSeconds: number; wallSeconds: number; policies: Record<string, { failProbability: number; ttftP99Ms: { p50: number; p90: number }; outputTokensPerS: { p50: number } }>;
  };
  assert.ok(json.simulatedSeconds > 0, 'simulatedSeconds');
  assert.equal(json.wallSeconds, 1);
  assert.equal(json.policies['p2c']!.failProbability, 1);
  assert.ok(json.policies['p2c']!.ttftP99Ms.p90 >= json.policies['p2c']!.ttftP99Ms.p50, 'p90 >= p50');
  assert.ok(json.policies['p2c']!.outputTokensPerS.p50 > 0, 'throughput');
});

test('Monte Carlo at fleet scale keeps no records, not even for the first trial; below it the first trial keeps every chunk', () => {
  const smallRun = runMonteCarlo({ scenario: small(), policies: ['p2c'], trials: 1, seed: 1 });
  assert.equal(smallRun.representative['p2c']!.records.length, 664);
  assert.ok(smallRun.representative['p2c']!.records.some((r) => r.chunkMs.length > 2), 'every chunk time');
  // Short answers on many workers, so that just over the limit of requests runs quickly.
  const big = scenarioFromObject({ workers: 64, concurrency: 8192, requestCount: KEEP_RECORDS_LIMIT + 1, outputTokens: { mean: 4, stddev: 0 } }, 'test');
  const fleet = runMonteCarlo({ scenario: big, policies: ['p2c'], trials: 1, seed: 1 });
  const rep = fleet.representative['p2c']!;
  assert.equal(rep.records.length, 0);
  assert.equal(rep.summary.okCount, KEEP_RECORDS_LIMIT + 1, 'every request still counted');
  assert.ok(isMetricBlock(rep.summary.metrics['time_to_first_token']), 'percentiles from the histograms');
});

test('the deadline sweep re-sends a request at most once, from its own replica, while workers stall one after another', () => {
  // Attempts are reused: one that served a re-sent request, or another replica, must never be
  // looked at by a sweep as if it were still the attempt it was (every counted re-send is one request).
  const faults = Array.from({ length: 7 }, (_, i) => ({ worker: i, kind: 'stall' as const, atMs: 4000 + 700 * i, forMs: 6000 }));
  for (const router of [PRESETS['aicr-h100-stall']!.router, { ...PRESETS['aicr-h100-stall']!.router, replicas: 3, replicaPick: 'random' as const }]) {
    const r = runScenario({ ...PRESETS['aicr-h100-stall']!, faults, router }, 'adaptive', 1, { keepChunks: false });
    const resent = r.records.filter((x) => x.redispatched || x.migrated);
    assert.ok(r.migrated > 0, 'streams were migrated');
    assert.equal(r.redispatched + r.migrated, resent.length, 'each re-send is a different request');
    assert.equal(resent.filter((x) => x.redispatched && x.migrated).length, 0);
  }
});

test('wilsonInterval matches known values', () => {
  const w = wilsonInterval(0, 200);
  assert.equal(w.low, 0);
  assert.ok(Math.abs(w.high - 0.01884) < 1e-4, `got ${w.high}`);
  const h = wilsonInterval(10, 20);
  assert.ok(Math.abs(h.low - 0.2993) < 1e-3 && Math.abs(h.high - 0.7007) < 1e-3, `got ${h.low} ${h.high}`);
});

test('presets carry the seed setup and its gates', () => {
  const p = PRESETS['aicr-h100']!;
  assert.equal(p.workers, 8);
  assert.deepEqual(p.load, { kind: 'closed', concurrency: 2048 });
  assert.equal(p.requestCount, 16_384);
  assert.equal(p.warmupRequestCount, 2048);
  assert.deepEqual(p.gates.map((g) => [g.metric, g.stat, g.op, g.threshold, g.tolerance]), [
    ['output_token_throughput', 'avg', '>=', 50_000, 0.9],
    ['time_to_first_token', 'p99', '<=', 2000, 1.1],
  ]);
  for (const name of ['aicr-h100-stall', 'aicr-h100-bursty', 'aicr-h100-slow']) assert.ok(PRESETS[name] !== undefined, name);
});

function rejects(text: string, pattern: RegExp): void {
  assert.throws(() => parseScenario(text, 'x.yaml'), (e: unknown) => {
    assert.ok(isTailgateError(e), 'a TailgateError');
    assert.equal(e.code, 'CONFIG_INVALID');
    assert.match(e.message, pattern);
    return true;
  });
}

test('scenario validation names the bad field and its line', () => {
  const ok = parseScenario('workers: 4\nconcurrency: 64\nrequestCount: 100\nfaults:\n  - worker=1,kind=stall,at=2s,for=3s\nrouter:\n  replicas: 2\n  ttftDeadline: 800ms\n', 'ok.yaml');
  assert.equal(ok.router.replicas, 2);
  assert.equal(ok.router.ttftDeadline, 800);
  assert.equal(ok.faults[0]!.forMs, 3000);
  rejects('workers: 0\nconcurrency: 64\nrequestCount: 100\n', /x\.yaml: workers \(line 1\): .*>=\s?1/);
  rejects('workers: 4\nconcurrency: 64\nrequestCount: 100\nworkerz: 3\n', /workerz \(line 4\): unknown field/);
  rejects('workers: 4\nconcurrency: 64\nrequestCount: 100\nfaults:\n  - worker=9,kind=stall,for=1s\n', /faults\.0 \(line 5\): worker=9 does not exist/);
  rejects('workers: 4\nconcurrency: 64\nrequestCount: 100\nfaults:\n  - worker=1,kind=boom,for=1s\n', /faults\.0 \(line 5\): .*kind=boom/);
  rejects('workers: 4\nconcurrency: 64\nrate: 5\nrequestCount: 100\n', /concurrency .*exactly one/);
  rejects('workers: 4\nconcurrency: 64\nrequestCount: 100\nrouter:\n  ttftDeadline: soon\n', /router\.ttftDeadline \(line 5\): "soon" is not auto/);
  rejects('workers: 4\nconcurrency: 64\nrequestCount: 100\nprofile: a100\n', /profile \(line 4\): unknown engine profile/);
  rejects('workers: 4\nconcurrency: 64\nrequestCount: 100\ngates:\n  - ttft<2000\n', /gates\.0 \(line 5\): invalid gate/);
  rejects('workers: [4\n', /not valid YAML/);
  rejects('- 1\n', /a scenario is a YAML mapping/);
  rejects('concurrency: 64\nrequestCount: 100\n', /workers \(line 1\): missing \(expected number\)/);
});

test('summary mode gives the same summary as keeping every record, to the last bit', () => {
  const cases: [Scenario, PolicyName, number, boolean][] = [
    [small({ faults: ['worker=1,kind=stall,at=500ms,for=1500ms'], bursty: { quiet: '2s', active: '1s', meanStall: '400ms' } }), 'p2c', 7, false],
    [small({ faults: ['worker=2,kind=stall,at=1s,for=3s'] }), 'adaptive', 3, true],
    [small({ router: { replicas: 2, maxInflightPerWorker: 4, maxQueue: 8 } }), 'round-robin', 1, false],
    [reducedStall(), 'round-robin', 2, false],
  ];
  let errors = 0;
  for (const [s, policy, seed, keepChunks] of cases) {
    const { records, ...kept } = runScenario(s, policy, seed, { keepChunks });
    const { records: none, ...built } = runScenario(s, policy, seed, { keepChunks, recordMode: 'summary' });
    assert.ok(records.length > 0);
    errors += kept.summary.errorCount;
    assert.equal(none.length, 0);
    assert.equal(JSON.stringify(built), JSON.stringify(kept), `${s.name} / ${policy}`);
  }
  assert.ok(errors > 0, 'error groups are compared too');
});

test('histogram mode groups errors as summarize does: bounded, messages cut to 300 characters', () => {
  const recs = Array.from({ length: 100 }, (_, i) => syntheticError({ startMs: i, endMs: i + 1, outcome: 'timeout', status: null, error: `timed out: request ${i} ${'x'.repeat(400)}` }));
  const streaming = new StreamingSummary();
  for (const r of recs) streaming.add(r);
  const groups = streaming.summary({}).errorSummary;
  assert.deepEqual(groups, summarize(recs).errorSummary);
  assert.equal(groups.length, 20);
  assert.ok(groups.every((g) => g.message.length <= 300));
});

test('preemption is not a stall: streams a full KV cache preempts while their worker streams to others complete, and no worker is blamed', () => {
  // 50 streams of 2500 tokens on 2 small workers: 25 x ~2600 tokens each is twice what a worker's
  // KV cache holds (2048 blocks of 16), so the engines preempt (vLLM's recompute) while they keep
  // streaming to the others; a preempted stream is silent far past the stall deadline.
  const s = scenarioFromObject({ workers: 2, profile: 'small', concurrency: 50, requestCount: 50, warmupRequestCount: 0, inputTokens: { mean: 100, stddev: 0 }, outputTokens: { mean: 2500, stddev: 0 } }, 'test');
  const r = runScenario(s, 'adaptive', 1, { keepChunks: false });
  assert.ok(r.preemptions > 0, 'the engines preempted');
  assert.equal(r.ejections, 0, 'no worker ejected');
  assert.equal(r.records.length, 50);
  for (const rec of r.records) {
    assert.equal(rec.outcome, 'ok', rec.error ?? '');
    assert.equal(rec.outputTokens.client, 2500);
  }
});
