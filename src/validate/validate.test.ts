import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TailgateError } from '../core/index.js';
import { syntheticRecord } from '../stats/index.js';
import { formatWait } from './readiness.js';
import { parseGateSpec, requestCountFor, resolveValidateOptions, warmupCountFor } from './options.js';
import { parseRecipe, parseSweep } from './recipe.js';
import { ROUTER_TARGET, workerSeriesFrom } from './evidence.js';
import { runValidate } from './run-validate.js';

function throwsConfig(fn: () => unknown, message: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof TailgateError && e.code === 'CONFIG_INVALID' && message.test(e.message));
}

test('a recipe maps kebab-case fields onto the flags, durations and lists included', () => {
  const r = parseRecipe(
    [
      'url: http://127.0.0.1:8000',
      'model: Qwen/Qwen3-8B',
      'gpus: 8',
      'concurrency-per-gpu: 256',
      'min-throughput: 50000',
      'max-ttft-p99: 2000',
      'trials: 3',
      'pass-rule: majority',
      'ready-timeout: 10m',
      'sweep: 16,32,64',
      'worker-url: http://127.0.0.1:8100',
      'extra-inputs: {temperature: 0, ignore_eos: true}',
      'gate:',
      '  - request_latency:p99:<=:30000',
      '  - {metric: inter_token_latency, stat: avg, op: "<=", threshold: 20, tolerance: 1}',
    ].join('\n'),
  );
  assert.equal(r.gpus, 8);
  assert.equal(r.concurrencyPerGpu, 256);
  assert.equal(r.passRule, 'majority');
  assert.equal(r.readyTimeout, 600_000);
  assert.deepEqual(r.sweep, [16, 32, 64]);
  assert.deepEqual(r.workerUrl, ['http://127.0.0.1:8100']);
  assert.deepEqual(r.extraInputs, ['temperature:0', 'ignore_eos:true']);
  assert.deepEqual(r.gate, ['request_latency:p99:<=:30000', 'inter_token_latency:avg:<=:20:1']);
});

test('recipe errors name the file, line and field', () => {
  const cases: [string, RegExp][] = [
    ['url: x\nmodel: m\ngpus: eight\n', /^r\.yaml:3: gpus: .*expected number/],
    ['url: x\n\nconcurency-per-gpu: 3\n', /^r\.yaml:3: unknown field "concurency-per-gpu" \(did you mean "concurrency-per-gpu"\?\)/],
    ['url: x\ngate:\n  - a:p99:<=:1\n  - {metric: x, stat: p99, op: "<=", threshold: "no"}\n', /^r\.yaml:4: gate\[1\]\.threshold: /],
    ['trials: 0\n', /^r\.yaml:1: trials: expected an integer >= 1/],
    ['pass-rule: sometimes\n', /^r\.yaml:1: pass-rule: /],
    ['ready-timeout: soon\n', /^r\.yaml:1: ready-timeout: expected a duration/],
    ['url: [x\n', /^r\.yaml:\d+: not valid YAML/],
    ['- a\n', /^r\.yaml:1: a recipe is a map/],
    ['url: a\nurl: b\n', /^r\.yaml:2: not valid YAML: Map keys must be unique/],
  ];
  for (const [text, re] of cases) throwsConfig(() => parseRecipe(text, 'r.yaml'), re);
});

test('options: defaults follow the reference recipe and the request-count rules', () => {
  const o = resolveValidateOptions({ url: '127.0.0.1:8000', model: 'm', gpus: 8, minThroughputPerGpu: 6250, maxTtftP99: 2000 });
  assert.equal(o.url, 'http://127.0.0.1:8000');
  assert.equal(o.concurrency, 2048);
  assert.equal(o.expectedWorkers, 8);
  assert.equal(o.trials, 3);
  assert.equal(o.passRule, 'all');
  assert.equal(o.streaming, true);
  assert.equal(requestCountFor(o, 2048), 16384);
  assert.equal(requestCountFor(o, 64), 1000);
  assert.equal(warmupCountFor(o, 2048), 2048);
  assert.deepEqual(o.gates, [
    { metric: 'output_token_throughput', stat: 'avg', op: '>=', threshold: 50_000, tolerance: 0.9 },
    { metric: 'time_to_first_token', stat: 'p99', op: '<=', threshold: 2000, tolerance: 1.1 },
  ]);
  const fixed = resolveValidateOptions({ url: 'http://h:1', model: 'm', requestCount: 10, warmupRequestCount: 0 });
  assert.equal(requestCountFor(fixed, 2048), 10);
  assert.equal(warmupCountFor(fixed, 2048), 0);
  throwsConfig(() => resolveValidateOptions({ url: 'http://h:1', model: 'm', minThroughput: 1, minThroughputPerGpu: 1 }), /not both/);
  throwsConfig(() => resolveValidateOptions({ model: 'm' }), /--url is required/);
  throwsConfig(() => resolveValidateOptions({ url: 'ftp://h', model: 'm' }), /only http and https/);
});

test('gate specs: metric:stat:op:threshold[:tolerance] and the gate module form', () => {
  assert.deepEqual(parseGateSpec('time_to_first_token:p99:<=:2000'), { metric: 'time_to_first_token', stat: 'p99', op: '<=', threshold: 2000, tolerance: 1.1 });
  assert.deepEqual(parseGateSpec('output_token_throughput:avg:ge:100:1'), { metric: 'output_token_throughput', stat: 'avg', op: '>=', threshold: 100, tolerance: 1 });
  assert.deepEqual(parseGateSpec('request_latency.p99<=30000', 0.9, 1.2), { metric: 'request_latency', stat: 'p99', op: '<=', threshold: 30000, tolerance: 1.2 });
  assert.equal(parseGateSpec('request_latency.p99<=30000@1.05').tolerance, 1.05);
  throwsConfig(() => parseGateSpec('ttft:p42:<=:1'), /stat must be one of/);
  throwsConfig(() => parseGateSpec('ttft:p99:<:1'), /op must be >= or <=/);
  throwsConfig(() => parseGateSpec('ttft:p99:<=:fast'), /threshold "fast" is not a number/);
});

test('sweep levels and waits are written the way people read them', () => {
  assert.deepEqual(parseSweep('64, 16,32,16'), [16, 32, 64]);
  throwsConfig(() => parseSweep('16,0'), /invalid sweep/);
  assert.equal(formatWait(600_000), '10m0s');
  assert.equal(formatWait(1500), '1.5s');
  assert.equal(formatWait(3000), '3s');
  assert.equal(formatWait(250), '250ms');
  assert.equal(formatWait(3_725_000), '1h2m5s');
});

test('worker series prefer the router in-flight, align worker gauges onto it, else derive from records', () => {
  const series = {
    targets: {
      [ROUTER_TARGET]: { tMs: [0, 250, 500], values: { 'inflight:a:1': [1, 5, 9], 'inflight:b:2': [1, NaN, 2] }, errors: 0, lastError: null },
      'a:1': { tMs: [10, 260], values: { 'vllm:num_requests_running': [1, 4], 'vllm:num_requests_waiting': [0, 1] }, errors: 0, lastError: null },
      'c:3': { tMs: [0, 250], values: { 'vllm:num_requests_running': [2, 3], 'vllm:num_requests_waiting': [1, 1] }, errors: 0, lastError: null },
    },
  };
  const ws = workerSeriesFrom(series, []);
  assert.deepEqual(ws['a:1'], { tMs: [0, 250, 500], inflight: [1, 5, 9], running: [0, 1, 4], waiting: [0, 0, 1] });
  assert.deepEqual(ws['b:2']!.inflight, [1, 0, 2]);
  assert.deepEqual(ws['c:3'], { tMs: [0, 250], inflight: [3, 4], running: [2, 3], waiting: [1, 1] });

  const records = [
    syntheticRecord({ id: '1', worker: 'w:1', startMs: 0, ttftMs: 50, itlMs: 10, tokens: 80 }),
    syntheticRecord({ id: '2', worker: 'w:1', startMs: 100, ttftMs: 50, itlMs: 10, tokens: 70 }),
    syntheticRecord({ id: '3', worker: 'w:2', startMs: 0, ttftMs: 50, itlMs: 10, tokens: 30 }),
  ];
  const derived = workerSeriesFrom(null, records);
  assert.equal(Math.max(...derived['w:1']!.inflight), 2);
  assert.equal(Math.max(...derived['w:2']!.inflight), 1);
});

test('options: --trials auto, intervals and --search are checked before anything runs', () => {
  const base = { url: 'http://h:1', model: 'm' };
  const auto = resolveValidateOptions({ ...base, trials: 'auto', maxTrials: 6, targetCiWidth: 0.05, confidenceLevel: 0.9 });
  assert.deepEqual([auto.trialsAuto, auto.trials, auto.targetCiWidth, auto.confidenceLevel], [true, 6, 0.05, 0.9]);
  const fixed = resolveValidateOptions(base);
  assert.deepEqual([fixed.trialsAuto, fixed.trials, fixed.targetCiWidth, fixed.confidenceLevel, fixed.search], [false, 3, 0.1, 0.95, null]);
  assert.deepEqual(resolveValidateOptions({ ...base, search: 'max-concurrency', searchRange: '16:512', searchStep: 16 }).search, { lo: 16, hi: 512, step: 16 });
  throwsConfig(() => resolveValidateOptions({ ...base, confidenceLevel: 95 }), /--confidence-level must be between 0 and 1/);
  throwsConfig(() => resolveValidateOptions({ ...base, search: 'max-concurrency' }), /needs --search-range lo:hi/);
  throwsConfig(() => resolveValidateOptions({ ...base, search: 'max-concurrency', searchRange: '64:16' }), /must be lo:hi with 1 <= lo < hi/);
  throwsConfig(() => resolveValidateOptions({ ...base, searchRange: '16:64' }), /need --search max-concurrency/);
  throwsConfig(() => resolveValidateOptions({ ...base, search: 'max-concurrency', searchRange: '16:64', sweep: [16] }), /--sweep or --search, not both/);
});

test('recipes take trials: auto and the search fields', () => {
  const r = parseRecipe(['trials: auto', 'max-trials: 8', 'confidence-level: 0.9', 'search: max-concurrency', 'search-range: "16:256"', 'search-step: 16'].join('\n'));
  assert.deepEqual([r.trials, r.maxTrials, r.confidenceLevel, r.search, r.searchRange, r.searchStep], ['auto', 8, 0.9, 'max-concurrency', '16:256', 16]);
  throwsConfig(() => parseRecipe('trials: sometimes\n', 'r.yaml'), /^r\.yaml:1: trials: /);
  throwsConfig(() => parseRecipe('confidence-level: 2\n', 'r.yaml'), /^r\.yaml:1: confidence-level: expected a number between 0 and 1/);
});

test('runValidate with predictBeyond and no extendSweep is refused before anything runs (the levels would be dropped unsaid)', async () => {
  // Port 9 has no listener: a check made after readiness would wait out the ready timeout instead.
  await assert.rejects(runValidate({ url: 'http://127.0.0.1:9', model: 'm', sweep: [16, 32], predictBeyond: [64], readyTimeout: 60_000 }),
    (e: unknown) => e instanceof TailgateError && e.code === 'CONFIG_INVALID' && /predictBeyond needs extendSweep/.test(e.message));
});
