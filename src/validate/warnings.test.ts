import { test } from 'node:test';
import assert from 'node:assert/strict';
import { junitXml, workerNames } from '../report/index.js';
import { workerWarnings, type WarningRuleName } from './warnings.js';
import { counterDelta, pickCounters, workerFigures, type WorkerFigures } from './worker-figures.js';

type Router = NonNullable<WorkerFigures['router']>;
type Engine = NonNullable<WorkerFigures['engine']>;
type Gpu = NonNullable<WorkerFigures['gpu']>;

/** One healthy worker as a live run recorded it (4 workers, small profile, adaptive router, 120 requests). */
function healthy(i: number, over: { router?: Partial<Router>; engine?: Partial<Engine>; gpu?: Partial<Gpu>; requests?: Partial<WorkerFigures['requests']> } = {}): WorkerFigures {
  const n = [36, 38, 39, 37][i % 4]!;
  return {
    id: `10.0.0.${i}:8000`,
    requests: { count: n, errors: 0, ttftP50Ms: [61.9, 53.5, 49.1, 57.2][i % 4]!, itlP50Ms: [23.0, 23.0, 23.0, 22.5][i % 4]!, ...over.requests },
    router: { dispatched: n, completed: n, failed: 0, retried: 0, redispatched: 0, migrated: 0, ejected: 0, ...over.router },
    engine: { finished: n, finishedError: 0, httpRequests: null, http5xx: null, preemptions: 0, prefixHits: 400, prefixQueries: 592, kvUsageMax: 0.006, ...over.engine },
    gpu: { name: `gpu ${i}`, samples: 14, throttledFraction: 0, smClockMedianMhz: 1980, utilMedianPct: 96, xidMax: 0, ...over.gpu },
  };
}

const fleetWith = (sick: WorkerFigures, n = 4): WorkerFigures[] => [sick, ...Array.from({ length: n - 1 }, (_, i) => healthy(i + 1))];
const ids = Array.from({ length: 8 }, (_, i) => `10.0.0.${i}:8000`);
const names = workerNames(ids, ids);
const name = (id: string): string => names.get(id)!;
const rules = (fleet: WorkerFigures[]): string[] => workerWarnings('trial-1', fleet, name).map((w) => `${w.worker} ${w.rule} ${w.source} ${w.locus}`);

test('a healthy fleet gives no warning, in every recorded shape of its figures', () => {
  for (let n = 2; n <= 8; n++) assert.deepEqual(rules(Array.from({ length: n }, (_, i) => healthy(i))), []);
  // adaptive's uneven but healthy split (9 to 19 requests of 120 on 8 workers), and one worker a little slower
  const uneven = [17, 12, 19, 16, 9, 19, 13, 16].map((n, i) => healthy(i, { router: { dispatched: n, completed: n }, engine: { finished: n }, requests: { count: n, ttftP50Ms: 50 + i * 8 } }));
  assert.deepEqual(rules(uneven), []);
  assert.deepEqual(workerWarnings('t', [healthy(0, { router: { ejected: 3 } })], name), [], 'one worker has no peers');
});

test('each rule names the sick worker, its figure against the fleet median, the evidence and a locus', () => {
  const cases: [WorkerFigures, WarningRuleName[], string][] = [
    [healthy(0, { router: { dispatched: 40, failed: 20, ejected: 2 } }), ['ejected', 'failing'], 'router counters'],
    [healthy(0, { router: { dispatched: 8, completed: 4, failed: 2, redispatched: 2, migrated: 2 } }), ['rescued'], 'router counters'],
    [healthy(0, { requests: { itlP50Ms: 230 } }), ['slow'], 'requests'],
    [healthy(0, { router: { dispatched: 3, completed: 3 } }), ['low-share'], 'router counters'],
    [healthy(0, { gpu: { throttledFraction: 0.9, smClockMedianMhz: 792 } }), ['gpu-throttled'], 'GPU telemetry'],
    [healthy(0, { gpu: { xidMax: 79 } }), ['gpu-xid'], 'GPU telemetry'],
    [healthy(0, { engine: { preemptions: 40, kvUsageMax: 0.99 } }), ['preempting'], 'worker metrics'],
    [healthy(0, { engine: { prefixHits: 30, prefixQueries: 600 } }), ['cache-loss'], 'worker metrics'],
  ];
  for (const [sick, expected, source] of cases) {
    const ws = workerWarnings('trial-1', fleetWith(sick), name);
    assert.deepEqual(ws.map((w) => w.rule), expected, JSON.stringify(sick));
    for (const w of ws) {
      assert.equal(w.worker, '10.0.0.0:8000');
      assert.equal(w.workerName, 'worker 0 (10.0.0.0:8000)');
      assert.ok(w.value !== w.fleetMedian, `${w.rule}: ${w.value} vs ${w.fleetMedian}`);
      assert.match(w.message, new RegExp(`^worker 0 \\(10\\.0\\.0\\.0:8000\\) ${w.rule}: .*\\[`));
    }
    assert.equal(ws[ws.length - 1]!.source, source);
  }
  const failing = workerWarnings('trial-1', fleetWith(healthy(0, { router: { dispatched: 40, failed: 20 } })), name)[0]!;
  assert.deepEqual([failing.figure, failing.value, failing.fleetMedian, failing.unit, failing.locus], ['failure rate', 50, 0, '%', 'engine-host']);
  // the GPU places it: a slow worker with a throttled GPU lives on the GPU; one whose GPU idles on the host
  assert.deepEqual(rules(fleetWith(healthy(0, { requests: { itlP50Ms: 230 }, gpu: { throttledFraction: 1 } }))), ['10.0.0.0:8000 slow requests gpu', '10.0.0.0:8000 gpu-throttled GPU telemetry gpu']);
  assert.deepEqual(rules(fleetWith(healthy(0, { requests: { itlP50Ms: 230 }, gpu: { utilMedianPct: 9 } }))), ['10.0.0.0:8000 slow requests engine-host']);
  const blind = workerWarnings('trial-1', fleetWith({ ...healthy(0, { requests: { itlP50Ms: 230 } }), gpu: null }), name)[0]!;
  assert.equal(blind.locus, 'unknown');
  assert.match(blind.missing[0]!, /--gpu-metrics/);
});

test('without a tailgate router the workers\' own metrics carry the warnings', () => {
  const bare = (f: WorkerFigures): WorkerFigures => ({ ...f, router: null });
  const sick = bare(healthy(0, { engine: { httpRequests: 40, http5xx: 20 } }));
  const fleet = [sick, ...[1, 2, 3].map((i) => bare(healthy(i, { engine: { httpRequests: 38, http5xx: 0 } })))];
  assert.deepEqual(rules(fleet), ['10.0.0.0:8000 failing worker metrics engine-host']);
  const starved = [bare(healthy(0, { engine: { finished: 2 } })), ...[1, 2, 3].map((i) => bare(healthy(i)))];
  const w = workerWarnings('t', starved, name);
  assert.deepEqual(w.map((x) => [x.worker, x.rule, x.source, x.value, x.fleetMedian]), [['10.0.0.0:8000', 'low-share', 'worker metrics', 2, 37.5]]);
});

test('counter deltas cover the window, from the reading at its start to the first reading after its end; a reset counts from zero', () => {
  const s = { tMs: [0, 100, 200, 300, 400], values: { c: [5, 7, Number.NaN, 12, 20] }, errors: 0, lastError: null };
  assert.equal(counterDelta(s, 'c', 100, 250), 5);
  assert.equal(counterDelta(s, 'c', 50, 1000), 15);
  assert.equal(counterDelta(s, 'missing', 0, 100), null);
  assert.equal(counterDelta({ ...s, values: { c: [50, 60, 2, 4, 9] } }, 'c', 0, 400), 9);
});

test('the pick keeps the router\'s per-worker counters and the vLLM counters; figures say which evidence they had', () => {
  const out: Record<string, number> = {};
  pickCounters([
    { name: 'tailgate_router_requests_failed_total', labels: { worker: 'a:1' }, value: 4, timestampMs: null },
    { name: 'tailgate_router_requests_dispatched_total', labels: { worker: 'a:1' }, value: 9, timestampMs: null },
    { name: 'vllm:request_success_total', labels: { finished_reason: 'stop' }, value: 5, timestampMs: null },
    { name: 'vllm:request_success_total', labels: { finished_reason: 'error' }, value: 2, timestampMs: null },
    { name: 'vllm:num_preemptions_total', labels: {}, value: 3, timestampMs: null },
    { name: 'http_requests_total', labels: { handler: '/v1/chat/completions', method: 'POST', status: '5xx' }, value: 1, timestampMs: null },
    { name: 'http_requests_total', labels: { handler: '/v1/chat/completions', method: 'POST', status: '2xx' }, value: 6, timestampMs: null },
  ], out);
  assert.deepEqual(out, {
    'router:failed:a:1': 4, 'router:dispatched:a:1': 9, 'vllm:request_success_total': 7, 'vllm:request_success_total:error': 2,
    'vllm:num_preemptions_total': 3, http_requests_total: 7, 'http_requests_total:5xx': 1,
  });
  const { figures, evidence } = workerFigures({ workers: ['a:1'], records: [], series: { targets: { 'a:1': { tMs: [0, 10], values: { 'vllm:num_preemptions_total': [1, 4] }, errors: 0, lastError: null } } }, gpu: null, window: { fromMs: 0, toMs: 10 } });
  assert.deepEqual(evidence, { routerCounters: false, workerMetrics: true, gpuTelemetry: false, requests: false });
  assert.equal(figures[0]!.engine!.preemptions, 3);
});

test('junit carries warnings as suite properties and system-out, never as failures', () => {
  const xml = junitXml([{ name: 'trial-1', cases: [{ name: 'gate', classname: 'c', timeMs: 1, failure: null }], properties: [{ name: 'warning.1', value: 'a:1 failing' }], systemOut: 'WARNING worker 0 (a:1) failing' }]);
  assert.match(xml, /failures="0"/);
  assert.match(xml, /<property name="warning\.1" value="a:1 failing"\/>/);
  assert.match(xml, /<system-out>WARNING worker 0 \(a:1\) failing<\/system-out>/);
});
